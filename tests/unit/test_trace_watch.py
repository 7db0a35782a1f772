"""A kernel that runs long or for ever while traced is never waited on in silence
(neuronsim.machine.nki.watch): a Python loop with no NKI call is stopped at its line after
``--max-idle`` seconds (exit 2, one located line, nothing written); a long trace says now and
then how far it has got and where the kernel is; a kernel that ends the process with
``os._exit`` is its error at its line, not a silent exit 0."""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from neuronsim.machine.nki import frontend, loader
from neuronsim.machine.nki.watch import TraceStalled, watched
from neuronsim.verify.cli import cli
from neuronsim_tests.bad_inputs import refused_in_one_line

KERNEL = '''\
import os
import time

import nki
import nki.language as nl


@nki.jit
def spins(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    spins = 0
    while True:
        try:
            spins += 1
        except Exception:  # a kernel's catch-all does not swallow the stop
            pass
    return out


@nki.jit
def exits(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    os._exit(0)
    return out


@nki.jit
def slow(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(3):
        nl.store(out, value=nl.load(x))
        time.sleep(0.7)
    return out


@nki.jit
def fast(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x))
    return out
'''


@pytest.fixture
def kernel(tmp_path: Path, monkeypatch) -> tuple[str, str, str]:
    monkeypatch.chdir(tmp_path)  # (run from the kernel's folder: its lines read k.py:12)
    path = tmp_path / "k.py"
    path.write_text(KERNEL)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.ones((128, 16), np.float32))
    return str(path), str(inputs), str(tmp_path / "traced.json")


@pytest.mark.parametrize("command", ["nki", "run"])
def test_a_loop_without_nki_calls_is_stopped_at_its_line(kernel, command: str) -> None:
    path, inputs, out = kernel
    args = [command, f"{path}::spins", "--inputs", inputs, "--max-idle", "2"]
    args += ["-o", out] if command == "nki" else []
    line = refused_in_one_line(args, "2 s of Python without an NKI call", "--max-idle", seconds=15.0)
    assert re.match(r"error: k\.py:1[2-6]: ", line), line  # a line of the loop (inside the kernel's try too)
    assert not Path(out).exists()


def test_os_exit_in_a_kernel_is_its_located_error(kernel) -> None:
    path, inputs, out = kernel
    refused_in_one_line(["nki", f"{path}::exits", "--inputs", inputs, "-o", out], "k.py:23", "os._exit(0)")
    assert not Path(out).exists()
    import os
    assert os._exit.__module__ == "posix"  # the stand-in is gone after the trace


def test_a_kernel_that_calls_nki_is_not_idle_however_slow(kernel) -> None:
    path, inputs, out = kernel
    # 0.7 s between NKI calls, a limit of 1.5 s (2.1 s in all): never 1.5 s without one, with room
    # for a loaded machine (a limit of 1 s failed beside a test run and four other jobs)
    result = CliRunner().invoke(cli, ["nki", f"{path}::slow", "--inputs", inputs, "-o", out, "--max-idle", "1.5"])
    assert result.exit_code == 0, result.output
    assert Path(out).exists()


def test_a_long_trace_says_where_it_is(kernel) -> None:
    path, _inputs, _out = kernel
    said: list[str] = []
    loaded = loader.load_kernel(f"{path}::slow")
    with watched(idle_seconds=None, say=said.append, every=0.5):
        frontend.trace(loaded, x=np.ones((128, 16), np.float32))
    assert said, "a two-second trace said nothing"
    # each names the kernel's line while a trace runs (between two traces, none: no kernel runs)
    assert all("instructions so far" in text and ("the kernel is at" not in text or "the kernel is at k.py:" in text)
               for text in said), said
    assert any("k.py:32" in text for text in said), said  # the sleep between the calls


def test_the_watch_stops_the_block_and_leaves_no_timer() -> None:
    import signal

    before = signal.getsignal(signal.SIGALRM)
    started = time.monotonic()
    with pytest.raises(TraceStalled) as stalled:
        with watched(idle_seconds=1, say=None):
            while True:
                pass
    assert time.monotonic() - started < 5
    assert stalled.value.seconds == 1 and stalled.value.where.line > 0
    assert signal.getsignal(signal.SIGALRM) is before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_trace_finishing_its_program_says_so_not_a_line_of_neuronsims(kernel, monkeypatch) -> None:
    """After the kernel returns, its program is grouped and validated: a progress line then named
    neuronsim's own groups.py or validate.py as "the kernel is at" (probe_bc)."""
    import time

    from neuronsim.machine.nki import frontend as fe

    path, _inputs, _out = kernel
    original = fe.validate_program

    def slow_validation(*args, **kwargs):
        time.sleep(1.2)
        return original(*args, **kwargs)

    monkeypatch.setattr(fe, "validate_program", slow_validation)
    said: list[str] = []
    with watched(idle_seconds=None, say=said.append, every=0.5):
        frontend.trace(loader.load_kernel(f"{path}::fast"), x=np.ones((128, 16), np.float32))
    assert any("the kernel has returned: finishing its program" in text for text in said), said
    assert not any("neuronsim" in text or "validate.py" in text for text in said), said
