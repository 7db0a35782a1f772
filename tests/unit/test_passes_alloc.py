"""Allocation: liveness, rotation, placement rules; storage shared only by dead tensors."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.model.geometry import footprint, overlap
from neuronsim.machine.ir.program import Access, MemoryKind, Rotation, Tensor, frozen_mapping
from neuronsim.machine.order.unroll import unroll
from neuronsim.machine.formats.validate import validate_program
from neuronsim.passes.alloc import rotate_slots, storage_use
from neuronsim_tests.passes_kit import compiled, dr, ins, loop, prog, ps, sb
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.strategies import programs


def V(name, parts=128, free=64):
    return sb(name, parts, free, partition=None, offset=None)


def _tiles(n, memory="sbuf"):
    """n tiles, each written then read once, one after the other."""
    make = V if memory == "sbuf" else (lambda name: ps(name, bank=None))
    tensors = [make(f"t{k}") for k in range(n)] + [sb("out", offset=0), sb("src", offset=256)]
    body = []
    for k in range(n):
        if memory == "sbuf":
            body.append(ins(f"w{k}", "dve", "tensor_copy", reads=["src"], writes=[f"t{k}"]))
        else:
            body.append(ins(f"w{k}", "pe", "matmul", reads=["src", "src"], writes=[f"t{k}"]))
        body.append(ins(f"r{k}", "act", "activation", reads=[f"t{k}"], writes=["out"]))
    return prog(tensors, *body)


def test_rotation_reuses_every_nth_buffer():
    out, _ = compiled(_tiles(5), "alloc")
    offsets = [out.tensors[f"t{k}"].offset for k in range(5)]
    assert offsets[0] == offsets[2] == offsets[4] != offsets[1] == offsets[3]
    assert all(not out.tensors[f"t{k}"].is_virtual for k in range(5))
    three, _ = compiled(_tiles(5), "alloc{buffers=3}")
    assert len({three.tensors[f"t{k}"].offset for k in range(5)}) == 3
    # placed tensors stay, and virtual ones go above them
    assert out.tensors["out"] == _tiles(5).tensors["out"] and min(offsets) >= 512


def test_psum_banks_rotate():
    out, _ = compiled(_tiles(10, "psum"), "alloc")
    assert [out.tensors[f"t{k}"].bank for k in range(10)] == [0, 1, 2, 3, 4, 5, 6, 7, 0, 1]
    two, _ = compiled(_tiles(4, "psum"), "alloc{psum_banks=2}")
    assert [two.tensors[f"t{k}"].bank for k in range(4)] == [0, 1, 0, 1]


def test_live_tensors_never_share_psum_bytes():
    # nine PSUM tiles all live at once: one bank must hold two of them, side by side
    tensors = [ps(f"t{k}", bank=None, free=128) for k in range(9)] + [sb("src")]
    body = [ins(f"w{k}", "pe", "matmul", reads=["src", "src"], writes=[f"t{k}"]) for k in range(9)]
    body += [ins(f"r{k}", "act", "activation", reads=[f"t{k}"], writes=["src"]) for k in range(9)]
    out, _ = compiled(prog(tensors, *body), "alloc")
    places = {(out.tensors[f"t{k}"].bank, out.tensors[f"t{k}"].offset) for k in range(9)}
    assert len(places) == 9


def test_partition_base_follows_the_partition_start_rule():
    # a 32-partition tensor accessed at relative partition 0 may sit on any quadrant; packing
    # puts the second one next to the first rather than above it
    tensors = [V("a", 32), V("b", 32), sb("s")]
    body = [ins("wa", "dve", "tensor_copy", reads=[Access("s", partitions=(0, 32, 1))], writes=["a"]),
            ins("wb", "dve", "tensor_copy", reads=[Access("s", partitions=(0, 32, 1))], writes=["b"]),
            ins("r", "act", "tensor_tensor_like", reads=["a", "b"], writes=["s"])]
    out, _ = compiled(prog(tensors, *body), "alloc")
    a, b = out.tensors["a"], out.tensors["b"]
    assert (a.partition, b.partition) == (0, 32) and a.offset == b.offset
    validate_program(out)


def test_tiles_of_one_shape_whose_accesses_allow_different_bases_take_different_slots():
    # a: whole (65 partitions: base 0 only); b: partitions 32..64 (33 of them: base + 32 in {0, 64},
    # base 32).  One shape, one dtype: before, one slot class, one base for both, refused
    tensors = [V("a", 65), V("b", 65), sb("s")]
    body = [ins("wa", "dve", "memset", writes=["a"]),
            ins("wb", "dve", "memset", writes=[Access("b", partitions=(32, 33, 1))]),
            ins("r", "act", "tensor_tensor_like", reads=["a", Access("b", partitions=(32, 33, 1))], writes=["s"])]
    out, _ = compiled(prog(tensors, *body), "alloc")
    assert (out.tensors["a"].partition, out.tensors["b"].partition) == (0, 32)
    validate_program(out)


def test_a_register_load_is_not_bound_by_the_partition_start_rule():
    # nki-library's MoE block kernel loads index registers from partitions 1 to 3 of a tile
    tensors = [sb("idx", 4, 2, partition=None, offset=None), sb("s")]
    body = [ins("w", "dve", "memset", writes=["idx"]),
            ins("reg", "sp", "register_load", reads=[Access("idx", partitions=(1, 1, 1))])]
    out, _ = compiled(prog(tensors, *body), "alloc")
    validate_program(out)
    with pytest.raises(ProgramError, match="cannot start at partition 1"):  # a compute op there is refused
        validate_program(out.map_instructions(lambda i: i if i.name != "reg" else
                                              type(i)(name="reg", engine="act", op="activation", reads=i.reads,
                                                      writes=(Access("s"),))))


def test_too_much_sbuf_is_a_located_error():
    tensors = [sb(f"t{k}", 128, 48 * 1024 // 4 * 4 // 4, partition=None, offset=None) for k in range(5)] + [sb("s")]
    body = [ins(f"w{k}", "dve", "memset", writes=[f"t{k}"]) for k in range(5)]
    body += [ins(f"r{k}", "act", "activation", reads=[f"t{k}"], writes=["s"]) for k in range(5)]
    # inside one loop there is no top-level gap to spill a tile over (tests/unit/test_alloc_spill.py spills)
    with pytest.raises(ProgramError, match="tensors.t.*no tile live with it has a gap"):
        compiled(prog(tensors, loop("i", 1, *body)), "alloc")


def test_allocation_only_when_needed():
    p = prog([sb("t")], ins("w", "dve", "memset", writes=["t"]))
    out, _ = compiled(p, "alloc")
    assert out is p


def test_dram_tensors_rotate_and_inputs_keep_their_own_bytes():
    tensors = [dr("i", None, 64, role="input"), dr("a", None, 64), dr("b", None, 64), dr("c", None, 64), sb("s")]
    body = [ins("ld", "sp", "dma_copy", reads=["i"], writes=[Access("s", partitions=(0, 1, 1), pattern=((1, 64),))]),
            *[ins(f"st{n}", "sp", "dma_copy", reads=[Access("s", partitions=(0, 1, 1), pattern=((1, 64),))], writes=[n])
              for n in "abc"]]
    out, _ = compiled(prog(tensors, *body), "alloc")
    addr = {n: out.tensors[n].address for n in "iabc"}
    assert addr["a"] == addr["c"] != addr["b"] and addr["i"] not in (addr["a"], addr["b"])
    assert len({out.tensors[n].address for n in "iabc"}) == 3


def test_rotate_slots_opens_a_slot_when_all_are_live():
    assert rotate_slots([("a", 0, 10), ("b", 1, 10), ("c", 2, 10)], 2) == {"a": 0, "b": 1, "c": 2}


def _live(program):
    unrolled = unroll(program)
    live = {}
    for inst in unrolled:
        for access, _ in inst.instr.accesses:
            lo, hi = live.get(access.tensor, (inst.id, inst.id))
            live[access.tensor] = (min(lo, inst.id), max(hi, inst.id))
    return live


def _whole(tensor):
    return footprint(tensor, Access(tensor.name), {})


def _every_slot(tensor):
    """The whole tensor in each of its rotating slots (one without ``x-rotate``)."""
    if tensor.rotate is None:
        return [_whole(tensor)]
    return [footprint(tensor, Access(tensor.name), {tensor.rotate.loop: s}) for s in range(tensor.rotate.slots)]


@given(programs(deps="none", virtual=True, placed=False, max_instructions=10, max_trip=3))
def test_storage_is_shared_only_by_tensors_whose_lives_do_not_overlap(program):
    # the hull-only allocation; with rotating slots the rule is per iteration (test_alloc_rotation)
    out, _ = compiled(program, "alloc{rotate=false}")
    validate_program(out)
    assert not out.has_virtual_tensors
    live = _live(program)
    placed = [t for n, t in out.tensors.items() if program.tensors[n].is_virtual]
    for k, a in enumerate(placed):
        for b in placed[k + 1:]:
            if overlap(_whole(a), _whole(b)) and a.name in live and b.name in live:
                assert "input" not in (a.role, b.role)
                (alo, ahi), (blo, bhi) = live[a.name], live[b.name]
                assert ahi < blo or bhi < alo, (a.name, b.name)


@given(programs(deps="none", virtual=True, max_instructions=10, max_trip=3))
def test_mixed_programs_keep_placed_tensors_apart_from_new_ones(program):
    out, _ = compiled(program, "alloc")
    fixed = [t for t in program.tensors.values() if not t.is_virtual and t.alias is None]
    new = [t for n, t in out.tensors.items() if program.tensors[n].is_virtual]
    for t in fixed:
        assert out.tensors[t.name] == t
        for n in new:
            assert all(overlap(a, b) is None for a in _every_slot(t) for b in _every_slot(n))


def test_alloc_shared_dram_places_each_group_apart():
    tensors = [dr("a", None, 64, alias="g"), dr("b", None, 64, alias="g"), dr("c", None, 64, alias="h"), sb("s")]
    body = [ins(f"w{n}", "sp", "dma_copy", reads=[Access("s", partitions=(0, 1, 1), pattern=((1, 64),))], writes=[n])
            for n in "abc"]
    out, ctx = compiled(prog(tensors, *body), "alloc-shared-dram")
    assert {n: out.tensors[n].extras["x-shared"] for n in "abc"} == {"a": "g", "b": "g", "c": "h"}
    assert all(out.tensors[n].alias is None for n in "abc")
    assert all(overlap(_whole(out.tensors["c"]), _whole(out.tensors[n])) is None for n in "ab")
    assert ctx.stats["alloc-shared-dram"]["placed"] == 3
    assert check_program(compiled(prog(tensors, *body), "build-fdeps,anti-deps,alloc-shared-dram")[0]).races == ()


@st.composite
def _placed_tensors(draw):
    """A few placed SBUF / PSUM / DRAM tensors, some rotating, overlapping at will."""
    out = []
    for k in range(draw(st.integers(0, 8))):
        memory = draw(st.sampled_from([MemoryKind.SBUF, MemoryKind.PSUM, MemoryKind.DRAM]))
        free = draw(st.integers(1, 16))
        rotate = draw(st.one_of(st.none(), st.builds(Rotation, st.just("i"), st.integers(1, 3), st.integers(0, 48))))
        if memory == MemoryKind.DRAM:
            where = dict(address=draw(st.integers(0, 64)))
            shape = (free,)
        else:
            parts = draw(st.sampled_from([2, 4]))  # few partition ranges: many spans on one row
            where = dict(partition=draw(st.sampled_from([0, 2])), offset=draw(st.integers(0, 64)))
            if memory == MemoryKind.PSUM:
                where["bank"] = draw(st.integers(0, 1))
            shape = (parts, free)
        out.append(Tensor(f"t{k}", memory, "float32", shape, rotate=rotate, **where))
    return out


@given(_placed_tensors())
def test_storage_use_counts_every_slot_alone_and_their_union_once(tensors):
    cells, alone = set(), 0
    for t in tensors:  # brute force: every (memory, partition, byte) of every slot
        parts = range(1) if t.memory == MemoryKind.DRAM else range(t.partition, t.partition + t.shape[0])
        for s in range(t.rotate.slots if t.rotate else 1):
            lo = t.byte_base + s * (t.rotate.stride if t.rotate else 0)
            mine = {(t.memory, p, b) for p in parts for b in range(lo, lo + t.bytes_per_partition)}
            alone += len(mine)
            cells |= mine
    assert storage_use(tensors) == (alone, len(cells))


def _load_compute_store(n, free=64):
    """n steps of: load x_k, compute y_k from x_k, store y_k (x and y one shape: one class)."""
    tensors = [V(f"x{k}", 128, free) for k in range(n)] + [V(f"y{k}", 128, free) for k in range(n)]
    tensors += [dr("a", 0, 128 * free), dr("b", 128 * free * 4, 128 * free)]
    body = []
    for k in range(n):
        body.append(ins(f"ld{k}", "sp", "dma_copy", reads=["a"], writes=[f"x{k}"], queue="dma0"))
        body.append(ins(f"op{k}", "dve", "tensor_copy", reads=[f"x{k}"], writes=[f"y{k}"]))
        body.append(ins(f"st{k}", "sp", "dma_copy", reads=[f"y{k}"], writes=["b"], queue="dma1"))
    return prog(tensors, *body)


def test_two_tile_families_of_one_shape_each_rotate_through_their_own_buffers():
    # x_k and y_k are live together at op k: with two slots for the class, x would take one
    # and y the other at every step, the load of x_{k+1} then waiting for op k (one buffer)
    out, _ = compiled(_load_compute_store(6), "alloc")
    x = [out.tensors[f"x{k}"].offset for k in range(6)]
    y = [out.tensors[f"y{k}"].offset for k in range(6)]
    assert x[0] != x[1] and y[0] != y[1]  # consecutive tiles of one family: different bytes
    assert len(set(x) | set(y)) == 4  # two buffers for each of the two families live at once
    deps, _ = compiled(_load_compute_store(6), "alloc,build-fdeps,remove-redundancies,anti-deps")
    assert not any(d.on == "op0" for d in next(i for i, _ in deps.instructions() if i.name == "ld1").deps)


def test_families_share_the_class_slots_when_their_own_buffers_do_not_fit():
    # 48 KiB tiles: four slots exceed SBUF's usable bytes, two fit
    out, ctx = compiled(_load_compute_store(4, 12 * 1024), "alloc")
    assert len({out.tensors[f"{f}{k}"].offset for f in "xy" for k in range(4)}) == 2
    assert ctx.stats["alloc"].get("spilled", 0) == 0


def _transpose_steps(n, declared):
    """n steps of: load s_k, copy it out, copy into d_k, store d_k; s_k and d_k never live at once.
    ``declared``: the tiles carry their kernel declaration lines (``x-source``), as traced
    tiles do: every s_k one line, every d_k another."""
    def tile(name, line):
        t = V(name)
        if not declared:
            return t
        return replace(t, extras=frozen_mapping({"x-source": {"file": "k.py", "line": line, "variable": name[0]}}))

    tensors = [tile(f"s{k}", 3) for k in range(n)] + [tile(f"d{k}", 5) for k in range(n)]
    tensors += [dr("a", 0, 128 * 64), dr("b", 128 * 64 * 4, 128 * 64), sb("mid")]
    body = []
    for k in range(n):
        body.append(ins(f"ld{k}", "sp", "dma_copy", reads=["a"], writes=[f"s{k}"], queue="dma0"))
        body.append(ins(f"cp{k}", "act", "activation", reads=[f"s{k}"], writes=["mid"]))
        body.append(ins(f"fill{k}", "dve", "tensor_copy", reads=["mid"], writes=[f"d{k}"]))
        body.append(ins(f"st{k}", "sp", "dma_copy", reads=[f"d{k}"], writes=["b"], queue="dma1"))
    return prog(tensors, *body)


def test_each_declared_tile_family_rotates_through_its_own_buffers():
    # s_k dies where d_k is born: one tile live at a time, yet two declarations; with two slots
    # in all, every s_k would take one and every d_k the other (single-buffered each)
    out, _ = compiled(_transpose_steps(6, declared=True), "alloc")
    s = [out.tensors[f"s{k}"].offset for k in range(6)]
    d = [out.tensors[f"d{k}"].offset for k in range(6)]
    assert s[0] != s[1] and d[0] != d[1]
    assert len(set(s) | set(d)) == 4
    # a program built without declarations: families unknown, two slots in all
    plain, _ = compiled(_transpose_steps(6, declared=False), "alloc")
    assert len({plain.tensors[f"{f}{k}"].offset for f in "sd" for k in range(6)}) == 2
