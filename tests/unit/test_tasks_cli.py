"""``neuronsim tasks``: the report, the compiled output, and unusable input (exit 2, one located line)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from neuronsim.machine.tasks import load_tasks
from neuronsim.verify.cli import cli

from neuronsim_tests.tasks_format_kit import BASE, BAD, _edit

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tasks"
HOLE = str(EXAMPLES / "backedge_hole.json")
CLI = [sys.executable, "-c", "from neuronsim.verify.cli import main; main()"]


def _json(*args):
    run = CliRunner().invoke(cli, ["tasks", *args, "--json"])
    assert run.exit_code == 0, run.output
    return json.loads(run.stdout)


def test_report_lists_deps_directions_and_scopes_per_call():
    report = _json(HOLE)
    assert report["format"] == "neuronsim.tasks-report/1" and report["whole_layer_manual"]
    calls = {c["name"]: c for c in report["calls"]}
    assert [d["on"] for d in calls["produce"]["compiler_deps"]] == ["tid_p", "tid_c"]
    assert calls["produce"]["demoted"] == {"0": "inout -> output_existing"}
    assert calls["consume"]["scope"] == {"mode": "manual", "owner": "compiler", "name": ""}
    assert any(h["previous_iteration"] and h["prior"] == "consume" for h in calls["produce"]["hazards"])
    assert report["scopes"] == [{"where": "stream", "mode": "manual",
                                 "reason": "the whole body was analysed without fallback"}]


def test_faithful_reproduces_the_seed():
    report = _json(HOLE, "--faithful")
    assert report["faithful"]
    assert {c["name"]: [d["on"] for d in c["compiler_deps"]] for c in report["calls"]} == \
        {"produce": [], "consume": ["tid_p"]}


def test_fallbacks_are_reported_with_their_reason():
    report = _json(str(EXAMPLES / "views_and_memrefs.json"))
    (region,) = report["regions"]
    assert region["fallback"]["reason"] == "unsupported-location" and region["fallback"]["call"] == "read_picked"
    text = CliRunner().invoke(cli, ["tasks", str(EXAMPLES / "views_and_memrefs.json")]).stdout
    assert "FALLBACK (unsupported-location) at call read_picked argument 0" in text


def test_loop_fan_ins_are_spelled_out():
    text = CliRunner().invoke(cli, ["tasks", str(EXAMPLES / "accumulate.json")]).stdout
    assert "acc_out (every matmul of loop k_loop)" in text


def test_output_is_the_compiled_program(tmp_path):
    target = tmp_path / "compiled.json"
    run = CliRunner().invoke(cli, ["tasks", HOLE, "-o", str(target)])
    assert run.exit_code == 0, run.output
    compiled = load_tasks(str(target))
    assert compiled.function.auto_scope is False and compiled.function.body[0].manual


def test_a_custom_pipeline_and_a_bad_one(tmp_path):
    report = _json(HOLE, "--passes", "derive-call-directions")
    assert not report["analysed"] and all(c["compiler_deps"] == [] for c in report["calls"])
    run = CliRunner().invoke(cli, ["tasks", HOLE, "--passes", "derive-call-directions,no-such-pass"])
    assert run.exit_code == 2 and "unknown pass 'no-such-pass'" in run.stderr


def test_a_users_pass_in_the_task_pipeline(tmp_path, monkeypatch):
    """A user's pass in ``tasks --passes`` (docs/tasks-passes.md): the check of its result read a
    program's machine, which a task program has none of, so every user pass was an exit 3
    (probe_bad F2); ``footprint`` the same."""
    (tmp_path / "mypass.py").write_text("def ident(program):\n    return program\n")
    monkeypatch.chdir(tmp_path)
    spec = "derive-call-directions,auto-derive-task-dependencies,materialize-runtime-scopes,mypass:ident"
    assert _json(HOLE, "--passes", spec)["calls"] == _json(HOLE, "--passes", spec.rsplit(",", 1)[0])["calls"]
    run = CliRunner().invoke(cli, ["footprint", HOLE, "--passes", spec])
    assert run.exit_code == 0, run.output


@pytest.mark.parametrize("what, edit, path, fragment", BAD[:8] + BAD[-6:], ids=[b[0] for b in BAD[:8] + BAD[-6:]])
def test_bad_programs_exit_2_with_one_located_line(tmp_path, what, edit, path, fragment):
    source = tmp_path / "bad.json"
    source.write_text(json.dumps(_edit(edit)))
    run = CliRunner().invoke(cli, ["tasks", str(source)])
    assert run.exit_code == 2 and run.stdout == ""
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: ") and fragment in lines[0], run.stderr


def test_unusable_input_through_the_real_entry_point(tmp_path):
    source = tmp_path / "bad.json"
    source.write_text('{"format": "neuronsim.tasks/1", "kernels": {}, "function": {"body": [')
    run = subprocess.run([*CLI, "tasks", "--json", str(source)], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert json.loads(run.stdout) == {"format": "neuronsim.error/1", "path": str(source), "internal": False,
                                      "message": "malformed JSON at line 1 column 70: Expecting value"}
    missing = subprocess.run([*CLI, "tasks", str(tmp_path / "nope.json")], capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and missing.stderr.startswith(f"error: {tmp_path / 'nope.json'}: cannot read it")
    program_format = subprocess.run([*CLI, "tasks", "examples/matmul_k_loop.json"], capture_output=True,
                                    text=True, timeout=120)
    assert program_format.returncode == 2 and "this is a neuronsim.program/1 program" in program_format.stderr


def test_every_example_compiles_both_ways():
    for path in sorted(EXAMPLES.glob("*.json")):
        for flag in ([], ["--faithful"]):
            run = CliRunner().invoke(cli, ["tasks", str(path), *flag])
            assert run.exit_code == 0, (path, run.output)
    assert BASE["format"] == "neuronsim.tasks/1"
