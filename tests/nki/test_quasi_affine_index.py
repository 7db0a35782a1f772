"""``//`` and ``%`` of an index vector by a positive integer (probe_au): Autocomp's conv1d kernels,
measured on trn1, store a flat index ``i`` as ``(i // K1, i % K1)`` with ``i < K1``, which was
refused as no affine expression.  Where the quotient or remainder is affine over the index's
range it is that affine expression; elsewhere (``i % 2``, the errors page's own example) it is
still refused at its line."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, load_kernel, trace
from neuronsim.machine.nki.indexing import arange
from neuronsim.verify.nki.run import run_kernel

KERNELS = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def store_flat(x):  # x (128, 1, 512): the flat index i < 512 stored at (i // 512, i % 512) = (0, i)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x[:, 0, :])
    i_p, i_f = nl.arange(128)[:, None], nl.arange(512)[None, :]
    nl.store(out[i_p, i_f // 512, i_f % 512], t[i_p, i_f])
    return out


@nki.jit
def load_by_rows_and_columns(x):  # x (64, 4): k = 4 p + f, read back as x[k // 4, k % 4]
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    k = nl.arange(64)[:, None] * 4 + nl.arange(4)[None, :]
    nl.store(out, nl.load(x[k // 4, k % 4]))
    return out


@nki.jit
def every_second_row(x):
    out = nl.ndarray((64, x.shape[1]), dtype=x.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.arange(128)[:, None], nl.arange(x.shape[1])[None, :]
    nl.store(out[i_p // 2, i_f], nl.load(x[i_p, i_f]))
    return out
'''


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.py").write_text(KERNELS)


@pytest.mark.parametrize("func, shape", [("store_flat", (128, 1, 512)), ("load_by_rows_and_columns", (64, 4))])
def test_a_quotient_and_remainder_affine_over_the_range_index_as_they_read(kernels, func, shape) -> None:
    x = np.random.default_rng(3).random(shape, dtype=np.float32)
    outputs, report = run_kernel(f"k.py::{func}", x, seeds=(None,))
    assert not report.problems()
    np.testing.assert_array_equal(outputs, x)


def test_a_quotient_that_is_no_affine_expression_is_refused_at_its_line(kernels) -> None:
    with pytest.raises(NkiError, match=r"k\.py:26: an index vector in %, //, / or \*\* is no affine expression"):
        trace(load_kernel("k.py::every_second_row"), np.zeros((128, 8), np.float32))


@pytest.mark.parametrize("divisor", [0, -4, 2.0])
def test_only_a_positive_integer_divides_an_index_vector(divisor) -> None:
    with pytest.raises(NkiError, match="no affine expression"):
        arange(64)[:, None] // divisor


def test_the_folded_expression_keeps_every_iterator_of_the_grid() -> None:
    k = arange(64)[:, None] * 4 + arange(4)[None, :] + 8
    rows, columns = k // 4, k % 4
    assert (rows.const, [c for _it, c in rows.terms]) == (2, [1, 0])
    assert (columns.const, [c for _it, c in columns.terms]) == (0, [0, 1])
    assert rows.shape == columns.shape == (64, 4)


def test_divmod_is_the_quotient_and_the_remainder() -> None:
    # divmod(i, K) was refused where i // K and i % K were taken (probe_az)
    k = arange(64)[:, None] * 4 + arange(4)[None, :]
    rows, columns = divmod(k, 4)
    assert [c for _it, c in rows.terms] == [1, 0] and [c for _it, c in columns.terms] == [0, 1]
    with pytest.raises(NkiError, match="no affine expression"):
        divmod(arange(64)[:, None], 2)


def test_a_numpy_integer_divides_and_multiplies_as_an_int() -> None:
    # `i // np.int64(K)` was refused (probe_az), and `i * np.int64(2)` before it
    i = arange(64)[:, None]
    assert [c for _it, c in (i // np.int64(64)).terms] == [0] and [c for _it, c in (i * np.int64(2)).terms] == [2]


def test_a_large_grid_is_checked_a_slab_at_a_time() -> None:
    # 128 x 40,000 points passed the evaluation's limit and was refused as no affine expression (probe_az)
    k = arange(128)[:, None] * 40000 + arange(40000)[None, :]
    rows, columns = k // 40000, k % 40000
    assert [c for _it, c in rows.terms] == [1, 0] and [c for _it, c in columns.terms] == [0, 1]
    with pytest.raises(NkiError, match=r"over 128,000,000 index points: too many to check"):
        (arange(128)[:, None] * 1_000_000 + arange(1_000_000)[None, :]) // 7
