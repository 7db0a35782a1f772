"""``docs/task-rules.md`` section 2 (IR concepts): one small program per concept, expectations written from
the rule."""

from __future__ import annotations

from neuronsim.machine.tasks.task_builder import MemRef, no_dep
from neuronsim.passes.tasks import compile_tasks, derive_directions

from neuronsim_tests.task_rules_kit import analysis, compiled, deps, dirs, kit, scopes


def test_default_mode_function_gets_its_scopes_from_the_compiler():
    """auto_scope=true: the whole body is one virtual AUTO region; scopes are placed afterwards."""
    tb, k = kit()
    x = tb.param("x", (16, 16))
    tb.submit(k.w, [x], name="W", task_id="tw")
    tb.submit(k.r, [x], name="R", task_id="tr")
    out = compiled(tb.program())
    assert deps(out) == {"W": [], "R": ["tw"]}
    assert dirs(out) == {"W": "oe", "R": "nd"}
    assert scopes(out) == {"W": "manual/compiler", "R": "manual/compiler"}
    assert out.function.auto_scope is False


def test_hand_placed_scopes_of_an_auto_scope_false_function_are_kept():
    tb, k = kit(auto_scope=False)
    x = tb.param("x", (16, 16))
    with tb.scope(name="s"):
        tb.submit(k.w, [x], name="W", task_id="tw")
        tb.submit(k.r, [x], name="R", task_id="tr")
    out = compiled(tb.program())
    assert deps(out) == {"W": [], "R": ["tw"]}
    assert dirs(out) == {"W": "oe", "R": "nd"}
    assert scopes(out) == {"W": "auto/user", "R": "auto/user"}


def test_builtin_ops_are_not_tasks_but_carry_storage():
    """create / slice / assemble / alias submit nothing; the reader of the assembled whole waits for the slice's
    writer."""
    tb, k = kit()
    buf = tb.create((16, 16), name="buf")
    top = tb.slice(buf, (8, 16), (0, 0), name="top")
    tb.submit(k.w, [top], name="W", task_id="tw")
    whole = tb.assemble(buf, top, (0, 0), name="whole")
    tb.submit(k.r, [tb.alias(whole, name="again")], name="R", task_id="tr")
    out = compiled(tb.program())
    assert list(deps(out)) == ["W", "R"]
    assert deps(out) == {"W": [], "R": ["tw"]}


def test_a_plain_call_is_known_by_the_variable_it_assigns():
    tb, k = kit()
    x = tb.param("x", (16, 16))
    tb.call(k.w, [x], name="W", outputs=["y"])
    tb.call(k.r, [x], name="R")
    assert deps(compiled(tb.program())) == {"W": [], "R": ["y"]}


def test_an_unassigned_writer_is_known_by_the_argument_it_writes():
    tb, k = kit()
    x = tb.param("x", (16, 16))
    tb.call(k.rw, [x], name="U", assign=False)
    tb.call(k.r, [x], name="R")
    assert deps(compiled(tb.program())) == {"U": [], "R": ["x"]}


def test_an_unassigned_reader_has_no_task_id_and_a_later_writer_falls_back():
    tb, k = kit()
    x = tb.param("x", (16, 16))
    tb.call(k.r, [x], name="R")
    tb.submit(k.w, [x], name="W", task_id="tw")
    program = tb.program()
    a = analysis(program)
    assert a.regions["function"].fallback.reason == "missing-task-id"
    assert a.regions["function"].fallback.call == "W" and a.regions["function"].fallback.prior == "R"
    out = compiled(program)
    assert deps(out) == {"R": [], "W": []}
    assert dirs(out) == {"R": "in", "W": "oe"}
    assert scopes(out) == {"R": "auto/compiler", "W": "auto/compiler"}


def test_derive_call_directions_rules():
    tb, k = kit()
    x = tb.param("x", (16, 16))
    y = tb.param("y", (16, 16))
    io = tb.param("io", (16, 16), direction="inout")
    z = [tb.create((16, 16), name=f"z{i}") for i in range(6)]
    tb.call(k.w, [x], name="W1", assign=False)                                 # first writer of x
    tb.call(k.w, [x[0:8, :]], name="W2", assign=False)                         # R-prior: x written before
    for _ in tb.range(2):
        tb.call(k.w, [y], name="W3", assign=False)                             # R-seq: sequential loop
    for _ in tb.parallel(2):
        tb.call(k.w, [z[0]], name="W4", assign=False)                          # a parallel loop is not sequential
    tb.call(k.w, [io], name="W5", assign=False)                                # the enclosing param is inout
    tb.call(k.copy, [x, z[1]], name="C", assign=False)                         # In -> input
    tb.call(k.ws, [z[2], 5], name="S", assign=False)                           # scalar
    tb.call(k.w, [no_dep(z[3])], name="N", assign=False)                       # pl.no_dep
    tb.call(k.w, [x], name="E", assign=False, directions=["output_existing"])  # explicit: kept
    for (count,) in tb.while_(lambda c: c < 3, init=(0,)):
        tb.call(k.w, [z[4]], name="W6", assign=False)                          # R-seq: while
        tb.yield_(count + 1)
    with tb.if_(1):
        tb.call(k.w, [z[5]], name="W7", assign=False)                          # first writer in its branch
    with tb.else_():
        tb.call(k.w, [z[5]], name="W8", assign=False)                          # the then branch is not a prior sibling
    tb.call(k.w, [z[5]], name="W9", assign=False)                              # the if as a unit wrote z5
    assert dirs(derive_directions(tb.program())) == {
        "W1": "oe", "W2": "io", "W3": "io", "W4": "oe", "W5": "io", "C": "in,oe", "S": "oe,s", "N": "nd", "E": "oe",
        "W6": "io", "W7": "oe", "W8": "oe", "W9": "io"}


def test_no_dep_arguments_are_not_accesses_and_output_is_a_write():
    """The seed ignores a ``no_dep`` slot; the runtime still gives it the creator edge on the task
    that allocated its tensor (a runtime ``output``), so the default orders it explicitly before
    the body can become MANUAL (found by ``neuronsim fuzz --tasks``)."""
    tb, k = kit()
    x = tb.param("x", (16, 16))
    tb.submit(k.w, [x], name="W0", task_id="t0", directions=["output"])
    tb.submit(k.r, [no_dep(x)], name="N", task_id="tn")
    tb.submit(k.r, [x], name="R", task_id="tr")
    seed = compiled(tb.program(), faithful=True)
    assert deps(seed) == {"W0": [], "N": [], "R": ["t0"]}
    assert dirs(seed) == {"W0": "out", "N": "nd", "R": "nd"}
    out = compiled(tb.program())
    assert deps(out) == {"W0": [], "N": ["t0"], "R": ["t0"]}
    assert dirs(out) == {"W0": "out", "N": "nd", "R": "nd"}


def test_a_manual_scope_orders_by_user_deps_alone():
    tb, k = kit(auto_scope=False)
    x = tb.param("x", (16, 16))
    with tb.manual_scope():
        tb.submit(k.w, [x], name="W", task_id="tw")
        tb.submit(k.r, [x], name="R", task_id="tr")
    out = compiled(tb.program())
    assert deps(out) == {"W": [], "R": []}
    assert dirs(out) == {"W": "oe", "R": "in"}
    assert scopes(out) == {"W": "manual/user", "R": "manual/user"}


def test_a_creator_in_a_user_manual_scope_keeps_its_consumer_auto():
    """A user MANUAL scope is skipped (``docs/task-rules.md`` section 3 item 3), yet a call in it that
    receives an ``output`` buffer is the tensor's creator: a later AUTO user waits for it
    (``docs/task-rules.md`` section 4, step A).  The seed converts the consumer's branch to MANUAL
    (its one hazard, on P, is covered) and loses that creator edge; the default keeps the
    consumer AUTO."""
    from neuronsim.verify.tasks.check import check_task_program

    tb, k = kit()
    m = tb.param("m", (8, 8))
    c = tb.scalar("c", value=1)
    _, tp = tb.submit(k.w, [m], name="P", task_id="tp")
    with tb.manual_scope():
        tb.submit(k.w, [m], name="W", task_id="tw", directions=["output"], deps=[tp])
    with tb.if_(c, name="B"):
        tb.submit(k.r, [m], name="R", task_id="tr")
    seed, sound = compiled(tb.program(), faithful=True), compiled(tb.program())
    assert deps(seed)["R"] == ["tp"] and scopes(seed)["R"] == "manual/compiler"
    assert [(r.kind, r.first_name, r.second_name) for r in check_task_program(seed).races] == [("RAW", "W", "R")]
    assert deps(sound)["R"] == ["tp"] and scopes(sound)["R"] == "auto/compiler" and dirs(sound)["R"] == "in"
    assert check_task_program(sound).race_free


def test_memref_roots_may_alias():
    """One allocation: overlapping or symbolic byte ranges may alias; disjoint ranges or other bases do not."""
    tb, k = kit()
    off = tb.scalar("off", value=0)
    a = tb.param("a", (16, 16), memref=MemRef("hbm", 0, 1024))
    b = tb.param("b", (16, 16), memref=MemRef("hbm", 512, 1024))
    c = tb.param("c", (16, 16), memref=MemRef("hbm", 1024, 1024))
    d = tb.param("d", (16, 16), memref=MemRef("other", 0, 1024))
    e = tb.param("e", (16, 16), memref=MemRef("hbm", off, 1024))
    f = tb.param("f", (16, 16))
    tb.submit(k.w, [a], name="W", task_id="tw")
    for name, t in (("Rb", b), ("Rc", c), ("Rd", d), ("Re", e), ("Rf", f)):
        tb.submit(k.r, [t], name=name, task_id=f"t{name}")
    assert deps(compiled(tb.program())) == {"W": [], "Rb": ["tw"], "Rc": [], "Rd": [], "Re": ["tw"], "Rf": []}


def test_markers_are_transient():
    tb, k = kit()
    x = tb.param("x", (16, 16))
    tb.submit(k.w, [x], name="W", task_id="tw")
    tb.submit(k.r, [x], name="R", task_id="tr")
    program = tb.program()
    middle, _ = compile_tasks(program, "derive-call-directions,auto-derive-task-dependencies{analyze_auto_scopes=true}")
    marks = {c.name: c.manual_candidate for c, _ in middle.calls()}
    assert marks == {"W": False, "R": True} and middle.function.manual_layer_candidate
    final = compiled(program)
    assert not any(c.manual_candidate for c, _ in final.calls()) and not final.function.manual_layer_candidate
