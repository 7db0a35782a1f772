"""``bench/bench_scenarios.py``: the expansion it measures keeps the program's meaning, and the
figures it prints agree with the goldens.  The expansion is the product's
(``expand-scheduling-units``), tested here directly; the script runs as its user runs it and
its printed tables are what is checked.  Timings are printed by the script, never asserted."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from functools import cache

import pytest

from neuronsim.machine.ir.program import Loop
from neuronsim.machine.order.stream import stream_of
from neuronsim.machine.sim.simulator import simulate
from neuronsim.passes import DEFAULT_PIPELINE, compile_program
from neuronsim.passes.expand_scheduling_units import expand_scheduling_units
from neuronsim.verify.app.scenario_runs import all_scenarios, compare_outputs, get_scenario, golden_path, scenario_name
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.sync_counts import minimum_sync
from neuronsim_tests import ROOT
from neuronsim_tests.bench_runs import run_bench

EXPLICIT = [m for m in all_scenarios() if getattr(m, "placement", None) == "explicit"]
ALLOCATIONS = ("alloc", "alloc{rotate=false}")


@cache
def full_table() -> dict[tuple[str, str], list[str]]:
    """``(scenario, allocation)`` -> the cells of its row in the script's plain table."""
    header, *lines = run_bench("bench_scenarios.py").stdout.splitlines()
    assert header.split("  ")[0] == "scenario"
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines]
    assert all(len(row) == 9 for row in rows), rows
    return {(row[0], row[1]): row for row in rows}


def _number(cell: str) -> float:
    return float(cell.replace(",", ""))


def test_doctests():
    done = subprocess.run([sys.executable, "-m", "doctest", "-v", "bench/bench_scenarios.py"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    passed = re.search(r"(\d+) passed and 0 failed", done.stdout)
    assert passed and int(passed.group(1)) > 0, done.stdout[-500:]


def test_explicit_scenarios_rotate_somewhere():
    # What the expansion is for: hand-placed rotating buffers, which expand-scheduling-units refuses.
    assert EXPLICIT and any(t.rotate for m in EXPLICIT for t in m.build().tensors.values())


@pytest.mark.parametrize("module", EXPLICIT, ids=scenario_name)
def test_expansion_keeps_every_instance_on_its_bytes(module):
    # Placed programs (alloc is a no-op): the instance-exact minimum depends only on the
    # instances, their order and their bytes, so a slot put on the wrong bytes changes it.
    program = module.build()
    flat = expand_scheduling_units(program)
    assert not any(isinstance(node, Loop) for node in flat.body)
    assert not any(t.rotate for t in flat.tensors.values()) and not flat.has_virtual_tensors
    assert len(flat.body) == len(stream_of(program))
    assert minimum_sync(flat).figures == minimum_sync(program).figures
    assert check_program(compile_program(flat, DEFAULT_PIPELINE)[0]).race_free


@pytest.mark.parametrize("name", ["explicit_double_buffer", "allocated_fused_linear"])
def test_expanded_program_computes_the_reference(name):
    module = get_scenario(name)
    compiled, _ = compile_program(expand_scheduling_units(module.build()), DEFAULT_PIPELINE)
    values = module.inputs(0)
    outputs = simulate(compiled, seed=0, inputs=values).runs[0].outputs
    assert compare_outputs(outputs, module.reference(values), module.rtol, module.atol) == []


@pytest.mark.parametrize("module", all_scenarios(), ids=scenario_name)
def test_figures_agree_with_the_golden(module):
    golden = json.loads(golden_path(module).read_text())
    name = scenario_name(module)
    rows = [full_table()[name, allocation] for allocation in ALLOCATIONS]
    assert [int(row[2]) for row in rows] == [golden["instances"]] * 2
    before, after, minimum = (int(n) for n in rows[0][3].split(" / "))
    assert {"before": before, "after": after, "minimum": minimum} == golden["waits"]
    assert (rows[0][4] == "1.000") == (after == minimum)
    for row in rows:
        kept_before, kept_after, _ = (int(n) for n in row[3].split(" / "))
        assert kept_after <= kept_before
        assert _number(row[5]) > 0 and _number(row[6]) > 0


def test_wait_differences_name_the_instances():
    # The loop program of the fused linear puts the wait for the second slice's write-back on
    # the group-start matmul; the minimum puts it on the matmul that reads that slice.
    found = run_bench("bench_scenarios.py", "--waits", "allocated_fused_linear", "--allocation", "alloc").stdout
    assert any(line.startswith("qkv_start[0,0]: kept waits for ['write_back[0,0,1]']") for line in found.splitlines())
    same = run_bench("bench_scenarios.py", "--waits", "softmax").stdout
    assert same.splitlines() == ["the same waits, instance for instance"]


def test_markdown_table_has_one_line_per_scenario():
    lines = run_bench("bench_scenarios.py", "--markdown", "--only", "softmax,transpose2d").stdout.splitlines()
    assert len(lines) == 4 and lines[2].startswith("| `softmax` | 12 |") and lines[3].startswith("| `transpose2d` |")
    columns = lines[0].count("|")
    assert columns > 2 and all(line.count("|") == columns for line in lines)
    # its cells are the plain table's figures: alloc's, then alloc{rotate=false}'s
    multi, single = (full_table()["softmax", allocation] for allocation in ALLOCATIONS)
    cells = [cell.strip() for cell in lines[2].strip("|").split("|")]
    assert cells[1:7] == [multi[2], multi[3], multi[4], multi[5], multi[6], multi[8]]
    assert cells[7] == " / ".join(single[3].split(" / ")[1:]) and cells[8:] == [single[5], single[6], single[8]]


def test_numbers_in_the_table_are_the_figures():
    for row in full_table().values():
        before, after, minimum = (int(n) for n in row[3].split(" / "))
        assert float(row[4]) == pytest.approx(after / minimum if minimum else 1.0, abs=0.0005)
        assert float(row[8]) == pytest.approx(_number(row[5]) / _number(row[6]), abs=0.006)
