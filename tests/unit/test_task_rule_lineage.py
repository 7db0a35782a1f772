"""``docs/task-rules.md`` section 3 item 1 (storage lineage), one rule per test, expectations written from the
rule."""

from __future__ import annotations

from neuronsim.machine.tasks.task_builder import View
from neuronsim.machine.tasks.task_validate import validate_tasks
from neuronsim.passes.tasks.lineage import Status, storage_lineage

from neuronsim_tests.task_rules_kit import compiled, deps, kit, merge_of_five_roots


def _lineage(tb, *, sound=True):
    program, symbols = validate_tasks(tb.program())
    return storage_lineage(program, symbols, sound=sound)


def _where(lineage, var):
    status, location = lineage.resolve(var)
    if status != Status.KNOWN:
        return status.value
    return [(a.root, str(a.region)) for a in location]


def test_parameters_are_their_own_root_widened_by_their_view():
    tb, _ = kit()
    tb.param("plain", (8, 8))
    tb.param("packed", (8, 8), view=View(strides=(8, 1)))
    tb.param("valid", (8, 8), view=View(valid_shape=(4, 8)))
    tb.param("strided", (8, 8), view=View(strides=(16, 1)))
    tb.param("dn", (8, 8), view=View(layout="dn"))
    tb.param("padded", (8, 8), view=View(pad="zero"))
    lin = _lineage(tb)
    assert _where(lin, "plain") == [("plain", "Full")]
    assert _where(lin, "packed") == [("packed", "Full")]
    assert _where(lin, "valid") == [("valid", "Conservative")]
    for name in ("strided", "dn", "padded"):
        assert _where(lin, name) == [(name, "Unknown")]


def test_create_is_a_new_full_root():
    tb, _ = kit()
    tb.create((8, 8), name="buf")
    assert _where(_lineage(tb), "buf") == [("buf", "Full")]


def test_slices_compose_constant_windows_and_keep_unknown_parents():
    tb, _ = kit()
    x = tb.param("x", (16, 16))
    n = tb.scalar("n", value=2)
    dn = tb.param("dn", (16, 16), view=View(layout="dn"))
    valid = tb.param("valid", (16, 16), view=View(valid_shape=(8, 16)))
    top = tb.slice(x, (8, 16), (0, 0), name="top")
    tb.slice(top, (4, 4), (2, 3), name="inner")
    moving = tb.slice(x, (4, 16), (n, 0), name="moving")
    tb.slice(moving, (2, 2), (0, 0), name="in_moving")
    tb.slice(dn, (4, 4), (0, 0), name="dn_part")
    tb.slice(valid, (4, 4), (0, 0), name="valid_part")
    lin = _lineage(tb)
    assert _where(lin, "top") == [("x", "Box[0:8, 0:16]")]
    assert _where(lin, "inner") == [("x", "Box[2:6, 3:7]")]
    assert _where(lin, "moving") == [("x", "Dynamic")]
    assert _where(lin, "in_moving") == [("x", "Dynamic")]
    assert _where(lin, "dn_part") == [("dn", "Unknown")]
    assert _where(lin, "valid_part") == [("valid", "Conservative")]


def test_assemble_names_the_whole_base_and_a_copy_its_source():
    tb, _ = kit()
    x = tb.param("x", (16, 16))
    part = tb.slice(x, (8, 16), (8, 0), name="part")
    tb.assemble(x, part, (8, 0), name="whole")
    tb.alias(part, name="same")
    lin = _lineage(tb)
    assert _where(lin, "whole") == [("x", "Full")]
    assert _where(lin, "same") == [("x", "Box[8:16, 0:16]")]


def test_gather_family_results_are_unsupported():
    tb, _ = kit()
    x = tb.param("x", (16, 16))
    tb.indexed(x, (4, 16), (0, 0), op="gather", name="g")
    tb.indexed(x, (4, 16), (0, 0), op="scatter_update", name="s")
    lin = _lineage(tb)
    assert _where(lin, "g") == "unsupported" and _where(lin, "s") == "unsupported"


def test_a_call_output_is_the_callers_argument_for_the_returned_parameter():
    tb, k = kit()
    x = tb.param("x", (16, 16))
    buf = tb.create((16, 16), name="buf")
    tb.call(k.copy, [x, buf[0:4, :]], name="C", outputs=["y"])
    assert _where(_lineage(tb), "y") == [("buf", "Box[0:4, 0:16]")]


def test_if_return_vars_merge_both_branches():
    tb, _ = kit()
    a = tb.param("a", (16, 16))
    b = tb.param("b", (16, 16))
    c = tb.scalar("c", value=1)
    g = tb.indexed(a, (4, 16), (0, 0), name="g")
    with tb.if_(c):
        two = tb.yield_(a[0:8, :], a[0:8, :], a[0:8, :], a)
    with tb.else_():
        tb.yield_(b, a[8:16, :], a[0:8, :], g)
    lin = _lineage(tb)
    assert _where(lin, two[0].name) == [("a", "Box[0:8, 0:16]"), ("b", "Full")]
    assert _where(lin, two[1].name) == [("a", "Unknown")]                 # one root, two regions
    assert _where(lin, two[2].name) == [("a", "Box[0:8, 0:16]")]          # one root, one region
    assert _where(lin, two[3].name) == "unsupported"                      # a side without lineage


def test_loop_return_vars_merge_init_and_yield_and_widen():
    tb, k = kit()
    a = tb.param("a", (16, 16))
    n = tb.scalar("n", value=2)
    for _, (acc,) in tb.range(4, init=(a[0:8, :],)):
        out = tb.yield_(tb.call(k.rw, [acc], name="F"))
    for (i, acc2) in tb.while_(lambda i, acc2: i < n, init=(0, a)):
        wout = tb.yield_(i + 1, tb.call(k.rw, [acc2], name="Wh"))
    for _, (v,) in tb.range(2, init=(a,)):
        bad = tb.yield_(tb.indexed(v, (2, 2), (0, 0)))
    lin = _lineage(tb)
    assert _where(lin, out.name) == [("a", "Conservative")]
    assert _where(lin, wout[1].name) == [("a", "Unknown")]
    assert _where(lin, bad.name) == "unsupported"


def test_more_than_four_alternatives_are_unsupported():
    tb, _ = kit()
    current = merge_of_five_roots(tb)
    lin = _lineage(tb)
    assert _where(lin, current.name) == "unsupported"


def test_ping_pong_iter_args_name_both_buffers_in_the_sound_lineage():
    """The seed gives an iter_arg its init's storage only; from the second iteration it holds the yield's."""
    tb, k = kit()
    a = tb.create((8, 8), name="a")
    b = tb.create((8, 8), name="b")
    for _, (cur, other) in tb.range(4, init=(a, b)):
        tb.call(k.rw, [cur], name="F", assign=False)
        tb.yield_(other, cur)
    assert _where(_lineage(tb, sound=False), cur.name) == [("a", "Full")]
    assert _where(_lineage(tb), cur.name) == [("a", "Full"), ("b", "Full")]


def test_disjoint_boxes_give_no_edge_and_overlapping_ones_do():
    tb, k = kit()
    x = tb.param("x", (16, 16))
    tb.submit(k.w, [x[0:8, :]], name="W", task_id="tw")
    tb.submit(k.r, [x[8:16, :]], name="Below", task_id="t1")
    tb.submit(k.r, [x[4:12, :]], name="Across", task_id="t2")
    assert deps(compiled(tb.program())) == {"W": [], "Below": [], "Across": ["tw"]}
