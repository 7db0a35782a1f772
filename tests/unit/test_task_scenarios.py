"""The task scenarios (``scenarios/tasks``): tracking saved, zero races, shipped JSON, ``neuronsim run``."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from machine.tasks.format import load_tasks
from verify.cli import cli
from verify.task_scenarios import all_task_scenarios, find_task_scenario, run_task_scenario, task_scenario_name

SCENARIOS = all_task_scenarios()


def test_the_three_workloads_are_shipped():
    assert {task_scenario_name(m) for m in SCENARIOS} >= {"paged_attention", "gemm_splitk", "moe_dispatch"}


@pytest.mark.parametrize("module", SCENARIOS, ids=task_scenario_name)
def test_each_saves_tracking_and_has_no_race(module):
    result = run_task_scenario(module, seeds=(None, 3))
    assert result.problems() == []
    saved = result.footprint.saved()
    assert saved["lookups"] > 0 and saved["inserts"] > 0 and saved["manual_scopes"] >= 1
    before, after = result.footprint.stages
    assert after.run["lookups"] == 0 and after.run["manual_tasks"] == after.run["tasks"]
    assert after.races == 0 and result.trace_races == [0, 0]
    shipped = load_tasks(str(module.__file__).replace(".py", ".json"))
    assert shipped == module.build_tasks()


def test_the_all_auto_runtime_races_where_buffers_are_reused():
    """The WAR hole: the reused score tile of paged attention, the reused hidden buffer of MoE."""
    races = {task_scenario_name(m): run_task_scenario(m, seeds=()).footprint.stages[0].races for m in SCENARIOS}
    assert races["paged_attention"] > 0 and races["moe_dispatch"] > 0 and races["gemm_splitk"] == 0


def test_neuronsim_run_takes_a_task_scenario(tmp_path):
    result = CliRunner().invoke(cli, ["run", "gemm_splitk", "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["kind"] == "tasks" and doc["problems"] == [] and doc["summary"]["saved"]["lookups"] == 144
    trace = json.loads((tmp_path / "gemm_splitk.trace.json").read_text())
    assert any(e.get("name") == "thread_name" and e["args"]["name"] == "orchestrator" for e in trace["traceEvents"])
    listed = CliRunner().invoke(cli, ["run", "--list"])
    assert "moe_dispatch" in listed.stdout.split()
    assert find_task_scenario("softmax") is None
