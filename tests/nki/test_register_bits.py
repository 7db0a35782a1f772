"""A register holds up to 32 bits (the nisa.register_load page): loaded from a float tile it
holds the float's bit pattern, as the device's register load reads it.  It used to hold the
float converted to an integer (3.0 -> 3), so a kernel that kept DMA row offsets in float32
ran as if they were integers."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import neuronsim.verify.nki  # noqa: F401  (registers the device-value reader)
from neuronsim.machine.nki import load_kernel
from neuronsim.verify.nki.run import run_kernel

KERNEL = '''\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def bits(x):
    t = nl.ndarray((1, 1), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    r = nisa.register_alloc()
    nisa.register_load(r, t)
    o = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.register_store(o, r)
    out = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=o)
    return out
'''


def test_a_float_tile_loads_its_bit_pattern(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(KERNEL)
    x = np.array([[3.0]], np.float32)
    outputs, report = run_kernel(load_kernel(f"{tmp_path / 'k.py'}::bits"), x, seeds=(None,))
    assert not report.problems()
    assert int(np.asarray(outputs).reshape(-1)[0]) == int(x.view(np.int32)[0, 0]) == 1077936128


def test_an_integer_tile_loads_its_value(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(KERNEL)
    outputs, _report = run_kernel(load_kernel(f"{tmp_path / 'k.py'}::bits"), np.array([[7]], np.int32), seeds=(None,))
    assert int(np.asarray(outputs).reshape(-1)[0]) == 7
