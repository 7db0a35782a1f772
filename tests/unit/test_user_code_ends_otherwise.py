"""A user's code (a kernel, a ``--reference``, a pass given by its address) that ends the process
by another name than ``os._exit``: ``posix._exit``, ``os.abort()``, the ``os.exec*`` family, a
signal to itself.  Each got past the ``os._exit`` guard: the run ended 0 (or died of the
signal), nothing said, the ``--out`` folder left.  Now one ``error:`` line at the user's line,
exit 2, nothing written.  Each case runs in a child process: a regression there must not end
the test run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from neuronsim_tests.bad_inputs import one_error_line, valid_text

KERNEL = '''import os
import posix
import signal
import nki
import nki.language as nl


@nki.jit
def add1(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    {body}
    nl.store(out, value=nl.add(nl.load(x), 1.0))
    return out
'''
GOOD = KERNEL.replace("    {body}\n", "")
USER = "import os\nimport posix\nimport signal\n\n\ndef {name}(x):\n    {body}\n"
MAIN = "from neuronsim.verify.cli import main; main()"
ENDS = pytest.mark.parametrize("body, call", [
    ("posix._exit(0)", "os._exit(0)"),
    ("os.execv('/bin/true', ['true'])", "os.execv('/bin/true', ...)"),
    ("os.execlp('true', 'true')", "os.execlp('true', ...)"),
    ("os.abort()", "os.abort()"),
    ("os.kill(os.getpid(), signal.SIGHUP)", "os.kill(os.getpid(), SIGHUP)"),
    ("os.killpg(0, signal.SIGUSR1)", "os.killpg(0, SIGUSR1)"),
    ("signal.raise_signal(signal.SIGUSR2)", "signal.raise_signal(SIGUSR2)"),
], ids=["posix-exit", "execv", "execlp", "abort", "kill-sighup", "killpg-sigusr1", "raise-sigusr2"])


def _child(folder: Path, *args: str) -> subprocess.CompletedProcess:
    # its own session: a signal to its process group (os.killpg(0, ...)) that gets through reaches
    # the child alone, not the test run
    return subprocess.run([sys.executable, "-c", MAIN, *args], cwd=folder, capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=""), start_new_session=True)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    np.savez(tmp_path / "in.npz", x=np.ones((128, 64), np.float32))
    (tmp_path / "good.py").write_text(GOOD)
    (tmp_path / "p.json").write_text(valid_text())
    return tmp_path


@ENDS
def test_a_kernel(folder, body, call):
    (folder / "k.py").write_text(KERNEL.format(body=body))
    one_error_line(_child(folder, "run", "k.py::add1", "--inputs", "in.npz", "--out", "o"),
                   "k.py:11: the kernel ends the process", call)
    assert not (folder / "o").exists()


@ENDS
def test_a_reference(folder, body, call):
    (folder / "ref.py").write_text(USER.format(name="ref", body=body))
    one_error_line(_child(folder, "run", "good.py::add1", "--inputs", "in.npz", "--out", "o", "--reference",
                          "ref.py:ref"), "ref.py:7:", call)
    assert not (folder / "o").exists()


@ENDS
def test_a_pass(folder, body, call):
    (folder / "quits.py").write_text(USER.format(name="p", body=body))
    one_error_line(_child(folder, "compile", "p.json", "-o", "c.json", "--passes", "quits.py:p"),
                   "--passes: the pass 'quits.py:p' ends the process", call, "at quits.py:7")
    assert not (folder / "c.json").exists()


def test_a_signal_the_process_handles_or_ignores_is_sent(folder):
    """A signal that ends nothing (SIGCHLD's default is to ignore it; 0 asks whether the process
    lives) goes out as asked: only what ends the process is refused."""
    (folder / "quiet.py").write_text("import os\nimport signal\n\n\ndef p(program):\n"
                                     "    os.kill(os.getpid(), 0)\n    signal.raise_signal(signal.SIGCHLD)\n"
                                     "    return program\n")
    done = _child(folder, "compile", "p.json", "-o", "c.json", "--passes", "quiet.py:p")
    assert done.returncode == 0, done.stderr[-2000:]


EXIT_HOOK = "import atexit\nimport os\n\natexit.register(lambda: os._exit(0))\n"


@pytest.mark.parametrize("who", ["kernel", "reference", "pass", "fuzzed pass"])
def test_an_exit_hook_of_the_users_code_leaves_the_status(folder, who):
    """An ``atexit`` hook the user's module registered ran after neuronsim had decided exit 2 and
    put the real ``os._exit`` back: its ``os._exit(0)`` made a failed run end 0.  Now it is
    refused in the hook, with one warning line at its line, and the status stands."""
    if who == "kernel":
        (folder / "k.py").write_text(EXIT_HOOK + KERNEL.format(body="raise ValueError('no')"))
        args = ["run", "k.py::add1", "--inputs", "in.npz", "--out", "o"]
    elif who == "reference":
        (folder / "ref.py").write_text(EXIT_HOOK + USER.format(name="ref", body="raise ValueError('no')"))
        args = ["run", "good.py::add1", "--inputs", "in.npz", "--out", "o", "--reference", "ref.py:ref"]
    else:
        (folder / "hooked.py").write_text(EXIT_HOOK + "raise ValueError('bad module')\n")
        args = (["compile", "p.json", "-o", "c.json", "--passes", "hooked.py:p"] if who == "pass" else
                ["fuzz", "--pass", "hooked:p", "--examples", "2", "--workers", "1"])
    done = _child(folder, *args)
    lines = done.stderr.splitlines()
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert len(lines) == 2 and lines[0].startswith("error: "), done.stderr[-2000:]
    assert lines[1].startswith("warning: ") and ".py:4: an exit handler (atexit) ends the process (os._exit(0))" \
        in lines[1], lines[1]
    assert not (folder / "o").exists() and not (folder / "c.json").exists()


@pytest.mark.parametrize("raised, shown", [("class Stop(BaseException):\n    pass\n\n\nraise Stop('at import')\n",
                                            "Stop: at import"),
                                           ("raise GeneratorExit('at import')\n", "GeneratorExit: at import")],
                         ids=["own-baseexception", "generatorexit"])
@pytest.mark.parametrize("who", ["reference", "pass", "fuzzed pass"])
def test_a_module_raising_a_baseexception_as_it_loads(folder, who, raised, shown):
    """A ``--reference`` or ``--passes`` module raising a BaseException of its own at import was a
    traceback, exit 1 (a kernel's module was already refused: 'importing the kernel: ...')."""
    (folder / "stops.py").write_text(raised)
    if who == "reference":
        args, where = ["run", "good.py::add1", "--inputs", "in.npz", "--out", "o", "--reference", "stops.py:f"], \
            "--reference: cannot load stops.py"
    elif who == "pass":
        args, where = ["compile", "p.json", "-o", "c.json", "--passes", "stops.py:p"], \
            "--passes: cannot load the pass 'stops.py:p'"
    else:
        args, where = ["fuzz", "--pass", "stops:p", "--examples", "2", "--workers", "1"], \
            "--pass: cannot load the pass 'stops:p'"
    one_error_line(_child(folder, *args), where, shown)
    assert not (folder / "o").exists() and not (folder / "c.json").exists()


def test_a_reference_that_ends_the_process_as_it_is_imported_is_not_called_the_kernel(folder):
    """Its line was reported as "the kernel ends the process", the reference being no kernel."""
    (folder / "ref.py").write_text("import os\nos._exit(0)\n\n\ndef ref(x):\n    return {'return0': x + 1}\n")
    line = one_error_line(_child(folder, "run", "good.py::add1", "--inputs", "in.npz", "--out", "o", "--reference",
                                 "ref.py:ref"), "ref.py:2: the code at this line ends the process (os._exit(0))")
    assert "the kernel" not in line
    assert not (folder / "o").exists()
