"""``docs/task-rules.md`` section 3 item 7 (loops): single-trip, static, dynamic, dynamic parallel, zero-trip.

Every default-mode result is also run through the brute-force oracle (``tests/task_oracle.py``):
no two task instances that share a byte, one writing, may be left unordered.
"""

from __future__ import annotations

from neuronsim_tests.task_oracle import races, unroll_tasks
from neuronsim_tests.task_rules_kit import analysis, compiled, deps, dirs, kit


def _race_free(program, **scalars):
    assert races(unroll_tasks(compiled(program), scalars)) == []


def test_a_single_trip_loop_is_transparent_and_renames_to_its_return_var():
    tb, k = kit()
    x = tb.param("x", (8, 8))
    for _, (prev,) in tb.range(1, init=(tb.task_invalid(name="none"),), name="L"):
        _, t = tb.submit(k.w, [x], name="W", task_id="tw", deps=[prev])
        last = tb.yield_(t)
    tb.submit(k.r, [x], name="R", task_id="tr")
    for faithful in (True, False):
        out = compiled(tb.program(), faithful=faithful)
        assert deps(out) == {"W": [], "R": [last.name]}
        assert analysis(tb.program(), faithful=faithful).layer_candidate
    _race_free(tb.program())


def test_a_static_loop_rebinds_a_carried_task_id_to_a_fan_in():
    tb, k = kit()
    x = tb.param("x", (8, 8))
    for _, (prev,) in tb.range(4, init=(tb.task_invalid(name="none"),), name="L"):
        _, t = tb.submit(k.w, [x], name="W", task_id="tw", deps=[prev])
        last = tb.yield_(t)
    tb.submit(k.r, [x], name="R", task_id="tr")
    for faithful in (True, False):
        out = compiled(tb.program(), faithful=faithful)
        assert deps(out) == {"W": [], "R": [f"{last.name}@L[W]"]}
        # The default sees W's hazard on the previous W, covered by prev: its lookup can go.
        assert dirs(out) == {"W": "io" if faithful else "oe", "R": "nd"}
    _race_free(tb.program())


def _accumulate():
    tb, k = kit()
    buf = tb.create((8, 8), name="buf")
    for _, (acc,) in tb.range(4, init=(buf,), name="L"):
        res = tb.yield_(tb.call(k.rw, [acc], name="F", outputs=["acc2"]))
    tb.submit(k.r, [res], name="R", task_id="tr")
    return tb.program(), res.name


def test_a_static_loop_rebinds_a_tensor_return_var_by_storage():
    program, res = _accumulate()
    seed, sound = compiled(program, faithful=True), compiled(program)
    assert deps(seed) == {"F": [], "R": [f"{res}@L[F]"]} and dirs(seed) == {"F": "io", "R": "nd"}
    # The default also orders each F after the previous one (the back-edge on acc).
    assert deps(sound) == {"F": ["acc2^L"], "R": [f"{res}@L[F]"]} and dirs(sound) == {"F": "oe", "R": "nd"}
    _race_free(program)
    assert races(unroll_tasks(seed))


def test_a_consumer_in_the_same_dynamic_loop_gets_an_edge():
    tb, k = kit()
    x = tb.param("x", (8, 8))
    y = tb.param("y", (32, 8), direction="out")
    n = tb.scalar("n", value=4)
    for i in tb.range(n, name="L"):
        tb.submit(k.w, [x], name="W", task_id="tw")
        tb.submit(k.copy, [x, y[i * 8: i * 8 + 8, :]], name="C", task_id="tc")
    assert deps(compiled(tb.program(), faithful=True)) == {"W": [], "C": ["tw"]}
    assert analysis(tb.program(), faithful=True).regions["function"].fallback is None
    _race_free(tb.program())


def _after_dynamic_loop(producer: str):
    tb, k = kit()
    x = tb.param("x", (8, 8))
    n = tb.scalar("n", value=3)
    for _ in tb.range(n, name="L"):
        tb.submit(getattr(k, producer), [x], name="P", task_id="tp")
    tb.submit(k.w if producer == "r" else k.r, [x], name="C", task_id="tc")
    return tb.program()


def test_a_consumer_after_a_dynamic_loop_falls_back():
    for producer in ("w", "r"):
        assert analysis(_after_dynamic_loop(producer), faithful=True).regions["function"].fallback.reason == \
            "exited-dynamic-loop"
    # The default keeps the writer: its back-edge orders all its instances, the last one stands for them.
    assert analysis(_after_dynamic_loop("w")).regions["function"].fallback is None
    assert deps(compiled(_after_dynamic_loop("w")))["C"] == ["tp"]
    _race_free(_after_dynamic_loop("w"))
    fallback = analysis(_after_dynamic_loop("r")).regions["function"].fallback
    assert (fallback.reason, fallback.loop) == ("stale-loop-producer", "L")


def _parallel(nested: bool):
    tb, k = kit()
    buf = tb.create((8, 8), name="buf")
    n = tb.scalar("n", value=3)

    def body():
        for i, (acc,) in tb.parallel(n, init=(buf,), name="L"):
            tb.call(k.w, [acc[i:i + 1, :]], name="P", outputs=["row"])
            res = tb.yield_(acc)
        return res

    if nested:
        for _ in tb.range(2, name="O"):
            res = body()
    else:
        res = body()
    tb.submit(k.r, [res if not nested else buf], name="R", task_id="tr")
    return tb.program(), res.name


def test_an_outermost_dynamic_parallel_loop_is_summarised():
    program, res = _parallel(False)
    for faithful in (True, False):
        out = compiled(program, faithful=faithful)
        assert deps(out) == {"P": [], "R": [f"{res}@L[P]"]} and dirs(out) == {"P": "oe", "R": "nd"}
    _race_free(program)


def test_a_nested_dynamic_loop_is_not_summarised():
    program, _ = _parallel(True)
    assert analysis(program, faithful=True).regions["function"].fallback.reason == "exited-dynamic-loop"
    _race_free(program)


def _static_without_yield(producer: str, trips: int = 4):
    tb, k = kit()
    x = tb.param("x", (8, 8))
    for _ in tb.range(trips, name="L"):
        tb.submit(getattr(k, producer), [x], name="P", task_id="tp")
    tb.submit(k.w if producer == "r" else k.r, [x], name="C", task_id="tc")
    return tb.program()


def test_a_static_loop_producer_that_is_not_rebound_falls_back():
    assert analysis(_static_without_yield("w"), faithful=True).regions["function"].fallback.reason == "loop-producer"
    assert analysis(_static_without_yield("r")).regions["function"].fallback.reason == "stale-loop-producer"
    assert deps(compiled(_static_without_yield("w")))["C"] == ["tp"]


def test_a_zero_trip_loop_is_a_loop_that_is_never_rebound():
    tb, k = kit()
    x = tb.param("x", (8, 8))
    for _, (_prev,) in tb.range(0, init=(tb.task_invalid(name="none"),), name="L"):
        _, t = tb.submit(k.w, [x], name="W", task_id="tw")
        tb.yield_(t)
    tb.submit(k.r, [x], name="R", task_id="tr")
    assert analysis(tb.program(), faithful=True).regions["function"].fallback.reason == "loop-producer"
    assert analysis(tb.program()).regions["function"].fallback.reason == "stale-loop-producer"


def test_a_negative_step_single_trip_loop_is_transparent_and_other_negative_steps_are_dynamic():
    for start, stop, step, single in ((1, 0, -1, True), (4, 0, -1, False)):
        tb, k = kit()
        x = tb.param("x", (8, 8))
        for _, (prev,) in tb.range(start, stop, step, init=(tb.task_invalid(name="none"),), name="L"):
            _, t = tb.submit(k.w, [x], name="W", task_id="tw", deps=[prev])
            last = tb.yield_(t)
        tb.submit(k.r, [x], name="R", task_id="tr")
        fallback = analysis(tb.program(), faithful=True).regions["function"].fallback
        if single:
            assert fallback is None and deps(compiled(tb.program(), faithful=True))["R"] == [last.name]
        else:
            assert fallback.reason == "exited-dynamic-loop"
