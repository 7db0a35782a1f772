"""What escapes a trace: a kernel's own mistake is an NkiError at its line (exit 2), a failure
inside neuronsim's code an internal error naming the kernel line (exit 3), never a traceback."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from neuronsim.machine.ir.program import MemoryKind
from neuronsim.machine.nki import NkiError, load_kernel, trace
from neuronsim.machine.nki.errors import NkiInternalError
from neuronsim.machine.nki.tracer import Tracer
from neuronsim.verify.cli import cli

HELPER = '''import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


def staged(a, k):
    return nl.ndarray((nl.par_dim(128), 16), dtype=a.dtype, buffer=ncc.sbuf.mod_alloc(base_addr=k * 64))


@nki.jit
def twice(a):
    out = nl.ndarray((128, 32), dtype=a.dtype, buffer=nl.shared_hbm)
    for k in range(2):
        t = staged(a, k)
        t[...] = nl.load(a[:, nl.ds(k * 16, 16)])
        nl.store(out[:, nl.ds(k * 16, 16)], value=nl.multiply(t, 2.0))
    return out


@nki.jit
def divides_by_zero(a):
    out = nl.ndarray((128, 32), dtype=a.dtype, buffer=nl.shared_hbm)
    rows = a.shape[0] // 0
    return out


@nki.jit
def multiplies_hbm(a):
    out = nl.ndarray((128, 32), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.matmul(a, a, transpose_x=True))
    return out


def kernel_assert(condition, text):  # nki-library's helper, its assert the same line for every check
    assert condition, f"Kernel validation exception: {text}"


@nki.jit
def asserts_through_a_helper(a):
    out = nl.ndarray((128, 32), dtype=a.dtype, buffer=nl.shared_hbm)
    kernel_assert(a.shape[0] == 256, "needs 256 rows")
    return out


@nki.jit
def asserts_itself(a):
    out = nl.ndarray((128, 32), dtype=a.dtype, buffer=nl.shared_hbm)
    assert a.shape[0] == 256, "needs 256 rows"
    return out


@nki.jit
def multiplies_3d(a):
    out = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a.reshape((128, 2, 16)))
    nl.store(out, value=nl.matmul(t, t))
    return out


@nki.jit
def misses_an_operand(a):
    out = nl.ndarray((128, 32), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a[:, 0:32])
    nl.store(out, value=nisa.tensor_tensor(t))
    return out
'''


@pytest.fixture
def kernel_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "helper.py").write_text(HELPER)
    np.savez(tmp_path / "in.npz", a=np.random.default_rng(0).standard_normal((128, 32)).astype(np.float32))
    return tmp_path


def _line(text: str) -> int:
    return next(k + 1 for k, line in enumerate(HELPER.splitlines()) if text in line)


def test_a_direct_allocation_made_twice_at_one_line_is_two_tensors(kernel_file):
    traced = trace(load_kernel("helper.py::twice"), np.zeros((128, 32), np.float32))
    placed = {t.offset: n for n, t in traced.program.tensors.items()
              if not t.is_virtual and t.memory == MemoryKind.SBUF}
    assert placed == {0: "ndarray_8", 64: "ndarray_8_1"}  # the second is name_1, as automatic tiles are


def test_a_failure_inside_neuronsim_is_an_internal_error_naming_the_kernel_line(kernel_file, monkeypatch):
    monkeypatch.setattr(Tracer, "unique", lambda self, name: name)  # plant the bug of one name for two tiles
    with pytest.raises(NkiInternalError) as info:
        trace(load_kernel("helper.py::twice"), np.zeros((128, 32), np.float32))
    assert f"(tracing helper.py:{_line('return nl.ndarray')})" in str(info.value)
    assert isinstance(info.value.__cause__, ValueError)  # the traceback a developer asks for
    result = CliRunner().invoke(cli, ["nki", "helper.py::twice", "--inputs", "in.npz", "-o", "out.json"])
    assert result.exit_code == 3, result.output
    assert result.output.startswith("internal error: NkiInternalError: ValueError: tensor ")
    assert "declared twice" in result.output and "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize("func, text, message", [
    ("divides_by_zero", "// 0", "ZeroDivisionError: integer division or modulo by zero"),
    ("misses_an_operand", "nisa.tensor_tensor(t)", "nisa.tensor_tensor: tensor_tensor() missing 2 required"),
    ("multiplies_hbm", "nl.matmul(a, a", "nl.matmul: x is the HBM tensor a; its operands are tiles on chip"),
    ("multiplies_3d", "nl.matmul(t, t", "nl.matmul: x is a 3-D tile (128, 2, 16); without transpose_x=True"),
    ("asserts_through_a_helper", "kernel_assert(a.shape", "AssertionError in kernel_assert() at helper.py:"),
    ("asserts_itself", "assert a.shape", "AssertionError: needs 256 rows"),
])
def test_the_kernels_own_mistake_is_an_nki_error_at_its_line(kernel_file, func, text, message):
    with pytest.raises(NkiError) as info:
        trace(load_kernel(f"helper.py::{func}"), np.zeros((128, 32), np.float32))
    assert str(info.value).startswith(f"helper.py:{_line(text)}: {message}"), str(info.value)
    result = CliRunner().invoke(cli, ["nki", f"helper.py::{func}", "--inputs", "in.npz", "-o", "out.json"])
    assert result.exit_code == 2 and result.output.startswith(f"error: helper.py:{_line(text)}: "), result.output
