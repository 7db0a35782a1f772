"""``neuronsim fuzz`` as a user runs it: a pass from the current folder, one report per
distinct failure, ``--fail-fast``, bad flags."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from neuronsim.verify.cli.cmd_fuzz import failure_signature

SCRIPT = shutil.which("neuronsim", path=os.path.dirname(sys.executable)) or "neuronsim"
BROKEN_PASS = "def run(program):\n    raise ValueError('this pass is broken')\n"


def _fuzz(cwd, *args):
    return subprocess.run([SCRIPT, "fuzz", "--pass", "my_broken_pass:run", "--json", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_a_pass_in_the_current_folder_and_one_report_per_distinct_failure(tmp_path):
    (tmp_path / "my_broken_pass.py").write_text(BROKEN_PASS)
    run = _fuzz(tmp_path, "--examples", "60", "--workers", "1", "--out", "failures")
    assert run.returncode == 1, run.stderr
    doc = json.loads(run.stdout)
    assert [f["chunk"] for f in doc["failures"]] == [0, 1, 2]  # every chunk meets the same failure
    assert len(doc["distinct"]) == 1 and doc["distinct"][0]["chunks"] == [0, 1, 2]
    saved = doc["distinct"][0]["saved"]
    assert {f["saved"] for f in doc["failures"]} == {saved}
    assert sorted(os.listdir(tmp_path / "failures")) == ["failure-error-seed0.json", "failure-error-seed0.report.json"]
    report = json.loads((tmp_path / "failures" / "failure-error-seed0.report.json").read_text())
    assert report["check"] == "error" and "this pass is broken" in report["message"]
    lines = run.stderr.splitlines()  # off a terminal: the summary line, then a line before and after the shrink
    assert lines[0].startswith("fuzz: 3 of 60 examples") and all(line.startswith("fuzz: ") for line in lines)


def test_fail_fast_stops_at_the_first_failing_chunk(tmp_path):
    (tmp_path / "my_broken_pass.py").write_text(BROKEN_PASS)
    run = _fuzz(tmp_path, "--examples", "100", "--workers", "2", "--out", "failures", "--fail-fast")
    assert run.returncode == 1, run.stderr
    doc = json.loads(run.stdout)
    assert doc["stopped_early"] is True and len(doc["failures"]) == 1 and doc["examples"] < 100


def test_a_pass_module_that_does_not_import_is_exit_2(tmp_path):
    (tmp_path / "my_broken_pass.py").write_text("def run(:\n")
    run = _fuzz(tmp_path, "--examples", "1")
    assert run.returncode == 2 and len(run.stderr.splitlines()) == 1 and "SyntaxError" in run.stderr
    assert json.loads(run.stdout)["path"] == "--pass"


def test_bad_fuzz_flags_are_exit_2(tmp_path):
    for args, fragment in ((["--seed", "-1"], "--seed"), (["--out", str(tmp_path / "f")], "not a folder")):
        (tmp_path / "f").write_text("a file")
        run = subprocess.run([SCRIPT, "fuzz", "--examples", "1", *args], capture_output=True, text=True, timeout=120)
        assert run.returncode == 2 and len(run.stderr.splitlines()) == 1 and fragment in run.stderr, run.stderr


def test_signatures_group_what_differs_only_by_generated_names():
    a = failure_signature("races", "1 race(s), first RAW matmul2 / tensor_copy3[0,1]")
    b = failure_signature("races", "1 race(s), first RAW matmul7 / tensor_copy1[2,0]")
    c = failure_signature("races", "1 race(s), first WAR matmul2 / tensor_copy3")
    assert a == b != c
    assert failure_signature("outputs", "x") != failure_signature("trace", "x")
