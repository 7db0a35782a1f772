"""``anti-deps`` candidates from one sort of access events equal the seed's cell walk.

:func:`neuronsim.passes.anti_candidates.event_candidates` (the default mode) and
:func:`neuronsim.passes.anti_candidates.walk_candidates` (every mode, the split-interval-map walk) must name
the same candidate formers with the same rule bits for every instance, under every filter.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from neuronsim.machine.order.stream import InstanceStream
from neuronsim.passes import compile_program
from neuronsim.machine.order.conflicts import conflict_kind, pair_kinds
from neuronsim.passes.anti_candidates import event_candidates, walk_candidates
from neuronsim_tests.vacuity import nonvacuous, tally
from neuronsim.verify.app.scenario_runs import all_scenarios, scenario_name
from neuronsim.verify.strategies import programs

FILTERS = st.fixed_dictionaries({
    "memories": st.sampled_from([frozenset({"sbuf", "psum", "dram"}), frozenset({"sbuf"}),
                                 frozenset({"dram", "psum"})]),
    "spaces": st.sampled_from([frozenset({"local", "shared"}), frozenset({"local"}), frozenset({"shared"})]),
    "roles": st.sampled_from([frozenset({"input", "output", "internal"}), frozenset({"internal"})]),
    "analyses": st.sampled_from([frozenset({"war", "waw", "raw-reuse"}), frozenset({"war"}), frozenset({"waw", "raw"}),
                                 frozenset({"raw-reuse"})]),
})


def _same(program, alias="exact", **filters) -> int:
    stream = InstanceStream(program)
    new = event_candidates(stream, alias=alias, **filters)
    old = walk_candidates(InstanceStream(program), alias=alias, **filters)
    for got, want, what in zip(new, old, ("ptr", "former", "bits")):
        assert np.array_equal(got, want), what
    return len(new[1])


@settings(max_examples=200, deadline=None)
@given(programs(deps="none", max_instructions=12, max_loops=2, max_trip=3), FILTERS,
       st.sampled_from(["exact", "batch"]))
def test_events_equal_the_walk_on_generated_programs(program, filters, alias):
    _same(program, alias, **filters)


def test_events_equal_the_walk_on_compiled_scenarios():
    found = {scenario_name(m): _same(compile_program(m.build(), "alloc")[0]) for m in all_scenarios()}
    assert sum(found.values()) > 0, "no candidate at all would make the comparison vacuous"


@settings(max_examples=150, deadline=None)
@given(programs(deps="none", max_instructions=10, max_loops=2, max_trip=3), st.data())
def test_pair_kinds_equal_conflict_kind(program, data):
    stream = InstanceStream(program)
    n = len(stream)
    if n < 2:
        return
    pairs = data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda p: p[0] < p[1]),
                               max_size=20))
    a = np.asarray([p[0] for p in pairs], np.int64)
    b = np.asarray([p[1] for p in pairs], np.int64)
    got = pair_kinds(stream, a, b)
    if got is None:  # alias groups: the caller asks conflict_kind
        assert any(isinstance(ca.space, tuple) for ca in stream.templates)
        return
    assert got.tolist() == [conflict_kind(stream, x, y) for x, y in pairs]


@nonvacuous(alias_pairs=15)
@settings(max_examples=600, deadline=None)  # alias pairs reach ~4 % of draws
@given(programs(deps="none", max_instructions=12, max_loops=2, max_trip=3, alias_groups=True, dma=True))
def test_exact_alias_candidates_join_only_conflicting_pairs(program):
    """Every candidate the exact alias bucketing names conflicts (the batch named pairs of one
    tensor that share no byte); that the candidates are complete is the pass's soundness,
    checked against the race checker with the rest of the pipeline."""
    stream = InstanceStream(program)
    ptr, former, _ = event_candidates(stream)
    waiter = np.repeat(np.arange(len(stream)), np.diff(ptr))
    for a, b in zip(former.tolist(), waiter.tolist()):
        assert conflict_kind(stream, a, b) > 0, (stream.instance_name(a), stream.instance_name(b))
    aliased = np.fromiter((isinstance(ca.space, tuple) for ca in stream.templates), bool, len(stream.templates))
    if len(walk_candidates(stream, alias="exact", templates=aliased)[1]):
        tally("alias_pairs")
