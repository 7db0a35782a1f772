"""An index vector (``nl.arange(F)[None, :]``) used as a value.  Arithmetic with a tile made a
tile of its values; ``nl.broadcast_to``, ``nl.copy``, ``nl.static_cast`` and ``nl.expand_dims``
of one ended in an internal error (exit 3; a public agent's kernel log records the broadcast
as compiled and exact on a device), and ``nl.where`` refused one as not a number.  They take
its values now, and an ISA call handed one
where a tile goes is refused at its line, naming the parameter."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, load_kernel, trace
from neuronsim.verify.nki.run import run_kernel

KERNELS = '''import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def broadcast(x):
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x) + nl.broadcast_to(nl.arange(x.shape[1])[None, :], shape=x.shape))
    return out


@nki.jit
def copied(x):
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x) + nl.copy(nl.arange(x.shape[1])[None, :]))
    return out


@nki.jit
def cast(x):
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x) + nl.static_cast(nl.arange(x.shape[1])[None, :], nl.float32))
    return out


@nki.jit
def expanded(x):
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    row = nl.expand_dims(nl.arange(x.shape[1]), 0)
    nl.store(out, value=nl.load(x) + row)
    return out


@nki.jit
def selected(x):
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nl.where(t > 0.5, t, nl.arange(x.shape[1])[None, :]) + 0.0 * t)
    return out


@nki.jit
def isa_copy(x):
    out = nl.ndarray(x.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(out, value=nisa.tensor_copy(nl.arange(x.shape[1])[None, :]))
    return out
'''


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.py").write_text(KERNELS)


@pytest.mark.parametrize("func", ["broadcast", "copied", "cast", "expanded"])
def test_an_index_vector_used_as_a_value_is_its_values(kernels, func) -> None:
    x = np.random.default_rng(3).random((128, 64), dtype=np.float32)
    outputs, report = run_kernel(f"k.py::{func}", x, seeds=(None,))
    assert not report.problems()
    np.testing.assert_array_equal(outputs, x + np.arange(64, dtype=np.float32)[None, :])


def test_an_index_vector_selected_by_nl_where_is_its_values(kernels) -> None:
    x = np.random.default_rng(3).random((128, 64), dtype=np.float32)
    outputs, report = run_kernel("k.py::selected", x, seeds=(None,))
    assert not report.problems()
    np.testing.assert_array_equal(outputs, np.where(x > 0.5, x, np.arange(64, dtype=np.float32)[None, :]))


def test_an_isa_call_handed_an_index_vector_is_refused_at_its_line(kernels) -> None:
    with pytest.raises(NkiError) as info:
        trace(load_kernel("k.py::isa_copy"), np.zeros((128, 64), np.float32))
    message = str(info.value)
    line = next(n for n, text in enumerate(KERNELS.splitlines(), 1) if "nisa.tensor_copy(" in text)
    assert message.startswith(f"k.py:{line}: nisa.tensor_copy: src is an index vector (nl.arange)"), message
