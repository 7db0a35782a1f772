"""A mask written with Python's ``and`` (the nc_match_replace8 page's example 3) keeps its
second comparison alone, as Python reads the first as true: said as a warning at the line
(the known-issues page combines masks with ``&``); ``&`` keeps both, silently."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import load_kernel, trace
from neuronsim.verify.nki.findings import call_findings

KERNEL = '''\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def copied(x):
    out = nl.ndarray((8, 8), dtype=x.dtype, buffer=nl.shared_hbm)
    ix, iy = nl.mgrid[0:8, 0:8]
    t = nl.load(x)
    o = nl.zeros((8, 8), dtype=x.dtype)
    o[ix, iy] = nl.copy(t[ix, iy], mask=({mask}))
    nl.store(out, o)
    return out
'''


@pytest.mark.parametrize("mask, rows, warned", [("ix < 2 and iy < 4", 8, True), ("(ix < 2) & (iy < 4)", 2, False)])
def test_a_mask_read_as_a_truth_value_is_said_at_its_line(tmp_path, monkeypatch, mask, rows, warned):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.py").write_text(KERNEL.format(mask=mask))
    traced = trace(load_kernel("k.py::copied"), np.ones((8, 8), np.float32))
    said = [f.describe() for f in call_findings(traced) if f.kind == "mask"]
    assert said == (["k.py:11: a comparison of indices read as a Python truth value (and, or, not, if) is true: "
                     "`a and b` keeps b alone and `a or b` keeps a alone; combine masks with & and | (NKI's "
                     "known-issues page: masks are combined with &, not `and`)"] if warned else [])
    copies = [inst for inst, _ in traced.program.instructions() if inst.op != "dma_copy" and inst.op != "memset"]
    assert [inst.writes[0].partitions[1] if inst.writes[0].partitions else 8 for inst in copies] == [rows]
