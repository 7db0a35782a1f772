"""The NKI-like builder of ``scenarios/``: views against numpy slicing, ops against the op table.

Oracle for views: the elements an emitted :class:`~neuronsim.machine.ir.program.Access` enumerates (offset,
``per_iteration`` shift and pattern, row-major, as the simulator reads them) are exactly
numpy's ``arange(...).reshape(shape)[key]`` in the same order, for every loop index.
"""

from __future__ import annotations

from itertools import product
from math import prod

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.model.geometry import access_extent
from neuronsim.machine.ir.program import Access, Dep, Loop, MemoryKind, Rotation
from neuronsim.machine.build.builder import DRAM_ALIGN, Index, KernelBuilder


def elements(tensor, access: Access, iteration: dict[str, int]) -> list[int]:
    """Flat free-element indices of ``access`` at ``iteration``, in row-major pattern order."""
    offset, pattern = access_extent(tensor, access)
    offset += sum(shift * iteration[loop] for loop, shift in access.per_iteration)
    strides = [s for s, _ in pattern]
    return [offset + sum(i * s for i, s in zip(idx, strides)) for idx in product(*(range(c) for _, c in pattern))]


@st.composite
def sliced_tensor(draw):
    """A DRAM shape, a key (ints and slices, bounds possibly moving with loop ``k``) and trip."""
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=1, max_size=3)))
    trip = draw(st.integers(1, 3))
    key = []
    for size in shape:
        kind = draw(st.sampled_from(["full", "int", "slice", "moving"]))
        if kind == "full":
            key.append(("slice", 0, 0, size, 1))
        elif kind == "int":
            key.append(("int", draw(st.integers(0, size - 1))))
        else:
            step = draw(st.integers(1, 3))
            count = draw(st.integers(1, max(1, (size - 1) // step + 1)))
            span = (count - 1) * step + 1
            move = draw(st.integers(0, (size - span) // max(trip - 1, 1))) if kind == "moving" and trip > 1 else 0
            start = draw(st.integers(0, size - span - move * (trip - 1)))
            key.append(("slice", start, move, start + span, step))
    return shape, key, trip


def _build_key(key, k):
    out = []
    for item in key:
        if item[0] == "int":
            out.append(item[1])
        else:
            _, start, move, stop, step = item
            out.append(slice(start + move * k, stop + move * k, step))
    return tuple(out)


@given(sliced_tensor())
def test_views_enumerate_what_numpy_slices(case):
    shape, key, trip = case
    kb = KernelBuilder("t")
    x = kb.dram_input("x", shape, "float32")
    with kb.loop("k", trip) as k:
        view = x[_build_key(key, k)]
    access = view.access()
    flat = np.arange(prod(shape)).reshape(shape)
    for i in range(trip):
        want = flat[_build_key(key, i)].ravel().tolist()
        assert elements(x.tensor, access, {"k": i}) == want
        assert view.count == len(want)


def test_onchip_views_partitions_steps_and_merging():
    kb = KernelBuilder("t")
    t = kb.sbuf("t", (128, 4, 64), "bfloat16")
    assert t[:, :, :].access() == Access("t")  # whole tensor: every default
    assert t[0:64:2].access() == Access("t", (0, 32, 2))  # partitions stepped, free dims whole
    a = t[32:64, 1, 0:64:2].access()
    assert (a.partitions, a.offset, a.pattern) == ((32, 32, 1), 64, ((2, 32),))
    b = t[:, 1:3, :].access()  # two contiguous rows merge into one run
    assert (b.partitions, b.offset, b.pattern) == (None, 64, ((1, 128),))
    assert t[5].shape == (1, 4, 64) and t[:, 2, 3].shape == (128, 1)  # a [P, 1] column


def test_loop_expressions_become_per_iteration_on_each_loop():
    kb = KernelBuilder("t")
    x = kb.dram_input("x", (8, 128, 256), "float32")
    with kb.loop("m", 2) as m, kb.loop("k", 4) as k:
        view = x[k * 2 + 1, :, m * 128:(m + 1) * 128]
        assert x.tile(m, 128, dim=2).access().per_iteration == (("m", 128),)
    access = view.access()
    assert access.offset == 128 * 256
    assert dict(access.per_iteration) == {"k": 2 * 128 * 256, "m": 128}
    assert access.pattern == ((256, 128), (1, 128))
    assert (3 - Index(0, (("k", 1),)) * 2) == Index(3, (("k", -2),))
    with pytest.raises(TypeError, match="affine"):
        Index(0, (("k", 1),)) * Index(0, (("m", 1),))


def test_index_errors_are_early_and_named():
    kb = KernelBuilder("t")
    t = kb.sbuf("t", (128, 64), "float32")
    with kb.loop("i", 2) as i:
        with pytest.raises(ValueError, match="t: the partition index is constant"):
            t[i * 64:(i + 1) * 64, :]
        with pytest.raises(ValueError, match="constant length"):
            t[:, 0:i * 8 + 8]
    with pytest.raises(IndexError, match="outside"):
        t[:, 60:70]
    with pytest.raises(IndexError, match="3 indices"):
        t[0, 0, 0]


def test_ops_follow_the_op_table():
    kb = KernelBuilder("t")
    st_, mv = kb.sbuf("st", (64, 128), "bfloat16"), kb.sbuf("mv", (64, 512), "bfloat16")
    ps, col = kb.psum("ps", (128, 512)), kb.sbuf("col", (128, 1), "float32")
    out = kb.sbuf("out", (128, 512), "float32")
    assert kb.matmul(ps, st_, mv) == "matmul0"
    assert kb.matmul(ps, st_, mv, accumulate=True) == "matmul1"
    kb.activation(out, ps, func="exp", bias=col, name="act")
    kb.activation(out, out, func="rsqrt", scale=0.5, bias=1e-6, name="act2")
    kb.tensor_scalar(out, out, op0="divide", operand0=col, name="ts")
    kb.tensor_reduce(col, out, op="max", negate=True, name="red")
    kb.dma_copy(kb.sbuf("cp", (128, 512), "float32"), out, engine="pool", queue="dma2", dge="swdge", name="dma")
    program = kb.program()
    insts = program.instruction_map()
    first, second = insts["matmul0"], insts["matmul1"]
    assert [a.tensor for a in first.reads] == ["st", "mv"] and dict(first.attrs) == {"accumulate": False}
    assert [a.tensor for a in second.reads] == ["st", "mv", "ps"] and [a.tensor for a in second.writes] == ["ps"]
    assert [a.tensor for a in insts["act"].reads] == ["ps", "col"]
    assert dict(insts["act"].attrs) == {"func": "exp", "bias": {"read": 1}}
    assert dict(insts["act2"].attrs) == {"func": "rsqrt", "scale": 0.5, "bias": 1e-6}
    assert [a.tensor for a in insts["ts"].reads] == ["out", "col"]
    assert dict(insts["ts"].attrs) == {"op0": "divide", "operand0": {"read": 1}}
    assert dict(insts["red"].attrs) == {"op": "max", "negate": True}
    assert (insts["dma"].queue, dict(insts["dma"].attrs)) == ("dma2", {"dge": "swdge"})


@pytest.mark.parametrize("bad", [
    lambda kb, a, b, ps: kb.matmul(ps, a, b),  # K differs: a has 128 partitions, b 64
    lambda kb, a, b, ps: kb.tensor_tensor(a, a, b),
    lambda kb, a, b, ps: kb.transpose(ps, a),
    lambda kb, a, b, ps: kb.dma_copy(a, b),
    lambda kb, a, b, ps: kb.activation(a, a, bias=b),
    lambda kb, a, b, ps: kb.tensor_reduce(b, a),
])
def test_operand_shapes_are_checked(bad):
    kb = KernelBuilder("t")
    a, b = kb.sbuf("a", (128, 64), "float32"), kb.sbuf("b", (64, 32), "float32")
    with pytest.raises(ValueError, match=r"\(|disagree|transpose"):
        bad(kb, a, b, kb.psum("ps", (128, 128)))


def test_names_deps_tensors_and_validation():
    kb = KernelBuilder("t")
    x = kb.dram_input("x", (3, 5), "bfloat16")
    y = kb.dram_output("y", (3, 5), "bfloat16")
    z = kb.dram("z", (10,), "float32", alias="G")
    assert (x.tensor.address, y.tensor.address, z.tensor.alias) == (0, DRAM_ALIGN, "G")
    s = kb.sbuf("s", (3, 5), "bfloat16", partition=32, offset=128)
    assert (s.tensor.partition, s.tensor.offset, s.tensor.memory) == (32, 128, MemoryKind.SBUF)
    assert kb.psum("p", (2, 4), partition=0, bank=3).tensor.offset == 0
    with pytest.raises(ValueError, match="both partition= and offset="):
        kb.sbuf("half", (1, 1), "float32", partition=0)
    with pytest.raises(ValueError, match="declared twice"):
        kb.sbuf("s", (1, 1), "float32")
    load = kb.dma_copy(s, x)
    with kb.loop("i", 2):
        kb.dma_copy(y, s, engine="act", name="store", deps=[load, ("store", "anti", True)])
    with pytest.raises(ValueError, match="'store' used twice"):
        kb.memset(s, name="store")
    with pytest.raises(ValueError, match="'i' used twice"):
        kb.memset(s, name="i")
    program = kb.program()
    assert isinstance(program.body[1], Loop) and load == "dma_copy0"
    store = program.instruction_map()["store"]
    assert store.deps == (Dep("dma_copy0"), Dep("store", EdgeKind.ANTI, True))
    open_kb = KernelBuilder("open")
    with pytest.raises(ValueError, match="still open"), open_kb.loop("j", 2):
        open_kb.program()
    bad = KernelBuilder("bad")
    ps = bad.psum("ps", (128, 4))
    bad.memset(ps, engine="pool")  # POOL never touches PSUM: the op table says so
    with pytest.raises(ProgramError, match="POOL never touches PSUM"):
        bad.program()


def test_rotating_placements_are_x_rotate():
    # ncc.sbuf.mod_alloc / psum.mod_alloc: slot i mod n, SBUF slots back to back, PSUM one bank apart.
    from neuronsim.machine.formats.program_json import dumps_program, loads_program

    kb = KernelBuilder("rot")
    x = kb.dram_input("x", (512, 64), "bfloat16")
    y = kb.dram_output("y", (64, 512), "float32")
    buf = kb.sbuf("buf", (128, 64), "bfloat16", partition=0, offset=1024, slots=3, loop="i")
    one = kb.sbuf("one", (128, 64), "bfloat16", partition=0, offset=0, slots=1, loop="i")
    with kb.loop("i", 4) as i:
        ps = kb.psum("ps", (64, 128), partition=0, bank=4, slots=2, loop=i)  # the index variable names the loop
        wide = kb.psum("wide", (64, 128), partition=0, bank=1, slots=2, loop="i", stride=4 * 2048)
        out = kb.sbuf("out", (64, 128), "float32")
        kb.dma_copy(buf, x.tile(i, 128))
        kb.tensor_copy(one, buf)
        kb.transpose(ps, one)
        kb.transpose(wide, buf)
        kb.tensor_tensor(out, ps, out, op="add")
        kb.tensor_copy(out, wide, engine="act")
        kb.dma_copy(y[:, i * 128:(i + 1) * 128], out, engine="act", queue="dma1")
    program = kb.program()
    rotations = {n: t.rotate for n, t in program.tensors.items() if t.rotate is not None}
    assert rotations == {"buf": Rotation("i", 3, 128), "ps": Rotation("i", 2, 2048), "wide": Rotation("i", 2, 8192)}
    text = dumps_program(program)
    assert '"x-rotate"' in text and loads_program(text) == program


@pytest.mark.parametrize("declare,message", [
    (lambda kb: kb.sbuf("v", (128, 4), "float32", slots=2, loop="i"), "rotating slots are a placement"),
    (lambda kb: kb.sbuf("v", (128, 4), "float32", partition=0, offset=0, slots=2), "need loop="),
    (lambda kb: kb.sbuf("v", (128, 4), "float32", partition=0, offset=0, slots=0, loop="i"), "positive integer"),
    (lambda kb: kb.psum("v", (128, 4), partition=0, bank=0, slots=2, loop="i", stride=-1), "non-negative"),
    (lambda kb: kb.psum("v", (128, 4), partition=0, bank=0, slots=2, loop=Index(1, (("i", 1),))), "loop="),
])
def test_rotation_errors_are_early_and_named(declare, message):
    with pytest.raises(ValueError, match=message):
        declare(KernelBuilder("bad"))


def test_rotation_loop_must_exist_and_enclose_every_access():
    kb = KernelBuilder("missing")
    t = kb.sbuf("t", (128, 4), "float32", partition=0, offset=0, slots=2, loop="j")
    with kb.loop("i", 2):
        kb.memset(t)
    with pytest.raises(ValueError, match="t: rotates over loop 'j', which the kernel never opens"):
        kb.program()
    kb = KernelBuilder("outside")
    t = kb.sbuf("t", (128, 4), "float32", partition=0, offset=0, slots=2, loop="i")
    with kb.loop("i", 2):
        kb.memset(t)
    kb.memset(t, name="after")  # outside loop i: the validator names it
    with pytest.raises(ProgramError, match="rotates with loop 'i', which does not enclose"):
        kb.program()


def test_arena_lays_tiles_out_like_a_hand_allocator():
    from neuronsim.machine.build.arena import SbufArena

    kb = KernelBuilder("arena")
    arena = SbufArena(kb, offset=260, partition=32, align=4)
    a = arena.sbuf("a", (32, 3), "bfloat16", slots=2, loop="i")  # 2 x 6 bytes
    b = arena.sbuf("b", (32, 1), "float32")
    assert (a.tensor.partition, a.tensor.offset, a.tensor.rotate) == (32, 260, Rotation("i", 2, 6))
    assert (b.tensor.offset, arena.offset) == (272, 276)
    with pytest.raises(ValueError, match="arena starts"):
        SbufArena(kb, offset=-1)


def test_immediates_are_plain_numbers_and_infinities_survive_json():
    import math

    from neuronsim.machine.formats.program_json import dumps_program, loads_program

    kb = KernelBuilder("inf")
    y = kb.dram_output("y", (32, 8), "float32")
    m = kb.sbuf("m", (32, 8), "float32")
    kb.memset(m, -math.inf, name="neg")
    kb.memset(m, "inf", name="pos")
    kb.tensor_scalar(m, m, op0="max", operand0=np.float32(0.5), op1="add", operand1=np.int64(2), name="ts")
    kb.dma_copy(y, m)
    program = kb.program()
    insts = program.instruction_map()
    assert insts["neg"].attrs["value"] == -math.inf and insts["pos"].attrs["value"] == math.inf
    operands = insts["ts"].attrs["operand0"], insts["ts"].attrs["operand1"]
    assert operands == (0.5, 2) and [type(v) for v in operands] == [float, int]
    text = dumps_program(program)
    assert '"value": "-inf"' in text and loads_program(text) == program
    with pytest.raises(ValueError, match="memset value: expected a number"):
        kb.memset(m, "lots")
    with pytest.raises(ValueError, match="expected a number"):
        kb.tensor_scalar(m, m, op0="add", operand0=True)
