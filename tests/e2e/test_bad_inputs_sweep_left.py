"""The bad inputs the last sweep left (/tmp/ext_r's classes 01, 11, 16 and 19): a command that
fails after writing its outputs takes them back; a kernel's own ``raise KeyboardInterrupt`` is
its error at its line, not Ctrl-C; a task expression or a JSON document nested too deep, and a
task shape past INT64, are each one located line.  (Class 15, malformed annotations, is in the
shared bad-input table, run by every command.)  The installed console script, from a folder
outside the checkout."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from neuronsim_tests.bad_inputs import TASKS, VALID, one_error_line

NEURONSIM = Path(sys.executable).with_name("neuronsim")
TIMEOUT = 120
RAISES = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def k(x):
    t = nl.load(x)
    raise KeyboardInterrupt
'''
#: Where the scalar argument of TASKS' one call is (the expression under test).
ARG = "function.body[0].args[1]"


def _run(folder: Path, args: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(NEURONSIM), *args], cwd=folder, capture_output=True, text=True, timeout=TIMEOUT, **kw)


def _full(folder: Path, args: list[str]) -> subprocess.CompletedProcess:
    with open("/dev/full", "w") as full:
        return subprocess.run([str(NEURONSIM), *args], cwd=folder, stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=TIMEOUT)


def _tasks(folder: Path, argument=1, shape=(64, 64)) -> str:
    doc = copy.deepcopy(TASKS)
    doc["function"]["body"][0]["args"][1] = argument
    doc["function"]["params"][0]["shape"] = list(shape)
    (folder / "t.json").write_text(json.dumps(doc))
    return "t.json"


def test_a_compile_that_cannot_report_takes_its_output_back(tmp_path: Path) -> None:
    (tmp_path / "p.json").write_text(json.dumps(VALID))
    one_error_line(_full(tmp_path, ["compile", "p.json", "-o", "new.json", "--json"]), "No space left")
    assert not (tmp_path / "new.json").exists()
    (tmp_path / "old.json").write_text("the user's own file\n")
    one_error_line(_full(tmp_path, ["compile", "p.json", "-o", "old.json", "--json"]), "No space left")
    assert (tmp_path / "old.json").read_text() == "the user's own file\n"  # restored, not removed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json", "p.json"]  # no link or temporary left
    assert _run(tmp_path, ["compile", "p.json", "-o", "old.json"]).returncode == 0  # success keeps it
    assert (tmp_path / "old.json").read_text().startswith("{")


def test_a_run_that_cannot_report_takes_its_files_and_folders_back(tmp_path: Path) -> None:
    one_error_line(_full(tmp_path, ["run", "matmul_tiled", "--out", "made/here", "--json"]), "No space left")
    assert list(tmp_path.iterdir()) == []


def test_a_kernels_own_keyboard_interrupt_is_its_error_at_its_line(tmp_path: Path) -> None:
    import numpy as np

    (tmp_path / "k.py").write_text(RAISES)
    np.savez(tmp_path / "in.npz", x=np.ones((128, 64), np.float32))
    one_error_line(_run(tmp_path, ["nki", "k.py::k", "--inputs", "in.npz", "-o", "p.json"]), "k.py:9:",
                   "KeyboardInterrupt")
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize("command", ["tasks", "check", "simulate", "footprint"])
def test_a_task_expression_nested_too_deep_is_located(tmp_path: Path, command: str) -> None:
    one_error_line(_run(tmp_path, [command, _tasks(tmp_path, " + ".join(["1"] * 1000))]), ARG,
                   "nests more than 200 operators deep")
    assert _run(tmp_path, [command, _tasks(tmp_path, " + ".join(["1"] * 200))]).returncode == 0


def test_a_task_shape_past_int64_is_located(tmp_path: Path) -> None:
    one_error_line(_run(tmp_path, ["check", _tasks(tmp_path, shape=(10**30, 512))]), "function.params[0].shape[0]",
                   "below 2**63")
    one_error_line(_run(tmp_path, ["check", _tasks(tmp_path, shape=(2**40, 2**40))]), "function.params[0].shape",
                   "more than 2**63 bytes")


def test_a_program_nested_deeper_than_the_decoder_is_located(tmp_path: Path) -> None:
    op = json.dumps({"name": "op", "engine": "dve", "op": "memset", "writes": [{"tensor": "xs"}]})
    loops = "".join(f'{{"loop": "l{d}", "trip_count": 1, "body": [' for d in range(3000)) + op + "]}" * 3000
    (tmp_path / "deep.json").write_text(json.dumps({**VALID, "body": ["@"]}).replace('"@"', loops))
    one_error_line(_run(tmp_path, ["check", "deep.json"]), "line 1 column", "nest 6005 deep")


LATE_SIGNAL = '''
import atexit, os, signal, sys

def late():  # the command has ended and the interpreter is tearing down: a Ctrl-C lands now
    print("handler", signal.getsignal(signal.SIGINT) == signal.SIG_IGN, file=sys.stderr)
    os.kill(os.getpid(), signal.SIGINT)

atexit.register(late)
sys.argv = ["neuronsim", "check", "p.json"]
from neuronsim.verify.cli import main
main()
'''


def test_a_signal_after_the_command_ended_leaves_its_status(tmp_path: Path) -> None:
    (tmp_path / "p.json").write_text(json.dumps(VALID))
    (tmp_path / "late.py").write_text(LATE_SIGNAL)
    run = subprocess.run([sys.executable, "-P", "late.py"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=TIMEOUT)
    # ignored from the command's end on: Python's finalization would otherwise put the default
    # action back, and a signal in that window ended the finished process by the signal itself
    assert run.returncode == 0 and run.stderr.strip() == "handler True", (run.returncode, run.stderr)


def test_a_scalar_parameter_past_int64_is_located(tmp_path: Path) -> None:
    # the format's integers are INT64: a parameter's value of 2**70 was accepted by `tasks` and
    # refused later as too many instances, at no path
    doc = json.loads((tmp_path / _tasks(tmp_path)).read_text())
    doc["function"]["params"].append({"name": "n", "scalar": "int", "value": 2**70})
    (tmp_path / "big.json").write_text(json.dumps(doc))
    for command in ("tasks", "check"):
        one_error_line(_run(tmp_path, [command, str(tmp_path / "big.json")]), "function.params[", "beyond INT64")
