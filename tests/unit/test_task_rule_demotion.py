"""``docs/task-rules.md`` section 3 item 9 (direction demotion: Input -> NoDep, InOut -> OutputExisting)."""

from __future__ import annotations

from neuronsim.machine.tasks.task_builder import View

from neuronsim_tests.task_rules_kit import compiled, deps, dirs, kit


def test_covered_reads_become_no_dep_and_covered_read_writes_output_existing():
    tb, k = kit()
    x = tb.param("x", (8, 8))
    tb.submit(k.w, [x], name="W", task_id="tw")
    tb.submit(k.rw, [x], name="U", task_id="tu")
    tb.submit(k.r, [x], name="R", task_id="tr")
    out = compiled(tb.program())
    assert deps(out) == {"W": [], "U": ["tw"], "R": ["tw", "tu"]}
    assert dirs(out) == {"W": "oe", "U": "oe", "R": "nd"}


def test_imprecise_regions_keep_their_direction():
    """Dynamic and Unknown regions are not demoted; Conservative ones are."""
    tb, k = kit()
    x = tb.param("x", (8, 8))
    dn = tb.param("dn", (8, 8), view=View(layout="dn"))
    valid = tb.param("valid", (8, 8), view=View(valid_shape=(4, 8)))
    n = tb.scalar("n", value=2)
    for t in (x, dn, valid):
        tb.submit(k.w, [t], name=f"W_{t.name}", task_id=f"tw_{t.name}")
    tb.submit(k.r, [x[n:n + 2, :]], name="Rdyn", task_id="t1")
    tb.submit(k.r, [dn], name="Runk", task_id="t2")
    tb.submit(k.r, [valid], name="Rcons", task_id="t3")
    out = compiled(tb.program())
    assert deps(out)["Rdyn"] == ["tw_x"] and deps(out)["Runk"] == ["tw_dn"] and deps(out)["Rcons"] == ["tw_valid"]
    assert dirs(out)["Rdyn"] == "in" and dirs(out)["Runk"] == "in" and dirs(out)["Rcons"] == "nd"


def test_output_slots_and_slots_without_hazards_keep_their_direction():
    tb, k = kit()
    x, y = tb.param("x", (8, 8)), tb.param("y", (8, 8))
    tb.submit(k.w, [x], name="W1", task_id="t1")
    tb.submit(k.w, [x], name="W2", task_id="t2", directions=["output_existing"])
    tb.submit(k.w, [x], name="W3", task_id="t3", directions=["output"])
    tb.submit(k.r, [y], name="Ry", task_id="ty")
    out = compiled(tb.program())
    assert deps(out) == {"W1": [], "W2": ["t1"], "W3": ["t1", "t2"], "Ry": []}
    assert dirs(out) == {"W1": "oe", "W2": "oe", "W3": "out", "Ry": "in"}


def test_a_nested_scopes_demotions_are_applied_by_the_outermost_region():
    tb, k = kit(auto_scope=False)
    x = tb.param("x", (8, 8))
    with tb.scope(name="A"):
        tb.submit(k.w, [x], name="W", task_id="tw")
        with tb.scope(name="B"):
            tb.submit(k.r, [x], name="R", task_id="tr")
    assert dirs(compiled(tb.program())) == {"W": "oe", "R": "nd"}


def test_a_loop_producer_covered_only_by_a_windowed_temp_blocks_demotion_in_the_seed():
    tb, k = kit()
    x = tb.param("x", (8, 8))
    for _, (prev,) in tb.range(2, init=(tb.task_invalid(name="none"),), name="L"):
        tb.submit(k.w, [x], name="W", task_id="tw")
        _, tr = tb.submit(k.r, [x], name="R", task_id="tr", deps=[prev])
        tb.yield_(tr)
    assert dirs(compiled(tb.program(), faithful=True))["R"] == "in"
    assert dirs(compiled(tb.program()))["R"] == "nd"
