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


OFFSET_KERNEL = '''\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def float_row_offset(x, w, again=True):
    off = nl.ndarray((1, 1), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=off, src=x)
    r = nisa.register_alloc()
    nisa.register_load(r, off)
    t = nl.ndarray((4, 8), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=w.ap(pattern=[[8, 4], [1, 8]], offset=0, scalar_offset=r, indirect_dim=0))  # dma
    if again:  # a second device read runs the program traced so far, the DMA above included
        r2 = nisa.register_alloc()
        nisa.register_load(r2, off)
    out = nl.ndarray((4, 8), dtype=w.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
'''


def test_a_float_row_offset_reaches_past_its_tensor_at_the_dma_line(tmp_path: Path) -> None:
    import pytest

    from neuronsim.machine.nki import NkiError, trace

    (tmp_path / "k.py").write_text(OFFSET_KERNEL)
    line = next(n for n, text in enumerate(OFFSET_KERNEL.splitlines(), 1) if text.endswith("# dma"))
    w = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
    for again in (True, False):  # found while the trace reads the device, or once it ends
        with pytest.raises(NkiError) as err:
            trace(load_kernel(f"{tmp_path / 'k.py'}::float_row_offset"), np.array([[2.0]], np.float32), w,
                  again=again)
        text = str(err.value)
        assert f"k.py:{line}: nisa.dma_copy: footprint reaches elements" in text, text
        assert "a register loaded from a float tile holds its bit pattern (2.0), 1,073,741,824" in text, text
    outputs, _report = run_kernel(load_kernel(f"{tmp_path / 'k.py'}::float_row_offset"),
                                  np.array([[2]], np.int32), w, seeds=(None,))
    np.testing.assert_array_equal(outputs, w[2:6])  # an int32 offset: rows 2 to 5
