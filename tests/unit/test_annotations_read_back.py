"""neuronsim's own x- keys in a loaded program are checked for the shape their readers take
(machine/formats/annotations.py): a malformed one was an internal error in the pass that read
it (probe_al: x-spill in dma-place, x-in-order in schedule, x-fused-from in fuse-loops), or
ran on (x-peeled-from, x-unit-deps, x-nki-program)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from neuronsim.machine.formats.annotations import _CHECKS
from neuronsim_tests import ROOT

EXAMPLE = json.loads((ROOT / "examples" / "matmul_k_loop.json").read_text())
SCRIPT = str(Path(sys.executable).with_name("neuronsim"))


@pytest.mark.parametrize("where, key, value, passes", [
    (0, "x-in-order", "zz", "load-elim,alloc,schedule,build-fdeps"),
    (0, "x-spill", "zz", "dma-place"),
    (0, "x-spill", {"tensor": "t", "kind": "sideways"}, "alloc,dma-place"),
    (0, "x-psum-spill", [1], "alloc"),
    (0, "x-nki-unrolled-affine", [[1, 2, 3]], "alloc"),
    (0, "x-engines", [], "alloc"),
    (0, "x-nki-program", ["a"], "alloc"),
    (0, "x-nki-loop-reduce", "k", "alloc"),
    (3, "x-fused-from", 5, "build-fdeps,fuse-loops"),
    (3, "x-peeled-from", 5, "build-fdeps,fuse-loops{unequal=peel}"),
    (3, "x-unit-deps", 5, "build-fdeps{units=true}"),
    (3, "x-nki-range", 1, "alloc"),
])
def test_a_malformed_key_of_ours_is_a_located_error(tmp_path, where, key, value, passes):
    doc = json.loads(json.dumps(EXAMPLE))
    node = doc["body"][where]
    assert key in _CHECKS["loop" if "loop" in node else "instruction"]
    node[key] = value
    (tmp_path / "p.json").write_text(json.dumps(doc))
    run = subprocess.run([SCRIPT, "compile", "p.json", "-o", "o.json", "--passes", passes], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert run.stderr.startswith(f"error: body[{where}].{key}"), run.stderr
    assert len(run.stderr.splitlines()) == 1 and not (tmp_path / "o.json").exists()


def test_keys_of_ours_as_the_frontend_and_passes_write_them_load():
    from neuronsim.machine.formats.program_json import loads_program

    doc = json.loads(json.dumps(EXAMPLE))
    doc["body"][0].update({"x-in-order": [[0, 1, 2]], "x-spill": {"tensor": "t", "kind": "reload",
                                                                   "rematerialised": True},
                           "x-engines": ["dve", "act"], "x-nki-program": [1, 0], "x-nki-loop-reduce": ["k"],
                           "x-nki-unrolled-affine": [[0, "i", 1]], "x-someone-elses": "anything"})
    doc["body"][3].update({"x-fused-from": ["k", "k2"], "x-peeled-from": "k", "x-unit-deps": [],
                           "x-nki-range": "affine"})
    assert loads_program(json.dumps(doc)).body[0].extras["x-someone-elses"] == "anything"


def test_a_tile_no_spill_makes_room_for_is_named_as_the_program_names_it(tmp_path):
    # one instruction reads seven 32,000-byte tiles: the error named a tile alloc made up,
    # tensors.v4_reload1_reload1_..., not in the input (probe_al)
    tiles = {f"v{k}": {"memory": "sbuf", "dtype": "float32", "shape": [128, 8000]} for k in range(7)}
    body = [{"name": f"m{k}", "engine": "dve", "op": "memset", "writes": [{"tensor": f"v{k}"}], "attrs": {"value": 0}}
            for k in range(7)]
    body.append({"name": "use", "engine": "dve", "op": "opaque_sum", "reads": [{"tensor": f"v{k}"} for k in range(7)]})
    (tmp_path / "p.json").write_text(json.dumps({"format": "neuronsim.program/1", "tensors": tiles, "body": body}))
    run = subprocess.run([SCRIPT, "compile", "p.json", "-o", "o.json"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 2 and len(run.stderr.splitlines()) == 1, run.stderr
    path = run.stderr.split(": ")[1]
    assert path in {f"tensors.v{k}" for k in range(7)} and "reload" not in run.stderr.split("(reloaded")[0], run.stderr


def test_a_reloaded_traced_tile_is_named_by_its_declaration_and_the_programs_tile():
    # a traced kernel's reload tile named its made-up name beside the kernel's variable (probe_ak:
    # tile 'ndarray_N' (nl.ndarray, ndarray_N_reload1_1_reload1_reload1...))
    from neuronsim.machine.ir.program import MemoryKind, Tensor, frozen_mapping
    from neuronsim.passes.alloc_place import where_declared

    declared = {"x-source": {"file": "k.py", "line": 7, "call": "nl.ndarray", "variable": "acc"}}
    reload = Tensor("acc_7_reload1_reload1", MemoryKind.SBUF, "float32", (128, 64),
                    extras=frozen_mapping({**declared, "x-spill-of": "acc_7"}))
    assert where_declared(reload) == ("k.py:7", "tile 'acc' (nl.ndarray, acc_7)")
    plain = Tensor("v4_reload1", MemoryKind.SBUF, "float32", (128, 64), extras=frozen_mapping({"x-spill-of": "v4"}))
    assert where_declared(plain) == ("tensors.v4", "v4 (reloaded after a spill)")
