"""The simulated task runtime: simpler's per-submit steps, the trace, the checker over it."""

from __future__ import annotations

import pytest

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.sim.runtime import preset_for, simulate_tasks
from neuronsim.machine.sim.task_trace import task_chrome_trace
from neuronsim.machine.sim.tensormap import TensorMap, task_graph
from neuronsim.machine.tasks.task_builder import In, InOut, MemRef, Out, TaskBuilder
from neuronsim.machine.tasks.format import load_tasks
from neuronsim.machine.tasks.orchestrator import Origin, unroll_task_program
from neuronsim.passes.tasks import compile_tasks, derive_directions
from neuronsim.verify.tasks.check import check_task_program, check_task_trace, trace_violations


def _kernels(tb: TaskBuilder):
    return (tb.kernel("read", In("x"), cost=100), tb.kernel("write", Out("x"), returns="x", cost=100),
            tb.kernel("update", InOut("x"), returns="x", cost=100))


def _edges(program, **kw):
    return [[(e.on, e.origin.value) for e in g.edges] for g in task_graph(unroll_task_program(program), **kw)]


def test_lookup_and_insert_follow_the_directions():
    tb = TaskBuilder("steps")
    read, write, update = _kernels(tb)
    x = tb.param("x", (8, 8))
    tb.submit(update, [x], name="u", directions=["inout"])                   # 0: lookup, insert
    tb.submit(read, [x], name="r", directions=["input"])                     # 1: waits for 0
    tb.submit(write, [x], name="w", directions=["output_existing"])          # 2: no lookup: WAR hole
    tb.submit(read, [x], name="r2", directions=["no_dep"])                   # 3: skipped
    tb.submit(read, [x], name="r3", directions=["input"])                    # 4: waits for 0 and 2
    graph = task_graph(unroll_task_program(tb.program()))
    assert [g.fan_in for g in graph] == [(), (0,), (), (), (0, 2)]
    assert [(g.lookups, g.inserts, g.no_dep) for g in graph] == [(1, 1, 0), (1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 0, 0)]
    report = check_task_program(tb.program())
    kinds = {(r.first_name, r.second_name): r.kind for r in report.races}
    # the OutputExisting writer after a reader (never registered) and the skipped no_dep reader
    assert kinds == {("u", "w"): "WAW", ("r", "w"): "WAR", ("u", "r2"): "RAW", ("w", "r2"): "RAW"}
    assert {r.fix.text() for r in report.races if r.second_name == "w"} == {"w: deps=[u_tid]", "w: deps=[r_tid]"}


def test_a_covering_inout_removes_the_entries_it_covers():
    tb = TaskBuilder("cover")
    read, write, update = _kernels(tb)
    x = tb.param("x", (8, 8))
    tb.submit(write, [x[0:4, :]], name="top", directions=["output_existing"])
    tb.submit(update, [x], name="all", directions=["inout"])
    tb.submit(read, [x[0:2, :]], name="r", directions=["input"])
    assert _edges(tb.program()) == [[], [(0, "tensormap")], [(1, "tensormap")]]  # not on 0: removed


def test_manual_scopes_use_explicit_deps_only_and_user_deps_come_first():
    tb = TaskBuilder("manual", auto_scope=False)
    read, write, update = _kernels(tb)
    x = tb.param("x", (8, 8))
    with tb.scope():
        _, t0 = tb.submit(update, [x], name="a", directions=["inout"])
    with tb.manual_scope():
        tb.submit(read, [x], name="b", directions=["input"])
        tb.submit(read, [x], name="c", directions=["input"], deps=[t0])
    assert _edges(tb.program()) == [[], [], [(0, "explicit-user")]]
    races = check_task_program(tb.program()).races
    assert [(r.kind, r.first_name, r.second_name) for r in races] == [("RAW", "a", "b")]


def test_creator_edges_for_runtime_allocated_outputs():
    tb = TaskBuilder("creator")
    read, write, update = _kernels(tb)
    buf = tb.create((8, 8))
    (made,), _ = tb.submit(write, [buf], name="make", directions=["output"])
    tb.submit(read, [made], name="use", directions=["no_dep"])       # no lookup, the creator edge still holds
    tb.submit(update, [made[0:4, :]], name="view", directions=["inout"])  # views keep the creator
    graph = task_graph(unroll_task_program(tb.program()))
    assert [[(e.on, e.origin.value, e.arg) for e in g.edges] for g in graph] == \
        [[], [(0, "creator", 0)], [(0, "creator", 0)]]
    assert graph[0].inserts == 0 and graph[0].lookups == 0  # an output is neither looked up nor inserted
    races = check_task_program(tb.program()).races  # the reader is never registered: the runtime's WAR hole
    assert [(r.kind, r.first_name, r.second_name) for r in races] == [("WAR", "use", "view")]


def test_memref_aliased_roots_share_a_bucket_and_conflict():
    tb = TaskBuilder("alias")
    read, write, update = _kernels(tb)
    a = tb.param("a", (8, 8), memref=MemRef("hbm", 0, 256))
    b = tb.param("b", (8, 8), memref=MemRef("hbm", 128, 256))
    tb.submit(update, [a], name="wa", directions=["inout"])
    tb.submit(read, [b], name="rb", directions=["input"])
    assert _edges(tb.program()) == [[], [(0, "tensormap")]]
    tb2 = TaskBuilder("alias2")
    read, write, update = _kernels(tb2)
    a = tb2.param("a", (8, 8), memref=MemRef("hbm", 0, 256))
    b = tb2.param("b", (8, 8), memref=MemRef("hbm", 128, 256))
    tb2.submit(update, [a], name="wa", directions=["inout"])
    tb2.submit(read, [b], name="rb", directions=["input"], )
    tb2.submit(write, [b[0:4, :]], name="wb", directions=["output_existing"])
    races = check_task_program(tb2.program()).races
    assert [(r.kind, r.first_name, r.second_name, r.storage) for r in races] == \
        [("WAW", "wa", "wb", "allocation hbm"), ("WAR", "rb", "wb", "allocation hbm")]
    assert races[0].bytes == ((128, 256),)


def test_simpler_overlap_is_conservative_where_exact_is_not():
    tb = TaskBuilder("dn")
    read, write, update = _kernels(tb)
    x = tb.param("x", (8, 8))
    tb.submit(update, [x.slice((8, 1), (0, 0))], name="col0", directions=["inout"])
    tb.submit(read, [x.slice((8, 1), (0, 1))], name="col1", directions=["input"])
    assert _edges(tb.program()) == [[], []]  # one row-major layout: per-dimension test, disjoint
    assert _edges(tb.program(), exact=True) == [[], []]


def test_runs_keep_their_edges_and_differ_by_seed_only():
    program = compile_tasks(load_tasks("examples/tasks/hand_scopes.json"))[0]
    runs = {seed: simulate_tasks(program, seed=seed) for seed in (None, 1, 2, 1)}
    for trace in runs.values():
        assert trace_violations(trace) == []
        assert check_task_trace(trace).pairs() == check_task_program(program).pairs()
    again = simulate_tasks(program, seed=1)
    assert [(r.start, r.end, r.worker) for r in again.records] == [(r.start, r.end, r.worker) for r in runs[1].records]
    assert [r.start for r in runs[1].records] != [r.start for r in runs[2].records]
    barrier = next(r for r in runs[None].records if r.kernel is None)
    assert barrier.worker is None and barrier.start == barrier.ready == barrier.end


def test_cores_bound_the_parallelism_and_the_trace_exports():
    tb = TaskBuilder("par", cores=2)
    update = tb.kernel("update", InOut("x"), returns="x", cost=5000)
    x = tb.param("x", (8, 8))
    for i in tb.parallel(8, name="rows"):
        tb.submit(update, [x.slice((1, 8), (i, 0))], name="u", directions=["inout"])
    program = tb.program()
    trace = simulate_tasks(program)
    assert {r.worker for r in trace.records} == {0, 1}
    assert simulate_tasks(program, preset=preset_for(program, cores=8)).makespan < trace.makespan
    doc = task_chrome_trace(trace)
    names = {e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "thread_name"}
    assert names == {"orchestrator", "worker 0", "worker 1"}
    assert sum(e["ph"] == "X" and e["cat"] == "update" for e in doc["traceEvents"]) == 8


def test_a_violated_edge_is_reported():
    program = derive_directions(load_tasks("examples/tasks/accumulate.json"))
    trace = simulate_tasks(program)
    late = next(r for r in trace.records if r.waits)
    broken = type(trace)(tuple(r if r is not late else type(r)(**{**{f: getattr(r, f) for f in r.__slots__},
                                                                   "start": 0.0, "ready": r.submitted})
                               for r in trace.records), trace.preset, trace.seed, trace.orchestration_ns)
    assert any("before" in v for v in trace_violations(broken))


def test_run_time_errors_are_located():
    tb = TaskBuilder("bad")
    read, write, update = _kernels(tb)
    x = tb.param("x", (8, 8))
    n = tb.scalar("n", value=9)
    for i in tb.range(n, name="rows"):
        tb.submit(read, [x.slice((1, 8), (i, 0))], name="r", directions=["input"])
    with pytest.raises(ProgramError) as err:
        unroll_task_program(tb.program())
    assert err.value.path == "function.body[0].body[0].offset[0]" and "leaves dimension 0" in err.value.message
    with pytest.raises(ProgramError) as err:
        unroll_task_program(tb.program(), {"n": 4}, max_instances=3)
    assert "more than 3" in err.value.message
    tb = TaskBuilder("forever")
    read, write, update = _kernels(tb)
    x = tb.param("x", (8, 8))
    for (k,) in tb.while_(lambda k: k >= 0, init=(0,), name="spin"):
        tb.submit(read, [x], name="r", directions=["input"])
        tb.yield_(k + 1)
    with pytest.raises(ProgramError) as err:
        unroll_task_program(tb.program(), max_iterations=50)
    assert "never ends" in err.value.message and err.value.path == "function.body[0]"
    with pytest.raises(ProgramError) as err:
        unroll_task_program(load_tasks("examples/tasks/accumulate.json"))
    assert "derive-call-directions" in err.value.message


def test_the_tensormap_never_waits_for_the_submitting_task():
    tb = TaskBuilder("self")
    cp = tb.kernel("cp", In("a"), Out("b"), returns="b")
    x = tb.param("x", (8, 8))
    tb.submit(cp, [x, x], name="c1", directions=["input", "inout"])
    tb.submit(cp, [x, x], name="c2", directions=["input", "inout"])
    tmap = TensorMap()
    tasks = unroll_task_program(tb.program())
    assert [tmap.submit(t).fan_in for t in tasks] == [(), (0,)]
    assert Origin.TENSORMAP.value == "tensormap"
