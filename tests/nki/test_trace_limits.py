"""A kernel whose Python loops unroll without end is refused at the instance limit while it is
traced (not after hours), one that outgrows memory likewise, and a kernel's own ``sys.exit`` or
``MemoryError`` is an error at its line, never the command's exit status or a traceback."""

from __future__ import annotations

import re

import numpy as np
import pytest
from click.testing import CliRunner

from neuronsim.machine.nki import TraceTooLarge, load_kernel, trace
from neuronsim.machine.nki import tracer as tracer_module
from neuronsim.verify.cli import cli

KERNELS = '''import sys

import numpy as np
import nki
import nki.language as nl


@nki.jit
def endless(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in range(10**9):
        nl.store(out, value=nl.load(a))
    return out


@nki.jit
def exits(a):
    sys.exit(3)


@nki.jit
def allocates_too_much(a):
    np.zeros((10**8, 10**8))


@nki.jit
def raises_memory_error(a):
    raise MemoryError
'''


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.py").write_text(KERNELS)
    np.savez(tmp_path / "in.npz", a=np.ones((128, 64), np.float32))
    return tmp_path


def _line_of(text: str) -> int:
    return KERNELS.splitlines().index(next(line for line in KERNELS.splitlines() if text in line)) + 1


@pytest.mark.parametrize("command", [["run", "k.py::endless", "--out", "out"],
                                     ["nki", "k.py::endless", "-o", "p.json"]])
def test_an_endless_loop_is_refused_at_the_limit_with_its_line(kernels, command):
    result = CliRunner().invoke(cli, [*command, "--inputs", "in.npz", "--max-instances", "500"])
    assert result.exit_code == 2, result.output
    line = _line_of("nl.store(out, value=nl.load(a))")
    assert result.output.strip() == (f"error: k.py:{line}: the kernel traces to more than 500 instructions (its "
                                     "Python loops unroll): raise the limit with --max-instances N")
    assert not (kernels / "p.json").exists() and not (kernels / "out" / "endless.trace.json").exists()


def test_the_limit_counts_what_the_trace_emitted(kernels):
    kernel = load_kernel("k.py::endless")
    with pytest.raises(TraceTooLarge) as caught:
        trace(kernel, np.ones((128, 64), np.float32), max_instructions=41)
    assert caught.value.limit == 41 and caught.value.kind == "instructions"


def test_a_trace_that_outgrows_its_memory_is_refused(kernels, monkeypatch):
    readings = iter(range(0, 10**12, 1 << 20))  # the process grows by 1 MiB at every reading
    monkeypatch.setattr(tracer_module, "peak_rss", lambda: next(readings))
    monkeypatch.setattr(tracer_module, "_MEMORY_CHECK_EVERY", 16)
    with pytest.raises(TraceTooLarge) as caught:
        trace(load_kernel("k.py::endless"), np.ones((128, 64), np.float32), max_memory=8 << 20)
    assert caught.value.kind == "memory" and "0.0 GiB of memory" in str(caught.value)


def test_the_memory_limit_names_its_option(kernels, monkeypatch):
    readings = iter(range(0, 10**12, 1 << 30))
    monkeypatch.setattr(tracer_module, "peak_rss", lambda: next(readings))
    result = CliRunner().invoke(cli, ["run", "k.py::endless", "--inputs", "in.npz", "--out", "out",
                                      "--max-memory", "2G"])
    assert result.exit_code == 2, result.output
    # (2 GiB, or what the system can give now when that is less)
    assert re.search(r"the kernel traces to more than [\d.]+ GiB of memory \(its Python loops unroll\): raise the "
                     r"limit with --max-memory SIZE$", result.output.strip())


@pytest.mark.parametrize("func, message", [
    ("exits", "the kernel exits (sys.exit(3))"),
    ("allocates_too_much", "out of memory while tracing (Unable to allocate"),
    ("raises_memory_error", "out of memory while tracing (MemoryError), after 0 instructions"),  # was "()"
])
def test_the_kernels_exit_or_memory_error_is_an_error_at_its_line(kernels, func, message):
    result = CliRunner().invoke(cli, ["run", f"k.py::{func}", "--inputs", "in.npz", "--out", "out"])
    assert result.exit_code == 2, result.output
    line = _line_of({"exits": "sys.exit(3)", "allocates_too_much": "np.zeros((10**8"}.get(func, "raise MemoryError"))
    assert result.output.startswith(f"error: k.py:{line}: {message}")
    assert len(result.output.strip().splitlines()) == 1


def test_a_kernel_file_that_exits_while_imported_is_an_error_at_its_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "quits.py").write_text("import sys\n\nsys.exit(0)\n")
    result = CliRunner().invoke(cli, ["run", "quits.py::k", "--out", "out"])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == "error: quits.py:3: importing the kernel: sys.exit(0)"
