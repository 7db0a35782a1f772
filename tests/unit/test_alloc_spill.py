"""Builder programs whose live SBUF tiles exceed SBUF: ``alloc`` spills to DRAM and reloads
(:mod:`neuronsim.passes.alloc_spill`), and packs tiles of different shapes into the same
bytes when their lives do not overlap.  After the default pipeline each program is race free,
its simulated outputs equal numpy in every interleaving, and the spills are counted."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.build.builder import KernelBuilder
from neuronsim.machine.ir.program import MemoryKind
from neuronsim.machine.sim.simulator import simulate
from neuronsim.passes import DEFAULT_PIPELINE
from neuronsim.passes.pipeline import PassContext, run_pipeline
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.sync_counts import spill_traffic

SBUF_PARTITION = 192 * 1024  # trn1
ALLOCATABLE = SBUF_PARTITION - 16384  # below the compiler's reserve: what ``alloc`` places tiles in
FREE = 8192  # a (128, 8192) float32 tile: 32 KiB a partition


def _compiled(program):
    ctx = PassContext()
    return run_pipeline(program, DEFAULT_PIPELINE, ctx), ctx.stats.get("alloc", {})


def _outputs(program, x):
    sim = simulate(program, seeds=[None, 1, 2, 3], inputs={"x": x})
    assert not sim.differs  # every interleaving computes the sequential result
    return sim.runs[0].outputs


def _scale_all(tiles: int, halves: bool = False):
    """Load ``tiles`` tiles (each in a loop of two halves when ``halves``), then scale and
    store each: all are live together after the loads."""
    kb = KernelBuilder("scale_all")
    x = kb.dram_input("x", (tiles * 128, FREE), "float32")
    y = kb.dram_output("y", (tiles * 128, FREE), "float32")
    sb = [kb.sbuf(f"t{k}", (128, FREE), "float32") for k in range(tiles)]
    for k, t in enumerate(sb):
        if halves:
            with kb.loop(f"h{k}", 2) as i:
                kb.dma_copy(t[:, i * (FREE // 2):(i + 1) * (FREE // 2)],
                            x[k * 128:(k + 1) * 128, i * (FREE // 2):(i + 1) * (FREE // 2)])
        else:
            kb.dma_copy(t, x[k * 128:(k + 1) * 128, :])
    for k, t in enumerate(sb):
        kb.tensor_scalar(t, t, op0="multiply", operand0=2.0)
        kb.dma_copy(y[k * 128:(k + 1) * 128, :], t, engine="act", queue="dma1")
    return kb.program()


def _x(tiles: int) -> np.ndarray:
    return np.random.default_rng(tiles).random((tiles * 128, FREE), dtype=np.float32)


def test_tiles_that_exceed_sbuf_are_spilled_race_free_with_numpy_outputs():
    program = _scale_all(8)  # 8 x 32 KiB = 256 KiB a partition live at once
    assert sum(t.bytes_per_partition for t in program.tensors.values() if t.memory == MemoryKind.SBUF) > SBUF_PARTITION
    out, stats = _compiled(program)
    assert check_program(out).races == ()
    np.testing.assert_array_equal(_outputs(out, _x(8))["y"], _x(8) * 2.0)
    # at least the 64 KiB over SBUF went out and came back: two tiles, a store and a reload each
    assert stats["spills"] >= 2 and stats["spill-transfers"] == 2 * stats["spills"]
    assert stats["spill-bytes"] == stats["spill-transfers"] * 128 * FREE * 4
    assert spill_traffic(out) == (stats["spill-transfers"], stats["spill-bytes"])
    marks = [i.extras["x-spill"]["kind"] for i, _ in out.instructions() if "x-spill" in i.extras]
    assert sorted(marks) == ["reload"] * stats["spills"] + ["store"] * stats["spills"]


def _scale_into(tiles: int):
    """``_scale_all`` with each loaded tile read, not written, after its load: the tiles hold
    the input's bytes unchanged until their last use."""
    kb = KernelBuilder("scale_into")
    x = kb.dram_input("x", (tiles * 128, FREE), "float32")
    y = kb.dram_output("y", (tiles * 128, FREE), "float32")
    sb = [kb.sbuf(f"t{k}", (128, FREE), "float32") for k in range(tiles)]
    out = kb.sbuf("o", (128, FREE), "float32")
    for k, t in enumerate(sb):
        kb.dma_copy(t, x[k * 128:(k + 1) * 128, :])
    for k, t in enumerate(sb):
        kb.tensor_scalar(out, t, op0="multiply", operand0=2.0)
        kb.dma_copy(y[k * 128:(k + 1) * 128, :], out, engine="act", queue="dma1")
    return kb.program()


def test_a_tile_holding_input_bytes_unchanged_is_loaded_again_not_stored():
    out, stats = _compiled(_scale_into(8))  # 8 x 32 KiB loaded, then each read once
    assert check_program(out).races == ()
    np.testing.assert_array_equal(_outputs(out, _x(8))["y"], _x(8) * 2.0)
    spills = [i for i, _ in out.instructions() if "x-spill" in i.extras]
    assert stats["spills"] >= 1 and stats["spill-transfers"] == stats["spills"] == len(spills)
    assert {i.extras["x-spill"]["kind"] for i in spills} == {"reload"}
    assert all(i.reads[0].tensor == "x" and out.tensors[i.writes[0].tensor].memory == MemoryKind.SBUF for i in spills)
    assert not [n for n, t in out.tensors.items() if t.memory == MemoryKind.DRAM and n not in ("x", "y")]
    assert spill_traffic(out) == (stats["spill-transfers"], stats["spill-bytes"])


def test_spills_go_between_loops_that_touch_the_tile():
    program = _scale_all(7, halves=True)  # 224 KiB, each tile written by a loop of two halves
    out, stats = _compiled(program)
    assert stats["spills"] >= 1 and check_program(out).races == ()
    np.testing.assert_array_equal(_outputs(out, _x(7))["y"], _x(7) * 2.0)
    # the spill instructions sit at the top level, never inside a loop body
    assert all(not loops for inst, loops in out.instructions() if "x-spill" in inst.extras)


def test_the_tile_used_again_furthest_ahead_is_spilled_first():
    assert 5 * 128 * FREE * 4 <= ALLOCATABLE * 128 < 6 * 128 * FREE * 4
    out, stats = _compiled(_scale_all(6))  # one tile too many: t5's is the last use, t0.. come first
    spilled = {i.extras["x-spill"]["tensor"] for i, _ in out.instructions() if "x-spill" in i.extras}
    assert stats["spills"] == 1 and spilled == {"t4"}  # live across the loads' end, used last but t5


def test_the_compilers_reserve_is_not_allocated():
    """Six 32 KiB tiles fill a 192 KiB partition exactly: with the reserve (16 KiB on trn1) one
    is spilled; a machine without a reserve holds them all."""
    program = _scale_all(6)
    assert _compiled(program)[1]["spills"] == 1
    free = KernelBuilder("scale_all", machine={"base": "trn1", "sbuf_reserved_bytes": 0})
    x = free.dram_input("x", (6 * 128, FREE), "float32")
    y = free.dram_output("y", (6 * 128, FREE), "float32")
    for k in range(6):
        t = free.sbuf(f"t{k}", (128, FREE), "float32")
        free.dma_copy(t, x[k * 128:(k + 1) * 128, :])
        free.dma_copy(y[k * 128:(k + 1) * 128, :], t)
    free_out, free_stats = _compiled(free.program())
    assert "spills" not in free_stats and max(t.offset + t.bytes_per_partition for t in free_out.tensors.values()
                                                 if t.memory == MemoryKind.SBUF) <= SBUF_PARTITION


def test_a_program_that_fits_is_not_spilled():
    out, stats = _compiled(_scale_all(5))  # 160 KiB
    assert "spills" not in stats and spill_traffic(out) == (0, 0)


SMALL = ALLOCATABLE // 4 // 4  # float32 elements of a quarter of what alloc places tiles in


def _two_phases():
    """Two 88 KiB tiles, dead before four 44 KiB tiles are born: each phase fills the 176 KiB
    ``alloc`` places tiles in, so only sharing bytes across the two shapes fits them without
    spilling."""
    kb = KernelBuilder("two_phases")
    x = kb.dram_input("x", (128, 4 * SMALL), "float32")
    y = kb.dram_output("y", (128, 4 * SMALL), "float32")
    big = [kb.sbuf(f"big{k}", (128, 2 * SMALL), "float32") for k in range(2)]
    small = [kb.sbuf(f"small{k}", (128, SMALL), "float32") for k in range(4)]
    for k, t in enumerate(big):
        kb.dma_copy(t, x[:, k * 2 * SMALL:(k + 1) * 2 * SMALL])
    for k, t in enumerate(big):
        kb.dma_copy(y[:, k * 2 * SMALL:(k + 1) * 2 * SMALL], t)
    for k, t in enumerate(small):
        kb.dma_copy(t, x[:, k * SMALL:(k + 1) * SMALL])
    for k, t in enumerate(small):
        kb.tensor_scalar(t, t, op0="multiply", operand0=3.0)
        kb.dma_copy(y[:, k * SMALL:(k + 1) * SMALL], t, engine="act", queue="dma1")
    return kb.program()


def test_tiles_of_different_shapes_share_bytes_when_their_lives_do_not_overlap():
    out, stats = _compiled(_two_phases())
    assert "spills" not in stats and check_program(out).races == ()
    big, small = out.tensors["big0"], out.tensors["small0"]
    overlap = min(big.offset + big.bytes_per_partition, small.offset + small.bytes_per_partition) \
        - max(big.offset, small.offset)
    assert overlap > 0
    x = np.random.default_rng(0).random((128, 4 * SMALL), dtype=np.float32)
    np.testing.assert_array_equal(_outputs(out, x)["y"], x * 3.0)  # the small tiles' stores come last


def _random_uses(seed: int):
    """Tiles of random widths (8-48 KiB a partition, 200-300 KiB in all) loaded first, then
    scaled in a random order with repeats, each stored after its last scaling: how many times
    a tile is scaled is its expected factor's exponent."""
    rng = np.random.default_rng(seed)
    widths = []
    while sum(widths) * 4 < 200 * 1024:
        widths.append(int(rng.integers(2, 13)) * 1024)
    uses = list(rng.permutation(np.repeat(np.arange(len(widths)), 2)))
    kb = KernelBuilder(f"random_uses_{seed}")
    total = sum(widths)
    x = kb.dram_input("x", (128, total), "float32")
    y = kb.dram_output("y", (128, total), "float32")
    starts = np.concatenate(([0], np.cumsum(widths)[:-1])).tolist()
    tiles = [kb.sbuf(f"t{k}", (128, w), "float32") for k, w in enumerate(widths)]
    for k, t in enumerate(tiles):
        kb.dma_copy(t, x[:, starts[k]:starts[k] + widths[k]])
    last = {k: n for n, k in enumerate(uses)}
    for n, k in enumerate(uses):
        kb.tensor_scalar(tiles[k], tiles[k], op0="multiply", operand0=2.0)
        if last[k] == n:
            kb.dma_copy(y[:, starts[k]:starts[k] + widths[k]], tiles[k], engine="act", queue="dma1")
    factor = np.concatenate([np.full(w, 2.0 ** uses.count(k), np.float32) for k, w in enumerate(widths)])
    return kb.program(), total, factor


@pytest.mark.parametrize("seed", range(4))
def test_random_orders_of_use_spill_race_free_with_numpy_outputs(seed):
    program, total, factor = _random_uses(seed)
    out, stats = _compiled(program)
    assert stats["spills"] >= 1 and check_program(out).races == ()
    x = np.random.default_rng(seed).random((128, total), dtype=np.float32)
    np.testing.assert_array_equal(_outputs(out, x)["y"], x * factor)



def test_a_rematerialised_reload_is_the_kernels_load_again_and_dma_place_deals_it():
    """Such a reload keeps the load's engine, queue and extras (its kernel line), unlike a
    stored value's reload, which stays on the allocator's queue; ``dma-place`` moves the
    first kind only."""
    from neuronsim.passes.dma_place import movable

    program = _scale_into(8)
    first_load = next(i for i, _ in program.instructions() if i.reads and i.reads[0].tensor == "x")
    out, _stats = _compiled(program)
    reloads = [i for i, _ in out.instructions() if "x-spill" in i.extras]
    assert reloads and all(i.extras["x-spill"].get("rematerialised") for i in reloads)
    assert {(i.engine, i.queue) for i in reloads} == {(first_load.engine, first_load.queue)}
    assert all(movable(i) for i in reloads)
    stored, _ = _compiled(_scale_all(8))  # tiles written in place: stored and reloaded
    spills = [i for i, _ in stored.instructions() if "x-spill" in i.extras]
    assert spills and not any(movable(i) or i.extras["x-spill"].get("rematerialised") for i in spills)


def test_dma_place_leaves_the_spill_queue_to_the_spills():
    """Profiles show the compiler's spills on a queue of their own beside the kernel's input
    loads (``qSyncSpillReload0`` beside ``qSyncIO0``): ``dma-place`` deals the kernel's
    transfers over the other queues, so none waits in that queue's order behind a spill."""
    ctx = PassContext()
    out = run_pipeline(_scale_all(8), "alloc,dma-place", ctx)
    spills = [i for i, _ in out.instructions() if "x-spill" in i.extras]
    kernels = [i for i, _ in out.instructions() if i.is_dma and "x-spill" not in i.extras]
    spill_queues = {i.queue for i in spills}
    assert spills and len(spill_queues) == 1
    assert {i.queue for i in kernels} == {"dma0", "dma1"} and not spill_queues & {i.queue for i in kernels}
    assert ctx.stats["dma-place"]["moved"] > 0
