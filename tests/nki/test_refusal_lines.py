"""A call whose result is emitted later (when a later statement uses it) is refused at its own
line, not at the line that happened to use it (``nisa.affine_select`` of no comparison, three
lines before its result is read, was reported at the next NKI call's line)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, load_kernel, trace

KERNEL = '''\
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def k(x):
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(128)[None, :]
    t = nl.load(x)
    d = nisa.affine_select(i_p + i_f, t, 0)  # refused: no comparison
    v = nl.multiply(t, 2.0)
    out = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(v, d))
    return out
'''


def test_a_held_back_call_is_refused_at_its_own_line(tmp_path: Path) -> None:
    path = tmp_path / "late.py"
    path.write_text(KERNEL)
    with pytest.raises(NkiError) as err:
        trace(load_kernel(f"{path}::k"), np.zeros((128, 128), np.float32))
    assert str(err.value).startswith("late.py:11: nisa.affine_select takes one affine comparison"), str(err.value)
