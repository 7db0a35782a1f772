"""The README's NKI example as a user runs it: ``+=`` into SBUF across affine iterations is a
warning at the kernel's line (the sources disagree) and exits 0, the value carried by
``running_sums`` is a finding and exits 1, the sequential kernel runs clean; all with outputs
equal to the numpy reference."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "nki" / "row_sums.py"


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    path = tmp_path / "rows_in.npz"
    np.savez(path, x=rng.standard_normal((128, 2048)).astype(np.float32), out=np.zeros((128, 1), np.float32))
    return path


def _run(kernel: str, inputs: Path, reference: str = "reference") -> subprocess.CompletedProcess:
    script = shutil.which("neuronsim", path=os.path.dirname(sys.executable)) or "neuronsim"
    return subprocess.run([script, "run", f"{EXAMPLE}::{kernel}", "--inputs", str(inputs),
                           "--out", str(inputs.parent / "out"), "--reference", f"{EXAMPLE}:{reference}"],
                          capture_output=True, text=True, timeout=300)


def _line(text: str) -> int:
    return next(i for i, line in enumerate(EXAMPLE.read_text().splitlines(), 1) if text in line)


def test_accumulating_into_sbuf_is_a_warning_citing_both_sources(inputs: Path) -> None:
    run = _run("row_sums", inputs)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = (run.stdout + run.stderr).splitlines()
    warning = [x for x in lines if x.startswith("warning:")]
    assert len(warning) == 1 and "affine loop k" in warning[0] and f"row_sums.py:{_line('acc +=')}" in warning[0]
    assert "aws-neuron-sdk#1051" in warning[0] and "affine_range docs" in warning[0]
    assert not [x for x in lines if x.startswith("finding:")]
    assert "outputs vs user reference" in run.stdout and "equal" in run.stdout


def test_a_value_carried_across_affine_iterations_is_a_finding_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "running_in.npz"
    rng = np.random.default_rng(1)
    np.savez(path, x=rng.standard_normal((128, 2048)).astype(np.float32), out=np.zeros((128, 4), np.float32))
    run = _run("running_sums", path, "running_reference")
    assert run.returncode == 1, run.stdout + run.stderr
    finding = [x for x in (run.stdout + run.stderr).splitlines() if x.startswith("finding:")]
    line = _line("total[...] = nl.add(")
    flows = [x for x in finding if "affine loop k carries a RAW" in x]
    assert len(flows) == 1
    assert f"row_sums.py:{line} [k=0]" in flows[0] and f"row_sums.py:{line} [k=1]" in flows[0]
    # and each iteration writes `total` over the last one's (the errors page's output dependence)
    overwrites = [x for x in finding if x not in flows]
    assert len(overwrites) == 1 and "write the same bytes on total" in overwrites[0], finding
    assert f"row_sums.py:{line} [k=0]" in overwrites[0] and f"row_sums.py:{line} [k=1]" in overwrites[0]


def test_the_fixed_kernel_runs_clean(inputs: Path) -> None:
    run = _run("row_sums_fixed", inputs)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "finding:" not in run.stdout + run.stderr and "warning:" not in run.stdout + run.stderr
