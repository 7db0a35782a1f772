"""Issue #27 part 2, item 4: bad inputs of every kind to every command, as a user meets them.

Each case runs the installed console script from a temporary folder outside the checkout and
holds the contract: exit 2, exactly one ``error:`` line on standard error (naming where when
the input has a where), no traceback and no internal error, nothing half-written, within a
timeout.  A kernel that loops forever is ended by SIGTERM with exit 143 within 5 s.  The size
cases (10,000 empty loops, a loop body too dense for ``loops``, a whole TaskId array as a dep)
assert that the command finishes or refuses; bench/bench_loops.py measures the speed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from neuronsim_tests.bad_inputs import one_error_line

NEURONSIM = Path(sys.executable).with_name("neuronsim")
#: Generous: the machine is shared; the runs here take seconds alone.
TIMEOUT = 120
VALID = {"format": "neuronsim.program/1", "machine": "trn1",
         "tensors": {"x": {"memory": "dram", "dtype": "float32", "shape": [128, 16], "address": 0, "role": "input"},
                     "y": {"memory": "dram", "dtype": "float32", "shape": [128, 16], "address": 8192,
                           "role": "output"}},
         "body": [{"loop": "k", "trip_count": 2, "body": [
             {"name": "copy", "engine": "sp", "op": "dma_copy", "queue": "dma0", "reads": [{"tensor": "x"}],
              "writes": [{"tensor": "y"}]}]}]}
KERNEL = '''
import nki.language as nl


def copy(x, out):
    t = nl.load(x)
    nl.store(out, t)
'''
PROGRAM_COMMANDS = ("check", "compile", "simulate", "footprint", "report", "loops", "show", "tasks")


def _run(folder: Path, *args: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run([str(NEURONSIM), *args], cwd=folder, capture_output=True, text=True, timeout=timeout)


def _refused(run: subprocess.CompletedProcess, *fragments: str) -> str:
    return one_error_line(run, *fragments)


def _outputs(command: str, folder: Path) -> list[str]:
    """The output options of ``command``, pointed into ``folder`` (nothing may appear there)."""
    return {"compile": ["-o", str(folder / "out.json")], "report": ["-o", str(folder / "out.html")],
            "tasks": ["-o", str(folder / "out.json")], "simulate": ["--trace", str(folder / "out.trace.json")]
            }.get(command, [])


#: (id, file bytes, words the error line must hold)
BAD_FILES = [
    ("empty", b"", "malformed JSON"),
    ("binary", bytes(range(256)) * 4, ""),
    ("deep-arrays", b"[" * 100_000 + b"]" * 100_000, ""),
    ("nan", json.dumps(VALID).replace('"trip_count": 2', '"trip_count": NaN').encode(), "NaN"),
    ("huge-number", json.dumps(VALID).replace('"trip_count": 2', '"trip_count": 1e400').encode(), "1e400"),
    ("huge-integer", json.dumps(VALID).replace('"trip_count": 2', '"trip_count": ' + "9" * 5000).encode(), ""),
    ("top-level-list", b"[]", ""),
    ("body-a-string", json.dumps(dict(VALID, body="x")).encode(), "body"),
    ("trip-count-a-string", json.dumps(VALID).replace('"trip_count": 2', '"trip_count": "2"').encode(),
     "body[0].trip_count"),
]


@pytest.mark.parametrize("command", PROGRAM_COMMANDS)
@pytest.mark.parametrize("case, data, fragment", BAD_FILES, ids=[c[0] for c in BAD_FILES])
def test_a_bad_program_file_is_one_located_line(tmp_path: Path, command: str, case: str, data: bytes,
                                               fragment: str) -> None:
    (tmp_path / "p.json").write_bytes(data)
    out = tmp_path / "out"
    out.mkdir()
    if command == "tasks" and case in ("body-a-string", "trip-count-a-string"):
        fragment = "is a neuronsim.program/1 program"  # task programs only: refused by its format first
    _refused(_run(tmp_path, command, "p.json", *_outputs(command, out)), fragment)
    assert not any(out.iterdir()), "something was written"


def test_ten_thousand_empty_loops_finish(tmp_path: Path) -> None:
    doc = {"format": "neuronsim.program/1", "machine": "trn1", "tensors": {},
           "body": [{"loop": f"L{i}", "trip_count": 2, "body": []} for i in range(10_000)]}
    (tmp_path / "p.json").write_text(json.dumps(doc))
    run = _run(tmp_path, "loops", "p.json", timeout=60)  # minutes before the program index (bench/bench_loops.py)
    assert run.returncode == 0, run.stderr
    assert "L9998 + L9999: legal" in run.stdout


def test_a_loop_too_dense_for_the_distance_analysis_is_refused_up_front(tmp_path: Path) -> None:
    access = {"tensor": "t", "pattern": [[1, 16]], "per_iteration": {"L": 16}}
    body = [{"name": f"i{j}", "engine": "dve", "op": "tensor_copy", "reads": [access], "writes": [access]}
            for j in range(300)]
    doc = {"format": "neuronsim.program/1", "machine": "trn1",
           "tensors": {"t": {"memory": "sbuf", "dtype": "float32", "shape": [128, 64], "partition": 0, "offset": 0}},
           "body": [{"loop": "L", "trip_count": 4, "body": body}]}
    (tmp_path / "p.json").write_text(json.dumps(doc))
    _refused(_run(tmp_path, "loops", "p.json", timeout=60), "--max-pairs", "90,000 access pairs")


def _task_array_program(slots: int, trips: int) -> dict:
    return {"format": "neuronsim.tasks/1",
            "kernels": {"produce": {"params": [{"name": "dst", "direction": "out"},
                                               {"name": "k", "direction": "scalar"}],
                                    "returns": ["dst"], "cost": 400}},
            "function": {"name": "f", "params": [{"name": "x", "shape": [64, 64], "dtype": "float32",
                                                  "direction": "out"}],
                         "body": [{"let": "arr", "task_array": slots},
                                  {"for": "i", "name": "L", "stop": trips, "body": [
                                      {"submit": "produce", "name": "p", "args": ["x", "i"], "task_id": "t",
                                       "deps": ["arr"]},
                                      {"set": "arr", "index": f"i % {slots}", "value": "t"}]}]}}


@pytest.mark.parametrize("slots, trips, fragment", [(1_048_576, 5_000, "TaskId array slots"),
                                                     (10_000, 10_000, "TaskId array slots")])
def test_a_whole_task_array_as_a_dep_in_a_loop_is_refused_before_the_race_check(tmp_path: Path, slots: int,
                                                                                trips: int, fragment: str) -> None:
    (tmp_path / "t.json").write_text(json.dumps(_task_array_program(slots, trips)))
    _refused(_run(tmp_path, "check", "t.json", timeout=60), "--max-instances", fragment)


# -- kernels: nki, run, profile, compare -----------------------------------------------------------
def _kernel_folder(folder: Path, source: str = KERNEL, arrays: dict | None = None) -> None:
    (folder / "k.py").write_text(source)
    np.savez(folder / "in.npz", **(arrays if arrays is not None else
                                   {"x": np.ones((128, 16), "f4"), "out": np.zeros((128, 16), "f4")}))


KERNEL_COMMANDS = {
    "nki": lambda k: ["nki", k, "--inputs", "in.npz", "-o", "out/p.json"],
    "run": lambda k: ["run", k, "--inputs", "in.npz", "--out", "out"],
    "profile": lambda k: ["profile", k, "--inputs", "in.npz", "--html", "out/p.html"],
    "compare": lambda k: ["compare", k, k, "--inputs", "in.npz", "--html", "out/c.html"],
}
BAD_KERNELS = [
    ("syntax-error", "def copy(x, out):\n    return (\n", None, "k.py:"),
    ("raises", "def copy(x, out):\n    raise ValueError('no such shape')\n", None, "k.py:2"),
    ("missing-npz-key", KERNEL, {"x": np.ones((128, 16), "f4")}, "out"),
    ("npz-of-strings", KERNEL, {"x": np.array(["a"] * 4), "out": np.zeros((128, 16), "f4")}, "x"),
    ("npz-object-array", KERNEL, {"x": np.array([None, 1], dtype=object), "out": np.zeros((128, 16), "f4")},
     "in.npz"),
]


@pytest.mark.parametrize("command", sorted(KERNEL_COMMANDS))
@pytest.mark.parametrize("case, source, arrays, fragment", BAD_KERNELS, ids=[c[0] for c in BAD_KERNELS])
def test_a_bad_kernel_or_input_is_one_located_line(tmp_path: Path, command: str, case: str, source: str,
                                                  arrays: dict | None, fragment: str) -> None:
    _kernel_folder(tmp_path, source, arrays)
    (tmp_path / "out").mkdir()
    _refused(_run(tmp_path, *KERNEL_COMMANDS[command]("k.py::copy")), fragment)
    assert not any((tmp_path / "out").iterdir()), "something was written"


def test_a_missing_npz_file_and_a_garbage_npz_are_located(tmp_path: Path) -> None:
    _kernel_folder(tmp_path)
    _refused(_run(tmp_path, "nki", "k.py::copy", "--inputs", "none.npz", "-o", "p.json"), "none.npz")
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04 not really a zip")
    _refused(_run(tmp_path, "nki", "k.py::copy", "--inputs", "bad.npz", "-o", "p.json"), "bad.npz")
    assert not (tmp_path / "p.json").exists()


@pytest.mark.parametrize("command", ["nki", "run"])
def test_a_kernel_that_loops_forever_ends_on_sigterm_with_143(tmp_path: Path, command: str) -> None:
    _kernel_folder(tmp_path, "from pathlib import Path\n\n\ndef copy(x, out):\n"
                             "    Path('started').touch()\n    while True:\n        pass\n")
    (tmp_path / "out").mkdir()
    proc = subprocess.Popen([str(NEURONSIM), *KERNEL_COMMANDS[command]("k.py::copy")], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not (tmp_path / "started").exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.poll() else "slow"
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        _, stderr = proc.communicate(timeout=30)
        assert time.monotonic() - sent < 5, "SIGTERM not honoured within 5 s"
        assert proc.returncode == 143 and stderr.strip().splitlines() == ["terminated"], (proc.returncode, stderr)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
    assert not any((tmp_path / "out").iterdir())


# -- fuzz ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args, fragment", [
    (["--examples", "-1"], "--examples"),
    (["--examples", "1" + "0" * 40], "--examples"),
    (["--pass", "no_such_module:Nothing", "--examples", "2"], "no_such_module"),
    (["--workers", "0", "--examples", "2"], "--workers"),
])
def test_fuzz_refuses_bad_options_in_one_line(tmp_path: Path, args: list[str], fragment: str) -> None:
    _refused(_run(tmp_path, "fuzz", *args, "--out", "failures"), fragment)
    assert not (tmp_path / "failures").exists()
