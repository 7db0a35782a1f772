"""``docs/task-rules.md`` section 3 items 2 and 8: TaskId collection and user-dep coverage for loop producers."""

from __future__ import annotations

from neuronsim.machine.tasks.task_validate import validate_tasks
from neuronsim.passes.tasks.taskids import collect_task_ids

from neuronsim_tests.task_rules_kit import analysis, compiled, deps, dirs, kit


def _ids(tb):
    program, symbols = validate_tasks(tb.program())
    return program, collect_task_ids(program, symbols)


def test_outputs_and_copies_of_a_submit_canonicalize_to_its_task_id():
    tb, k = kit()
    x = tb.param("x", (8, 8))
    (out,), t = tb.submit(k.w, [x], name="W", task_id="tw", outputs=["produced"])
    tb.alias(t, name="again")
    program, ids = _ids(tb)
    assert ids.task_id_of_call == {"W": "tw"}
    assert ids.canonical_of("produced") == "tw" and ids.canonical_of("again") == "tw" and ids.canonical_of("tw") == "tw"


def test_a_user_dep_through_a_copy_covers_the_hazard():
    """Covered: no compiler edge, and the read slot, covered by a user dep, is demoted to NoDep."""
    tb, k = kit()
    x = tb.param("x", (8, 8))
    (_,), t = tb.submit(k.w, [x], name="W", task_id="tw")
    tb.submit(k.r, [x], name="R", task_id="tr", deps=[tb.alias(t, name="again")])
    out = compiled(tb.program())
    assert deps(out) == {"W": [], "R": []}
    assert dirs(out) == {"W": "oe", "R": "nd"}


def test_loop_carried_task_ids_map_to_the_yielded_one():
    tb, k = kit()
    x = tb.param("x", (8, 8))
    for _, (prev,) in tb.range(4, init=(tb.task_invalid(name="none"),), name="L"):
        (_,), t = tb.submit(k.w, [x], name="W", task_id="tw", deps=[prev])
        last = tb.yield_(t)
    program, ids = _ids(tb)
    assert ids.canonical_of(prev.name) == "tw" and ids.canonical_of(last.name) == "tw"
    assert ids.carried_by == {prev.name: "L", last.name: "L"}


def test_task_id_arrays_slots_and_completeness():
    tb, k = kit()
    x = tb.param("x", (8, 8))
    arr = tb.task_array(2, name="arr")
    (_,), t0 = tb.submit(k.w, [x[0:4, :]], name="W0", task_id="t0")
    arr[0] = t0
    half = arr[0]
    (_,), t1 = tb.submit(k.w, [x[4:8, :]], name="W1", task_id="t1")
    arr[1] = t1
    tb.submit(k.r, [x], name="R", task_id="tr", deps=[arr])
    program, ids = _ids(tb)
    assert ids.slot_ids[half.name] == ["t0"] and ids.canonical_of(half.name) == "t0"
    user = ids.user_deps(program.call_map()["R"])
    assert set(user.canonical) == {"t0", "t1"} and set(user.complete_arrays) == {"t0", "t1"}
    assert deps(compiled(program))["R"] == []


def _array_program(slots, producer: str = "w"):
    tb, k = kit()
    x = tb.param("x", (8, 8))
    arr = tb.task_array(2, name="arr")
    for i in tb.range(2, name="L"):
        _, t = tb.submit(getattr(k, producer), [x], name="P", task_id="tp")
        arr[i] = t
    tb.submit(k.w if producer == "r" else k.r, [x], name="C", task_id="tc", deps=[arr[s] for s in slots])
    return tb.program()


def test_runtime_index_writes_mean_any_slot_and_complete_slot_reads_cover_every_instance():
    """A loop producer whose TaskIds fill an array: reading every slot covers it, some slots do not."""
    complete, partial = _array_program([0, 1]), _array_program([0])
    for faithful in (True, False):
        assert analysis(complete, faithful=faithful).regions["function"].fallback is None
        assert deps(compiled(complete, faithful=faithful))["C"] == []
        assert dirs(compiled(complete, faithful=faithful))["C"] == "nd"
    assert analysis(partial, faithful=True).regions["function"].fallback.reason == "loop-producer"
    # The default orders the writer's instances by its own back-edge, so its last one stands for all.
    assert analysis(partial).regions["function"].fallback is None
    assert deps(compiled(partial))["C"] == ["tp"]


def test_slot_coverage_of_unordered_read_instances_is_not_trusted_by_default():
    """Read-only instances are not ordered among themselves: only the seed trusts the array to hold them all."""
    complete, partial = _array_program([0, 1], "r"), _array_program([0], "r")
    assert analysis(complete, faithful=True).regions["function"].fallback is None
    assert analysis(partial, faithful=True).regions["function"].fallback.reason == "loop-producer"
    for program in (complete, partial):
        assert analysis(program).regions["function"].fallback.reason == "stale-loop-producer"


def test_a_whole_complete_array_covers_a_loop_producer():
    tb, k = kit()
    x = tb.param("x", (8, 8))
    arr = tb.task_array(1, name="arr")
    for _ in tb.range(3, name="L"):
        (_,), t = tb.submit(k.w, [x], name="W", task_id="tw")
        arr[0] = t
    tb.submit(k.r, [x], name="R", task_id="tr", deps=[arr])
    for faithful in (True, False):
        assert analysis(tb.program(), faithful=faithful).regions["function"].fallback is None
        assert deps(compiled(tb.program(), faithful=faithful))["R"] == []


def test_windowed_temps_cover_loop_producers_in_the_seed_only():
    """The seed treats any non-submit TaskId in the deps (here the carried one) as covering every loop producer.

    R reads what W wrote in the same iteration but names only the previous R: the seed adds no
    edge (and blocks R's demotion); the default adds the edge, and the back-edges W needs.
    """
    tb, k = kit()
    x = tb.param("x", (8, 8))
    for _, (prev,) in tb.range(4, init=(tb.task_invalid(name="none"),), name="L"):
        tb.submit(k.w, [x], name="W", task_id="tw")
        _, tr = tb.submit(k.r, [x], name="R", task_id="tr", deps=[prev])
        tb.yield_(tr)
    seed, sound = compiled(tb.program(), faithful=True), compiled(tb.program())
    assert deps(seed) == {"W": [], "R": []} and dirs(seed) == {"W": "io", "R": "in"}
    assert deps(sound) == {"W": ["tw^L", "tr^L"], "R": ["tw"]}


def test_an_iter_arg_names_the_previous_iteration_only():
    """deps=[prev] (prev carries W's TaskId) covers W of the previous iteration, not W of this one."""
    tb, k = kit()
    x = tb.param("x", (8, 8))
    n = tb.scalar("n", value=3)
    for _, (prev,) in tb.range(n, init=(tb.task_invalid(name="none"),), name="L"):
        (_,), tw = tb.submit(k.w, [x], name="W", task_id="tw", deps=[prev])
        tb.submit(k.r, [x], name="R", task_id="tr", deps=[prev])
        tb.yield_(tw)
    seed, sound = compiled(tb.program(), faithful=True), compiled(tb.program())
    assert deps(seed)["R"] == []          # the seed reads prev as W's TaskId: covered
    assert deps(sound)["R"] == ["tw"]     # this iteration's W needs an edge
    assert deps(sound)["W"] == ["tr^L"]   # W waits for the previous R (WAR); the previous W is prev


def test_a_plain_mention_of_the_in_loop_task_id_covers_it():
    tb, k = kit()
    x = tb.param("x", (8, 8))
    y = tb.param("y", (8, 8), direction="out")
    n = tb.scalar("n", value=3)
    for _ in tb.range(n, name="L"):
        _, tw = tb.submit(k.w, [x], name="W", task_id="tw")
        tb.submit(k.copy, [x, y], name="R", task_id="tr", deps=[tw])
    for faithful in (True, False):
        out = compiled(tb.program(), faithful=faithful)
        assert deps(out)["R"] == ([] if faithful else ["tr^L"])   # the default adds R's own back-edge on y
        assert dirs(out)["R"] == ("nd,io" if faithful else "nd,oe")
