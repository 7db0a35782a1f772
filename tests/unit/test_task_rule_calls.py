"""``docs/task-rules.md`` section 3 items 4, 5 and 6: one task call, the hazard rule and the overlap rule."""

from __future__ import annotations

import pytest

from neuronsim.passes.tasks.regions import (
    CONSERVATIVE, DYNAMIC, FULL, UNKNOWN, AccessKind, Hazard, Region, hazards, regions_may_overlap, slice_region,
)

from neuronsim_tests.task_rules_kit import analysis, compiled, deps, kit, merge_of_five_roots

R, W, RW = AccessKind.READ, AccessKind.WRITE, AccessKind.READ_WRITE


def test_one_access_per_argument_and_storage_alternative():
    tb, k = kit()
    a, b = tb.param("a", (8, 8)), tb.param("b", (8, 8))
    c = tb.scalar("c", value=1)
    with tb.if_(c):
        either = tb.yield_(a)
    with tb.else_():
        tb.yield_(b)
    tb.submit(k.rw, [either], name="W", task_id="tw")
    tb.submit(k.r, [a], name="Ra", task_id="ta")
    tb.submit(k.r, [b], name="Rb", task_id="tb")
    assert deps(compiled(tb.program())) == {"W": [], "Ra": ["tw"], "Rb": ["tw"]}


def _unresolved_reader(with_dep: bool):
    tb, k = kit()
    x, y = tb.param("x", (8, 8)), tb.param("y", (8, 8))
    with tb.manual_scope():
        (out,), t = tb.submit(k.copy, [x, tb.indexed(y, (8, 8), (0, 0))], name="G", task_id="tg")
    tb.submit(k.r, [out], name="R", task_id="tr", deps=[t] if with_dep else [])
    return tb.program()


def test_an_unresolved_argument_falls_back_unless_a_read_whose_producer_is_a_user_dep():
    assert analysis(_unresolved_reader(True)).regions["function"].fallback is None
    fallback = analysis(_unresolved_reader(False)).regions["function"].fallback
    assert (fallback.reason, fallback.call, fallback.arg) == ("unresolved-location", "R", 0)


def test_edges_follow_access_order_then_prior_order_innermost_region_first():
    tb, k = kit()
    a, b = tb.param("a", (8, 8)), tb.param("b", (8, 8))
    tb.submit(k.w, [a], name="Wa", task_id="ta")
    tb.submit(k.w, [b], name="Wb", task_id="tb")
    tb.submit(k.r2, [b, a], name="Rba", task_id="t1")
    tb.submit(k.r2, [a, b], name="Rab", task_id="t2")
    assert deps(compiled(tb.program())) == {"Wa": [], "Wb": [], "Rba": ["tb", "ta"], "Rab": ["ta", "tb"]}

    tb, k = kit(auto_scope=False)
    x = tb.param("x", (8, 8))
    with tb.scope(name="outer"):
        tb.submit(k.w, [x], name="W1", task_id="t1")
        with tb.scope(name="inner"):
            tb.submit(k.w, [x], name="W2", task_id="t2")
            tb.submit(k.r, [x], name="R", task_id="tr")
    assert deps(compiled(tb.program())) == {"W1": [], "W2": ["t1"], "R": ["t2", "t1"]}


def test_user_deps_stay_authoritative_and_are_not_repeated():
    tb, k = kit()
    x = tb.param("x", (8, 8))
    _, t1 = tb.submit(k.w, [x[0:4, :]], name="W1", task_id="t1")
    tb.submit(k.w, [x[4:8, :]], name="W2", task_id="t2")
    tb.submit(k.r, [x], name="R", task_id="tr", deps=[t1])
    out = compiled(tb.program())
    assert deps(out) == {"W1": [], "W2": [], "R": ["t2"]}
    assert [c.deps for c, _ in out.calls()][-1] == ("t1",)


def test_no_last_writer_pruning():
    tb, k = kit()
    x = tb.param("x", (8, 8))
    tb.submit(k.w, [x], name="W1", task_id="t1")
    tb.submit(k.w, [x], name="W2", task_id="t2")
    tb.submit(k.r, [x], name="R", task_id="tr")
    assert deps(compiled(tb.program())) == {"W1": [], "W2": ["t1"], "R": ["t1", "t2"]}


@pytest.mark.parametrize("current, prior, expected", [
    (R, R, set()), (R, W, {"RAW"}), (R, RW, {"RAW"}),
    (W, R, {"WAR"}), (W, W, {"WAW"}), (W, RW, {"WAR", "WAW"}),
    (RW, R, {"WAR"}), (RW, W, {"RAW", "WAW"}), (RW, RW, {"RAW", "WAR", "WAW"}),
])
def test_hazard_rule(current, prior, expected):
    assert {h.value for h in hazards(current, prior)} == expected


def test_readers_never_wait_for_readers():
    tb, k = kit()
    x = tb.param("x", (8, 8))
    tb.submit(k.r, [x], name="R1", task_id="t1")
    tb.submit(k.r, [x], name="R2", task_id="t2")
    assert deps(compiled(tb.program())) == {"R1": [], "R2": []}


def test_overlap_rule():
    top, bottom, middle = Region.box((0, 0), (4, 8)), Region.box((4, 0), (4, 8)), Region.box((2, 2), (4, 2))
    assert not regions_may_overlap(top, bottom)
    assert regions_may_overlap(top, middle) and regions_may_overlap(bottom, middle)
    assert not regions_may_overlap(Region.box((0, 0), (8, 2)), Region.box((0, 2), (8, 2)))
    for other in (FULL, CONSERVATIVE, DYNAMIC, UNKNOWN):
        assert regions_may_overlap(top, other) and regions_may_overlap(other, bottom)
    assert regions_may_overlap(Region.box((0,), (4,)), Region.box((8, 0), (4, 4)))          # rank mismatch
    huge = (1 << 63) - 2
    assert regions_may_overlap(Region.box((huge,), (4,)), Region.box((0,), (1,)))           # int64 overflow
    assert slice_region(Region.box((4, 0), (4, 8)), (2, 2), (1, 3)) == Region.box((5, 3), (2, 2))
    assert slice_region(FULL, ("n",), (0,)) == DYNAMIC and slice_region(UNKNOWN, ("n",), (0,)) == UNKNOWN


def test_different_roots_never_overlap():
    tb, k = kit()
    x, y = tb.param("x", (8, 8)), tb.param("y", (8, 8))
    tb.submit(k.w, [x], name="W", task_id="tw")
    tb.submit(k.r, [y], name="R", task_id="tr")
    assert deps(compiled(tb.program())) == {"W": [], "R": []}
    assert Hazard.RAW.value == "RAW"


def test_more_than_four_storage_alternatives_fall_back():
    tb, k = kit()
    tb.submit(k.r, [merge_of_five_roots(tb)], name="R", task_id="tr")
    fallback = analysis(tb.program()).regions["function"].fallback
    assert (fallback.reason, fallback.call) == ("unsupported-location", "R")
