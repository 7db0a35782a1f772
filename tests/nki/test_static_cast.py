"""``nl.static_cast(x, dtype)``, which no API page documents and public code calls two ways: on
numpy arrays in test harnesses (the values converted, numpy's ``astype``) and on tiles inside
kernels (a top-k kernel's ``nl.static_cast(idx8[:, 0:1], nl.uint32)`` after
``nisa.nc_find_index8``).  It was refused as a reinterpretation of bits; it converts values, as
C++'s ``static_cast`` does, which inside a kernel is the copy ``nl.copy(x, dtype=)`` makes."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from neuronsim.machine.nki import language
from neuronsim.verify.nki.run import run_kernel

KERNELS = '''import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def argmax(x):
    out = nl.ndarray((128, 1), dtype=nl.int32, buffer=nl.shared_hbm)
    t = nl.load(x)
    top8 = nisa.max8(src=t)
    idx8 = nisa.nc_find_index8(data=t, vals=top8)
    nl.store(out, value=nl.static_cast(idx8[:, 0:1], nl.int32))
    return out


@nki.jit
def to_bfloat16(x):
    out = nl.ndarray(x.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
    nl.store(out, value=nl.static_cast(nl.load(x), nl.bfloat16))
    return out
'''


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.py").write_text(KERNELS)


def test_a_tile_is_converted_by_value(kernels) -> None:
    x = np.random.default_rng(7).standard_normal((128, 64)).astype(np.float32)
    outputs, report = run_kernel("k.py::argmax", x, seeds=(None,))
    assert not report.problems()
    np.testing.assert_array_equal(outputs, np.argmax(x, axis=1).astype(np.int32)[:, None])
    outputs, report = run_kernel("k.py::to_bfloat16", x, seeds=(None,))
    assert not report.problems()
    assert outputs.dtype == ml_dtypes.bfloat16  # rounded values, not float32 bits read as bf16
    np.testing.assert_array_equal(outputs, x.astype(ml_dtypes.bfloat16))


def test_a_numpy_array_is_converted_as_numpy_converts_it() -> None:
    cast = language.static_cast(np.array([1.25, 3.0, 1.3]), "bfloat16")
    assert cast.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(cast, np.array([1.25, 3.0, 1.3]).astype(ml_dtypes.bfloat16))
