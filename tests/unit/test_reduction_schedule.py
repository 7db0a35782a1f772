"""list-schedule and dep-opt: semantics kept, conflicts kept in order, deps rebuilt race-free."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings

from neuronsim.machine.formats.program_json import load_program
from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.program import Access, Dep, Instruction, Loop, MemoryKind, Program, Tensor
from neuronsim.machine.sim.memory import initial_memory
from neuronsim.machine.model.presets import resolve_machine
from neuronsim.machine.sim.plan import build_plan
from neuronsim.machine.sim.simulator import run_sequential
from neuronsim.machine.order.unroll import unroll
from neuronsim.machine.formats.validate import validate_program
from neuronsim.passes import ALL_PASSES, DEFAULT_PIPELINE, PassContext, parse_pipeline, run_pipeline
from neuronsim.passes.dep_opt import DepOpt, insert_memsets, uninitialised_reads
from neuronsim.passes.list_schedule import ListSchedule, list_schedule
from neuronsim_tests.oracles import conflicts
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.strategies import programs, strip_deps

SLOW = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
REGISTRY = {**ALL_PASSES, ListSchedule.name: ListSchedule, DepOpt.name: DepOpt}


def _final_memory(program):
    spec = resolve_machine(program.machine)
    memory = run_sequential(build_plan(program), initial_memory(program, spec, 3))
    return {name: memory.tensor_bytes(t) for name, t in program.tensors.items()}


def _conflict_order(program):
    """``{(a, b)}`` instance names of conflicting pairs, ``a`` first in program order."""
    unrolled = unroll(program)
    cache: dict = {}
    return {(a.name, b.name) for a in unrolled for b in unrolled.instances[a.id + 1:]
            if conflicts(program, a, b, cache)}


def _blocks(nodes, name="body"):
    """Block name -> sorted names of its nodes, for the body and every loop body."""
    out = {name: sorted(n.name for n in nodes)}
    for node in nodes:
        if isinstance(node, Loop):
            out.update(_blocks(node.body, node.name))
    return out


@settings(max_examples=50, **SLOW)
@given(programs(deps="random", max_instructions=9, max_loops=2, max_trip=2))
def test_schedule_permutes_blocks_and_keeps_conflicts_and_deps_in_order(program):
    scheduled = list_schedule(program)
    validate_program(scheduled)  # every non-loop-carried dep still points backwards
    assert _blocks(scheduled.body) == _blocks(program.body)
    assert _conflict_order(scheduled) == _conflict_order(program)
    assert _final_memory(scheduled) == _final_memory(program)


@settings(max_examples=40, **SLOW)
@given(programs(deps="none", virtual=True, max_instructions=9, max_loops=2, max_trip=2))
def test_dep_opt_after_schedule_is_race_free(program):
    ctx = PassContext()
    out = run_pipeline(program, parse_pipeline(f"{DEFAULT_PIPELINE},list-schedule,dep-opt", REGISTRY), ctx)
    assert check_program(out).races == ()
    assert uninitialised_reads(out) == [] or ctx.stats["dep-opt"].get("uninitialised-left", 0) > 0


def _apart(program):
    """``program`` with every virtual tensor placed on bytes of its own (no reuse at all):
    the storage a virtual tensor stands for before allocation."""
    placed = [t for t in program.tensors.values() if not t.is_virtual and t.memory != MemoryKind.DRAM]
    # above every placed byte, as alloc places them (starting at 0 put a virtual tile on a placed one)
    sbuf = max((t.offset + t.bytes_per_partition for t in placed if t.memory == MemoryKind.SBUF), default=0)
    psum = max((t.bank * 2048 + t.offset + t.bytes_per_partition for t in placed if t.memory == MemoryKind.PSUM),
               default=0)
    cursor = {MemoryKind.SBUF: -(-sbuf // 64) * 64, MemoryKind.PSUM: -(-psum // 2048) * 2048,
              MemoryKind.DRAM: 1 << 30}  # above every placed DRAM byte
    tensors = {}
    for name, t in program.tensors.items():
        if t.is_virtual:
            at = cursor[t.memory]
            cursor[t.memory] = at + -(-t.bytes_per_partition // 64) * 64
            if t.memory == MemoryKind.DRAM:
                t = replace(t, address=at)
            elif t.memory == MemoryKind.PSUM:
                t = replace(t, partition=0, bank=at // 2048, offset=at % 2048)
            else:
                t = replace(t, partition=0, offset=at)
        tensors[name] = t
    return Program(tensors, program.body, program.machine)


@settings(max_examples=50, **SLOW)
@given(programs(deps="none", virtual=True, max_instructions=9, max_loops=2, max_trip=2))
def test_scheduling_virtual_tiles_keeps_every_conflict_in_order(program):
    """Before allocation a virtual tensor shares no byte with another: the scheduler may move
    accesses of different virtual tiles past each other, never two conflicting accesses of
    one tile.  Oracle: every virtual tensor on bytes of its own, the pairs that conflict
    there keep their order under the schedule found on the virtual program."""
    scheduled = list_schedule(program)
    validate_program(scheduled)
    assert _blocks(scheduled.body) == _blocks(program.body)
    apart = _apart(program)
    assert _conflict_order(Program(apart.tensors, scheduled.body, apart.machine)) == _conflict_order(apart)


def test_scheduling_makes_real_work_for_dep_opt():
    """On flash attention the old deps no longer order everything after scheduling."""
    program = strip_deps(load_program("scenarios/flash_attention.json"))
    ctx = PassContext()
    compiled = run_pipeline(program, DEFAULT_PIPELINE, ctx)
    scheduled = ListSchedule().apply(compiled, ctx)
    assert [i.name for i, _ in scheduled.instructions()] != [i.name for i, _ in compiled.instructions()]
    assert check_program(scheduled).races  # stale deps
    rebuilt = DepOpt().apply(scheduled, ctx)
    assert check_program(rebuilt).races == ()
    assert _final_memory(rebuilt) == _final_memory(compiled)


def test_highest_level_first():
    """``long`` heads the critical path (long -> tail), then ``tail``, whose level beats the
    independent ``short``: program order is only the tie-break."""
    body = (Instruction("short", "pe", "op", attrs={"cycles": 10}),
            Instruction("long", "pe", "op", attrs={"cycles": 5000}),
            Instruction("tail", "act", "op", attrs={"cycles": 5000}, deps=(Dep("long"),)))
    scheduled = list_schedule(Program({}, body))
    assert [i.name for i in scheduled.body] == ["long", "tail", "short"]


def test_memsets_for_uninitialised_reads():
    tensors = {"s": Tensor("s", MemoryKind.SBUF, "float32", (64, 8), partition=0, offset=0),
               "p": Tensor("p", MemoryKind.PSUM, "float32", (64, 8), partition=0, bank=0, offset=0),
               "o": Tensor("o", MemoryKind.SBUF, "float32", (64, 8), partition=0, offset=64)}
    body = (Instruction("half", "dve", "memset", writes=(Access("s", pattern=((1, 4),)),), attrs={"value": 1}),
            Instruction("use", "dve", "tensor_tensor", reads=(Access("s"), Access("p")), writes=(Access("o"),),
                        attrs={"op": "add"}))
    program = Program(tensors, body)
    assert [(i, k) for i, k, _ in uninitialised_reads(program)] == [(1, 0), (1, 1)]
    filled, inserted, left = insert_memsets(program)
    validate_program(filled)
    assert (inserted, left) == (2, 0)
    assert [(i.name, i.engine, i.writes[0].tensor) for i in filled.body[:2]] == [
        ("memset_init0", "pool", "s"), ("memset_init1", "dve", "p")]
    assert uninitialised_reads(filled) == []


def test_dep_opt_says_the_structure_changed_only_when_it_inserts_memsets():
    """dep-opt runs state to state (one stream for its builders); the state it returns still
    says what verification must look at: the whole program when memsets were inserted, the
    deps alone otherwise."""
    from neuronsim.passes.state import DEPS, EVERYTHING, PipelineState

    tensors = {"s": Tensor("s", MemoryKind.SBUF, "float32", (64, 8), partition=0, offset=0),
               "o": Tensor("o", MemoryKind.SBUF, "float32", (64, 8), partition=0, offset=64)}
    reads_unwritten = Program(tensors, (
        Instruction("use", "dve", "tensor_copy", reads=(Access("s"),), writes=(Access("o"),)),
        Instruction("again", "act", "tensor_copy", reads=(Access("o"),), writes=(Access("s"),))))
    spec = resolve_machine("trn1")
    for memsets, changed in ((True, EVERYTHING), (False, frozenset({DEPS}))):
        ctx = PassContext()
        state = DepOpt(memsets=memsets).run(PipelineState.of(reads_unwritten, spec), ctx)
        assert state.changed == changed
        assert ctx.stats["dep-opt"].get("memsets", 0) == (1 if memsets else 0)
        names = [i.name for i, _ in state.program.instructions()]
        assert [d.on for d in state.program.instruction_map()["again"].deps] == ["use"]
        assert names[0] == ("memset_init0" if memsets else "use")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(deps="random", max_instructions=12, max_loops=2, max_trip=2))
def test_dep_opt_counts_what_the_program_it_returns_lists_without_writing_it(program):
    """dep-opt counts its deps from the state's table (no program written for the counts);
    the counts are those of the deps the returned program lists, and of its input's."""
    from neuronsim.machine.order.deptable import write_deps
    from neuronsim.passes.state import PipelineState

    def keys(p):
        return {(i.name, d.on, d.loop_carried): d.kind for i, _ in p.instructions() for d in i.deps}

    spec = resolve_machine(program.machine)
    ctx = PassContext()
    start = PipelineState.of(program, spec)
    state = DepOpt(memsets=False).run(start, ctx)
    assert state.table is not None and "program" not in state._made  # nothing written yet
    assert state.listed_deps() == keys(write_deps(state.structure, state.table))
    written = keys(state.program)
    counts = ctx.stats["dep-opt"]
    assert counts["deps-before"] == len(keys(program)) and counts["deps-after"] == len(written)
    assert counts["flow"] == sum(k == EdgeKind.FLOW for k in written.values())
    assert counts.get("erased-loop-carried", 0) == sum(1 for k in keys(program) if k[2] and k not in written)
