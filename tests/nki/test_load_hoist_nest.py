"""``load-elim{nests=true}`` (issue 30): a load that moves only with the loops inside an outer
loop leaves the outer loop, one tile slot per inner iteration.  Oracles: the compiled program
race-free, its DRAM bytes those of the program as written, its loads counted; off by default."""

from __future__ import annotations

import numpy as np

from neuronsim.machine.ir.program import Access, Instruction, Loop, MemoryKind, Program, Tensor
from neuronsim.machine.model.presets import resolve_machine
from neuronsim.machine.nki import load_kernel, trace
from neuronsim.machine.sim.memory import initial_memory
from neuronsim.machine.sim.plan import build_plan
from neuronsim.machine.sim.simulator import run_sequential
from neuronsim.passes import DEFAULT_PIPELINE, TRACED_PIPELINE, PassContext, compile_program, run_pipeline
from neuronsim.passes.load_elim import load_count
from neuronsim.verify.nki.run import outputs_differ, run_kernel
from neuronsim.verify.racecheck import check_program
from neuronsim_tests.nki_kit import GROUP_KERNELS

TRACED = TRACED_PIPELINE.replace("load-elim", "load-elim{nests=true}", 1) + ",dep-reduction"


def _dram_results(program: Program) -> dict[str, bytes]:
    memory = run_sequential(build_plan(program), initial_memory(program, resolve_machine(program.machine), 5))
    return {n: memory.tensor_bytes(t) for n, t in program.tensors.items() if t.memory == MemoryKind.DRAM}


def _nest(*, store_into_w: bool = False, tile_columns: int = 512) -> Program:
    """``for i in 4: for n in 3: t = load(w[:, n]); acc += t`` then ``y[i] = acc``: ``t``'s load
    moves with ``n`` only; ``store_into_w``: the ``i`` loop also writes ``w``."""
    cols = tile_columns
    tensors = {
        "w": Tensor("w", MemoryKind.DRAM, "float32", (128, 3 * cols), address=0, role="input"),
        "y": Tensor("y", MemoryKind.DRAM, "float32", (4, 128, cols), address=1 << 22, role="output"),
        "t": Tensor("t", MemoryKind.SBUF, "float32", (128, cols), extras={"x-nki-scope": ["i", "n"]}),
        "acc": Tensor("acc", MemoryKind.SBUF, "float32", (128, cols), extras={"x-nki-scope": ["i"]}),
    }
    row = ((3 * cols, 128), (1, cols))  # w[:, n * cols:(n + 1) * cols] as a flat DRAM pattern
    inner = (Instruction("ld", "sp", "dma_copy", (Access("w", offset=0, pattern=row, per_iteration=(("n", cols),)),),
                         (Access("t"),), queue="dma0"),
             Instruction("acc_add", "dve", "tensor_tensor", (Access("acc"), Access("t")), (Access("acc"),),
                         {"op": "add"}))
    body = [Instruction("zero", "dve", "memset", (), (Access("acc"),), {"value": 0}), Loop("n", 3, inner),
            Instruction("st", "sp", "dma_copy", (Access("acc"),),
                        (Access("y", offset=0, pattern=((1, 128 * cols),), per_iteration=(("i", 128 * cols),)),),
                        queue="dma0")]
    if store_into_w:
        body.append(Instruction("st_w", "sp", "dma_copy", (Access("acc"),),
                                (Access("w", offset=0, pattern=((3 * cols, 128), (1, cols))),), queue="dma0"))
    return Program(tensors, (Loop("i", 4, tuple(body)),))


def test_a_load_moving_only_with_an_inner_loop_leaves_the_outer_loop_as_one_slot_per_iteration():
    program = _nest()
    compiled, ctx = compile_program(program, TRACED)
    stats = ctx.stats["load-elim"]
    assert stats["hoisted-nests"] == 1
    assert (stats["loads-before"], stats["loads-after"]) == (12, 3)  # 4 x 3 loads, then 3
    assert load_count(compiled) == 3
    assert compiled.tensors["t"].shape == (128, 3, 512)
    assert check_program(compiled).races == ()
    assert _dram_results(compiled) == _dram_results(run_pipeline(program, DEFAULT_PIPELINE, PassContext()))


def test_the_default_pipeline_leaves_the_nest_in_its_loop():
    compiled, ctx = compile_program(_nest(), TRACED_PIPELINE + ",dep-reduction")
    assert ctx.stats["load-elim"]["hoisted-nests"] == 0
    assert load_count(compiled) == 12


def test_the_nest_stays_when_the_outer_loop_writes_its_source_or_its_slots_do_not_fit():
    for program in (_nest(store_into_w=True), _nest(tile_columns=16384)):  # 3 slots of 64 KiB: past SBUF
        compiled, ctx = compile_program(program, TRACED)
        assert ctx.stats["load-elim"]["hoisted-nests"] == 0
        assert load_count(compiled) == 12
        assert check_program(compiled).races == ()
        assert _dram_results(compiled) == _dram_results(run_pipeline(program, DEFAULT_PIPELINE, PassContext()))


KERNEL = GROUP_KERNELS / "rows_times_weight.py"


def test_a_traced_kernel_loads_its_weight_once_and_still_matches_numpy():
    path = KERNEL
    rng = np.random.default_rng(0)
    x, w = rng.uniform(-1, 1, (512, 256)).astype(np.float32), rng.uniform(-1, 1, (256, 1024)).astype(np.float32)
    traced = trace(load_kernel(f"{path}::rows_times_weight"), x.T.copy(), w, machine="trn1")
    compiled, ctx = compile_program(traced.program, TRACED)
    stats = ctx.stats["load-elim"]
    # each (i, n, k) loaded an x tile and a w tile: 4 x 2 x 2 of each.  w's tiles do not move
    # with i: loaded once (2 x 2); x's do not move with n: once per (i, k) (4 x 2)
    assert (stats["loads-before"], stats["loads-after"]) == (32, 2 * 2 + 4 * 2)
    assert check_program(compiled).races == ()
    _outputs, report = run_kernel(f"{path}::rows_times_weight", x.T.copy(), w,
                                  reference=lambda xT, w: {"return0": xT.T @ w}, seeds=(None,))
    assert outputs_differ(report) == []
