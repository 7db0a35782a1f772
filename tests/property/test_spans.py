"""The range index both task analyses scan through answers exactly what a scan would.

* :class:`neuronsim.machine.order.spans.SpanIndex`: after any sequence of adds, removes and truncations,
  ``meeting(lo, hi)`` is exactly the stored ranges sharing an element with ``[lo, hi)``, in
  order-number order (checked against a plain list);
* the dependence pass's per-root shelves (:class:`neuronsim.passes.tasks.records.Frame`): for any access
  region, the records ``of_roots`` yields, once filtered by the overlap rule, are exactly the
  records a scan of all of them keeps, in recorded order, also after ``truncate`` (the
  back-edge walk's);
* the race checker with the index reports what the brute-force oracle reports is covered by
  ``tests/property/test_taskcheck_oracle.py``.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from neuronsim.machine.order.spans import SpanIndex
from neuronsim.passes.tasks.records import Frame, Record
from neuronsim.passes.tasks.regions import CONSERVATIVE, DYNAMIC, FULL, UNKNOWN, AccessKind, Region, regions_may_overlap

_RANGE = st.tuples(st.integers(-3, 24), st.integers(1, 9)).map(lambda p: (p[0], p[0] + p[1]))  # small: edges meet


@st.composite
def _ops(draw):
    return draw(st.lists(st.one_of(
        st.tuples(st.just("add"), _RANGE),
        st.tuples(st.just("remove"), st.integers(0, 20)),
        st.tuples(st.just("drop"), st.integers(0, 20)),
        st.tuples(st.just("query"), _RANGE)), max_size=60))


@settings(max_examples=150, deadline=None)
@given(_ops())
def test_span_index_meets_exactly_what_a_scan_meets(ops):
    index, plain, seq = SpanIndex(), {}, 0
    for op, arg in ops:
        if op == "add":
            index.add(*arg, seq, f"p{seq}")
            plain[seq] = arg
            seq += 1
        elif op == "remove" and arg in plain:
            index.remove(arg)
            del plain[arg]
        elif op == "drop":
            index.drop_from(arg)
            plain = {k: v for k, v in plain.items() if k < arg}
        elif op == "query":
            lo, hi = arg
            want = [(k, f"p{k}") for k, (a, b) in sorted(plain.items()) if a < hi and lo < b]
            assert index.meeting(lo, hi) == want
        assert len(index) == len(plain)
        assert index.every() == [(k, f"p{k}") for k in sorted(plain)]


_BOX = st.integers(1, 2).flatmap(lambda rank: st.tuples(
    st.tuples(*[st.integers(-1, 8)] * rank), st.tuples(*[st.integers(0, 4)] * rank))).map(lambda box: Region.box(*box))
_REGION = st.one_of(
    _BOX, _BOX, _BOX,  # mostly small boxes of one or two ranks: their edges meet often
    st.sampled_from([FULL, CONSERVATIVE, DYNAMIC, UNKNOWN]),
    st.just(Region.box(((1 << 63) - 2,), (4,))),  # an end beyond int64: the rule cannot separate it
)


def _record(root: str, region: Region, kind: AccessKind, i: int) -> Record:
    return Record(root, region, kind, 0, f"c{i}", None, False, False, 0, 0, (), (), False)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["x", "y"]), _REGION, st.sampled_from(list(AccessKind)[:3])), max_size=30),
       _REGION, st.booleans(), st.integers(0, 30))
def test_frame_yields_every_record_the_overlap_rule_keeps(records, region, writes_only, cut):
    frame = Frame("scope", "k", True)
    for i, (root, r, kind) in enumerate(records):
        frame.add(_record(root, r, kind, i))

    def check():
        want = [r for r in frame.records if r.root == "x" and (r.kind & AccessKind.WRITE or not writes_only)
                and regions_may_overlap(region, r.region)]
        got = [r for r in frame.of_roots(("x",), writes_only=writes_only, region=region)
               if regions_may_overlap(region, r.region)]
        assert got == want
        assert list(frame.of_roots(("x", "y"), writes_only)) == [
            r for r in frame.records if r.kind & AccessKind.WRITE or not writes_only]

    check()
    frame.truncate(cut)
    assert len(frame.records) == min(cut, len(records))
    check()
