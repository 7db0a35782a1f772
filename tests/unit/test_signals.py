"""Issue 23, part 1: SIGINT and SIGTERM end every command promptly with 130 / 143.

Each long command runs as the console script does (``main()`` in a fresh interpreter); the
signal comes mid-run; the process must end within a few seconds (workers included), with one
line (``interrupted`` / ``terminated``) on standard error, no traceback, and its output folder
as it was (no new file, no temporary file left, the old output untouched).  A signal during
start-up (while the commands load) ends the same way.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from neuronsim_tests.bad_inputs import valid_text

ROOT = Path(__file__).resolve().parents[2]
MAIN = "from neuronsim.verify.cli import main; main()"
STATUS = {signal.SIGINT: (130, "interrupted"), signal.SIGTERM: (143, "terminated"), signal.SIGHUP: (129, "hung up")}
SIGNALS = pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["sigint", "sigterm"])
#: SIGHUP too (a closed terminal or ssh session): the process died of it, no line, its --out folder left.
WITH_SIGHUP = pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP],
                                      ids=["sigint", "sigterm", "sighup"])
#: Seconds a signalled command may take to end (its watchdog ends it after 3 s at the latest).
PROMPT = 8.0


def _spawn(*args: str, cwd: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-c", MAIN, *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _long_loop(folder: Path, deps: bool = True) -> Path:
    """The shared valid program with a loop of 200,000 iterations: tens of seconds of work."""
    doc = json.loads(valid_text())
    doc["body"][0]["trip_count"] = 200_000
    if not deps:
        for node in doc["body"][0]["body"]:
            node.pop("deps", None)
    path = folder / ("long.json" if deps else "long-nodeps.json")
    path.write_text(json.dumps(doc))
    return path


def _listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _signal_mid_run(args: list[str], signum: int, cwd: Path, out: Path, wait: float = 3.0) -> None:
    before = _listing(out)
    proc = _spawn(*args, cwd=cwd)
    time.sleep(wait)
    assert proc.poll() is None, "the command ended before the signal: make its work longer"
    sent = time.monotonic()
    os.killpg(proc.pid, signum)  # as a terminal's Ctrl-C or ``timeout`` does: the whole group, workers too
    try:
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    took = time.monotonic() - sent
    status, line = STATUS[signum]
    assert proc.returncode == status, stderr
    assert "Traceback" not in stderr and stderr.splitlines()[-1] == line, stderr
    assert took < PROMPT, took
    assert _listing(out) == before  # nothing written, nothing half-written, no temporary file


@pytest.fixture
def out(tmp_path: Path) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "old.json").write_text("old output\n")
    return folder


@WITH_SIGHUP
def test_fuzz_ends_with_its_workers(tmp_path, out, signum):
    _signal_mid_run(["fuzz", "--examples", "2000", "--workers", "2", "--out", str(out)], signum, tmp_path, out)
    time.sleep(0.5)
    workers = subprocess.run(["pgrep", "-f", f"--out {out}"], capture_output=True, text=True).stdout.split()
    assert workers == []  # no worker outlives the run


@SIGNALS
def test_fuzz_in_one_process(tmp_path, out, signum):
    _signal_mid_run(["fuzz", "--examples", "2000", "--workers", "1", "--out", str(out)], signum, tmp_path, out)


@SIGNALS
def test_simulate(tmp_path, out, signum):
    program = _long_loop(tmp_path)
    _signal_mid_run(["simulate", str(program), "--trace", str(out / "old.json")], signum, tmp_path, out)


@SIGNALS
def test_compile(tmp_path, out, signum):
    program = _long_loop(tmp_path, deps=False)
    _signal_mid_run(["compile", str(program), "-o", str(out / "old.json")], signum, tmp_path, out)


@SIGNALS
def test_footprint(tmp_path, out, signum):
    program = _long_loop(tmp_path)
    _signal_mid_run(["footprint", str(program), "--plot", str(out / "plot.png")], signum, tmp_path, out)


@pytest.mark.parametrize("delay", [0.1, 0.2, 0.4])
def test_a_signal_during_start_up_exits_with_one_line(tmp_path, delay):
    """While the commands load (numpy, simpy, ...): exit 130 with ``interrupted``, never a
    ``KeyboardInterrupt`` traceback or a death by the signal.  The program takes seconds to
    check, so that the latest signal still finds the command running when its imports come
    from compiled bytecode (a check of the small program was over in 0.36 s: the command ended
    0 before the signal came)."""
    proc = _spawn("check", str(_long_loop(tmp_path)), "--json", cwd=tmp_path)
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130 and stderr.splitlines() == ["interrupted"], (proc.returncode, stderr)
    assert json.loads(stdout)["format"] == "neuronsim.error/1"


def test_a_signal_raised_inside_a_gc_callback_prints_no_traceback(monkeypatch, capsys):
    # Python cannot raise out of a gc callback: it hands the exception to sys.unraisablehook,
    # which would print a traceback; the signal stays received (the watchdog and
    # raise_if_received still end the process with its one line)
    import types

    from neuronsim.verify.cli import signals

    seen = []
    monkeypatch.setattr(signals, "_previous_unraisable", seen.append)
    monkeypatch.setattr(signals, "_received", [signal.SIGTERM])
    signals._unraisable(types.SimpleNamespace(exc_value=signals.Terminated()))
    assert seen == [] and capsys.readouterr().err == ""
    other = types.SimpleNamespace(exc_value=ValueError("a real one"))
    signals._unraisable(other)
    assert seen == [other]  # anything else still reaches the previous hook
    with pytest.raises(signals.Terminated):
        signals.raise_if_received()


_FORK_AFTER_SIGNAL = '''
import os, signal, sys
from neuronsim.verify.cli import signals
signals.install_handlers()
signals._received.append(signal.SIGTERM)  # the command is unwinding from a SIGTERM
pid = os.fork()
if pid == 0:  # a worker a pool forks now, to replace one the signal killed
    fine = signals.received() is None and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    os._exit(0 if fine else 1)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
'''


def test_a_child_forked_after_the_signal_still_heeds_sigterm():
    """The parent's record of the signal is not inherited: with it, the forked child's handler
    did nothing for SIGTERM, and a pool worker made while the command unwound outlived it."""
    done = subprocess.run([sys.executable, "-c", _FORK_AFTER_SIGNAL], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


_STUCK_CHILD = '''
import multiprocessing, signal, sys, time
from neuronsim.verify.cli import signals


def deaf(path):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # stuck where SIGTERM is not heeded
    with open(path, "w") as f:
        f.write(str(multiprocessing.current_process().pid))
    time.sleep(120)


if __name__ == "__main__":
    signals.install_handlers()
    child = multiprocessing.get_context("fork").Process(target=deaf, args=(sys.argv[1],))
    child.start()
    time.sleep(1.0)
    try:
        signal.raise_signal(signal.SIGTERM)
    except signals.Terminated:
        time.sleep(120)  # unwinding that never ends: the watchdog's case
'''


def test_the_watchdog_kills_a_child_deaf_to_sigterm(tmp_path):
    script, pid_file = tmp_path / "stuck.py", tmp_path / "child.pid"
    script.write_text(_STUCK_CHILD)
    done = subprocess.run([sys.executable, str(script), str(pid_file)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 143 and done.stderr.splitlines() == ["terminated"], done.stderr
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and Path(f"/proc/{child}").exists() and \
            "zombie" not in Path(f"/proc/{child}/status").read_text():
        time.sleep(0.05)
    status = Path(f"/proc/{child}/status")
    assert not status.exists() or "zombie" in status.read_text(), "the child outlived the command"


DEAF_KERNEL = '''import signal
import time
import nki
import nki.language as nl

signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
signal.alarm(1)


@nki.jit
def add1(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    open("started", "w").close()
    time.sleep(60)
    nl.store(out, value=nl.add(nl.load(x), 1.0))
    return out
'''


@WITH_SIGHUP
def test_a_kernel_that_ignores_the_signals_still_ends_with_them(tmp_path, out, signum):
    """A kernel's own ``signal.signal(SIGTERM, SIG_IGN)`` (or SIGINT, or an alarm of its own)
    does not take the signals from neuronsim: the command still ends with 143 / 130 while the
    kernel sleeps (it outlived SIGTERM before, and only SIGKILL ended it)."""
    import numpy as np

    (tmp_path / "deaf.py").write_text(DEAF_KERNEL)
    np.savez(tmp_path / "in.npz", x=np.ones((128, 64), np.float32))
    before = _listing(out)
    proc = _spawn("run", "deaf.py::add1", "--inputs", "in.npz", "--out", str(out), cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "started").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        time.sleep(1.5)  # past the kernel's own alarm: SIGALRM is the --max-idle watch's, not an end
        os.killpg(proc.pid, signum)
        _stdout, stderr = proc.communicate(timeout=PROMPT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    status, line = STATUS[signum]
    assert proc.returncode == status, stderr[-2000:]
    assert stderr.splitlines()[-1] == line and "Traceback" not in stderr, stderr[-2000:]
    assert _listing(out) == before


LONG_KERNEL = '''import nki
import nki.language as nl


@nki.jit
def long_add(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.sequential_range(30000):
        nl.store(out, value=nl.add(nl.load(x), 1.0))
    return out
'''


@WITH_SIGHUP
def test_a_kernel_run_takes_back_its_folder_and_files(tmp_path, out, signum):
    """``run`` of a kernel signalled mid-run leaves nothing: not the ``--out`` folder it made,
    nor a trace and footprint written before its report (only ``fuzz`` keeps, on a signal,
    the failures it found)."""
    import numpy as np

    (tmp_path / "long.py").write_text(LONG_KERNEL)
    np.savez(tmp_path / "in.npz", x=np.ones((128, 64), np.float32))
    _signal_mid_run(["run", "long.py::long_add", "--inputs", "in.npz", "--out", str(out / "made"),
                     "--report", str(out / "r.html")], signum, tmp_path, out)


SWALLOWING_KERNEL = '''import nki
import nki.language as nl


@nki.jit
def add1(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    open("started", "w").close()
    while True:
        try:
            while True:
                pass
        except BaseException:  # takes every stop there is
            pass
    return out
'''


def _swallowing(tmp_path: Path, out: Path, *options: str) -> subprocess.Popen:
    import numpy as np

    (tmp_path / "swallow.py").write_text(SWALLOWING_KERNEL)
    np.savez(tmp_path / "in.npz", x=np.ones((128, 64), np.float32))
    proc = _spawn("run", "swallow.py::add1", "--inputs", "in.npz", "--out", str(out / "made"), *options, cwd=tmp_path)
    deadline = time.monotonic() + 60
    while not (tmp_path / "started").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()[1][-2000:]
    return proc


def _ended(proc: subprocess.Popen, timeout: float) -> str:
    try:
        return proc.communicate(timeout=timeout)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


@SIGNALS
def test_a_kernel_that_swallows_the_signal_still_ends_with_it_and_leaves_nothing(tmp_path, out, signum):
    """A catch-all ``except:`` in the kernel's loop swallows the signal's exception: the
    watchdog ends the process with the signal's status and takes back the ``--out`` folder the
    command made (it was left behind)."""
    before = _listing(out)
    proc = _swallowing(tmp_path, out)
    os.killpg(proc.pid, signum)
    stderr = _ended(proc, PROMPT)
    status, line = STATUS[signum]
    assert proc.returncode == status and stderr.splitlines()[-1] == line, stderr[-2000:]
    assert _listing(out) == before


def test_a_kernel_that_swallows_the_idle_stop_ends_at_its_line(tmp_path, out):
    """``--max-idle`` stops the kernel's loop with an exception its catch-all ``except:`` takes:
    the run went on for ever (only SIGKILL ended it).  Now the process ends a few seconds
    later, exit 2, one line at the kernel's line, nothing left in ``--out``."""
    before = _listing(out)
    proc = _swallowing(tmp_path, out, "--max-idle", "1")
    stderr = _ended(proc, 20)
    assert proc.returncode == 2, stderr[-2000:]
    (last,) = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert last.startswith("error: swallow.py:11: ") and "caught that stop" in last, last
    assert "Traceback" not in stderr and _listing(out) == before


MASKING_KERNEL = '''import signal
import _signal
import nki


@nki.jit
def masked(x):
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM, signal.SIGINT, signal.SIGTERM])
    while True:
        pass


@nki.jit
def untimed(x):
    _signal.setitimer(signal.ITIMER_REAL, 0)  # the C module's name, past the guarded signal.setitimer
    while True:
        pass
'''


@pytest.mark.parametrize("kernel", ["masked", "untimed"])
def test_a_kernel_that_blocks_the_signals_or_stops_the_timer_is_still_stopped(tmp_path, out, kernel):
    """probe_r F1: a kernel blocking SIGALRM / SIGINT / SIGTERM with ``pthread_sigmask`` (or
    stopping the real-time timer through ``_signal``) switched ``--max-idle`` off, and SIGTERM
    with it: the command hung until SIGKILL."""
    import numpy as np

    (tmp_path / "k.py").write_text(MASKING_KERNEL)
    np.savez(tmp_path / "in.npz", x=np.ones((128, 4), np.float32))
    before = _listing(out)
    proc = _spawn("run", f"k.py::{kernel}", "--inputs", "in.npz", "--out", str(out), "--max-idle", "2", cwd=tmp_path)
    try:
        _stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 2 and "--max-idle" in stderr and "Traceback" not in stderr, stderr[-2000:]
    assert _listing(out) == before


FINALISER_KERNEL = '''import pathlib, time
import nki
import nki.language as nl


class Slow:
    def __del__(self):
        pathlib.Path("in_finaliser").write_text("")
        time.sleep(20)  # the signal arrives here: its exception is raised inside the finaliser


@nki.jit
def add1(x):
    Slow()
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(x), 1.0))
    return out
'''


@pytest.mark.parametrize("as_json", [False, True], ids=["table", "json"])
def test_a_signal_that_lands_in_a_finaliser_ends_the_run_with_its_one_line(tmp_path, as_json):
    """Python hands an exception raised in a ``__del__`` to ``sys.unraisablehook``: the command's
    own hook, installed after the signals' one, took it and warned "a finaliser raised
    Terminated" before the "terminated" line (probe_re U1, 2 of 30 runs of fuzz); the run went on,
    and under --json wrote its result document before the error document (probe_ad)."""
    import numpy as np

    (tmp_path / "fin.py").write_text(FINALISER_KERNEL)
    np.savez(tmp_path / "in.npz", x=np.ones((128, 64), np.float32))
    proc = _spawn("run", "fin.py::add1", "--inputs", "in.npz", "--out", str(tmp_path / "out"),
                  *(["--json"] if as_json else []), cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "in_finaliser").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        os.killpg(proc.pid, signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=PROMPT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert (proc.returncode, stderr.splitlines()[-1:]) == (143, ["terminated"]), stderr[-2000:]
    assert "warning" not in stderr
    if as_json:
        assert json.loads(stdout)["format"] == "neuronsim.error/1"  # one document: the error's
