"""Shared helpers of the tests, moved from tests/unit/test_format_errors.py."""

from __future__ import annotations


BASE = {
    "format": "neuronsim.program/1",
    "machine": "trn1",
    "tensors": {
        "x": {"memory": "dram", "dtype": "float32", "shape": [128, 16], "address": 0, "role": "input"},
        "y": {"memory": "dram", "dtype": "float32", "shape": [128, 16], "address": 8192, "role": "output"},
        "shared": {"memory": "dram", "dtype": "bfloat16", "shape": [64], "alias": "g0"},
        "xs": {"memory": "sbuf", "dtype": "float32", "shape": [128, 16], "partition": 0, "offset": 0},
        "acc": {"memory": "psum", "dtype": "float32", "shape": [128, 16], "partition": 0, "bank": 1},
    },
    "body": [
        {"name": "load", "engine": "sp", "op": "dma_copy", "queue": "dma0",
         "reads": [{"tensor": "x"}], "writes": [{"tensor": "xs"}]},
        {"loop": "k", "trip_count": 2, "body": [
            {"name": "mm", "engine": "pe", "op": "matmul",
             "reads": [{"tensor": "xs"}, {"tensor": "xs", "partitions": [0, 64]}], "writes": [{"tensor": "acc"}],
             "attrs": {"accumulate": False}, "deps": [{"on": "load", "kind": "flow"}]},
            {"name": "scale", "engine": "act", "op": "activation",
             "reads": [{"tensor": "acc"}],
             "writes": [{"tensor": "xs", "offset": 0, "pattern": [[1, 8]], "per_iteration": {"k": 8}}],
             "attrs": {"func": "exp"}, "deps": [{"on": "mm", "kind": "flow"}]},
        ]},
        {"name": "store", "engine": "act", "op": "dma_copy", "queue": "dma1",
         "reads": [{"tensor": "xs"}], "writes": [{"tensor": "y"}], "deps": [{"on": "scale", "kind": "flow"}]},
    ],
}

