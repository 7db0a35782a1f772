"""The task scenarios (``scenarios/tasks``): tracking saved, zero races, shipped JSON, ``neuronsim run``."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from neuronsim.machine.tasks.format import load_tasks
from neuronsim.verify.cli import cli
from neuronsim.verify.tasks.scenarios import (all_task_scenarios, find_task_scenario, run_task_scenario,
                                              task_scenario_name)

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
    assert shipped == module.build_tasks() and not result.stale_json
    assert load_tasks(str(module.__file__).replace(".py", ".compiled.json")) == result.compiled


@pytest.mark.parametrize("module", SCENARIOS, ids=task_scenario_name)
def test_neuronsim_check_passes_the_shipped_compiled_program(module):
    """``neuronsim check`` on what is shipped: the compiled program is race-free; the raw one is
    the all-AUTO program, racing exactly where the runtime misses a WAR."""
    name = task_scenario_name(module)
    compiled = CliRunner().invoke(cli, ["check", f"scenarios/tasks/{name}.compiled.json", "--json"])
    assert compiled.exit_code == 0 and json.loads(compiled.stdout)["race_free"], compiled.output
    raw = CliRunner().invoke(cli, ["check", f"scenarios/tasks/{name}.json", "--json"])
    kinds = {r["kind"] for r in json.loads(raw.stdout)["races"]}
    assert (raw.exit_code, kinds) == ((0, set()) if name == "gemm_splitk" else (1, {"WAR"})), raw.output


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


def test_the_sequences_of_paged_attention_stay_parallel_after_the_passes():
    """The block loop's back-edges are carried in it: no task of one sequence waits for another's
    (plain deps would chain each sequence's first block to the previous sequence's last)."""
    from neuronsim.machine.tasks.orchestrator import unroll_task_program
    from neuronsim.passes.tasks import compile_tasks

    module = find_task_scenario("paged_attention")
    instances = unroll_task_program(compile_tasks(module.build_tasks())[0])
    seq = [dict(t.iteration).get("seqs") for t in instances]
    waits = [(t.index, d) for t in instances for d in (*t.user_deps, *t.compiler_deps)]
    assert waits and all(seq[a] == seq[b] for a, b in waits)


def _readme_block(after: str, fence: str = "```") -> list[str]:
    """The lines of README.md from the one after ``after`` to the closing fence (or blank line)."""
    from neuronsim_tests.docs_kit import ROOT

    lines = (ROOT / "README.md").read_text().splitlines()
    start = lines.index(after) + 1
    end = next(i for i in range(start, len(lines)) if lines[i] == fence or (fence == "" and not lines[i].strip()))
    return lines[start:end]


def test_the_readme_shows_what_the_commands_print():
    """The task section's figures come from the commands and bench/bench_task_scenarios.py."""
    from neuronsim_tests.bench_runs import run_bench

    shown = _readme_block("$ neuronsim tasks examples/tasks/accumulate.json -o compiled.json")
    printed = CliRunner().invoke(cli, ["tasks", "examples/tasks/accumulate.json"]).stdout.splitlines()
    assert shown == printed
    header, rule, *rows = run_bench("bench_task_scenarios.py", "--markdown").stdout.splitlines()
    assert rows and all(row.startswith("| `") for row in rows)
    assert _readme_block(header, fence="") == [rule, *rows]
