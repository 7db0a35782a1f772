"""The frictions of issue 27.3 and the BLAS threads of 31.1 as a user meets them: the installed
console script, run from a temporary folder outside the checkout, its output piped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

NEURONSIM = Path(sys.executable).with_name("neuronsim")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _neuronsim(folder: Path, *args: str, env: dict | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "NEURONSIM_BLAS_THREADS"}
    return subprocess.run([str(NEURONSIM), *args], cwd=folder, capture_output=True, text=True, timeout=timeout,
                          env={**environment, **(env or {})})


def _one_error_line(run: subprocess.CompletedProcess, where: str) -> None:
    assert run.returncode == 2, run.stdout + run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {where}") and "Traceback" not in run.stderr


def test_run_prints_the_largest_error_of_each_comparison_in_plain_numbers_uncut(tmp_path: Path) -> None:
    run = _neuronsim(tmp_path, "run", "matmul_tiled")
    assert run.returncode == 0, run.stderr
    row = next(line for line in run.stdout.splitlines() if "outputs vs numpy reference" in line)
    assert "equal: largest error 0.125 (relative " in row and row.rstrip(" │").endswith("rtol 0.02, atol 0.02")
    assert "agree: race-free by the check (one order simulated)" in run.stdout  # no run repeated
    assert any(line.startswith("stages: compile ") and "; total " in line for line in run.stdout.splitlines())
    assert "…" not in run.stdout and "np.float" not in run.stdout


def test_run_with_zero_tolerance_fails_and_names_the_element(tmp_path: Path) -> None:
    run = _neuronsim(tmp_path, "run", "matmul_tiled", "--rtol", "0", "--atol", "0", "--json")
    assert run.returncode == 1
    doc = json.loads(run.stdout)
    assert doc["tolerance"] == {"rtol": 0.0, "atol": 0.0} and doc["largest_error"]["reference"]["absolute"] == 0.125
    [problem] = doc["problems"]
    assert "beyond rtol=0.0, atol=0.0" in problem and "np.float" not in problem


def test_the_help_documents_the_tolerances_and_the_blas_threads(tmp_path: Path) -> None:
    for command, default in (("run", "the scenario's own rtol"), ("simulate", "default: 0")):
        text = " ".join(_neuronsim(tmp_path, command, "--help").stdout.split())
        assert "--rtol X" in text and "--atol X" in text and default in text, command
        assert "--blas-threads N|default" in text and "NEURONSIM_BLAS_THREADS" in text
        assert "--timing-only" in text


def test_simulate_reports_the_largest_error_and_a_tolerance_changes_the_verdict_on_values(tmp_path: Path) -> None:
    racy = str(EXAMPLES / "matmul_k_loop_racy.json")
    exact = _neuronsim(tmp_path, "simulate", racy, "--seeds", "3", "--json")
    doc = json.loads(exact.stdout)
    worst = doc["largest_error"]["absolute"]
    assert exact.returncode == 1 and not doc["outputs_equal"] and worst > 0
    loose = json.loads(_neuronsim(tmp_path, "simulate", racy, "--seeds", "3", "--json", "--atol",
                                  str(worst * 2)).stdout)
    assert loose["outputs_equal"] and loose["largest_error"]["absolute"] == worst
    text = _neuronsim(tmp_path, "simulate", str(EXAMPLES / "matmul_k_loop.json"), "--seeds", "2").stdout
    assert "equal the sequential reference in 3 of 3 runs (exact); largest error 0 (relative 0)" in text


def test_timing_only_gives_the_makespan_without_values(tmp_path: Path) -> None:
    program = str(EXAMPLES / "matmul_k_loop.json")
    full = json.loads(_neuronsim(tmp_path, "simulate", program, "--json").stdout)
    timing = _neuronsim(tmp_path, "simulate", program, "--json", "--timing-only")
    doc = json.loads(timing.stdout)
    assert timing.returncode == 0 and not doc["functional"] and doc["compared"] == []
    assert doc["runs"][0]["makespan_ns"] == full["runs"][0]["makespan_ns"]
    _one_error_line(_neuronsim(tmp_path, "simulate", program, "--timing-only", "--outputs", "o.npz"), "--outputs")
    assert not (tmp_path / "o.npz").exists()
    run = _neuronsim(tmp_path, "run", "matmul_tiled", "--timing-only")
    assert run.returncode == 0 and "not computed (--timing-only)" in run.stdout


@pytest.mark.parametrize("args, env, where", [
    (("--blas-threads", "0"), {}, "--blas-threads"),
    (("--rtol", "nan"), {}, "--rtol"),
    (("--atol", "-1"), {}, "--atol"),
    ((), {"NEURONSIM_BLAS_THREADS": "lots"}, "NEURONSIM_BLAS_THREADS"),
])
def test_bad_tolerances_and_thread_counts_are_one_located_line(tmp_path: Path, args, env, where) -> None:
    _one_error_line(_neuronsim(tmp_path, "simulate", str(EXAMPLES / "matmul_k_loop.json"), *args, env=env), where)


ADD_KERNEL = '''\
import nki
import nki.language as nl


@nki.jit
def add(a, b, out):
    for t in range({tiles}):
        x = nl.load(a[t * 128:(t + 1) * 128, :])
        y = nl.load(b[t * 128:(t + 1) * 128, :])
        nl.store(out[t * 128:(t + 1) * 128, :], value=nl.add(x, y))
'''


def test_outputs_of_another_shape_than_the_reference_give_no_error_figure(tmp_path: Path) -> None:
    import numpy as np

    flat = "\n\ndef flat(a, b):\n    return {'out': (a + b).ravel()}\n"  # of another shape
    (tmp_path / "add.py").write_text(ADD_KERNEL.format(tiles=1) + flat)
    np.savez(tmp_path / "in.npz", a=np.ones((128, 4), "f4"), b=np.ones((128, 4), "f4"), out=np.zeros((128, 4), "f4"))
    run = _neuronsim(tmp_path, "run", "add.py::add", "--inputs", "in.npz", "--reference", "add.py:flat")
    assert run.returncode == 1, run.stdout + run.stderr
    row = " ".join(line.strip(" │") for line in run.stdout.splitlines()
                   if "outputs vs" in line or "reference shape" in line)
    assert "DIFFER" in row and "reference shape (512,)" in row and "no output compared element by element" in row, row
    assert "largest error 0 " not in row  # (the equal outputs' figure, said of outputs never compared)


def test_the_stage_line_says_what_the_users_reference_took_on_its_own_thread(tmp_path: Path) -> None:
    import numpy as np

    # the reference runs on a thread beside compile .. simulate: its seconds were in theirs,
    # unsaid, and a slow reference read as a slow simulation (probe_u U2)
    slow = "\n\ndef slow(a, b):\n    import time\n    time.sleep(1.5)\n    return {'out': a + b}\n"
    (tmp_path / "add.py").write_text(ADD_KERNEL.format(tiles=1) + slow)
    np.savez(tmp_path / "in.npz", a=np.ones((128, 4), "f4"), b=np.ones((128, 4), "f4"), out=np.zeros((128, 4), "f4"))
    run = _neuronsim(tmp_path, "run", "add.py::add", "--inputs", "in.npz", "--reference", "add.py:slow")
    assert run.returncode == 0, run.stdout + run.stderr
    [line] = [line for line in run.stdout.splitlines() if line.startswith("stages: ")]
    said = line.partition("(the reference ran ")[2]
    assert said.endswith(" s on a thread of its own, inside these)"), line
    assert 1.5 <= float(said.split()[0]) < 30, line
    plain = _neuronsim(tmp_path, "run", "add.py::add", "--inputs", "in.npz")
    assert "thread of its own" not in plain.stdout and plain.returncode == 0, plain.stdout + plain.stderr


def test_run_of_a_big_kernel_says_what_it_does_from_its_first_stages(tmp_path: Path) -> None:
    import numpy as np

    tiles = 1400  # 5,600 instructions: past run's progress threshold, a few seconds of work
    (tmp_path / "add.py").write_text(ADD_KERNEL.format(tiles=tiles))
    rows = 128 * tiles
    np.savez(tmp_path / "in.npz", a=np.ones((rows, 4), "f4"), b=np.ones((rows, 4), "f4"), out=np.zeros((rows, 4), "f4"))
    run = _neuronsim(tmp_path, "run", "add.py::add", "--inputs", "in.npz")
    assert run.returncode == 0, run.stderr
    lines = run.stderr.splitlines()
    starts = [line.split(":")[0] for line in lines if line.endswith(" ...")]
    assert starts[:5] == ["nki findings", "compile", "check compiled", "check final", "simulate"], run.stderr
    assert lines.index("check compiled: 5,600 instances ...") < lines.index("simulate: 2 runs (5,600 in all) ...")
    assert lines.index("simulate: 2 runs (5,600 in all) ...") < next(
        i for i, line in enumerate(lines) if line.startswith("simulate: 2 runs in "))  # said before, not only after


def test_fuzz_says_what_the_pass_did_and_calls_a_pass_that_changed_nothing_vacuous(tmp_path: Path) -> None:
    (tmp_path / "mypasses.py").write_text(textwrap.dedent('''\
        def unchanged(program):
            return program
        '''))
    common = ("fuzz", "--replace", "dep-reduction", "--examples", "8", "--workers", "1", "--out", "failures")
    vacuous = _neuronsim(tmp_path, *common, "--pass", "mypasses:unchanged")
    assert vacuous.returncode == 1
    assert "vacuous: your pass (replacing dep-reduction) changed nothing in 8" in vacuous.stdout
    doc = json.loads(_neuronsim(tmp_path, *common, "--pass", "mypasses:unchanged", "--json").stdout)
    assert doc["pass_effect"] == {"changed": 0, "dropped": 0, "added": 0, "vacuous": True}


def test_a_pass_that_fails_is_not_called_vacuous(tmp_path: Path) -> None:
    # a pass raising on its first program changed nothing, and was tested: the failure says so,
    # "vacuous ... tested nothing" beside it contradicted it (probe_am)
    (tmp_path / "boom.py").write_text("def boom(program):\n    raise ValueError('boom')\n")
    common = ("fuzz", "--pass", "boom:boom", "--examples", "3", "--workers", "1", "--out", "failures")
    run = _neuronsim(tmp_path, *common)
    assert run.returncode == 1 and "ValueError: boom" in run.stdout + run.stderr
    assert "vacuous" not in run.stdout + run.stderr
    doc = json.loads(_neuronsim(tmp_path, *common, "--json").stdout)
    assert doc["failures"] and doc["pass_effect"]["vacuous"] is False
