"""The NkiTensor view methods against their page, where a probe of generated kernels (388
kernels of views and tile grids) found the simulator silent or refusing:

* ``slice`` / ``select`` with a negative ``dim`` took dimension 0 (``(slice(None),) * -1`` is
  empty); the other view methods count a negative one from the end, and so do these now;
* ``is_contiguous()`` of an on-chip view counted the partition dimension (the page: "the
  partition dim (dim 0) is skipped ... evaluated per-partition over the free dims only");
* a DMA from a view read as another dtype copied the bytes where the ``dma_copy`` page converts
  ("first casting from src.dtype to float32, then from float32 to dst.dtype"; src.dtype being
  the view's), and one of another element size was refused by its byte count;
* a ``vector_select``'s view refused every further view, where the pages forbid only the
  selected dimension: slicing the others, ``flatten_dims(1, 2)``, ``reshape`` keeping
  ``shape[0]``, ``reshape_dim`` past dimension 0.
"""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki.errors import NkiError
from neuronsim.verify.nki.run import run_kernel

HEADER = "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n@nki.jit\n"
GATHER = ("    o = nl.ndarray((128, 1), dtype=nl.int32, buffer=nl.sbuf)\n"
          "    nisa.dma_copy(dst=o, src=b)\n")


def _run(tmp_path, body: str, *arrays):
    params = ", ".join("abcd"[:len(arrays)])
    (tmp_path / "k.py").write_text(f"{HEADER}def kernel({params}):\n{body}")
    result, report = run_kernel(f"{tmp_path / 'k.py'}::kernel", *arrays, seeds=(None,))
    assert not report.run.problems(), report.run.problems()[:3]
    return result


def _copy_out(shape, src: str, dtype: str = "a.dtype") -> str:
    return (f"    t = nl.ndarray({shape}, dtype={dtype}, buffer=nl.sbuf)\n"
            f"    nisa.dma_copy(dst=t, src={src})\n"
            f"    out = nl.ndarray({shape}, dtype={dtype}, buffer=nl.shared_hbm)\n"
            "    nisa.dma_copy(dst=out, src=t)\n    return out\n")


def test_select_and_slice_count_a_negative_dim_from_the_end(tmp_path):
    a = np.random.default_rng(0).standard_normal((8, 8, 8)).astype(np.float32)
    np.testing.assert_array_equal(_run(tmp_path, _copy_out((8, 8), "a.select(-1, 2)"), a), a[:, :, 2])
    b = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    np.testing.assert_array_equal(_run(tmp_path, _copy_out((64, 32), "a.slice(-1, 0, 64, 2)"), b), b[:, ::2])
    with pytest.raises(NkiError, match=r"select\(-4, \.\.\.\): the view has 3 dimensions"):
        _run(tmp_path, _copy_out((8, 8), "a.select(-4, 2)"), a)


def test_is_contiguous_on_chip_skips_the_partition_dimension(tmp_path):
    body = ("    t = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.sbuf)\n"
            "    nisa.dma_copy(dst=t, src=a)\n"
            "    f = 2.0 if t[:, 0:32].is_contiguous() else 3.0\n"
            "    g = 5.0 if t[:, 0:64:2].is_contiguous() else 1.0\n"
            "    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=f, op1=nl.multiply, operand1=g)\n"
            "    out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)\n"
            "    nisa.dma_copy(dst=out, src=t)\n    return out\n")
    a = np.random.default_rng(2).standard_normal((128, 64)).astype(np.float32)
    np.testing.assert_allclose(_run(tmp_path, body, a), a * 2.0, rtol=1e-6)


def test_a_dma_from_a_view_converts_the_values_it_reads(tmp_path):
    a = np.random.default_rng(3).standard_normal((16, 8)).astype(np.float32)
    out = _run(tmp_path, _copy_out((16, 8), "a.view(nl.int32)", "nl.float32"), a)
    np.testing.assert_array_equal(out, a.view(np.int32).astype(np.float32))
    out = _run(tmp_path, _copy_out((16, 32), "a.view(nl.uint8)", "nl.float32"), a)  # another element size
    np.testing.assert_array_equal(out, a.view(np.uint8).astype(np.float32))
    out = _run(tmp_path, _copy_out((16, 8), "a.view(nl.int32)", "nl.int32"), a)  # one dtype both sides: bits
    np.testing.assert_array_equal(out, a.view(np.int32))


@pytest.mark.parametrize("shape, view, expected", [
    ((256, 32), "a.vector_select(0, o).slice(1, 4, 12)", lambda g: g[:, 4:12]),
    ((256, 32), "a.vector_select(0, o)[:, 8:16]", lambda g: g[:, 8:16]),
    ((256, 4, 8), "a.vector_select(0, o).flatten_dims(1, 2)", lambda g: g.reshape(128, 32)),
    ((256, 4, 8), "a.vector_select(0, o).reshape((128, 32))", lambda g: g.reshape(128, 32)),
    ((256, 4, 8), "a.vector_select(0, o).select(1, 3)", lambda g: g[:, 3]),
    ((256, 4, 8), "a.vector_select(0, o).reshape_dim(2, (2, 4))", lambda g: g.reshape(128, 4, 2, 4)),
])
def test_views_of_a_vector_selects_other_dimensions(tmp_path, shape, view, expected):
    rng = np.random.default_rng(4)
    a = rng.standard_normal(shape).astype(np.float32)
    rows = rng.integers(0, 256, (128, 1)).astype(np.int32)
    want = np.ascontiguousarray(expected(a[rows[:, 0]]))
    np.testing.assert_array_equal(_run(tmp_path, GATHER + _copy_out(want.shape, view), a, rows), want)


@pytest.mark.parametrize("view, message", [
    ("a.vector_select(0, o).slice(0, 0, 64)", "the selected dimension"),
    ("a.vector_select(0, o).reshape((64, 64))", r"shape\[0\] must equal t.shape\[0\]"),
    ("a.vector_select(0, o).permute((1, 0, 2))", r"dims\[0\] must be 0"),
])
def test_the_selected_dimension_stays_whole_and_first(tmp_path, view, message):
    a = np.zeros((256, 4, 8), np.float32)
    rows = np.zeros((128, 1), np.int32)
    with pytest.raises(NkiError, match=message):
        _run(tmp_path, GATHER + _copy_out((128, 32), view), a, rows)
