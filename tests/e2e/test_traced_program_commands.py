"""A traced NKI program through every command, as a user runs the installed console script
from a folder of their own: ``neuronsim nki ... -o P.json`` then ``check``, ``report``,
``simulate`` and ``footprint`` of it run its NKI findings and compile it first.  The kernel's
direct allocation clobbers a live tile (``clobber`` of ``tests/nki/kernels/findings_semantics.py``):
no command may call it race-free."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from neuronsim_tests import ROOT
from neuronsim_tests.nki_kit import GROUP_KERNELS

KERNEL = GROUP_KERNELS / "findings_semantics.py"


def _cli(folder: Path, *args: str) -> subprocess.CompletedProcess:
    script = shutil.which("neuronsim", path=os.path.dirname(sys.executable)) or "neuronsim"
    return subprocess.run([script, *args], capture_output=True, text=True, timeout=300, cwd=folder)


@pytest.fixture(scope="module")
def traced(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("user")
    np.savez(folder / "x.npz", x=np.random.default_rng(0).uniform(-1, 1, (128, 256)).astype(np.float32))
    done = _cli(folder, "nki", f"{KERNEL}::clobber", "--inputs", "x.npz", "-o", "P.json")
    assert done.returncode == 0, done.stderr
    return folder


def _said(done: subprocess.CompletedProcess) -> None:
    assert "finding: directly allocated tiles" in done.stderr and "findings_semantics.py:" in done.stderr
    assert "note: a traced NKI program without deps: compiled with" in done.stderr or "footprint" in done.args


def test_check_reports_the_finding_and_never_race_free(traced: Path) -> None:
    done = _cli(traced, "check", "P.json")
    assert done.returncode == 1, done.stdout + done.stderr
    _said(done)
    assert "not race-free as written" in done.stdout and not done.stdout.startswith("race-free")


def test_the_report_page_lists_the_finding_and_never_says_race_free(traced: Path) -> None:
    done = _cli(traced, "report", "P.json", "-o", "page.html")
    assert done.returncode == 0, done.stderr
    _said(done)
    page = (traced / "page.html").read_text()
    assert "race-free" not in page and "race-free" not in done.stdout
    assert 'id="nki-findings"' in page and "directly allocated tiles" in page


def test_simulate_fails_on_the_finding(traced: Path) -> None:
    done = _cli(traced, "simulate", "P.json")
    assert done.returncode == 1, done.stdout + done.stderr
    _said(done)


def test_footprint_says_the_finding_and_keeps_its_figures(traced: Path) -> None:
    done = _cli(traced, "footprint", "P.json", "--no-simulate")
    assert done.returncode == 0, done.stderr
    assert "finding: directly allocated tiles" in done.stderr and "minimum" in done.stdout


def test_a_traced_program_has_the_makespan_run_gives_its_kernel(tmp_path: Path) -> None:
    # simulate, and compile then simulate, of what `neuronsim nki` wrote compile as run compiles the
    # kernel; the construction pipeline gave 12,483.8 ns where run said 7,609.5 (probe_am)
    kernel = ROOT / "examples" / "nki" / "row_sums.py"
    np.savez(tmp_path / "in.npz", x=np.random.default_rng(0).random((128, 2048), dtype=np.float32),
             out=np.zeros((128, 4), np.float32))
    spec = f"{kernel}::running_sums"  # (its findings make run and simulate exit 1; the two pipelines differ on it)
    assert _cli(tmp_path, "nki", spec, "--inputs", "in.npz", "-o", "P.json").returncode == 0
    run = _cli(tmp_path, "run", spec, "--inputs", "in.npz", "--timing-only", "--json")
    wanted = json.loads(run.stdout)["timing"]["makespan_ns"]
    simulated = _cli(tmp_path, "simulate", "P.json", "--timing-only", "--json")
    assert "compiled with load-elim,alloc,schedule" in simulated.stderr
    assert json.loads(simulated.stdout)["summary"]["makespan_ns"] == pytest.approx(wanted, rel=1e-12)
    assert _cli(tmp_path, "compile", "P.json", "-o", "C.json").returncode == 0
    compiled = _cli(tmp_path, "simulate", "C.json", "--timing-only", "--json")
    assert json.loads(compiled.stdout)["summary"]["makespan_ns"] == pytest.approx(wanted, rel=1e-12)
    # footprint too: its last stage is the program run simulates (it kept the construction pipeline: probe_ap)
    stages = json.loads(_cli(tmp_path, "footprint", "P.json", "--json").stdout)["stages"]
    assert stages[-1]["makespan_ns"] == pytest.approx(wanted, rel=1e-12)
