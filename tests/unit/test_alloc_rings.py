"""Multi-buffered allocation on hand-written loop kernels: which tiles rotate, where they go."""

from __future__ import annotations

import pytest

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import Access, MemoryKind, Rotation, Tensor
from neuronsim.machine.formats.validate import validate_program
from neuronsim.passes import DEFAULT_PIPELINE, parse_pipeline
from neuronsim.verify.racecheck import check_program
from neuronsim.testing.alloc_oracles import holding_clashes, stale_reads
from neuronsim_tests.passes_kit import compiled, ins, loop, prog
from neuronsim_tests.alloc_rings_kit import TILE, V, _pipeline, dram, tile  # noqa: F401











def _checked(program, spec="alloc"):
    out, ctx = compiled(program, spec)
    validate_program(out)
    assert holding_clashes(program, out) == [] and stale_reads(program, out) == []
    return out, ctx


def test_loop_body_tiles_get_two_rotating_slots():
    out, ctx = _checked(_pipeline())
    a, b = out.tensors["a"], out.tensors["b"]
    assert a.rotate == b.rotate == Rotation("i", 2, 64)  # [128, 16] float32: 64 bytes a partition
    assert (a.partition, a.offset) != (b.partition, b.offset)  # a is still read when b is written
    assert ctx.stats["alloc"]["rotated"] == 2 and ctx.stats["alloc"]["slots"] == 4
    # inputs and outputs never rotate
    assert out.tensors["x"].rotate is None and out.tensors["y"].rotate is None


def test_rotate_false_keeps_one_placement():
    out, ctx = _checked(_pipeline(), "alloc{rotate=false}")
    assert all(t.rotate is None for t in out.tensors.values())
    assert ctx.stats["alloc"]["rotated"] == 0


def test_slots_follow_buffers_up_to_the_trip_count():
    assert _checked(_pipeline(4), "alloc{buffers=3}")[0].tensors["a"].rotate.slots == 3
    assert _checked(_pipeline(2), "alloc{buffers=3}")[0].tensors["a"].rotate.slots == 2
    assert _checked(_pipeline(1))[0].tensors["a"].rotate is None  # one iteration: nothing to rotate
    assert _checked(_pipeline(4), "alloc{buffers=1}")[0].tensors["a"].rotate is None


def test_an_accumulator_keeps_one_placement():
    # acc = 0 before the loop, acc += b in it, stored after it: every iteration reads the last one's value
    acc = V("acc")
    program = _pipeline(4, acc, dram("total", "output", 1),
                        body_tail=[ins("add", "dve", "tensor_tensor", reads=["acc", "b"], writes=["acc"], op="add")])
    init = ins("init", "pool", "memset", writes=["acc"], value=0.0)
    store = ins("st_acc", "sp", "dma_copy", reads=["acc"], writes=[Access("total", offset=0, pattern=((1, TILE),))])
    program = prog(program.tensors.values(), init, *program.body, store)
    out, _ = _checked(program)
    assert out.tensors["acc"].rotate is None and out.tensors["a"].rotate is not None


def test_read_before_written_in_an_iteration_is_a_value_crossing_iterations():
    # the running value lives only inside the loop, but each iteration reads the previous one's
    program = _pipeline(4, V("run"), body_tail=[
        ins("use", "dve", "tensor_tensor", reads=["run", "b"], writes=["b"], op="max"),
        ins("keep", "dve", "tensor_copy", reads=["b"], writes=["run"])])
    out, _ = _checked(program)
    assert out.tensors["run"].rotate is None


def test_an_accumulator_of_an_inner_loop_rotates_over_the_outer_one():
    tensors = [dram("x", "input", 6), dram("y", "output", 2), V("a"), V("acc")]
    body = loop("i", 2,
                ins("init", "pool", "memset", writes=["acc"], value=0.0),
                loop("k", 3,
                     ins("ld", "sp", "dma_copy", reads=[tile("x", ("i", "k"))], writes=["a"]),
                     ins("add", "dve", "tensor_tensor", reads=["acc", "a"], writes=["acc"], op="add")),
                ins("st", "sp", "dma_copy", reads=["acc"], writes=[tile("y")]))
    out, _ = _checked(prog(tensors, body))
    assert out.tensors["acc"].rotate == Rotation("i", 2, 64)
    assert out.tensors["a"].rotate == Rotation("k", 2, 64)  # the innermost loop it is private over


@pytest.mark.parametrize("halves", [
    [dict(partitions=(0, 64, 1)), dict(partitions=(64, 64, 1))],
    [dict(offset=0, pattern=((1, 8),)), dict(offset=8, pattern=((1, 8),))],
], ids=["partitions", "free"])
def test_a_tile_written_in_two_halves_is_private(halves):
    writes = [ins(f"h{k}", "dve", "tensor_copy", reads=["a"], writes=[Access("c", **half)])
              for k, half in enumerate(halves)]
    program = _pipeline(4, V("c"), body_tail=[*writes, ins("r", "act", "activation", reads=["c"], writes=["b"])])
    assert _checked(program)[0].tensors["c"].rotate is not None
    # one half only: the other half is the previous iteration's
    program = _pipeline(4, V("c"), body_tail=[writes[0], ins("r", "act", "activation", reads=["c"], writes=["b"])])
    assert _checked(program)[0].tensors["c"].rotate is None


def test_tiles_of_one_body_share_a_lane_when_one_dies_before_the_other_is_born():
    # softmax-like: a is dead once b is written; c (written after) may take a's slots
    program = _pipeline(4, V("c"), body_tail=[ins("sq", "act", "activation", reads=["b"], writes=["c"], func="square"),
                                               ins("st2", "sp", "dma_copy", reads=["c"], writes=[tile("x")])])
    out, ctx = _checked(program)
    a, c = out.tensors["a"], out.tensors["c"]
    assert (a.partition, a.offset, a.rotate) == (c.partition, c.offset, c.rotate)
    assert ctx.stats["alloc"]["bytes-saved"] == 2 * 128 * 64  # c's two slots


def test_rings_of_loops_in_sequence_rotate_through_shared_storage():
    # like tiles in sequence, the rings of loops in sequence take buffers (2) places in turn
    tensors = [dram("x", "input", 4), dram("y", "output", 4), V("a"), V("b"), V("c")]
    loops = [loop(f"L{k}", 4, ins(f"ld{k}", "sp", "dma_copy", reads=[tile("x", (f"L{k}",))], writes=[name]),
                  ins(f"st{k}", "sp", "dma_copy", reads=[name], writes=[tile("y", (f"L{k}",))]))
             for k, name in enumerate("abc")]
    out, ctx = _checked(prog(tensors, *loops))
    a, b, c = (out.tensors[n] for n in "abc")
    assert [t.rotate.loop for t in (a, b, c)] == ["L0", "L1", "L2"]
    assert (a.partition, a.offset) == (c.partition, c.offset) != (b.partition, b.offset)
    assert ctx.stats["alloc"]["bytes-saved"] == 2 * 128 * 64


def test_psum_tiles_rotate_over_banks():
    tensors = [dram("x", "input"), dram("y", "output"), V("a"), V("b"), V("p", memory=MemoryKind.PSUM)]
    body = loop("i", 4, ins("ld", "sp", "dma_copy", reads=[tile("x")], writes=["a"]),
                ins("mm", "pe", "matmul", reads=["a", "a"], writes=["p"], accumulate=False),
                ins("ev", "dve", "tensor_copy", reads=["p"], writes=["b"]),
                ins("st", "sp", "dma_copy", reads=["b"], writes=[tile("y")]))
    program = prog(tensors, body)
    out, _ = _checked(program)
    assert out.tensors["p"].rotate == Rotation("i", 2, 2048) and out.tensors["p"].bank == 0
    assert _checked(program, "alloc{psum_buffers=4}")[0].tensors["p"].rotate.slots == 4
    assert _checked(program, "alloc{psum_banks=1}")[0].tensors["p"].rotate is None  # one bank: no ring


def _inner_psum_loops(count: int, trip: int = 2):
    """A kept loop ``a`` whose body runs ``count`` inner loops in turn, each with a full-bank
    PSUM tile of its own (written by a matmul, read by a copy) and an SBUF tile: the shape of
    a kernel whose outer loop NKI keeps and whose inner loops it unrolls into copies."""
    tensors = [dram("x", "input", count * trip), dram("y", "output", count * trip), V("s")]
    inner = []
    for k in range(count):
        tensors += [V(f"b{k}"), V(f"p{k}", free=512, memory=MemoryKind.PSUM)]
        inner.append(loop(f"i{k}", trip,
                          ins(f"mm{k}", "pe", "matmul", reads=["s", "s"], writes=[f"p{k}"], accumulate=False),
                          ins(f"ev{k}", "dve", "tensor_copy", reads=[f"p{k}"], writes=[f"b{k}"]),
                          ins(f"st{k}", "sp", "dma_copy", reads=[f"b{k}"], writes=[tile("y", (f"i{k}",))])))
    load = ins("ld", "sp", "dma_copy", reads=[tile("x", ("a",))], writes=["s"])
    return prog(tensors, loop("a", 3, load, *inner))


def test_psum_tiles_of_inner_loops_in_turn_share_banks_across_the_outer_loop():
    # Nine full-bank tiles, each live across the whole of the outer loop (their hulls overlap)
    # but private to its own stretch of every iteration of it: they share the eight banks.
    program = _inner_psum_loops(9)
    out, ctx = _checked(program)
    banks = [out.tensors[f"p{k}"].bank for k in range(9)]
    assert len(set(banks)) < 9 and ctx.stats["alloc"].get("psum-spills", 0) == 0
    full, _ = compiled(program, DEFAULT_PIPELINE)
    assert check_program(full).races == ()


def test_the_stretches_of_a_loop_body_share_psum_only_when_the_banks_run_out():
    # after three inner loops' rings (banks 0-5) a fourth loop holds two rings, q then r: r may
    # share q's banks (one loop, disjoint ranges) or, by the body's rule, the first stretch's
    # banks 0-1; the first keeps the stretches apart, so one can overlap the next
    program = _inner_psum_loops(3)
    tensors = dict(program.tensors) | {n: V(n, free=512, memory=MemoryKind.PSUM) for n in ("q", "r")}
    tensors |= {n: V(n) for n in ("bq", "br")}
    pair = loop("j", 2, ins("mq", "pe", "matmul", reads=["s", "s"], writes=["q"], accumulate=False),
                ins("eq", "dve", "tensor_copy", reads=["q"], writes=["bq"]),
                ins("mr", "pe", "matmul", reads=["bq", "bq"], writes=["r"], accumulate=False),
                ins("er", "dve", "tensor_copy", reads=["r"], writes=["br"]),
                ins("sr", "sp", "dma_copy", reads=["br"], writes=[tile("y", ("j",))]))
    outer = program.body[0]
    program = prog(list(tensors.values()), loop("a", outer.trip_count, *outer.body, pair))
    out, _ = _checked(program)
    assert out.tensors["r"].bank == out.tensors["q"].bank


def test_dram_scratch_rotates():
    tensors = [dram("x", "input"), dram("y", "output"), V("a"), V("b"), dram("spill", "internal", 1)]
    body = loop("i", 4, ins("ld", "sp", "dma_copy", reads=[tile("x")], writes=["a"]),
                ins("out", "sp", "dma_copy", reads=["a"], writes=["spill"]),
                ins("in", "act", "dma_copy", reads=["spill"], writes=["b"], queue="dma1"),
                ins("st", "sp", "dma_copy", reads=["b"], writes=[tile("y")]))
    out, _ = _checked(prog(tensors, body))
    assert out.tensors["spill"].rotate == Rotation("i", 2, TILE * 4)


def test_placed_rotating_tensors_keep_all_their_slots():
    held = Tensor("held", MemoryKind.SBUF, "float32", (128, 16), partition=0, offset=0, rotate=Rotation("i", 2, 256))
    program = _pipeline(4, held, body_tail=[ins("w", "pool", "memset", writes=["held"], value=1.0)])
    out, _ = _checked(program)
    assert out.tensors["held"] == held and min(out.tensors[n].offset for n in "ab") >= 256 + 64  # slot 1 ends at 320


def test_rings_that_do_not_fit_fall_back_to_one_placement():
    # 80 KiB tiles: one slot each fits in an SBUF partition (192 KiB), two do not
    tensors = [dram("x", "input", 4), dram("y", "output", 4), V("a", free=20480), V("b", free=20480)]
    body = loop("i", 4, ins("ld", "sp", "dma_gather", reads=[Access("x", offset=0, pattern=((1, 64),))], writes=["a"]),
                ins("cp", "dve", "tensor_copy", reads=["a"], writes=["b"]),
                ins("st", "sp", "dma_gather", reads=["b"], writes=[Access("y", offset=0, pattern=((1, 64),))]))
    out, ctx = compiled(prog(tensors, body), "alloc")  # (too big for the byte-level oracles)
    assert out.tensors["a"].rotate is None and ctx.stats["alloc"]["fallbacks"] == 1


def test_when_rings_overflow_only_the_cheapest_group_loses_its_ring():
    # a: 40 KiB, b: 60 KiB a partition, each a ring of 2 over i: 80 + 120 KiB overflow the
    # 192 KiB of a partition; making a plain (40 KiB lost to rotation) fits, and is cheaper
    # than making b plain (60 KiB): b keeps its double buffer.
    tensors = [dram("x", "input", 4), dram("y", "output", 4), V("a", free=10240), V("b", free=15360)]
    body = loop("i", 4, ins("ld", "sp", "dma_gather", reads=[Access("x", offset=0, pattern=((1, 64),))], writes=["a"]),
                ins("cp", "dve", "tensor_copy", reads=["a"], writes=["b"]),
                ins("st", "sp", "dma_gather", reads=["b"], writes=[Access("y", offset=0, pattern=((1, 64),))]))
    program = prog(tensors, body)
    out, ctx = compiled(program, "alloc")
    validate_program(out)
    assert out.tensors["a"].rotate is None and out.tensors["b"].rotate == Rotation("i", 2, 15360 * 4)
    assert ctx.stats["alloc"]["fallbacks"] == 1
    full, _ = compiled(program, DEFAULT_PIPELINE)
    assert check_program(full).races == ()


def test_psum_buffers_is_validated():
    with pytest.raises(ProgramError, match="--passes.alloc"):
        parse_pipeline("alloc{psum_buffers=0}")
    assert parse_pipeline("alloc{rotate=false,psum_buffers=4}")[0].spec_string() == "alloc{rotate=false,psum_buffers=4}"


def test_counters_are_printed_by_compile_and_footprint(tmp_path):
    from click.testing import CliRunner

    from neuronsim.machine.formats.program_json import save_program
    from neuronsim.verify.cli import cli

    path = tmp_path / "kernel.json"
    save_program(_pipeline(), str(path))
    runner = CliRunner()
    done = runner.invoke(cli, ["compile", str(path), "-o", str(tmp_path / "out.json"), "--passes", "alloc"])
    assert done.exit_code == 0 and "rotated=2, slots=4," in done.output and "bytes-saved=0" in done.output
    done = runner.invoke(cli, ["footprint", str(path), "--no-simulate", "--passes", "alloc,build-fdeps,anti-deps"])
    assert done.exit_code == 0, done.output
    assert "alloc: 4 tensors placed, 2 multi-buffered (4 rotating slots)" in done.output
