"""Under ``mask=``, ``nisa.iota``'s values and ``nisa.affine_select``'s predicate are the index
expression at each element's own indices.  The masked box's destination starts at its first
kept element and the expression was evaluated from 0 there: ``iota(i_p * 1000 + i_f,
mask=i_f >= 100)`` wrote 0, 1, 2 at columns 100, 101, 102, and ``affine_select`` took the
wrong branch on 9,440 of 30,000 elements (found by a helper's sweep)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.verify.nki.run import run_kernel

KERNEL = '''
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def numbered(x):
    out = nl.ndarray((100, 300), dtype=nl.float32, buffer=nl.shared_hbm)
    ip = nl.arange(100)[:, None]
    jf = nl.arange(300)[None, :]
    t = nl.full((100, 300), -1.0, dtype=nl.float32)
    t[ip, jf] = nisa.iota(ip * 1000 + jf, dtype=nl.float32, mask=MASK)
    nl.store(out, value=t)
    return out


@nki.jit
def selected(x):
    out = nl.ndarray((100, 300), dtype=nl.float32, buffer=nl.shared_hbm)
    ip = nl.arange(100)[:, None]
    jf = nl.arange(300)[None, :]
    data = nl.load(x)
    s = nl.full((100, 300), 9.0, dtype=nl.float32)
    s[ip, jf] = nisa.affine_select(pred=(jf - ip - 120 > 0), on_true_tile=data[ip, jf], on_false_value=-5.0,
                                   mask=MASK)
    nl.store(out, value=s)
    return out
'''

MASKS = {"columns and rows": ("(jf >= 100) & (jf < 250) & (ip < 64)", lambda p, f: (f >= 100) & (f < 250) & (p < 64)),
         "rows from 64": ("ip >= 64", lambda p, f: p >= 64)}


@pytest.mark.parametrize("mask", list(MASKS))
@pytest.mark.parametrize("func", ["numbered", "selected"])
def test_a_masked_index_expression_is_evaluated_at_each_elements_indices(tmp_path, func, mask):
    text, keep = MASKS[mask]
    (tmp_path / "k.py").write_text(KERNEL.replace("MASK", text))
    x = np.random.default_rng(10).standard_normal((100, 300)).astype(np.float32)
    out, report = run_kernel(f"{tmp_path / 'k.py'}::{func}", x, seeds=(None,))
    assert not report.run.problems(), report.run.problems()[:3]
    p, f = np.indices((100, 300))
    if func == "numbered":
        expected = np.where(keep(p, f), p * 1000.0 + f, -1.0)
    else:
        expected = np.where(keep(p, f), np.where(f - p - 120 > 0, x, -5.0), 9.0)
    np.testing.assert_array_equal(out, expected.astype(np.float32))
