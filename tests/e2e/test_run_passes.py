"""``neuronsim run --passes SPEC``: the pipeline a kernel or a scenario compiles with, as a user
selects it (issue 30: the compiler model's passes selectable for any program); the installed
console script, run from a folder outside the checkout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

NEURONSIM = Path(sys.executable).with_name("neuronsim")

KERNEL = Path(__file__).resolve().parents[1] / "nki" / "kernels" / "rows_times_weight.py"

NESTS = "load-elim{nests=true},alloc,schedule,dma-place,dep-opt{memsets=false}"


def _run(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(NEURONSIM), "run", *args], cwd=folder, capture_output=True, text=True, timeout=600)


def _kernel(folder: Path) -> list[str]:
    (folder / "rows.py").write_text(KERNEL.read_text())
    rng = np.random.default_rng(0)
    np.savez(folder / "in.npz", xT=rng.uniform(-1, 1, (256, 512)).astype(np.float32),
             w=rng.uniform(-1, 1, (256, 1024)).astype(np.float32))
    return ["rows.py::rows_times_weight", "--inputs", "in.npz", "--reference", "rows.py:reference", "--json"]


def test_a_kernel_compiles_with_the_pipeline_given_and_its_outputs_stay(tmp_path: Path) -> None:
    args = _kernel(tmp_path)
    default = _run(tmp_path, *args, "--out", "a")
    chosen = _run(tmp_path, *args, "--out", "b", "--passes", NESTS)
    assert default.returncode == 0 and chosen.returncode == 0, default.stderr + chosen.stderr
    first, second = json.loads(default.stdout), json.loads(chosen.stdout)
    assert first["summary"]["pipeline"].startswith("load-elim,alloc,schedule")
    assert second["summary"]["pipeline"] == NESTS + ",dep-reduction"
    assert first["summary"]["outputs_match"] and second["summary"]["outputs_match"]
    # the weight's 2 x 2 tiles load once, not once per row tile: fewer bytes moved
    assert second["timing"]["dma_bytes"] < first["timing"]["dma_bytes"]


def test_a_bad_pipeline_is_one_line_naming_the_option_before_any_work(tmp_path: Path) -> None:
    args = _kernel(tmp_path)
    for spec, words in (("bogus", "unknown pass 'bogus'"), ("load-elim{nests=wat}", "expected true or false")):
        run = _run(tmp_path, *args, "--out", "o", "--passes", spec)
        lines = run.stderr.strip().splitlines()
        assert run.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: --passes") and words in lines[0]
        assert "Traceback" not in run.stderr and not (tmp_path / "o").exists()
    scenario = _run(tmp_path, "matmul_tiled", "--out", "s", "--passes", "alloc,build-fdeps,anti-deps", "--json")
    assert scenario.returncode == 0 and json.loads(scenario.stdout)["summary"]["pipeline"] == \
        "alloc,build-fdeps,anti-deps,dep-reduction"
