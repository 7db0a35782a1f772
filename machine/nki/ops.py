"""Lowering: NKI operations as program instructions (through the scenario builder).

Every function here takes the destination layout first (as ``nki.isa`` does), resolves its
operands (tiles become views, restricted by the mask being applied; numbers stay numbers)
and calls one builder op.  The engine and DMA queue choices are documented in docs/nki.md.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from math import prod
from typing import Any

import numpy as np

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.program import Dep, Instruction, Loop, MemoryKind
from neuronsim.machine.nki.alloc import declare_tile, spec_of
from neuronsim.machine.nki.dtypes import promote, to_dtype
from neuronsim.machine.nki.errors import fail, shown
from neuronsim.machine.nki.indexing import ArangeExpr, Iter, Mask
from neuronsim.machine.nki.layout import Layout
from neuronsim.machine.nki.tiles import NkiTensor
from neuronsim.machine.nki.tracer import current
from neuronsim.machine.model.optable import ENGINE_CHOICE_KEY, MOVABLE_ALU_OPS
from neuronsim.machine.model.presets import resolve_machine

__all__ = ["lay", "number", "dma", "copy", "binary", "activation", "memset", "QUEUES", "broadcast_shape",
           "result_dtype", "per_partition", "opens_accumulation", "in_program_order", "reduced_last",
           "engine_left_to_compiler", "COMPILER_ENGINES", "floats", "split_terms", "iota", "elementwise", "reducing"]

#: The engines offered to the compiler for an elementwise op or copy whose kernel names none
#: (``docs/timing.md``, "Engine choice"): DVE, the frontend's default, and ACT.
COMPILER_ENGINES = ("dve", "act")


def engine_left_to_compiler(offer: bool = True):
    """The builder calls inside make instructions that offer :data:`COMPILER_ENGINES` to the
    ``schedule`` pass (:data:`~neuronsim.machine.model.optable.ENGINE_CHOICE_KEY` in their extras)."""
    return extras_added({ENGINE_CHOICE_KEY: list(COMPILER_ENGINES)} if offer else {})


@contextmanager
def extras_added(extras: dict[str, Any]):
    """The builder calls inside make instructions that carry ``extras`` beside the tracer's own."""
    kb = current().kb
    before = kb.next_extras
    if extras:
        kb.next_extras = {**(before or {}), **extras}
    try:
        yield
    finally:
        kb.next_extras = before


def floats(*layouts: Layout) -> bool:
    """True when every view holds floating-point values (integer ALU work stays where it is)."""
    return all(layout.element_dtype.startswith(("float", "bfloat")) for layout in layouts)


#: The integer ALU operators the legacy ``tensor_tensor`` page sends to GpSimd ("integer
#: ``add``, ``multiply``, or ``subtract`` which run on the GpSimd Engine").
LEGACY_INTEGER_OPS = ("add", "subtract", "multiply")


def native_integers(op: str, *layouts: Layout) -> bool:
    """Does a two-tile ALU operation with no engine given run on GpSimd's native integer
    arithmetic?  NKI 0.7's ``tensor_tensor`` page: with every tile int32 or uint32 it "defaults
    to GpSimd Engine, which uses native integer arithmetic" (exact for every 32-bit value); the
    legacy page: its integer add, multiply and subtract.  Not with a tile in PSUM, which GpSimd
    cannot reach.  The ``nl.*`` operators of two tiles lower to the same instruction."""
    if current().generation == "legacy" and op not in LEGACY_INTEGER_OPS:
        return False
    return all(layout.element_dtype in ("int32", "uint32") and layout.tensor.memory != MemoryKind.PSUM
               for layout in layouts)


#: The DMA queue a transfer goes on, by the engine whose sequencer triggers it (docs/nki.md).
QUEUES = {"sp": "dma0", "act": "dma1", "pool": "dma2", "pe": "dma0", "dve": "dma0"}


def lay(value: Any, transposed: bool = False, bounded: bool = True) -> Layout:
    """The layout of a tile operand, restricted by the mask of the instruction being emitted
    (``transposed``: a transpose's result, the mask written in its source's indices); with
    ``bounded`` False its bounds are not checked (an operand rule at the call, before the
    call's mask= bounds the access)."""
    if not isinstance(value, NkiTensor):
        if isinstance(value, Mask):  # `nl.multiply(t, ip < n)`: it bounds an access, holds no values
            raise fail("a comparison of indices used as a tile operand: pass it as the call's mask=, or select with "
                       "nl.where")
        raise fail(f"expected a tile or tensor, got {shown(value)}")
    layout = value.layout
    tracer = current()
    if tracer.mask is not None:
        for axis, lo, hi in tracer.mask.bounds:
            layout = layout.restrict(axis, lo, hi, transposed)
    if bounded and layout.limits is not None:  # a view past its tensor: the access must stay inside
        layout.check_bounds(tracer.emit_site)
    return layout


def masked_in_source(mask: Any, value: Any) -> bool | str:
    """Whether ``mask=`` is written in the indices of ``value``'s view: given to a transpose
    of ``value`` (``nc_transpose(src[i, j], mask=(i < m) & (j < n))``), it then bounds the
    result's axes swapped.  So, ``"fresh"``, is a mask in fresh indices whose counts fit the
    source's axes (a whole ``(128, 12)`` tile transposed with ``mask=(ip < 100) & (jf < 12)``:
    nki-samples' neuron-team convolution), but where they index the result too, they keep
    their places there (``y[i_p, i_f] = nl.transpose(t, mask=(i_p < 64))``, the result's rows:
    :func:`~neuronsim.machine.nki.mask_boxes.box_targets`).  Any other mask keeps its places."""
    layout = getattr(value, "_layout", None)
    if not isinstance(mask, Mask) or not hasattr(value, "shape"):
        return False
    named = {id(it) for tag in (layout.tags or ()) if tag for it in tag} if layout is not None else set()

    def iterators(m: Mask) -> Iterator[Any]:
        for expr, _cmp, _value in m.preds:
            yield from (it for it, _coeff in expr.terms)
        for alternative in m.alternatives:
            yield from iterators(alternative)

    its = list(iterators(mask))
    if named:
        return any(id(it) in named for it in its)
    shape = tuple(value.shape)
    fits = len(shape) == 2 and bool(its) and all(it.ndim == 2 and it.count == shape[it.pos] for it in its)
    return "fresh" if fits else False


def swapped_by_mask(emit: Callable[..., Any], mask: Any, source: Any, when: bool = True) -> Callable[..., Any]:
    """``emit``, a transpose of ``source``, marked (``emit.transposes``, which the tracer reads)
    so that a ``mask=`` written in the source's indices bounds its destination's axes swapped
    (:func:`masked_in_source`); ``when``: the call is a transpose at all (a 2-D one)."""
    emit.transposes = when and masked_in_source(mask, source)  # type: ignore[attr-defined]
    return emit


def elementwise(emit: Callable[..., Any]) -> bool:
    """Whether a held-back call's result lines up with its operands axis by axis, so that a
    store's ``mask=`` (written in the result's indices) may bound the call as well as the store:
    not a matmul (its partitions are the stationary operand's free axis), a transpose, or a
    reduction (``emit.reduces``: the operand has axes the result has not).  For those the mask
    is the store's alone, as the store page says: the call computes its whole result."""
    return not any(hasattr(emit, mark) for mark in ("accumulates", "transposes", "reduces"))


def reducing(emit: Callable[..., Any], axes: Iterable[int] = (), keepdims: bool = True) -> Callable[..., Any]:
    """``emit``, a reduction's over the operand's ``axes``, marked so (:func:`elementwise`; the
    tracer hands ``(axes, keepdims)`` to :func:`~neuronsim.machine.nki.mask_boxes.box_targets`)."""
    emit.reduces = (frozenset(axes), keepdims)  # type: ignore[attr-defined]
    return emit


def number(value: Any) -> float | int | None:
    """A Python number from an immediate (numpy scalars, 0-d arrays, bools)."""
    if value is None:
        return None
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.reshape(()).item()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, numbers.Real):
        return value
    raise fail(f"expected a number, got {shown(value)}")  # (its repr leaked: an index vector's terms)


def is_number(value: Any) -> bool:
    return isinstance(value, (numbers.Real, np.generic)) or (isinstance(value, np.ndarray) and value.size == 1)


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NKI broadcasting: shapes align on the partition axis (the left), so a ``[P]`` or
    ``[P, 1]`` tile broadcasts along the free axes of a ``[P, F]`` one."""
    ndim = max(len(s) for s in shapes)
    try:
        return tuple(np.broadcast_shapes(*(tuple(s) + (1,) * (ndim - len(s)) for s in shapes)))
    except ValueError:
        raise fail(f"shapes {' and '.join(str(s) for s in shapes)} do not broadcast") from None


def result_dtype(dtype: Any, *operands: Any) -> str:
    if dtype is not None:
        return to_dtype(dtype)
    tiles = [o.dtype for o in operands if isinstance(o, NkiTensor)]
    if len(tiles) == 1 or (len(tiles) == 2 and tiles[0] == tiles[1]):
        return tiles[0]
    return promote(*tiles) if tiles else to_dtype("float32")


def dma(dst: Layout, src: Layout, *, engine: str | None = None, dge: str | None = None,
        rmw: str | None = None, onto: Layout | None = None) -> None:
    """A DMA transfer triggered by ``engine`` (SP by default; POOL for software DGE) on that
    engine's queue; hardware DGE only where the machine has it.  ``rmw`` (``"add"``): a
    read-modify-write ``dst = dst + src`` (``dma_accumulate``, which reads ``dst`` too), or with
    ``onto`` ``dst = onto + src`` (both read in float32, the sum rounded to ``dst`` once)."""
    if dst.indirect is not None or src.indirect is not None:  # a tile of row numbers (machine/nki/indirect.py)
        from neuronsim.machine.nki.indirect import indirect_dma  # it reads device values: above this module
        indirect_dma(dst, src, partial(dma, rmw=rmw))
        return
    tracer = current()
    if dge == "swdge":
        engine = "pool"
    engine = engine if engine in QUEUES else "sp"
    if dge == "hwdge" and not resolve_machine(tracer.machine).has_hwdge:
        dge = None
    if dge not in ("swdge", "hwdge"):
        dge = None
    if dst.tensor.memory.name == "PSUM" or src.tensor.memory.name == "PSUM":
        raise fail("a DMA cannot read or write PSUM (copy the tile to SBUF first)")
    converts = False
    if (dst.bitcast or src.bitcast) and rmw is None:  # a side read as another dtype (.view, .ap(dtype=))
        if dst.element_dtype == src.element_dtype:  # the same dtype read on both sides: bytes as they are
            from neuronsim.machine.nki.reinterpret import dma_bytes  # it imports the tracer: above this module

            dma_bytes(dst, src, engine=engine, queue=QUEUES[engine], dge=dge)
            return
        # else the values read are converted as any DMA converts (the dma_copy page: "first
        # casting from src.dtype to float32, then from float32 to dst.dtype"), src.dtype being
        # the view's: each side's access reads its bytes as its dtype (x-read-as)
        converts = True
    if not src.on_chip and not converts:
        src = src.permuted_like(dst)  # the same index iterators in another order: a transposing copy
    if not dst.on_chip and not converts:
        dst = dst.permuted_like(src)
    d, s = dst.view(), src.view()
    if d.count != s.count:
        raise fail(f"DMA of {s.shape} elements of {src.tensor.name} into {d.shape} of {dst.tensor.name}: a DMA "
                   f"copies element for element (a row spread over partitions is nl.broadcast_to's, or a matmul "
                   f"against ones)")
    tracer.note_write(dst)
    if rmw is not None:
        tracer.kb.instruction("dma_accumulate", engine, [s, onto.view() if onto is not None else d], [d],
                              attrs={"op": rmw, "dge": dge},
                              queue=QUEUES[engine])
        return
    tracer.kb.dma_copy(d, s, engine=engine, queue=QUEUES[engine], dge=dge)


def copy(dst: Layout, src: Layout, engine: str | None = None, dynamic: str | None = None) -> None:
    """``dst = src``: a DMA when either side is in DRAM, else ``tensor_copy`` (DVE default;
    ``dynamic``: the side whose address is read at run time, :func:`Tracer.kb.tensor_copy`)."""
    if not dst.on_chip or not src.on_chip:
        dma(dst, src, engine=engine if engine in ("sp", "act", "pool") else None)
        return
    offer = engine is None
    engine = engine or "dve"
    if engine == "pool" and "PSUM" in (dst.tensor.memory.name, src.tensor.memory.name):
        engine = "dve"
    current().note_write(dst)
    _through_float32(src.element_dtype, dst.element_dtype)
    with engine_left_to_compiler(offer):
        current().kb.tensor_copy(dst.view(), _fit(src, dst).view(), engine=engine, dynamic=dynamic)


def _through_float32(source: str, target: str) -> None:
    """A warning at a compute-engine copy between two 32-bit integer dtypes: the tensor_copy page's
    "intermediate FP32 cast when input and output data types differ" (and "be cautious ... e.g.,
    INT32") rounds integers beyond 2**24, which both hold (a narrower side holds none of them).
    A bit-exact RNG that copied int32 into uint32 came out wrong without a word (a sweep); the
    model casts as the page says."""
    if source != target and {source, target} <= {"int32", "uint32"}:
        current().warn("precision", f"a copy of {source} into {target} on a compute engine goes through float32 (the "
                                    f"tensor_copy page: \"intermediate FP32 cast when input and output data types "
                                    f"differ\"): integers beyond 2**24 in magnitude lose their low bits; to keep the "
                                    f"bits, view the tile as the other dtype (.view) instead")


def spread(src: Layout, partitions: int) -> Layout:
    """``src`` itself, or, for a one-partition on-chip tile used against ``partitions``
    partitions, a copy of it broadcast to that many partitions in a fresh SBUF tile.

    A partition broadcast is "a separate instruction on TensorE" (the fused-Mamba tutorial,
    on ``broadcast_to``): per PSUM bank of fp32 columns (512 in 2 KiB), a matmul of a ones
    row (``[1, partitions]``, set on POOL) against the row into PSUM, copied to the SBUF tile
    (DVE or ACT, the compiler's choice).  A row PE cannot take (integers, which PSUM's fp32
    would round; one in PSUM; one of more than one free axis) is spread by one
    ``nc_stream_shuffle`` (mask all 0) per 32-partition quadrant instead, as the NKI library's
    ``stream_shuffle_broadcast`` does (an engine reads only its own partitions).  An SBUF row at
    a partition no engine access may start at is first copied by DMA to a tile of its own."""
    if not src.on_chip or partitions <= 1 or src.view().num_partitions != 1:
        return src
    tracer = current()
    if src.tensor.memory == MemoryKind.SBUF and ((src.tensor.partition or 0) + src.partitions[0]) % 32:
        # a row of a table (partition 3 of a (25, K) tile): an engine's access starts at partition
        # 0, 32, 64 or 96, so the row moves to a tile of its own first, by DMA, which that rule
        # does not bind (as the errors page advises a kernel to do; here it is the lowering's)
        own = declare_tile(tracer, spec_of(tuple(src.shape), src.tensor.dtype, "sbuf"))
        dma(own, src)
        src = own
    staged = declare_tile(tracer, spec_of((partitions, *src.shape[1:]), src.tensor.dtype, "sbuf"))
    if len(src.shape) == 2 and floats(src) and src.tensor.memory == MemoryKind.SBUF:  # PE reads SBUF only
        _spread_on_pe(src, staged, partitions)
        return staged
    for start in range(0, partitions, 32):
        quadrant = staged.index((slice(start, min(start + 32, partitions)),))
        tracer.note_write(quadrant)
        tracer.kb.instruction("nc_stream_shuffle", "dve", [src.view()], [quadrant.view()], attrs={"mask": [0] * 32})
    return staged


def _spread_on_pe(src: Layout, staged: Layout, partitions: int) -> None:
    """The PE broadcast of :func:`spread`: ``staged[p, :] = ones[0, p] * src[0, :]``."""
    tracer = current()
    ones = declare_tile(tracer, spec_of((1, partitions), src.tensor.dtype, "sbuf"))
    memset(ones, 1.0, engine="pool")
    width, bank_columns = src.shape[1], resolve_machine(tracer.machine).psum_bank_bytes // 4  # fp32
    for start in range(0, width, bank_columns):
        columns = slice(start, min(start + bank_columns, width))
        bank = declare_tile(tracer, spec_of((partitions, columns.stop - start), to_dtype("float32"), "psum"))
        tracer.note_write(bank)
        tracer.kb.matmul(bank.view(), ones.view(), src.index((slice(None), columns)).view())
        copy(staged.index((slice(None), columns)), bank)


def _fit(src: Layout, dst: Layout) -> Layout:
    """``src`` broadcast along free axes to ``dst``'s shape where it has fewer elements
    (aligned on the partition axis: missing trailing axes are added), and along partitions
    from one partition (:func:`spread`)."""
    if dst.on_chip:
        src = spread(src, dst.view().num_partitions)
    if src.bitcast or dst.bitcast:  # axes count own elements: the views' counts (as read) are compared
        return src
    if src.shape != dst.shape and prod(src.shape) != prod(dst.shape) and len(src.shape) <= len(dst.shape):
        missing = len(dst.shape) - len(src.shape)
        if missing:
            tags = src.tags + (None,) * missing if src.tags is not None else None
            src = Layout(src.tensor, src.axes + (("F", 0, 1),) * missing, src.offset, src.partitions, tags)
        return src.broadcast_to(dst.shape)
    return src


def sbuf_tile(shape: tuple[int, ...], dtype: str) -> Layout:
    """A fresh SBUF tile of ``shape`` and ``dtype``: a tile the compiler stages or keeps an intermediate in."""
    return declare_tile(current(), spec_of(shape, to_dtype(dtype), "sbuf"))


def float32_tile(shape: tuple[int, ...]) -> Layout:
    """A fresh SBUF tile of ``shape`` in float32: where an intermediate stays at the engines'
    precision before one cast to its destination's dtype, as the compiler stages it."""
    return sbuf_tile(shape, "float32")


def staged_from_psum(layout: Layout) -> Layout:
    """``layout`` itself, or, in PSUM, a copy of it in a fresh SBUF tile of its dtype (ACT
    copies it) for an engine that cannot read PSUM (POOL, PE), as the compiler stages such
    operands.  Of its dtype: a bf16 PE transpose staged as float32 made its matmul a float32 x
    bfloat16 one, refused (a public attention kernel: probe_w), and timed at the fp32 rate."""
    if layout.tensor.memory.name != "PSUM":
        return layout
    tracer = current()
    staged = sbuf_tile(layout.shape, layout.element_dtype)
    tracer.note_write(staged)
    tracer.kb.tensor_copy(staged.view(), layout.view(), engine="act")
    return staged


def per_partition(layout: Layout) -> bool:
    """True for a ``[P, 1]`` operand (one value per partition)."""
    return layout.on_chip and prod(n for k, _s, n in layout.axes if k == "F") == 1


def binary(dst: Layout, a: Any, b: Any, op: str, engine: str | None = None) -> None:
    """``dst = a <op> b``: two tiles -> ``tensor_tensor``; a ``[P, 1]`` tile or a number ->
    ``tensor_scalar`` (the operand on the left is ``reverse0``)."""
    kb = current().kb
    current().note_write(dst)
    offer_engine = engine is None
    offer = offer_engine and op in MOVABLE_ALU_OPS  # a tensor_scalar the compiler may give to ACT
    engine = engine or "dve"
    if is_number(a) and is_number(b):
        raise fail("an elementwise operation needs at least one tile")
    if is_number(a) or is_number(b):
        tile, scalar, reverse = (b, a, True) if is_number(a) else (a, b, False)
        with engine_left_to_compiler(offer and floats(dst, lay(tile))):
            kb.tensor_scalar(dst.view(), _fit(lay(tile), dst).view(), op0=op, operand0=number(scalar),
                             reverse0=reverse or None, engine=engine)
        return
    la, lb = lay(a), lay(b)
    if dst.on_chip:  # a [1, F] or [1, 1] tile against more partitions
        la, lb = spread(la, dst.view().num_partitions), spread(lb, dst.view().num_partitions)
    if per_partition(lb) and not per_partition(la):
        with engine_left_to_compiler(offer and floats(dst, la, lb)):
            kb.tensor_scalar(dst.view(), _fit(la, dst).view(), op0=op, operand0=lb.view(), engine=engine)
    elif per_partition(la) and not per_partition(lb):
        with engine_left_to_compiler(offer and floats(dst, la, lb)):
            kb.tensor_scalar(dst.view(), _fit(lb, dst).view(), op0=op, operand0=la.view(), reverse0=True,
                             engine=engine)
    else:
        if engine == "pool" and "PSUM" in (la.tensor.memory.name, lb.tensor.memory.name):
            engine = "dve"
        if offer_engine and native_integers(op, dst, la, lb):
            engine = "pool"
        kb.tensor_tensor(dst.view(), _fit(la, dst).view(), _fit(lb, dst).view(), op=op, engine=engine)


def activation(dst: Layout, func: str, src: Any, *, scale: Any = None, bias: Any = None,
               reduce_res: Any = None, reduce_op: str = "add") -> None:
    """``dst = func(src * scale + bias)`` on ACT; ``reduce_res`` gets the per-partition sum."""
    kb = current().kb
    current().note_write(dst)
    scale_v = lay(scale).view() if _is_tile(scale) else number(scale)
    bias_v = lay(bias).view() if _is_tile(bias) else number(bias)
    if scale_v == 1.0:
        scale_v = None
    if bias_v == 0:
        bias_v = None
    red = None
    if reduce_res is not None:
        red = lay(reduce_res)
        current().note_write(red)
        red = red.view()
    kb.activation(dst.view(), _fit(lay(src), dst).view(), func=func, scale=scale_v, bias=bias_v,
                  reduce_res=red, reduce_op=reduce_op)


def memset(dst: Layout, value: Any, engine: str | None = None) -> None:
    if not dst.on_chip:
        raise fail(f"memset of {dst.tensor.name}: only on-chip tiles can be set (store a tile instead)")
    start, count, _step = dst.partitions
    base = dst.tensor.partition or 0  # a directly placed tile's own partition, else a multiple of 32
    if dst.tensor.memory == MemoryKind.SBUF and count == 1 and (base + start) % 32 and start >= (base + start) % 32:
        set_one_partition(dst, value)
        return
    engine = engine if engine in ("dve", "pool") else "dve"
    if engine == "pool" and dst.tensor.memory.name == "PSUM":
        engine = "dve"
    current().note_write(dst)
    current().kb.memset(dst.view(), number(value), engine=engine)


#: On the ``affine_select`` of :func:`set_one_partition`: the window's row the kernel writes.  The
#: rest of the window is read and written back unchanged, which the kernel did not ask for: the
#: checks of the kernel's own accesses (verify/nki/carried.py) count that row alone.
ONE_PARTITION_KEY = "x-nki-one-partition"


def set_one_partition(dst: Layout, value: Any) -> None:
    """``t[i, ...] = value`` for one partition ``i`` off a 32-partition boundary: no base
    partition lets a compute access start there (the partition-start rule,
    machine/model/optable.py), so the value is written over the 32 partitions of ``i``'s
    quadrant, kept where the partition is not ``i``: an ``affine_select`` on POOL reading and
    writing that window (``t[5, j] = 25`` of the SDK's gather_flattened example)."""
    start = dst.partitions[0]
    first = start - (start + (dst.tensor.partition or 0)) % 32
    rows = min(32, dst.tensor.shape[0] - first)
    axes = tuple((kind, stride, rows if kind == "P" else n) for kind, stride, n in dst.axes)
    window = replace(dst, axes=axes, partitions=(first, rows, 1), tags=None, limits=None)
    current().note_write(window)
    attrs = {"offset": first - start, "channel_multiplier": 1, "pattern": [], "cmp": "not_equal",
             "value": number(value)}
    with extras_added({ONE_PARTITION_KEY: start - first}):
        current().kb.instruction("affine_select", "pool", [window.view()], [window.view()], attrs=attrs)


def opens_accumulation(dst: Layout) -> bool:
    """Whether ``psum[...] += matmul`` accumulates: onto an open accumulation group, or onto
    a partial sum read since (``+=`` adds to what the tile holds), yes; onto a fresh tile, the
    first matmul starts the group, as NKI's compiler does.  In a loop
    kept symbolic (one body for every iteration) the group cannot start in the body: the tile
    is zeroed where it was declared, before the loop, and the body accumulates; that zeroing,
    like ``nl.zeros``'s, is then lowered away by peeling (:mod:`neuronsim.machine.nki.groups`)."""
    tracer = current()
    tracer.flush()
    name = dst.tensor.name
    if dst.tensor.memory != MemoryKind.PSUM or tracer.accumulates_into(dst, holding=True):
        return True  # ``+=`` adds to what the tile holds, a partial sum read since included
    if not tracer.loops_opened_since_declared(name):
        return False
    tracer.emit_at_declaration(name, lambda: memset(Layout.whole(dst.tensor), 0.0))
    return True


def _is_tile(value: Any) -> bool:
    return isinstance(value, NkiTensor)


def in_program_order(nodes: list[Any]) -> list[Any]:
    """``nodes`` (instructions and loops of one body) with each instruction waiting, by an
    ``ordered`` dep, for the instruction before it; a loop's first instruction waits for
    its body's last one of the previous iteration (``nl.no_reorder``: the order the
    compiler keeps)."""
    out, _last = _chained(nodes, None)
    return out


def _chained(nodes: list[Any], prev: str | None) -> tuple[list[Any], str | None]:
    out: list[Any] = []
    for node in nodes:
        if isinstance(node, Loop):
            body, last = _chained(list(node.body), prev)
            first = next((k for k, n in enumerate(body) if isinstance(n, Instruction)), None)
            if first is not None and last is not None and node.trip_count > 1:
                inst = body[first]
                body[first] = replace(inst, deps=inst.deps + (Dep(last, EdgeKind.ORDERED, True),))
            out.append(replace(node, body=tuple(body)))
            prev = last if last is not None else prev
        else:
            out.append(replace(node, deps=node.deps + (Dep(prev),)) if prev is not None else node)
            prev = node.name
    return out, prev


def reduced_last(src: Layout, axes: list[int]) -> tuple[Layout, list[int]]:
    """``src`` with the free axes ``axes`` moved after the others (a strided view: no data
    moves), and their new positions: DVE reduces the trailing free axes of its read, and the
    NKI average-pool tutorial reduces axes in the middle (``nl.sum(x, axis=[2, 4])``)."""
    rest = [a for a in range(len(src.axes)) if a not in axes]
    if rest == list(range(len(rest))):
        return src, axes
    order = rest + sorted(axes)
    tags = tuple(src.tags[a] for a in order) if src.tags is not None else None
    moved = Layout(src.tensor, tuple(src.axes[a] for a in order), src.offset, src.partitions, tags)
    return moved, list(range(len(rest), len(order)))



def normal_axes(shape: tuple[int, ...], axis: Any) -> list[int]:
    """The axes ``axis`` names (an integer, a tuple or list of them; None: every free axis) as
    sorted positions of ``shape``; one that names no axis of it, or is no integer, is refused at
    the kernel line (numpy's rule: ``-rank <= axis < rank``), never wrapped round silently.

    >>> normal_axes((128, 4, 8), -1), normal_axes((128, 4, 8), None)
    ([2], [1, 2])
    """
    rank = len(shape)
    single = isinstance(axis, numbers.Integral) and not isinstance(axis, bool)
    axes = list(range(1, rank)) if axis is None else [axis] if single else \
        list(axis) if isinstance(axis, (tuple, list)) else None
    if axes is None or not all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in axes):
        raise fail(f"axis={shown(axis)}: an axis is an integer, or a tuple of them")
    wrong = [int(a) for a in axes if not -rank <= a < rank]
    if wrong:
        raise fail(f"axis {wrong[0]}: a {rank}-D tile has axes 0..{rank - 1} (or {-rank}..-1)")
    return sorted(int(a) % rank for a in axes)


def free_axes(shape: tuple[int, ...], axis: Any, what: str, hint: str = "transpose it to a free axis first"
              ) -> list[int]:
    """:func:`normal_axes`, the partition axis among them refused (``what`` reduces over them)."""
    out = normal_axes(shape, axis)
    if 0 in out:
        raise current().refuse(f"{what} over the partition axis", hint)
    return out


def split_terms(expr: ArangeExpr) -> tuple[int, list[tuple[int, int]]]:
    """``(partition coefficient, [(free coefficient, count), ...])`` of an index expression:
    the iterator at grid position 0 of a grid of two or more axes is the partition axis."""
    partition, free = 0, []
    for it, coeff in sorted(expr.terms, key=lambda t: t[0].pos):
        if it.pos == 0 and it.ndim > 1:
            partition = coeff
        else:
            free.append((coeff, it.count))
    return partition, free


def from_mask_corner(expr: ArangeExpr) -> ArangeExpr:
    """``expr`` over the emitting call's mask box: the box's destination starts at its first
    kept element, so an index expression evaluated over it (``nisa.iota``'s values,
    ``nisa.affine_select``'s predicate) starts at the iterators' first kept values, not at 0,
    and spans as many as the box keeps.  An iterator of the box matches a term by itself or,
    written with fresh aranges, by its place in the iteration space."""
    box = current().mask
    if box is None:
        return expr
    const, terms = expr.const, list(expr.terms)
    for it, lo, hi in box.bounds:
        at = [k for k, (t, _c) in enumerate(terms) if t == it]
        if not at:
            at = [k for k, (t, _c) in enumerate(terms) if t.pos == it.pos and t.ndim == it.ndim][:2]
        if len(at) != 1:
            continue
        t, coeff = terms[at[0]]
        const += coeff * lo
        terms[at[0]] = (Iter(t.uid, t.pos, t.ndim, max(0, min(hi, t.count) - lo)), coeff)
    return replace(expr, const=const, terms=tuple(terms))


def iota(dst: Layout, expr: Any) -> None:
    """``dst[p, i] = expr`` for an affine index expression over the tile's axes (POOL)."""
    if isinstance(expr, int):
        expr = ArangeExpr(expr, ())
    if not isinstance(expr, ArangeExpr):
        raise fail("nisa.iota takes an affine expression of nl.arange / nl.mgrid indices")
    expr = from_mask_corner(expr)
    partition_step, free = split_terms(expr)
    if len([c for c, _n in free if c]) > 1:
        raise current().refuse("nisa.iota over several free axes", "one free axis")
    step = next((c for c, _n in free if c), 0)
    current().note_write(dst)
    current().kb.iota(dst.view(), base=number(expr.const), step=step, partition_step=partition_step)
