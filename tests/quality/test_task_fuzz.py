"""``neuronsim fuzz --tasks``: the real task pipeline passes, each planted task-pass bug is found
within the default budget (``neuronsim fuzz``'s 500 examples), failures shrink and save."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from neuronsim.testing.planted_tasks import DemotesUncoveredInput, ForgetsWar, IgnoresMemRefAliasing
from neuronsim.verify.tasks.task_fuzz import check_task_pass, is_task_pass

from neuronsim_tests import ROOT

SCRIPT = shutil.which("neuronsim", path=os.path.dirname(sys.executable)) or "neuronsim"
DEFAULT_BUDGET = 500


def test_the_real_task_pipeline_passes():
    result = check_task_pass(None, examples=80, seed=3, shrink=False)
    assert result.failure is None and result.examples == 80


@pytest.mark.parametrize(("planted", "checks"), [
    ("ForgetsWar", {"coverage", "races"}),
    ("IgnoresMemRefAliasing", {"coverage", "races"}),
    ("DemotesUncoveredInput", {"races", "coverage"}),
])
def test_each_planted_bug_is_found_by_neuronsim_fuzz_within_the_default_budget(planted, checks, tmp_path):
    # the planted passes are installed (neuronsim.testing), found by address as a user's are
    run = subprocess.run([SCRIPT, "fuzz", "--pass", f"neuronsim.testing.planted_tasks:{planted}", "--replace",
                          "auto-derive-task-dependencies", "--no-shrink", "--fail-fast", "--workers", "2", "--json",
                          "--out", str(tmp_path / "failures")], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stderr
    doc = json.loads(run.stdout)
    assert doc["tasks"] is True and doc["examples"] <= DEFAULT_BUDGET
    assert doc["failures"] and doc["failures"][0]["check"] in checks, doc["failures"]
    saved = json.loads(open(doc["distinct"][0]["saved"]).read())
    assert saved["format"] == "neuronsim.tasks/1"


def test_planted_bugs_are_task_passes_and_a_failure_shrinks():
    assert all(is_task_pass(p) for p in (ForgetsWar, IgnoresMemRefAliasing, DemotesUncoveredInput()))
    result = check_task_pass(DemotesUncoveredInput(), examples=200, seed=0, replace="auto-derive-task-dependencies")
    failure = result.failure
    assert failure is not None and failure.check == "races"
    shrunk = json.loads(failure.program)
    body = json.dumps(shrunk["function"]["body"])
    calls = body.count('"submit":') + body.count('"call":')
    assert calls <= 6, failure.program  # a write, the demoted read after it, little else
    assert failure.report["races"] and failure.compiled is not None
