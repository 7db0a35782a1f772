"""Hand-made cases: no false positives at the edges of footprints, and the DMA rules."""

from __future__ import annotations

import pytest

from neuronsim.machine.formats.program_json import parse_program
from neuronsim.verify.racecheck import check_program


def _program(tensors, body):
    return parse_program({"format": "neuronsim.program/1", "tensors": tensors, "body": body})


SB = {"memory": "sbuf", "dtype": "float32", "shape": [128, 64], "partition": 0, "offset": 0}


def _two_writers(a, b, tensors=None):
    """``a`` on DVE and ``b`` on ACT, unordered: they race iff their footprints share a byte."""
    tensors = tensors or {"t": SB}
    return _program(tensors, [
        {"name": "a", "engine": "dve", "op": "memset", "writes": [a], "attrs": {"value": 0}},
        {"name": "b", "engine": "pool", "op": "memset", "writes": [b], "attrs": {"value": 1}},
    ])


@pytest.mark.parametrize(("a", "b", "races"), [
    # adjacent bytes: elements [0, 32) and [32, 64)
    ({"tensor": "t", "pattern": [[1, 32]]}, {"tensor": "t", "offset": 32, "pattern": [[1, 32]]}, False),
    ({"tensor": "t", "pattern": [[1, 33]]}, {"tensor": "t", "offset": 32, "pattern": [[1, 32]]}, True),
    # disjoint partitions
    ({"tensor": "t", "partitions": [0, 64]}, {"tensor": "t", "partitions": [64, 64]}, False),
    ({"tensor": "t", "partitions": [0, 65]}, {"tensor": "t", "partitions": [64, 64]}, True),
    # interleaved strides: even and odd elements
    ({"tensor": "t", "pattern": [[2, 32]]}, {"tensor": "t", "offset": 1, "pattern": [[2, 32]]}, False),
    ({"tensor": "t", "pattern": [[2, 32]]}, {"tensor": "t", "offset": 2, "pattern": [[2, 31]]}, True),
])
def test_sbuf_edges(a, b, races):
    assert bool(check_program(_two_writers(a, b)).races) is races


@pytest.mark.parametrize(("second", "races"), [([1, 16, 2], False), ([2, 16, 2], True)])
def test_interleaved_partition_steps(second, races):
    """Two DMAs (not bound by the partition-start rule) on different queues."""
    tensors = {"t": SB, "u": dict(SB, offset=256)}
    body = [
        {"name": "a", "engine": "sp", "op": "dma_copy", "queue": "dma0",
         "reads": [{"tensor": "u", "partitions": [0, 16, 2]}], "writes": [{"tensor": "t", "partitions": [0, 16, 2]}]},
        {"name": "b", "engine": "act", "op": "dma_copy", "queue": "dma1",
         "reads": [{"tensor": "u", "partitions": second}], "writes": [{"tensor": "t", "partitions": second}]},
    ]
    assert bool(check_program(_program(tensors, body)).races) is races


def test_disjoint_psum_banks_do_not_race():
    tensors = {
        "x": {"memory": "sbuf", "dtype": "bfloat16", "shape": [128, 128], "partition": 0, "offset": 0},
        "p2": {"memory": "psum", "dtype": "float32", "shape": [128, 128], "partition": 0, "bank": 2},
        "p3": {"memory": "psum", "dtype": "float32", "shape": [128, 128], "partition": 0, "bank": 3},
        "q2": {"memory": "psum", "dtype": "float32", "shape": [128, 128], "partition": 0, "bank": 2, "offset": 512},
    }
    body = [
        {"name": "m", "engine": "pe", "op": "matmul", "reads": [{"tensor": "x"}, {"tensor": "x"}],
         "writes": [{"tensor": "p2"}]},
        {"name": "c", "engine": "dve", "op": "memset", "writes": [{"tensor": "p3"}], "attrs": {"value": 0}},
        {"name": "d", "engine": "act", "op": "tensor_copy", "reads": [{"tensor": "x"}], "writes": [{"tensor": "q2"}]},
    ]
    assert check_program(_program(tensors, body)).races == ()


def test_dma_trigger_is_not_completion_rule_2():
    """A DMA triggered by POOL is asynchronous: POOL's next instruction is not ordered after
    the transfer, but a wait on the DMA orders everything after it on the waiting sequencer."""
    tensors = {"src": {"memory": "dram", "dtype": "float32", "shape": [128, 64], "address": 0}, "t": SB}
    load = {"name": "load", "engine": "pool", "op": "dma_copy", "reads": [{"tensor": "src"}],
            "writes": [{"tensor": "t"}]}
    fill = {"name": "fill", "engine": "pool", "op": "memset", "writes": [{"tensor": "t"}], "attrs": {"value": 0}}
    report = check_program(_program(tensors, [load, fill]))
    assert [(r.kind, r.first, r.second) for r in report.races] == [("WAW", "load", "fill")]
    fill["deps"] = [{"on": "load"}]
    assert check_program(_program(tensors, [load, fill])).races == ()


def test_same_queue_transfers_are_ordered_rule_3():
    tensors = {"a": {"memory": "dram", "dtype": "float32", "shape": [128, 64], "address": 0}, "t": SB}
    body = [
        {"name": "l1", "engine": "sp", "op": "dma_copy", "queue": "dma1", "reads": [{"tensor": "a"}],
         "writes": [{"tensor": "t"}]},
        {"name": "l2", "engine": "act", "op": "dma_copy", "queue": "dma1", "reads": [{"tensor": "a"}],
         "writes": [{"tensor": "t"}]},
        {"name": "l3", "engine": "act", "op": "dma_copy", "queue": "dma2", "reads": [{"tensor": "a"}],
         "writes": [{"tensor": "t"}]},
    ]
    report = check_program(_program(tensors, body))
    assert [(r.kind, r.first, r.second) for r in report.races] == [("WAW", "l1", "l3"), ("WAW", "l2", "l3")]


def test_alias_group_tensors_always_conflict_and_report_offsets_of_first():
    tensors = {
        "g1": {"memory": "dram", "dtype": "float32", "shape": [64], "alias": "shared"},
        "g2": {"memory": "dram", "dtype": "float32", "shape": [64], "alias": "shared"},
        "h": {"memory": "dram", "dtype": "float32", "shape": [64], "address": 0},
        "t": SB,
    }
    body = [
        {"name": "w1", "engine": "sp", "op": "dma_copy", "queue": "dma0",
         "reads": [{"tensor": "t", "partitions": [0, 1], "pattern": [[1, 8]]}],
         "writes": [{"tensor": "g1", "offset": 8, "pattern": [[1, 8]]}]},
        {"name": "w2", "engine": "act", "op": "dma_copy", "queue": "dma1",
         "reads": [{"tensor": "t", "partitions": [0, 1], "pattern": [[1, 8]]}],
         "writes": [{"tensor": "g2", "offset": 40, "pattern": [[1, 8]]}]},
        {"name": "w3", "engine": "pool", "op": "dma_gather", "queue": "dma2",
         "reads": [{"tensor": "t", "partitions": [0, 1], "pattern": [[1, 8]]}], "writes": [{"tensor": "h"}]},
    ]
    races = check_program(_program(tensors, body)).races
    assert [(r.kind, r.first, r.second, r.alias, r.bytes) for r in races] == [("WAW", "w1", "w2", "shared", (32, 64))]


def test_every_pair_is_reported_not_just_the_first():
    tensors = {"t": SB}
    body = [{"name": f"w{i}", "engine": eng, "op": "memset", "writes": [{"tensor": "t"}], "attrs": {"value": i}}
            for i, eng in enumerate(["dve", "pool", "dve", "pool"])]
    pairs = [(r.first, r.second) for r in check_program(_program(tensors, body)).races]
    assert pairs == [("w0", "w1"), ("w0", "w3"), ("w1", "w2"), ("w2", "w3")]
