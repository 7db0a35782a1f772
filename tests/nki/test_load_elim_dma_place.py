"""``load-elim`` and ``dma-place`` (issue 30): what they move, and the oracles: every compiled
program race-free, its outputs those of the numpy reference / of the program in source order."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from neuronsim.machine.ir.program import Access, Instruction, Loop, MemoryKind, Program, Tensor
from neuronsim.machine.model.presets import resolve_machine
from neuronsim.machine.nki import load_kernel, trace
from neuronsim.machine.sim.memory import initial_memory
from neuronsim.machine.sim.plan import build_plan
from neuronsim.machine.sim.simulator import run_sequential, simulate
from neuronsim.passes import DEFAULT_PIPELINE, TRACED_PIPELINE, PassContext, compile_program, run_pipeline
from neuronsim.passes.dma_place import place_queues
from neuronsim.passes.load_elim import load_count
from neuronsim.verify.nki.run import outputs_differ, run_kernel
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.sync_counts import sync_report

MAMBA = Path(__file__).resolve().parents[2] / "scenarios" / "nki" / "published" / "mamba.py"
TRACED = TRACED_PIPELINE + ",dep-reduction"


def _mamba_inputs(channels: int = 256, seq: int = 512):
    rng = np.random.default_rng(3)
    shapes = ((1, channels, seq), (1, channels, seq), (channels, 16), (1, 16, seq), (1, 16, seq))
    return [rng.uniform(-0.5, 0.5, s).astype(np.float32) for s in shapes]


def test_mamba_v1_loads_its_state_rows_once_per_state_and_matches_numpy():
    arrays = _mamba_inputs()
    traced = trace(load_kernel(f"{MAMBA}::mamba_v1"), *arrays, machine="trn1")
    compiled, ctx = compile_program(traced.program, TRACED)
    stats = ctx.stats["load-elim"]
    assert stats["hoisted"] == 2  # B's and C's rows do not move with the channel-tile loop
    assert stats["loads-after"] == stats["loads-before"] - 2 * 16 * (2 - 1)  # 16 states, 2 tiles: one load, not 2
    assert load_count(compiled) == stats["loads-after"]
    assert check_program(compiled).races == ()
    reference = load_kernel(f"{MAMBA}::reference")
    _outputs, report = run_kernel(f"{MAMBA}::mamba_v1", *arrays, reference=reference, seeds=(None,))
    assert outputs_differ(report) == []


def _tensors(**extra: Tensor) -> dict[str, Tensor]:
    tensors = {"x": Tensor("x", MemoryKind.DRAM, "float32", (128, 512), address=0, role="input"),
               "y": Tensor("y", MemoryKind.DRAM, "float32", (128, 512), address=1 << 20, role="output")}
    tensors.update(extra)
    return tensors


def _load(name: str, source: str, tile: str) -> Instruction:
    return Instruction(name, "sp", "dma_copy", (Access(source),), (Access(tile),), queue="dma0")


def _dram_results(program: Program) -> dict[str, bytes]:
    memory = run_sequential(build_plan(program), initial_memory(program, resolve_machine(program.machine), 5))
    return {n: memory.tensor_bytes(t) for n, t in program.tensors.items() if t.memory == MemoryKind.DRAM}


def _two_loads_of_x() -> Program:
    """``x`` loaded twice into two tiles, summed, stored: the second load is redundant."""
    tiles = {n: Tensor(n, MemoryKind.SBUF, "float32", (128, 512)) for n in ("a", "b", "s")}
    body = (_load("ld_a", "x", "a"), _load("ld_b", "x", "b"),
            Instruction("add", "dve", "tensor_tensor", (Access("a"), Access("b")), (Access("s"),), {"op": "add"}),
            Instruction("st", "sp", "dma_copy", (Access("s"),), (Access("y"),), queue="dma0"))
    return Program(_tensors(**tiles), body)


def test_a_repeated_load_is_dropped_and_the_results_stay():
    program = _two_loads_of_x()
    compiled, ctx = compile_program(program, TRACED)
    assert ctx.stats["load-elim"]["eliminated"] == 1
    assert [i.name for i, _ in compiled.instructions() if i.name.startswith("ld")] == ["ld_a"]
    assert check_program(compiled).races == ()
    assert _dram_results(compiled) == _dram_results(run_pipeline(program, DEFAULT_PIPELINE, PassContext()))


def _loop(store_into_x: bool) -> Program:
    """A loop of 4 iterations loading all of ``x`` (loop-invariant) and adding it into ``acc``;
    ``store_into_x``: the loop also writes ``x``, so the load must stay."""
    tiles = {"t": Tensor("t", MemoryKind.SBUF, "float32", (128, 512), extras={"x-nki-scope": ["i"]}),
             "acc": Tensor("acc", MemoryKind.SBUF, "float32", (128, 512))}
    inner = [_load("ld", "x", "t"),
             Instruction("acc_add", "dve", "tensor_tensor", (Access("acc"), Access("t")), (Access("acc"),),
                         {"op": "add"})]
    if store_into_x:
        inner.append(Instruction("st_x", "sp", "dma_copy", (Access("acc"),), (Access("x"),), queue="dma0"))
    body = (Instruction("zero", "dve", "memset", (), (Access("acc"),), {"value": 0}), Loop("i", 4, tuple(inner)),
            Instruction("st", "sp", "dma_copy", (Access("acc"),), (Access("y"),), queue="dma0"))
    return Program(_tensors(**tiles), body)


def test_a_loop_invariant_load_leaves_its_loop_unless_the_loop_writes_its_source():
    for writes_x, hoisted in ((False, 1), (True, 0)):
        program = _loop(writes_x)
        compiled, ctx = compile_program(program, TRACED)
        assert ctx.stats["load-elim"]["hoisted"] == hoisted
        assert load_count(compiled) == (4 if writes_x else 1)
        assert check_program(compiled).races == ()
        assert _dram_results(compiled) == _dram_results(run_pipeline(program, DEFAULT_PIPELINE, PassContext()))
    report = sync_report([("given", _loop(False)), ("compiled", compile_program(_loop(False), TRACED)[0])],
                         simulate=False)
    assert [stage.to_json()["loads"] for stage in report.stages] == [4, 1]


def _halves() -> Program:
    """Two 64-partition loads of 32 KiB rows, one on each half of SBUF, both on ``dma0``."""
    x2 = Tensor("x2", MemoryKind.DRAM, "float32", (64, 8192), address=4 << 20, role="input")
    x = Tensor("x", MemoryKind.DRAM, "float32", (64, 8192), address=0, role="input")
    lo = Tensor("lo", MemoryKind.SBUF, "float32", (64, 8192), partition=0, offset=0)
    hi = Tensor("hi", MemoryKind.SBUF, "float32", (64, 8192), partition=64, offset=0)
    return Program({"x": x, "x2": x2, "lo": lo, "hi": hi}, (_load("ld_lo", "x", "lo"), _load("ld_hi", "x2", "hi")))


def test_transfers_on_disjoint_partition_groups_overlap_once_dealt_over_the_queues():
    program = run_pipeline(_halves(), "dep-opt{memsets=false}", PassContext())
    placed, moved = place_queues(program, resolve_machine("trn1").queue_names)
    assert moved == 1 and [i.queue for i, _ in placed.instructions()] == ["dma0", "dma1"]
    placed = run_pipeline(placed, "dep-opt{memsets=false}", PassContext())
    assert check_program(placed).races == ()
    one_queue = simulate(program, functional=False).runs[0].trace.makespan
    two_queues = simulate(placed, functional=False).runs[0].trace.makespan
    # each half moves on its own 8 engines (partition p on engine p // 8): the second no longer
    # waits for the first, so the pair takes about one transfer's time, not two
    assert two_queues < 0.6 * one_queue


_REPEATS = '''
import nki
import nki.language as nl


@nki.jit
def repeats(x):
    out = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    for i in range(3):
        a = nl.load(x[0:128, 0:512])     # the same bytes in every iteration: loaded each time
        b = nl.load(x[0:128, 0:512])     # and again within the iteration: the first load serves
        acc[...] = nl.add(acc, nl.multiply(a, b))
    nl.store(out[0:128, 0:512], value=acc)
    return out
'''


def test_within_iteration_drops_a_repeated_load_of_the_same_iteration_only(tmp_path):
    """A traced kernel's loops are unrolled (NKI 0.7), so by default a load finds its twin in
    any earlier iteration; ``load-elim{within_iteration=true}`` keeps a loaded tile for a
    later load of the same bytes in the same iteration only (``docs/timing.md``, "Loads again
    in the next iteration")."""
    source = tmp_path / "repeats.py"
    source.write_text(_REPEATS)
    x = np.random.default_rng(0).random((128, 512), dtype=np.float32)
    traced = trace(load_kernel(f"{source}::repeats"), x, machine="trn1")
    assert load_count(traced.program) == 6
    _compiled, ctx = compile_program(traced.program, TRACED)
    assert ctx.stats["load-elim"]["eliminated"] == 5  # the block rule: one load in all
    compiled, ctx = compile_program(traced.program, TRACED.replace("load-elim", "load-elim{within_iteration=true}"))
    assert ctx.stats["load-elim"]["eliminated"] == 3 and load_count(compiled) == 3
    assert check_program(compiled).races == ()
    outputs = simulate(compiled, seeds=[None, 1], inputs={"x": x})
    assert not outputs.differs
    np.testing.assert_allclose(outputs.runs[0].outputs["return0"], 3 * x * x, rtol=1e-6)


_GRID = '''
import nki
import nki.isa as nisa
import nki.language as nl

@nki.jit
def scale_rows(x):
    pid = nl.program_id(0)
    out = nl.ndarray((2, 128, 512), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[0:128, 0:512])
    u = nl.ndarray((128, 512), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=u, data=t, op0=nl.multiply, operand0=float(pid + 1))
    nisa.dma_copy(dst=out[pid], src=u)
    return out
'''


def test_the_programs_of_a_grid_never_share_a_loaded_tile(tmp_path):
    """probe_aa: both programs of a grid load the same ``x``; each holds its own tiles
    (``docs/nki.md``), so program 1's load is not dropped against program 0's tile."""
    source = tmp_path / "grid.py"
    source.write_text(_GRID)
    x = np.random.default_rng(0).random((128, 512), dtype=np.float32)
    traced = trace(load_kernel(f"{source}::scale_rows"), x, grid=2, machine="trn1")
    assert load_count(traced.program) == 2
    compiled, ctx = compile_program(traced.program, TRACED)
    assert ctx.stats["load-elim"]["eliminated"] == 0 and load_count(compiled) == 2
    outputs = simulate(compiled, seeds=[None], inputs={"x": x})
    np.testing.assert_allclose(outputs.runs[0].outputs["return0"], np.stack([x, 2 * x]), rtol=1e-6)
