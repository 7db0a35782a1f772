"""``bench/bench_scenarios.py``: its expansion keeps the program's meaning, its figures agree
with the goldens.  Timings are printed by the script, never asserted here."""

from __future__ import annotations

import doctest
import importlib.util
import json
import sys
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from neuronsim.machine.ir.program import Loop
from neuronsim.machine.sim.simulator import simulate
from neuronsim.passes import DEFAULT_PIPELINE, compile_program
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.app.scenario_runs import all_scenarios, compare_outputs, get_scenario, golden_path, scenario_name
from neuronsim.verify.sync_counts import minimum_sync

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_scenarios.py"
EXPLICIT = [m for m in all_scenarios() if getattr(m, "placement", None) == "explicit"]


@cache
def bench():
    spec = importlib.util.spec_from_file_location("bench_scenarios", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_doctests():
    result = doctest.testmod(bench())
    assert result.attempted > 0 and result.failed == 0


def test_explicit_scenarios_rotate_somewhere():
    # What the expansion is for: hand-placed rotating buffers, which expand-scheduling-units refuses.
    assert EXPLICIT and any(t.rotate for m in EXPLICIT for t in m.build().tensors.values())


@pytest.mark.parametrize("module", EXPLICIT, ids=scenario_name)
def test_expansion_keeps_every_instance_on_its_bytes(module):
    # Placed programs (alloc is a no-op): the instance-exact minimum depends only on the
    # instances, their order and their bytes, so a slot put on the wrong bytes changes it.
    program = module.build()
    flat = bench().expand_fully(program)
    assert not any(isinstance(node, Loop) for node in flat.body)
    assert not any(t.rotate for t in flat.tensors.values()) and not flat.has_virtual_tensors
    assert len(flat.body) == sum(1 for _ in bench()._instances(program.body, {}))
    assert minimum_sync(flat).figures == minimum_sync(program).figures
    assert check_program(compile_program(flat, DEFAULT_PIPELINE)[0]).race_free


@pytest.mark.parametrize("name", ["explicit_double_buffer", "allocated_fused_linear"])
def test_expanded_program_computes_the_reference(name):
    module = get_scenario(name)
    compiled, _ = compile_program(bench().expand_fully(module.build()), DEFAULT_PIPELINE)
    values = module.inputs(0)
    outputs = simulate(compiled, seed=0, inputs=values).runs[0].outputs
    assert compare_outputs(outputs, module.reference(values), module.rtol, module.atol) == []


@pytest.mark.parametrize("module", all_scenarios(), ids=scenario_name)
def test_figures_agree_with_the_golden(module):
    golden = json.loads(golden_path(module).read_text())
    multi, single = bench().scenario_rows(module)
    assert (multi.allocation, single.allocation) == ("alloc", "alloc{rotate=false}")
    kept = multi.kept
    assert kept.instances == golden["instances"] == multi.expanded.instances == single.kept.instances
    assert {"before": kept.before, "after": kept.after, "minimum": kept.minimum} == golden["waits"]
    assert (kept.ratio == 1.0) == (golden["waits"]["after"] == golden["waits"]["minimum"])
    for row in (multi, single):
        assert row.kept.after <= row.kept.before and row.expanded.after <= row.expanded.before
        assert row.kept.makespan_ns > 0 and row.expanded.makespan_ns > 0


def test_wait_differences_name_the_instances():
    # The loop program of the fused linear puts the wait for the second slice's write-back on
    # the group-start matmul; the minimum puts it on the matmul that reads that slice.
    found = bench().wait_differences(get_scenario("allocated_fused_linear"), "alloc")
    assert any(line.startswith("qkv_start[0,0]: kept waits for ['write_back[0,0,1]']") for line in found)
    assert bench().wait_differences(get_scenario("softmax"), "alloc{rotate=false}") == []


def test_markdown_table_has_one_line_per_scenario(capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["bench_scenarios.py", "--markdown", "--only", "softmax,transpose2d"])
    bench().main()
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and lines[2].startswith("| `softmax` | 12 |") and lines[3].startswith("| `transpose2d` |")
    assert all(line.count("|") == len(bench().COMPACT) + 1 for line in lines)


def test_numbers_in_the_table_are_the_figures():
    row = bench().scenario_rows(get_scenario("softmax"))[0]
    cells = bench().cells(row)
    assert cells[3] == f"{row.kept.before} / {row.kept.after} / {row.kept.minimum}"
    assert float(cells[8]) == pytest.approx(row.kept.makespan_ns / row.expanded.makespan_ns, abs=0.005)
    assert np.isclose(row.speedup, row.kept.makespan_ns / row.expanded.makespan_ns)
