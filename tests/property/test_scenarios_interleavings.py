"""Every shipped race-free program equals the sequential reference under 20 seeded
interleavings (issue #4's acceptance), after the default pipeline."""

from __future__ import annotations

import pytest

from neuronsim.machine.sim.simulator import simulate
from neuronsim.passes import compile_program
from neuronsim.verify.app.scenario_runs import all_scenarios, scenario_name
from neuronsim.verify.racecheck import check_program

SEEDS = [None, *range(20)]


@pytest.mark.parametrize("module", all_scenarios(), ids=scenario_name)
def test_scenario_equals_the_sequential_reference_under_20_seeds(module):
    compiled, _ = compile_program(module.build())
    assert check_program(compiled).race_free
    sim = simulate(compiled, seeds=SEEDS, inputs=module.inputs(0), compare="all")
    assert [run.seed for run in sim.runs if run.differs] == []
