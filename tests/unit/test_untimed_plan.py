"""``build_plan(timed=False)``: the plan a sequential run needs (a trace's device-value reads, the
sequential reference), without costs; the run on it equals the run on the timed plan."""

from __future__ import annotations

from pathlib import Path

import pytest

from neuronsim.machine.formats.program_json import load_program
from neuronsim.machine.sim.memory import initial_memory
from neuronsim.machine.sim.plan import build_plan
from neuronsim.machine.sim.simulator import run_sequential
from neuronsim.passes import run_pipeline

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.json"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_a_sequential_run_on_the_untimed_plan_equals_the_one_on_the_timed_plan(path):
    program = run_pipeline(load_program(str(path)), "alloc")
    timed, untimed = build_plan(program), build_plan(program, timed=False)
    assert len(untimed) == len(timed) and not any(untimed.duration)
    ran = [run_sequential(plan, initial_memory(program, plan.spec, 7)) for plan in (timed, untimed)]
    assert len(ran[0].spaces) == len(ran[1].spaces)
    assert all((a == b).all() for a, b in zip(ran[0].spaces, ran[1].spaces))  # SBUF, PSUM, DRAM
