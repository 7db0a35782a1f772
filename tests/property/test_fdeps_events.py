"""``build-fdeps`` from one sort of access events equals the instance-by-instance walk.

The pass (:func:`neuronsim.passes.build_fdeps.build_flow_edges`) computes the RAW chain with numpy over
:mod:`neuronsim.machine.order.events` and walks only the chain instructions; ``tests/flow_oracle.py`` is the
walk over split interval maps it replaced.  Both must give the same edges and the same
waiter instances per edge, on generated programs (flat, looped, virtual, with alias groups
and rotating tensors) and on every shipped scenario.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from neuronsim.machine.order.stream import InstanceStream
from neuronsim.passes.build_fdeps import build_flow_edges
from neuronsim_tests.flow_oracle import reference_flow_edges
from neuronsim.verify.app.scenario_runs import all_scenarios, scenario_name
from neuronsim.verify.strategies import programs


def _both(program, **options):
    stream = InstanceStream(program)
    where_new, where_old = {}, {}
    new = build_flow_edges(stream, where=where_new, **options)
    old = reference_flow_edges(InstanceStream(program), where=where_old, **options)
    return (new, where_new), (old, where_old)


@settings(max_examples=200, deadline=None)
@given(programs(deps="none", virtual=True, max_instructions=12, max_trip=3))
def test_events_equal_the_walk_on_generated_programs(program):
    new, old = _both(program)
    assert new == old


@settings(max_examples=100, deadline=None)
@given(programs(deps="none", max_instructions=12, max_loops=3, max_depth=3, max_trip=3))
def test_events_equal_the_walk_on_deep_loops_and_placed_tensors(program):
    new, old = _both(program)
    assert new == old
    assert _both(program, reduction=False, groups=False)[0] == _both(program, reduction=False, groups=False)[1]


@pytest.mark.parametrize("module", all_scenarios(), ids=scenario_name)
def test_events_equal_the_walk_on_scenarios(module):
    program = module.build()
    new, old = _both(program)
    assert new == old
    assert new[0], "a scenario without flow edges would make this comparison vacuous"
