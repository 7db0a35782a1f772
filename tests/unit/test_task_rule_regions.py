"""``docs/task-rules.md`` section 3 items 3, 10 and 11: the regions analysed, fallback and compiler-owned MANUAL
scopes."""

from __future__ import annotations

from neuronsim.passes.pipeline import PassContext
from neuronsim.passes.tasks import AutoDeriveTaskDependencies, compile_tasks, derive_directions, materialize_scopes

from neuronsim_tests.task_rules_kit import analysis, compiled, deps, dirs, kit, scopes

OFF = "derive-call-directions,auto-derive-task-dependencies,materialize-runtime-scopes"


def _writer_then_reader():
    tb, k = kit()
    x = tb.param("x", (8, 8))
    tb.submit(k.w, [x], name="W", task_id="tw")
    tb.submit(k.r, [x], name="R", task_id="tr")
    return tb.program()


def test_with_the_switch_off_the_pass_changes_nothing():
    program = derive_directions(_writer_then_reader())
    assert AutoDeriveTaskDependencies().apply(program, PassContext()) is program
    out = compile_tasks(_writer_then_reader(), OFF)[0]
    assert deps(out) == {"W": [], "R": []}
    assert dirs(out) == {"W": "oe", "R": "in"}
    assert scopes(out) == {"W": "auto/compiler", "R": "auto/compiler"}


def test_the_body_of_an_auto_scope_false_function_is_a_container():
    """Calls outside scopes are not analysed; a scope that succeeds exports its accesses to later siblings."""
    tb, k = kit(auto_scope=False)
    x = tb.param("x", (8, 8))
    y = tb.param("y", (8, 8))
    tb.submit(k.w, [x], name="W", task_id="tw")
    with tb.scope(name="s1"):
        tb.submit(k.r, [x], name="R1", task_id="tr1")
    with tb.scope(name="s2"):
        tb.submit(k.w, [y], name="W2", task_id="tw2")
    with tb.scope(name="s3"):
        tb.submit(k.r, [y], name="R2", task_id="tr2")
    tb.submit(k.r, [y], name="R3", task_id="tr3")
    out = compiled(tb.program())
    assert deps(out) == {"W": [], "R1": [], "W2": [], "R2": ["tw2"], "R3": []}
    assert dirs(out) == {"W": "oe", "R1": "in", "W2": "oe", "R2": "nd", "R3": "in"}
    assert scopes(out) == {"W": "implicit", "R1": "auto/user", "W2": "auto/user", "R2": "auto/user", "R3": "implicit"}


def test_a_user_manual_scope_is_skipped_and_blocks_the_whole_layer():
    tb, k = kit()
    x = tb.param("x", (8, 8))
    tb.submit(k.w, [x], name="W", task_id="tw")
    with tb.manual_scope():
        tb.submit(k.rw, [x], name="M", task_id="tm")
    tb.submit(k.r, [x], name="R", task_id="tr")
    out = compiled(tb.program())
    assert deps(out) == {"W": [], "M": [], "R": ["tw"]}
    assert dirs(out) == {"W": "oe", "M": "io", "R": "nd"}
    assert scopes(out) == {"W": "auto/compiler", "M": "manual/user", "R": "auto/compiler"}


def test_a_hand_placed_scope_that_falls_back_loses_every_compiler_dep_inside_and_exports_nothing():
    tb, k = kit(auto_scope=False)
    x = tb.param("x", (8, 8))
    with tb.scope(name="A"):
        tb.submit(k.w, [x], name="W", task_id="tw")
        with tb.scope(name="B"):
            tb.submit(k.r, [x], name="R", task_id="tr")
        tb.submit(k.r, [tb.indexed(x, (2, 8), (0, 0), name="g")], name="U", task_id="tu")
    with tb.scope(name="C"):
        tb.submit(k.r, [x], name="R2", task_id="tr2")
    program = tb.program()
    a = analysis(program)
    keys = {r.name: r for r in a.regions.values()}
    assert keys["A"].fallback.reason == "unsupported-location" and keys["A"].fallback.call == "U"
    assert keys["B"].fallback is None and keys["C"].fallback is None and a.regions["function"].fallback is None
    out = compiled(program)
    assert deps(out) == {"W": [], "R": [], "U": [], "R2": []}
    assert dirs(out) == {"W": "oe", "R": "in", "U": "in", "R2": "in"}
    assert scopes(out)["W"] == "auto/user"


def test_the_virtual_region_falls_back_keeping_its_deps_and_dropping_demotions():
    """The triggering call gets nothing; later calls are still analysed."""
    tb, k = kit()
    x = tb.param("x", (8, 8))
    y = tb.param("y", (8, 8))
    tb.submit(k.w, [x], name="W", task_id="tw")
    tb.submit(k.r, [x], name="R", task_id="tr")
    tb.submit(k.r, [tb.indexed(y, (2, 8), (0, 0), name="g")], name="U", task_id="tu")
    tb.submit(k.r, [x], name="R2", task_id="tr2")
    program = tb.program()
    fallback = analysis(program).regions["function"].fallback
    assert (fallback.reason, fallback.call, fallback.arg) == ("unsupported-location", "U", 0)
    out = compiled(program)
    assert deps(out) == {"W": [], "R": ["tw"], "U": [], "R2": ["tw"]}
    assert dirs(out) == {"W": "oe", "R": "in", "U": "in", "R2": "in"}
    assert set(scopes(out).values()) == {"auto/compiler"}


def _per_body_program():
    tb, k = kit()
    x, y, z, q, v, p = (tb.param(name, (8, 8)) for name in "xyzqvp")
    n = tb.scalar("n", value=3)
    c = tb.scalar("c", value=1)
    with tb.manual_scope():
        tb.submit(k.r, [p], name="M", task_id="tm")
    for _ in tb.range(n, name="L1"):
        tb.submit(k.w, [x], name="W1", task_id="t1")
        tb.submit(k.r, [x], name="R1", task_id="tr1")
    for _ in tb.parallel(n, name="L2"):
        tb.submit(k.w, [z], name="Z", task_id="tz")
    with tb.if_(c, name="B"):
        tb.submit(k.w, [y], name="W3", task_id="t3")
        tb.submit(k.r, [y], name="R3", task_id="tr3")
    with tb.else_():
        tb.submit(k.w, [y], name="W4", task_id="t4")
        tb.submit(k.r, [y], name="R4", task_id="tr4")
    for _ in tb.range(n, name="L3"):
        for _ in tb.range(n, name="L4"):
            tb.submit(k.w, [q], name="W5", task_id="t5")
    for (count,) in tb.while_(lambda count: count < n, init=(0,), name="Wh"):
        tb.submit(k.w, [v], name="W6", task_id="t6")
        tb.yield_(count + 1)
    return tb.program()


def test_loop_bodies_and_branches_become_manual_when_every_call_has_compiler_deps():
    program = _per_body_program()
    assert not analysis(program).layer_candidate
    out = compiled(program)
    # back-edges are carried in their loop; W5's in both L4 and L3 merge into the outer one
    assert deps(out) == {"M": [], "W1": ["t1^L1", "tr1^L1"], "R1": ["t1"], "Z": [], "W3": [], "R3": ["t3"],
                         "W4": ["t3", "tr3"], "R4": ["t3", "t4"], "W5": ["t5^L3"], "W6": ["t6^Wh"]}
    assert scopes(out) == {"M": "manual/user", "W1": "manual/compiler", "R1": "manual/compiler", "Z": "auto/compiler",
                           "W3": "auto/compiler", "R3": "auto/compiler", "W4": "manual/compiler",
                           "R4": "manual/compiler", "W5": "manual/compiler", "W6": "auto/compiler"}
    decisions = {d.where: d.manual for d in materialize_scopes(compile_tasks(
        program, "derive-call-directions,auto-derive-task-dependencies{analyze_auto_scopes=true}")[0])[1]}
    assert decisions == {"L1.body": True, "L2.body": False, "B.then": False, "B.else": True, "L4.body": True,
                         "L3.body": False, "f": False}


def test_the_seed_leaves_loop_bodies_without_back_edges_auto():
    out = compiled(_per_body_program(), faithful=True)
    assert deps(out)["W1"] == [] and scopes(out)["W1"] == "auto/compiler" and scopes(out)["W5"] == "auto/compiler"
    assert scopes(out)["W4"] == "manual/compiler"


def test_no_whole_layer_without_task_calls_or_without_directions():
    tb, _ = kit()
    tb.create((4, 4), name="only_a_buffer")
    assert not analysis(tb.program()).layer_candidate
    out = compile_tasks(_writer_then_reader(),
                        "auto-derive-task-dependencies{analyze_auto_scopes=true},materialize-runtime-scopes")[0]
    assert deps(out) == {"W": [], "R": []} and scopes(out) == {"W": "auto/compiler", "R": "auto/compiler"}


def test_a_whole_layer_becomes_one_manual_scope():
    out = compiled(_writer_then_reader())
    body = out.function.body
    assert len(body) == 1 and body[0].manual and body[0].owner == "compiler" and len(body[0].body) == 2
