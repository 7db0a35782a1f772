"""The sweep finding HBM intervals two ranks (cores, grid programs) touch in common
(``verify/nki/core_races._clashes``) against a brute force over every pair of intervals: the same
instruction pairs, each with an instance pair that really clashes (overlapping bytes, two
ranks, one a write), and no more than the limit asked."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from neuronsim.verify.nki.core_races import _clashes

INSTRUCTIONS = 4


@st.composite
def intervals(draw):
    out = []
    for inst in range(draw(st.integers(0, 24))):
        low = draw(st.integers(0, 40))
        out.append((low, low + draw(st.integers(1, 12)), (draw(st.integers(0, 3)),), draw(st.booleans()), inst,
                    draw(st.integers(0, 1))))
    return out


def _instr(inst: int) -> int:
    return inst % INSTRUCTIONS


def _clash(a, b) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[2] != b[2] and (a[3] or b[3])


def _brute_force(ivs) -> set[tuple[int, int]]:
    pairs = set()
    for a in ivs:
        for b in ivs:
            if _clash(a, b) and a[2] < b[2]:
                pairs.add((_instr(a[4]), _instr(b[4])))
    return pairs


@settings(max_examples=300, deadline=None)
@given(intervals())
def test_every_pair_of_instructions_that_clash_once_each_with_a_clashing_pair(ivs):
    by_inst = {iv[4]: iv for iv in ivs}
    seen: set[tuple[int, int]] = set()
    found = _clashes(ivs, _instr, seen, limit=10**9)
    assert seen == _brute_force(ivs)
    assert len(found) == len(seen)
    for first, second, both, _tensors in found:
        a, b = by_inst[first], by_inst[second]
        assert _clash(a, b) and a[2] < b[2] and both == (a[3] and b[3])


@settings(max_examples=100, deadline=None)
@given(intervals(), st.integers(1, 5))
def test_the_sweep_stops_at_the_limit(ivs, limit):
    seen: set[tuple[int, int]] = set()
    found = _clashes(ivs, _instr, seen, limit)
    assert len(found) == len(seen) == min(limit, len(_brute_force(ivs)))
