"""The generated start-clock walk (:func:`neuronsim.machine.order.hb.start_clocks`, joins inlined, covered
waits skipped) against the same rules applied through :class:`neuronsim.machine.order.hb.HappensBefore`,
and its checking form (:func:`neuronsim.machine.order.hb.first_unordered`) against the clocks it gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from neuronsim.machine.order.hb import HappensBefore, first_unordered, start_clocks
from neuronsim_tests.vacuity import nonvacuous, tally


@st.composite
def streams(draw, max_instances: int = 40, queues: int = 3):
    """``(seq, comp, ptr, target)``: instances issued by 5 sequencers, some on DMA queues,
    each waiting for earlier ones (latest first, repeats allowed)."""
    n = draw(st.integers(1, max_instances))
    seq, comp, ptr, target = [], [], [0], []
    for i in range(n):
        s = draw(st.integers(0, 4))
        seq.append(s)
        comp.append(5 + draw(st.integers(0, queues - 1)) if draw(st.booleans()) else s)
        waits = sorted(draw(st.lists(st.integers(0, i - 1), max_size=4)), reverse=True) if i else []
        target.extend(waits)
        ptr.append(len(target))
    return seq, comp, ptr, target


@nonvacuous(with_waits=100)
@settings(max_examples=300, deadline=None)
@given(streams())
def test_generated_walk_equals_the_rules_of_happens_before(stream):
    seq, comp, ptr, target = stream
    hb = HappensBefore(num_queues=3)  # keeps every completion clock: no freeing to get wrong
    want = []
    for i in range(len(seq)):
        trigger = hb.trigger(seq[i], target[ptr[i]:ptr[i + 1]])
        want.append(list(hb.complete(i, seq[i], comp[i], trigger)[0]))
    assert start_clocks(seq, comp, ptr, target, 3).tolist() == want
    if target:
        tally("with_waits")


@nonvacuous(some_unordered=30, all_ordered=30)
@settings(max_examples=300, deadline=None)
@given(streams(), st.data())
def test_first_unordered_is_the_first_pair_the_start_clocks_leave_unordered(stream, data):
    """Pairs ``(earlier, later)`` drawn at random, grouped by ``later``: the walk names the first
    instance with a pair whose ``earlier`` completion its start clock does not cover."""
    seq, comp, ptr, target = stream
    n = len(seq)
    starts = start_clocks(seq, comp, ptr, target, 3)
    pos = [comp[:i + 1].count(comp[i]) for i in range(n)]  # 1-based, among the completions of the component
    pairs = sorted(data.draw(st.lists(st.integers(1, n - 1).flatmap(lambda y: st.tuples(st.integers(0, y - 1),
                                                                                         st.just(y))),
                                      max_size=12)) if n > 1 else [], key=lambda p: p[1])
    want = next((y for e, y in pairs if starts[y][comp[e]] < pos[e]), -1)
    pair_ptr = [sum(1 for _, y in pairs if y < i) for i in range(n + 1)]
    assert first_unordered(seq, comp, ptr, target, pair_ptr, [e for e, _ in pairs], 3) == want
    if pairs:
        tally("some_unordered" if want >= 0 else "all_ordered")
