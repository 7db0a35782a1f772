"""The README's NKI example as a user runs it: the racy kernel exits 1 with its finding at the
kernel's line, the fixed one exits 0, both with outputs equal to the numpy reference."""

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


def _run(kernel: str, inputs: Path) -> subprocess.CompletedProcess:
    script = shutil.which("neuronsim", path=os.path.dirname(sys.executable)) or "neuronsim"
    return subprocess.run([script, "run", f"{EXAMPLE}::{kernel}", "--inputs", str(inputs), "--out", str(inputs.parent / "out"),
                           "--reference", f"{EXAMPLE}:reference"], capture_output=True, text=True, timeout=300)


def test_the_racy_kernel_is_reported_at_its_line(inputs: Path) -> None:
    run = _run("row_sums", inputs)
    assert run.returncode == 1, run.stderr
    line = next(i for i, text in enumerate(EXAMPLE.read_text().splitlines(), 1) if "acc +=" in text)
    finding = [x for x in (run.stdout + run.stderr).splitlines() if x.startswith("finding:")]
    assert len(finding) == 1 and "inside affine loop k" in finding[0] and f"row_sums.py:{line}" in finding[0]
    assert "outputs vs user reference" in run.stdout and "equal" in run.stdout


def test_the_fixed_kernel_runs_clean(inputs: Path) -> None:
    run = _run("row_sums_fixed", inputs)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "finding:" not in run.stdout + run.stderr
