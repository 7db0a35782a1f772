"""Commands never end in a traceback: files that cannot be written, unknown scenarios."""

from __future__ import annotations

import json
import subprocess
import sys

CLI = [sys.executable, "-c", "from neuronsim.verify.cli import main; main()"]


def _run(*args):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)


def test_compile_to_a_folder_that_does_not_exist(tmp_path):
    target = tmp_path / "missing" / "out.json"
    run = _run("compile", "scenarios/softmax.json", "-o", str(target), "--json")
    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert "cannot write" in json.loads(run.stdout)["message"]
    assert not target.exists()


def test_unknown_scenario_names_the_shipped_ones():
    run = _run("run", "no_such_kernel")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "matmul_tiled" in run.stderr


def test_simulate_trace_into_a_missing_folder(tmp_path):
    run = _run("simulate", "examples/matmul_k_loop.json", "--trace", str(tmp_path / "no" / "t.json"))
    assert run.returncode == 2 and "Traceback" not in run.stderr


def test_a_program_written_to_a_full_standard_output_names_it():
    """``compile -o - > /dev/full`` said only "No space left on device"."""
    with open("/dev/full", "w") as full:
        run = subprocess.run([*CLI, "compile", "examples/matmul_k_loop.json", "-o", "-"], stdout=full,
                             stderr=subprocess.PIPE, text=True, timeout=300)
    assert run.returncode == 2
    assert run.stderr.splitlines() == ["error: -: cannot write: standard output (No space left on device)"]
