"""A wait added after the fact (:meth:`neuronsim.machine.order.hb.HappensBefore.after`, what
``anti-deps`` does as it adds deps) orders exactly what the same wait given up front
(:meth:`~neuronsim.machine.order.hb.HappensBefore.trigger`) orders, also once completion clocks
below the horizon are forgotten."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from neuronsim.machine.order.hb import HappensBefore
from neuronsim_tests.vacuity import nonvacuous, tally


@st.composite
def split_waits(draw, max_instances: int = 30, queues: int = 2):
    """``(seq, comp, given, added)``: per instance its sequencer, its component, the waits it
    has from the start and the waits added to it later (earlier instances, latest first)."""
    n = draw(st.integers(1, max_instances))
    seq, comp, given_waits, added = [], [], [], []
    for i in range(n):
        s = draw(st.integers(0, 4))
        seq.append(s)
        comp.append(5 + draw(st.integers(0, queues - 1)) if draw(st.booleans()) else s)
        waits = sorted(set(draw(st.lists(st.integers(0, i - 1), max_size=4))), reverse=True) if i else []
        cut = draw(st.integers(0, len(waits)))
        given_waits.append(waits[:cut])
        added.append(waits[cut:])
    return seq, comp, given_waits, added


def _starts(seq, comp, given_waits, added, forget_every: int | None) -> list[tuple]:
    hb = HappensBefore(num_queues=2)
    pos: list[int] = []
    out = []
    for i, (s, c) in enumerate(zip(seq, comp)):
        trigger = hb.trigger(s, given_waits[i])
        for t in added[i]:
            trigger = hb.after(trigger, t)
        start, p = hb.complete(i, s, c, trigger)
        pos.append(p)
        out.append(start)
        if forget_every and i % forget_every == 0:
            hb.forget(hb.horizon(), comp, pos)
    return out


@nonvacuous(added_later=100)
@settings(max_examples=300, deadline=None)
@given(split_waits(), st.sampled_from([None, 1, 3]))
def test_a_wait_added_after_the_fact_orders_what_it_would_up_front(program, forget_every):
    seq, comp, given_waits, added = program
    up_front = [g + a for g, a in zip(given_waits, added)]
    want = _starts(seq, comp, up_front, [[] for _ in seq], None)
    assert _starts(seq, comp, given_waits, added, forget_every) == want
    if any(added):
        tally("added_later")


def test_after_joins_a_kept_completion_and_leaves_a_forgotten_one():
    hb = HappensBefore(num_queues=1)
    dma_start, _ = hb.complete(0, 4, 5, hb.trigger(4))    # sp triggers a transfer on dma0
    hb.complete(1, 2, 2, hb.trigger(2))                   # dve computes, unordered with it
    zero = (0,) * 6
    assert hb.after(zero, 0) == (0, 0, 0, 0, 0, 1) and dma_start == zero
    hb.forget((0, 0, 0, 0, 0, 1), comp=[5, 2], pos=[1, 1])  # everything to come follows it
    assert hb.after(zero, 0) == zero                      # forgotten: nothing new to join
    assert hb.after(zero, 1) == (0, 0, 1, 0, 0, 0)
