"""What the process inherits cannot turn a command's promise off (probe_ah): a signal mask with
SIGALRM blocked (``--max-idle`` never fired: a run without end), a standard output whose encoding
lacks a character of the run's own text (exit 3), an output name whose bytes are not UTF-8
(exit 3)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

IDLE = '''\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def spins(x):
    while True:
        pass


@nki.jit
def add1(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.add(nl.load(x), 1.0))
    return out
'''


def _neuronsim(folder: Path, *args: str | bytes, env: dict | None = None, **options) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from neuronsim.verify.cli import main; main()", *args],
                          cwd=folder, capture_output=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": "", **(env or {})}, **options)


def _kernel(folder: Path) -> None:
    (folder / "k.py").write_text(IDLE)
    np.savez(folder / "x.npz", x=np.ones((128, 4), np.float32))


def test_a_blocked_alarm_inherited_still_stops_an_idle_kernel(tmp_path: Path) -> None:
    _kernel(tmp_path)
    done = _neuronsim(tmp_path, "run", "k.py::spins", "--inputs", "x.npz", "--max-idle", "1",
                      preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGTERM}))
    assert done.returncode == 2, done.stderr
    assert re.match(r"error: k\.py:[78]: the kernel ran 1 s of Python without an NKI call", done.stderr.decode())


def test_an_output_folder_the_stdout_encoding_cannot_spell_is_written_escaped(tmp_path: Path) -> None:
    _kernel(tmp_path)
    done = _neuronsim(tmp_path, "run", "k.py::add1", "--inputs", "x.npz", "--out", "oé",
                      env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr
    assert b"trace: o\\xe9/add1.trace.json" in done.stdout and (tmp_path / "oé" / "add1.trace.json").exists()


def test_an_output_name_whose_bytes_are_not_utf8_is_written(tmp_path: Path) -> None:
    _kernel(tmp_path)
    done = _neuronsim(tmp_path, "nki", "k.py::add1", "--inputs", "x.npz", "-o", os.fsdecode(b"p\xe9.json"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / os.fsdecode(b"p\xe9.json")).exists()


def test_the_help_and_the_version_into_a_full_device_name_standard_output(tmp_path: Path) -> None:
    for args in (["--version"], ["--help"], ["run", "--help"], ["fuzz", "--help"]):
        with open("/dev/full", "w") as full:
            done = subprocess.run([sys.executable, "-c", "from neuronsim.verify.cli import main; main()", *args],
                                  cwd=tmp_path, stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr == "error: standard output: No space left on device\n", (args, done.stderr)


def test_a_failing_json_run_under_warnings_as_errors_says_one_line(tmp_path: Path) -> None:
    done = _neuronsim(tmp_path, "check", str(tmp_path / "missing.json"), "--json", env={"PYTHONWARNINGS": "error"})
    assert done.returncode == 2
    assert done.stderr.decode().count("\n") == 1, done.stderr  # (the document's stream warned "unclosed file")


def test_a_working_folder_removed_is_one_line_naming_it(tmp_path: Path) -> None:
    _kernel(tmp_path)
    gone = tmp_path / "gone"
    gone.mkdir()
    done = _neuronsim(gone, "run", str(tmp_path / "k.py") + "::add1", "--inputs", str(tmp_path / "x.npz"),
                      "--out", str(tmp_path / "o"), preexec_fn=lambda: os.rmdir(gone))
    assert done.returncode == 2
    assert done.stderr.decode().startswith("error: the working folder: No such file or directory"), done.stderr
    assert done.stderr.decode().count("\n") == 1 and not (tmp_path / "o").exists()


def test_a_stdout_that_escapes_surrogates_still_escapes_what_its_encoding_lacks(tmp_path: Path) -> None:
    _kernel(tmp_path)
    done = _neuronsim(tmp_path, "run", "k.py::add1", "--inputs", "x.npz", "--out", "oé",
                      env={"PYTHONIOENCODING": "ascii:surrogateescape"})
    assert done.returncode == 0, done.stderr
    assert b"trace: o\\xe9/add1.trace.json" in done.stdout


def test_a_failed_run_takes_back_the_folders_an_out_path_through_dotdot_made(tmp_path: Path) -> None:
    _kernel(tmp_path)
    (tmp_path / "k.py").write_text(IDLE + "\n\n@nki.jit\ndef fails(x):\n    raise ValueError('no')\n")
    done = _neuronsim(tmp_path, "run", "k.py::fails", "--inputs", "x.npz", "--out", "new/a/../o")
    assert done.returncode == 2, done.stderr
    assert not (tmp_path / "new").exists(), sorted(p.name for p in (tmp_path / "new").rglob("*"))


def test_an_output_name_in_an_ascii_locale_is_written(tmp_path: Path) -> None:
    _kernel(tmp_path)
    done = _neuronsim(tmp_path, "nki", "k.py::add1", "--inputs", "x.npz", "-o", "pé.json",
                      env={"LC_ALL": "C", "PYTHONUTF8": "0"})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "pé.json").exists()


def test_a_report_of_a_program_whose_name_is_not_utf8_is_written(tmp_path: Path) -> None:
    _kernel(tmp_path)
    name = os.fsdecode(b"p\xe9.json")
    assert _neuronsim(tmp_path, "nki", "k.py::add1", "--inputs", "x.npz", "-o", name).returncode == 0
    done = _neuronsim(tmp_path, "report", name, "-o", "r.html")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "r.html").exists()


@pytest.mark.parametrize("shadow, named", [("raise ImportError('not the rich you want')\n", "rich.py:1"),
                                           ("", "rich.py")])
def test_a_dependency_shadowed_on_pythonpath_is_one_line_naming_the_file(tmp_path: Path, shadow: str,
                                                                          named: str) -> None:
    # a traceback and exit 1, the status of a finding (probe_al)
    (tmp_path / "shadow").mkdir()
    (tmp_path / "shadow" / "rich.py").write_text(shadow)
    run = _neuronsim(tmp_path, "check", "nope.json", env={"PYTHONPATH": str(tmp_path / "shadow")}, text=True)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {tmp_path / 'shadow' / named}: "), run.stderr
    assert "a module on PYTHONPATH shadowing one of them?" in lines[0]


def test_fuzz_ends_though_a_users_pass_left_a_thread_running(tmp_path: Path) -> None:
    # the interpreter's teardown joined the thread: `fuzz --workers 1` never exited, its
    # SIGTERM ignored by then (probe_ax); compile and run already ended at once
    (tmp_path / "spin.py").write_text(
        "import threading, time\n\n\ndef spin_pass(program):\n"
        "    threading.Thread(target=lambda: [time.sleep(1) for _ in iter(int, 1)]).start()\n"
        "    return program\n")
    done = _neuronsim(tmp_path, "fuzz", "--examples", "1", "--workers", "1", "--pass", "spin:spin_pass",
                      "--out", "ff")  # (its timeout: 120 s)
    assert done.returncode in (0, 1), done.stderr
    assert b"example" in done.stdout
