"""The ``schedule`` pass (issue 30): every scheduled program race-free once ``dep-opt`` rebuilt its
deps, its DRAM results those of the program in source order, independent chains interleaved
on an engine, the allocation (SBUF, PSUM, rings) the bound on what it moves, and a sequential
loop's iterations in order on each engine."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import Access, Instruction, Loop, MemoryKind, Program, Tensor, frozen_mapping
from neuronsim.machine.model.optable import ENGINE_CHOICE_KEY
from neuronsim.machine.formats.validate import validate_program
from neuronsim.machine.model.presets import resolve_machine
from neuronsim.machine.sim.memory import initial_memory
from neuronsim.machine.sim.plan import build_plan
from neuronsim.machine.sim.simulator import run_sequential, simulate
from neuronsim.passes import ALL_PASSES, DEFAULT_PIPELINE, TRACED_PIPELINE, PassContext, run_pipeline
from neuronsim.passes.expand_scheduling_units import expand_scheduling_units
from neuronsim.passes.iteration_order import RANGE_KEY, iteration_gates
from neuronsim.passes.schedule import FLAT_BYTES_PER_INSTANCE, FLAT_BYTES_PER_RUN, Schedule, flat_memory, instance_count
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.strategies import programs

SLOW = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _dram_results(program: Program) -> dict[str, bytes]:
    """Final bytes of every DRAM tensor, run sequentially (the program's own semantics)."""
    spec = resolve_machine(program.machine)
    memory = run_sequential(build_plan(program), initial_memory(program, spec, 3))
    return {name: memory.tensor_bytes(t) for name, t in program.tensors.items() if t.memory == MemoryKind.DRAM}


def _compile(program: Program, spec: str) -> Program:
    return run_pipeline(program, spec, PassContext())


@settings(max_examples=60, **SLOW)
@given(programs(deps="none", virtual=True, max_instructions=9, max_loops=2, max_trip=3))
def test_scheduled_programs_are_race_free_with_the_results_of_source_order(program):
    as_traced = _compile(program, DEFAULT_PIPELINE)
    for flatten in ("true", "false"):  # loops unrolled, and loops kept as atoms
        spec = TRACED_PIPELINE.replace("schedule", f"schedule{{flatten={flatten}}}") + ",dep-reduction"
        scheduled = _compile(program, spec)
        validate_program(scheduled)  # capacity included: the allocation still holds
        assert check_program(scheduled).races == ()
        got, want = _dram_results(scheduled), _dram_results(as_traced)
        # flattening splits a rotating DRAM tensor into its slots (`name@k`, expand_scheduling_units):
        # the tensors both have agree, and only rotating tensors' slots are new (rotating as the
        # program came, or as alloc made a virtual one: a transfer-heavy draw wrote one in a loop)
        assert {k: got[k] for k in want} == want
        assert all(k.split("@")[0] in program.tensors and (program.tensors[k.split("@")[0]].rotate is not None
                                                         or as_traced.tensors[k.split("@")[0]].rotate is not None)
                   for k in set(got) - set(want)), sorted(set(got) - set(want))
        assert instance_count(scheduled) == instance_count(as_traced)
    # every instruction the op table lets run on DVE and ACT offered to the compiler
    offered = _offered(program)
    scheduled = _compile(offered, TRACED_PIPELINE + ",dep-reduction")
    validate_program(scheduled)
    assert check_program(scheduled).races == ()
    assert _dram_results(scheduled) == _dram_results(as_traced)


def _offered(program: Program) -> Program:
    """``program`` with every ``tensor_scalar`` / ``tensor_copy`` left to the compiler's choice
    of DVE or ACT (as the NKI frontend marks an elementwise call that names no engine)."""
    def offer(node):
        if isinstance(node, Loop):
            return Loop(node.name, node.trip_count, tuple(offer(child) for child in node.body), node.extras)
        if node.op in ("tensor_scalar", "tensor_copy") and node.engine in ("dve", "act"):
            return replace(node, extras=frozen_mapping({**node.extras, ENGINE_CHOICE_KEY: ["dve", "act"]}))
        return node
    return program.with_body(tuple(offer(node) for node in program.body))


def _chains() -> Program:
    """Two independent DVE chains of three dependent instructions each, in source order one
    chain after the other: every instruction waits for its producer's result."""
    tensors = {f"t{c}{k}": Tensor(f"t{c}{k}", MemoryKind.SBUF, "float32", (128, 64), partition=0,
                                  offset=(4 * c + k) * 256) for c in range(2) for k in range(4)}
    body = tuple(Instruction(f"c{c}_{k}", "dve", "tensor_scalar", (Access(f"t{c}{k}"),), (Access(f"t{c}{k + 1}"),),
                             {"op0": "add", "operand0": 1.0})
                 for c in range(2) for k in range(3))
    memsets = tuple(Instruction(f"init{c}", "pool", "memset", (), (Access(f"t{c}0"),), {"value": 1})
                    for c in range(2))
    return Program(tensors, memsets + body)


def test_independent_chains_interleave_and_the_makespan_shrinks():
    program = _chains()
    as_traced = _compile(program, DEFAULT_PIPELINE)
    scheduled = _compile(program, TRACED_PIPELINE + ",dep-reduction")
    order = [i.name for i, _ in scheduled.instructions() if i.engine == "dve"]
    assert order[:2] in (["c0_0", "c1_0"], ["c1_0", "c0_0"])  # the other chain fills the wait
    assert check_program(scheduled).races == ()
    before = simulate(as_traced, functional=False).runs[0].trace
    after = simulate(scheduled, functional=False).runs[0].trace
    assert max(r.end for r in after.records) < max(r.end for r in before.records)


def _independent(offered: bool) -> Program:
    """One SBUF tile scaled into four others: four independent DVE instructions of 2,048
    elements a partition each (DVE-bound), offered to DVE and ACT when ``offered``."""
    tensors = {f"t{k}": Tensor(f"t{k}", MemoryKind.SBUF, "float32", (128, 2048), partition=0, offset=k * 8192)
               for k in range(5)}
    extras = frozen_mapping({ENGINE_CHOICE_KEY: ["dve", "act"]} if offered else {})
    init = Instruction("init", "pool", "memset", (), (Access("t0"),), {"value": 1})
    body = tuple(Instruction(f"scale{k}", "dve", "tensor_scalar", (Access("t0"),), (Access(f"t{k}"),),
                             {"op0": "multiply", "operand0": float(k)}, extras=extras) for k in range(1, 5))
    return Program(tensors, (init, *body))


def test_work_offered_to_two_engines_spreads_over_both_and_the_makespan_shrinks():
    kept = _compile(_independent(False), TRACED_PIPELINE + ",dep-reduction")
    spread = _compile(_independent(True), TRACED_PIPELINE + ",dep-reduction")
    assert {i.engine for i, _ in kept.instructions() if i.op == "tensor_scalar"} == {"dve"}
    assert {i.engine for i, _ in spread.instructions() if i.op == "tensor_scalar"} == {"dve", "act"}
    assert check_program(spread).races == ()
    assert _dram_results(spread) == _dram_results(kept)
    assert run_sequential(build_plan(spread), initial_memory(spread, resolve_machine(spread.machine), 3)) \
        .tensor_bytes(spread.tensors["t4"]) == run_sequential(
            build_plan(kept), initial_memory(kept, resolve_machine(kept.machine), 3)).tensor_bytes(kept.tensors["t4"])
    before = simulate(kept, functional=False).runs[0].trace
    after = simulate(spread, functional=False).runs[0].trace
    assert max(r.end for r in after.records) < 0.8 * max(r.end for r in before.records)


def _ring(tiles: int) -> Program:
    """A loop loading a DRAM row block per iteration into one virtual tile, scaling it on ACT
    and storing it: ``alloc`` rotates the tile over its ring slots."""
    tensors = {"x": Tensor("x", MemoryKind.DRAM, "float32", (tiles * 128, 512), address=0, role="input"),
               "y": Tensor("y", MemoryKind.DRAM, "float32", (tiles * 128, 512), address=tiles * 128 * 2048,
                           role="output"),
               "tile": Tensor("tile", MemoryKind.SBUF, "float32", (128, 512)),
               "res": Tensor("res", MemoryKind.SBUF, "float32", (128, 512))}
    step, block = 128 * 512, ((512, 128), (1, 512))  # elements: one 128-row block per iteration
    body = (Instruction("ld", "sp", "dma_copy", (Access("x", pattern=block, per_iteration=(("i", step),)),),
                        (Access("tile"),), queue="dma0"),
            Instruction("scale", "act", "activation", (Access("tile"),), (Access("res"),), {"func": "copy"}),
            Instruction("st", "sp", "dma_copy", (Access("res"),),
                        (Access("y", pattern=block, per_iteration=(("i", step),)),),
                        queue="dma1"))
    return Program(tensors, (Loop("i", tiles, body),))


def test_the_rings_bound_the_loads_in_flight():
    """No load into a ring slot starts before the previous tile in that slot was read: the
    schedule keeps the allocation's live tiles (it cannot exceed what alloc placed)."""
    program = _ring(8)
    allocated = _compile(program, "alloc")
    rotation = allocated.tensors["tile"].rotate
    slots = rotation.slots if rotation is not None else None
    scheduled = _compile(program, TRACED_PIPELINE + ",dep-reduction")
    order = [i.name for i, _ in scheduled.instructions()]
    assert len(order) == 24 and slots is not None and slots < 8
    for i in range(slots, 8):
        assert order.index(f"scale[{i - slots}]") < order.index(f"ld[{i}]")
    assert order.index("ld[1]") < order.index("scale[0]")  # and the next load does run ahead
    assert check_program(scheduled).races == ()
    assert _dram_results(scheduled) == _dram_results(_compile(program, DEFAULT_PIPELINE))


def test_the_flat_schedule_estimate_decides_whether_loops_are_flattened():
    """``schedule`` unrolls a loop only when the flat schedule's estimated memory fits
    ``max_flat_memory``: a column block moving with its loop costs a run a row per instance,
    the tile read in place one footprint in all; above the bound the loop stays an atom."""
    program = _ring(8)
    # 24 instances; the two DRAM blocks move (a run each: whole rows), the tiles do not
    assert flat_memory(program) == 24 * FLAT_BYTES_PER_INSTANCE + (8 + 8 + 4) * FLAT_BYTES_PER_RUN
    allocated = _compile(program, "alloc")
    need = flat_memory(allocated)
    for bound, flattened in ((need, True), (need - 1, False)):
        ctx = PassContext()
        out = run_pipeline(allocated, f"schedule{{max_flat_memory={bound}}}", ctx)
        loops = [node for node, _ in out.walk() if isinstance(node, Loop)]
        assert (not loops) == flattened
        assert ctx.stats["schedule"].get("flattened", 0) == int(flattened)


def test_schedule_refuses_virtual_tensors_and_is_registered():
    assert ALL_PASSES["schedule"] is Schedule
    with pytest.raises(ProgramError, match="run alloc before it"):
        Schedule().apply(_ring(2), PassContext())


def _sequential(program: Program) -> Program:
    """``program`` with every loop an NKI ``sequential_range`` (the frontend's loop extra)."""
    def mark(node):
        if isinstance(node, Loop):
            return Loop(node.name, node.trip_count, tuple(mark(child) for child in node.body),
                        frozen_mapping({**(node.extras or {}), RANGE_KEY: "sequential"}))
        return node
    return program.with_body(tuple(mark(node) for node in program.body))


@settings(max_examples=60, **SLOW)
@given(programs(deps="none", virtual=True, max_instructions=9, max_loops=2, max_trip=3))
def test_sequential_loops_are_scheduled_race_free_and_in_order_on_each_engine(program):
    """Every loop sequential: the schedule still completes, race-free with the results of source
    order, and on each engine no instance of an iteration precedes one of an earlier iteration
    of the same loop run (the gates, read off the program just before the scheduler)."""
    marked = _offered(_sequential(program))
    placed = _compile(marked, "load-elim,alloc")
    gates = iteration_gates(placed)
    names = [inst.name for inst, _ in expand_scheduling_units(placed).instructions()] if gates else []
    scheduled = _compile(placed, "schedule,dma-place,dep-opt{memsets=false},dep-reduction")
    assert check_program(scheduled).races == ()
    got, want = _dram_results(scheduled), _dram_results(_compile(marked, DEFAULT_PIPELINE))
    assert {k: got[k] for k in want} == want  # (a rotating DRAM tensor's slots are new: first test)
    if not gates or any(isinstance(node, Loop) for node in scheduled.body):
        return
    of = dict(zip(names, gates))
    latest: dict[tuple[str, int], int] = {}
    for inst, _ in scheduled.instructions():
        for gid, j in of[inst.name]:
            key = (inst.engine, gid)
            assert j >= latest.get(key, j), (inst.name, inst.engine, gid, j, latest[key])
            latest[key] = j


STREAMING = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def columns(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(x.shape[1] // 8):
        nl.store(out[:, i * 8:(i + 1) * 8], nl.exp(nl.load(x[:, i * 8:(i + 1) * 8])))
    return out
'''


def test_a_write_of_several_runs_counts_its_runs_at_every_instance():
    """A store of a strided block that does not move with its loop is one footprint, but the
    dependence passes order each instance's write run by run: 50,000 such stores estimated
    0.2 GB and took 3.4 GB (probe_bd).  A read of it does not count again."""
    x = Tensor("x", MemoryKind.DRAM, "float32", (128, 4096), address=0, role="input")
    y = Tensor("y", MemoryKind.DRAM, "float32", (128, 4096), address=4 << 20, role="output")
    tile = Tensor("t", MemoryKind.SBUF, "float32", (128, 8), partition=0, offset=0)
    block = ((4096, 128), (2, 8))  # every other element: 1,024 one-element runs
    body = (Loop("i", 100, (Instruction("ld", "sp", "dma_copy", (Access("x", pattern=block),), (Access("t"),)),
                            Instruction("st", "act", "dma_copy", (Access("t"),), (Access("y", pattern=block),)))),)
    program = Program({"x": x, "y": y, "t": tile}, body)
    assert flat_memory(program) == (200 * FLAT_BYTES_PER_INSTANCE + (1024 + 100 * 1024) * FLAT_BYTES_PER_RUN
                                    + 2 * FLAT_BYTES_PER_RUN)  # the load's block once; the tile's two accesses


def test_runs_memory_guard_counts_the_flat_schedule_it_will_make(tmp_path, monkeypatch):
    """`run --max-memory` foresees the flat schedule's memory where `schedule` will flatten (a
    flat schedule outgrew the estimate: probe_az), and only there."""
    import numpy as np
    from click.testing import CliRunner

    from neuronsim.machine.nki import load_kernel, trace
    from neuronsim.machine.order.work_estimate import estimate_size
    from neuronsim.passes.spec import parse_pipeline
    from neuronsim.passes.schedule import scheduled_flat_memory
    from neuronsim.verify.cli import cli

    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.py").write_text(STREAMING)
    x = np.zeros((128, 8 * 500), np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    program = trace(load_kernel("k.py::columns"), x).program
    flat = scheduled_flat_memory(program, parse_pipeline(TRACED_PIPELINE))
    base = estimate_size(program).memory_bytes(unrolled=True, simulated_runs=5)  # (as run guards a kernel)
    assert flat > 0 and scheduled_flat_memory(program, parse_pipeline("alloc,schedule{flatten=false}")) == 0
    limit = str(base + flat // 2)  # enough for the work without its flat schedule, not with it
    args = ["run", "k.py::columns", "--inputs", "in.npz", "--timing-only", "--out", "o", "--max-memory", limit]
    refused = CliRunner().invoke(cli, args)
    assert refused.exit_code == 2 and "for its flat schedule" in refused.stderr
    kept = CliRunner().invoke(cli, [*args, "--passes", "load-elim,alloc,schedule{flatten=false},dma-place,dep-opt,"
                                                       "dep-reduction"])
    assert "for its flat schedule" not in kept.stderr and kept.exit_code in (0, 1), kept.stderr
