"""An affine loop whose iterations write one HBM scratch tensor declared in its body: the
``carried`` WAW finding's advice to declare the tile inside the loop misled (probe_s: the
tensor already was), since an HBM tensor is one buffer for every iteration wherever it is
declared.  The advice for an on-chip tile written by every iteration stays."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from neuronsim.machine.nki import load_kernel, trace
from neuronsim.verify.nki.findings import carried_findings

KERNELS = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def hbm_scratch(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for b in nl.affine_range(x.shape[0]):
        scratch = nl.ndarray(x.shape[1:], dtype=x.dtype, buffer=nl.hbm)
        nl.store(scratch, value=nl.multiply(nl.load(x[b]), 2.0))
        nl.store(out[b], value=nl.load(scratch))
    return out


@nki.jit
def one_tile(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape[1:], dtype=x.dtype, buffer=nl.sbuf)
    for b in nl.affine_range(x.shape[0]):
        t[...] = nl.load(x[b])
        nl.store(out[b], value=t)
    return out
'''


def _waw(tmp_path: Path, name: str) -> str:
    (tmp_path / "k.py").write_text(KERNELS)
    traced = trace(load_kernel(f"{tmp_path / 'k.py'}::{name}"), np.ones((2, 128, 8), np.float32))
    return " | ".join(f.describe() for f in carried_findings(traced.program) if f.dependence == "WAW")


def test_an_hbm_scratch_written_by_every_iteration_is_not_told_to_move_into_the_loop(tmp_path: Path) -> None:
    said = _waw(tmp_path, "hbm_scratch")
    assert "an HBM tensor is one buffer for every iteration" in said and "declare the tile inside" not in said
    assert "index the destination by the loop variable" in said and "sequential_range" in said


def test_an_sbuf_tile_written_by_every_iteration_keeps_its_advice(tmp_path: Path) -> None:
    said = _waw(tmp_path, "one_tile")
    assert "declare the tile inside the loop" in said and "HBM tensor is one buffer" not in said
