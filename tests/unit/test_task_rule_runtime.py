"""How deps reach the runtime (``docs/task-rules.md`` section 3 item 12) and the TensorMap the pass makes
redundant (``docs/task-rules.md`` section 4), judged by the brute-force oracle of ``tests/task_oracle.py``."""

from __future__ import annotations

from dataclasses import replace

from neuronsim.machine.tasks.ir import map_calls
from neuronsim.passes.tasks import derive_directions

from neuronsim_tests.task_oracle import races, unroll_tasks
from neuronsim_tests.task_rules_kit import compiled, deps, dirs, kit


def _kinds(program, **scalars):
    return sorted((a.call, b.call, kind) for a, b, kind in races(unroll_tasks(program, scalars)))


def test_user_and_compiler_deps_are_merged():
    tb, k = kit()
    x, y = tb.param("x", (8, 8)), tb.param("y", (8, 8))
    _, ty = tb.submit(k.w, [y], name="Wy", task_id="ty")
    tb.submit(k.w, [x], name="Wx", task_id="tx")
    tb.submit(k.r, [x], name="R", task_id="tr", deps=[ty])
    out = compiled(tb.program())
    assert deps(out)["R"] == ["tx"] and [c.deps for c, _ in out.calls()][-1] == ("ty",)
    run = unroll_tasks(out)
    assert run.named("R")[0].waits == {run.named("Wy")[0].index, run.named("Wx")[0].index}


def test_a_compiler_dep_may_name_a_task_id_defined_later_in_the_body():
    """The back-edge names the TaskId of a call later in the loop body: its previous iteration."""
    tb, k = kit()
    x = tb.param("x", (8, 8))
    for _ in tb.range(3, name="L"):
        tb.submit(k.w, [x], name="W", task_id="tw")
        tb.submit(k.r, [x], name="R", task_id="tr")
    out = compiled(tb.program())
    assert deps(out)["W"] == ["tw^L", "tr^L"]
    run = unroll_tasks(out)
    w, r = run.named("W"), run.named("R")
    assert w[0].waits == set() and w[2].waits == {w[1].index, r[1].index}


def test_input_slots_look_up_producers_in_an_auto_scope():
    tb, k = kit()
    x = tb.param("x", (8, 8))
    tb.submit(k.w, [x], name="W", task_id="tw")
    tb.submit(k.r, [x], name="R", task_id="tr")
    baseline = derive_directions(tb.program())
    assert _kinds(baseline) == []


def test_readers_are_never_registered_so_a_later_writer_races_without_the_pass():
    tb, k = kit()
    x = tb.param("x", (8, 8))
    tb.submit(k.r, [x], name="R", task_id="tr")
    tb.submit(k.w, [x], name="W", task_id="tw")
    baseline = derive_directions(tb.program())
    assert dirs(baseline) == {"R": "in", "W": "oe"} and _kinds(baseline) == [("R", "W", "WAR")]
    out = compiled(tb.program())
    assert deps(out)["W"] == ["tr"] and _kinds(out) == []


def test_output_existing_writers_are_not_looked_up():
    tb, k = kit()
    x = tb.param("x", (8, 8))
    tb.submit(k.w, [x], name="W1", task_id="t1", directions=["output_existing"])
    tb.submit(k.w, [x], name="W2", task_id="t2", directions=["output_existing"])
    assert _kinds(derive_directions(tb.program())) == [("W1", "W2", "WAW")]
    assert _kinds(compiled(tb.program())) == []


def test_a_manual_scope_orders_by_explicit_deps_only():
    tb, k = kit(auto_scope=False)
    x = tb.param("x", (8, 8))
    with tb.manual_scope():
        _, t = tb.submit(k.w, [x], name="W", task_id="tw")
        tb.submit(k.r, [x], name="R", task_id="tr")
        tb.submit(k.r, [x], name="R2", task_id="tr2", deps=[t])
    assert _kinds(compiled(tb.program())) == [("W", "R", "RAW")]


def test_a_demoted_slot_is_ordered_by_its_compiler_dep_alone():
    tb, k = kit(auto_scope=False)
    x = tb.param("x", (8, 8))
    with tb.scope():
        tb.submit(k.w, [x], name="W", task_id="tw")
        tb.submit(k.r, [x], name="R", task_id="tr")
    out = compiled(tb.program())
    assert dirs(out)["R"] == "nd" and _kinds(out) == []
    stripped = out.with_body(map_calls(out.function.body, lambda c: replace(c, compiler_deps=())))
    assert _kinds(stripped) == [("W", "R", "RAW")]
