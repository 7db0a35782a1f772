"""Two forms public kernels take: a kernel kept as a class's static method, named
``FILE.py::CLASS.METHOD``; and ``nl.store`` of a number, which a shipped neuronx-distributed-
inference kernel writes: stored as the compiler's tile of it (it was refused, and before that
reported as a ``memset`` of an internal tensor); anything else not a tile is refused at its line
in the API's words."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from neuronsim.machine.nki import NkiError, load_kernel, trace
from neuronsim.verify.cli import cli

KERNELS = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


class Circuit:
    @staticmethod
    @nki.jit
    def kernel(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.exp(nl.load(x)))
        return out


@nki.jit
def store_a_number(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=-9984.0)
    return out


@nki.jit
def store_into_an_element_and_a_row(x):
    out = nl.ndarray((2, 128, 1), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out[0, 0:128, 0:1], value=0.0)
    nl.store(out[1, 0:128, 0], value=2.0)
    nl.store(out[0, 5, 0], value=1.0)
    return out


@nki.jit
def store_a_list(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=[0.0])
    return out
'''


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.py").write_text(KERNELS)
    np.savez(tmp_path / "in.npz", x=np.linspace(-1, 1, 128 * 8, dtype=np.float32).reshape(128, 8))
    return tmp_path


def test_a_static_method_kernel_is_named_by_its_class(kernels) -> None:
    result = CliRunner().invoke(cli, ["run", "k.py::Circuit.kernel", "--inputs", "in.npz", "--out", "out"])
    assert result.exit_code == 0, result.output
    assert "race" in result.output


def test_a_misnamed_method_is_still_no_such_function(kernels) -> None:
    with pytest.raises(NkiError, match="no function 'Circuit.kernal' in the kernel file"):
        load_kernel("k.py::Circuit.kernal")


def test_storing_a_number_stores_a_tile_of_it(kernels) -> None:
    x = np.zeros((128, 8), np.float32)
    from neuronsim.verify.nki.run import run_kernel

    outputs, report = run_kernel("k.py::store_a_number", x, seeds=(None,))
    assert not report.problems()
    np.testing.assert_array_equal(outputs, np.full((128, 8), -9984.0, np.float32))


def test_storing_anything_else_is_refused_in_the_apis_words(kernels) -> None:
    x = np.zeros((128, 8), np.float32)
    with pytest.raises(NkiError, match=r"k.py:33: nl.store stores a tile, not list: store nl.full"):
        trace(load_kernel("k.py::store_a_list"), x)


def test_a_number_stored_into_an_element_or_a_row_of_dram_is_stored_too(kernels) -> None:
    """A number stored into one element (integer indices only) or one row (a single slice) of
    a DRAM tensor takes a (1, 1) or (rows, 1) tile: it was refused, or blamed on a 1-D tile the
    kernel never made, while the same number into a 2-D view was stored (a user's quantum
    circuit kernel stores ``1.0`` into ``state[0, 0, 0]``)."""
    from neuronsim.verify.nki.run import run_kernel

    outputs, report = run_kernel("k.py::store_into_an_element_and_a_row", np.zeros((128, 8), np.float32),
                                 seeds=(None,))
    assert not report.problems()
    want = np.zeros((2, 128, 1), np.float32)
    want[1] = 2.0
    want[0, 5, 0] = 1.0
    np.testing.assert_array_equal(outputs, want)
