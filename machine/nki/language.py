"""``nki.language`` (``nl``) for traced kernels: tensors, memory operations, math, loops, SPMD.

Each call lowers to the ISA op and engine the NKI docs give for it (docs/nki.md has the
table): ``nl.load`` / ``nl.store`` are DMA transfers, elementwise arithmetic of two tiles is
``tensor_tensor`` on DVE and of a tile and a number ``tensor_scalar``, transcendental
functions are ``activation`` on ACT, reductions ``tensor_reduce`` on DVE, ``nl.matmul`` a PE
matmul into PSUM.  Shared by both API generations (the current API's stand-ins leave out the legacy-only names).
"""

from __future__ import annotations

import os
from math import prod
from typing import Any

import numpy as np

from neuronsim.machine.ir.program import MemoryKind
from neuronsim.machine.model.presets import resolve_machine
from neuronsim.machine.nki import operand_rules, ops
from neuronsim.machine.nki.keywords import kernel_arguments
from neuronsim.machine.nki.alloc import (BUFFERS, HBM_KINDS, Buffer, FnAlloc, ModAlloc, ParDim, TileSpec, declare_tile,
                                       spec_of)
from neuronsim.machine.nki.dtypes import declared_dtype, to_dtype
from neuronsim.machine.nki.errors import fail, shown
from neuronsim.machine.nki.hbm import hbm_tensor
from neuronsim.machine.nki.indexing import ArangeExpr, MGrid, arange, ds  # noqa: F401  (re-exported as nl.*)
from neuronsim.machine.nki.layout import Layout
from neuronsim.machine.nki.tensor_views import transposed_shape
from neuronsim.machine.nki.legacy_rules import legacy_tile, kernel_level
from neuronsim.machine.nki.outside import OutsideView
from neuronsim.machine.nki.spmd_loops import reduced_loops
from neuronsim.machine.nki.tiles import NkiTensor, is_tile, register_operators
from neuronsim.machine.nki.tiles import result_tile as _result
from neuronsim.machine.nki.tracer import NEVER, api, as_mask, assigned_name, current, tracing

sbuf, psum = BUFFERS["sbuf"], BUFFERS["psum"]
hbm, shared_hbm, private_hbm = BUFFERS["hbm"], BUFFERS["shared_hbm"], BUFFERS["private_hbm"]
MGrid.__getitem__ = kernel_arguments(MGrid.__getitem__, "nl.mgrid")  # an odd bound: the kernel's mistake
mgrid = MGrid()


class _TileSizes(type):
    """The SBUF figures of ``nl.tile_size`` follow the machine the kernel is traced for: the
    usable bytes of a partition, below the compiler's reserve (192 KiB less 16 KiB on trn1, 224
    KiB less 16 KiB + 8 B on trn2: the machine presets); outside a trace, trn1's."""

    @property
    def total_available_sbuf_size(cls) -> int:
        return resolve_machine(current().machine if tracing() else "trn1").sbuf_allocatable_bytes

    @property
    def sbuf_fmax_bytes(cls) -> int:
        return cls.total_available_sbuf_size

    @property
    def sbuf_fmax(cls) -> int:
        return cls.total_available_sbuf_size // 4


class tile_size(metaclass=_TileSizes):  # noqa: N801  (NKI's name)
    """Hardware tile sizes (``nl.tile_size.pmax`` ...), NeuronCore-v2/v3 values."""

    pmax = 128
    psum_fmax = 512
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    bn_stats_fmax = 512
    psum_min_align = 4
    sbuf_min_align = 1
    psum_bank_fmax = 512  # fp32 elements per partition of one 2 KiB PSUM bank
    psum_bank_fmax_bytes = 2048
    psum_num_banks = 8
    sbuf_size_bytes = 192 * 1024


class NKIObject:
    """Base class of NKI kernel configuration objects (a plain Python base here).

    nki-library declares ``@dataclass`` subclasses whose fields are bare class attributes
    (``section_idx = None``, no annotation) and builds them by keyword, which NKI accepts; a
    plain ``@dataclass`` would see no fields and write an ``__init__`` taking none.  So each
    subclass's public, plain-valued class attributes are annotated as it is created (before
    the decorator runs), making them fields with their value as default; a mutable value
    (list, dict, set) would be a shared default dataclass rejects, so it stays an attribute.
    An annotated field given no default defaults to None: nki-library builds
    ``MLPTKGConstantsDimensionSizes`` without its ``remainderIFused`` field
    (mlp_tkg_constants.py) in the moe_tkg kernels its integration tests run."""

    def __init__(self, **kwargs: Any) -> None:
        for key, value in kwargs.items():
            setattr(self, key, value)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = dict(cls.__dict__.get("__annotations__", {}))
        bare = {name: Any for name, value in cls.__dict__.items()
                if not name.startswith("_") and name not in own and _plain_default(value)}
        for name, annotation in own.items():
            if name not in cls.__dict__ and "ClassVar" not in str(annotation):
                setattr(cls, name, None)
        if bare:
            cls.__annotations__ = {**own, **bare}


def _plain_default(value: Any) -> bool:
    """A class attribute that is data a dataclass may take as a field's default (not a method,
    descriptor, nested class or mutable container)."""
    if callable(value) or isinstance(value, (staticmethod, classmethod, property, list, dict, set)):
        return False
    return not hasattr(type(value), "__get__")


def par_dim(n: int) -> ParDim:
    return ParDim(n)


# -- tensors -------------------------------------------------------------------------------
def _new(shape: Any, dtype: Any, buffer: Any, name: str = "", address: Any = None) -> NkiTensor:
    tracer = current()
    spec = spec_of(shape, declared_dtype(dtype if dtype is not None else "float32"), buffer or sbuf, address)
    flat = legacy_tile(tracer.where()[0], spec) if tracer.generation == "legacy" else None
    if flat is not None:  # a 1-D on-chip tile: held as [P, 1], refused if used (legacy_rules.check_flat_tiles)
        spec = spec_of((*spec.shape, 1) if spec.shape else (1, 1), spec.dtype, buffer or sbuf, address)
        tile = _declared(tracer, spec, name)
        tracer.flat_tiles[tile.layout.tensor.name] = (tracer.where()[0], flat)
        return tile
    if spec.allocator is not None or (spec.address is not None and spec.buffer not in HBM_KINDS):
        tracer.allocated = True  # (a kernel placing its on-chip tiles: an HBM address places nothing on chip)
    if spec.buffer in HBM_KINDS:
        if spec.buffer == "shared_hbm" and tracer.generation == "legacy":
            kernel_level(tracer)
        return hbm_tensor(tracer, spec.buffer, name, lambda: _declared(tracer, spec, name))  # shared or its own
    return _declared(tracer, spec, name)


def _declared(tracer: Any, spec: TileSpec, name: str) -> NkiTensor:
    layout = declare_tile(tracer, spec, hint=name or None)
    return NkiTensor(layout) if isinstance(layout, Layout) else NkiTensor(blocked=layout)


def _dtype_given(call: str, dtype: Any) -> Any:
    """``dtype``, which the creation pages require (``nl.ndarray(shape, dtype, buffer=None, ...)``;
    NKI refuses a call without it, where neuronsim made float32 of it)."""
    if dtype is None:
        raise fail(f"{call}: dtype is required (its page: {call}(shape, dtype, ...))")
    return dtype


@api("nl.ndarray")
def ndarray(shape: Any, dtype: Any = None, buffer: Any = None, name: str = "", address: Any = None,
            **_kw: Any) -> NkiTensor:
    return _new(shape, _dtype_given("nl.ndarray", dtype), buffer, name, address)


class KeywordBuffer(Buffer):
    """The bare ``sbuf`` / ``hbm`` of a kernel, which NKI's frontend knows without an import
    (the quickstart: "The ``sbuf`` keyword is available in any NKI kernel"; ``hbm`` "similar"):
    ``sbuf.view(dtype, shape)`` declares a tensor there, as ``nl.ndarray(shape, dtype,
    buffer=...)`` does; used as a buffer value it is that buffer.  The stand-ins provide them
    while a kernel is imported and traced (:func:`~neuronsim.machine.nki.standins.standins`)."""

    def view(self, dtype: Any, shape: Any, name: str = "", **_kw: Any) -> NkiTensor:
        return ndarray(shape, dtype, buffer=BUFFERS[self.kind], name=name)


#: The keywords a kernel may name without importing them.
KERNEL_KEYWORDS = {"sbuf": KeywordBuffer("sbuf"), "hbm": KeywordBuffer("shared_hbm")}


@api("nl.zeros")
def zeros(shape: Any, dtype: Any = None, buffer: Any = None, name: str = "", **kw: Any) -> NkiTensor:
    return full(shape, 0.0, _dtype_given("nl.zeros", dtype), buffer, name, **kw)


@api("nl.ones")
def ones(shape: Any, dtype: Any = None, buffer: Any = None, name: str = "", **kw: Any) -> NkiTensor:
    return full(shape, 1.0, _dtype_given("nl.ones", dtype), buffer, name, **kw)


@api("nl.full")
def full(shape: Any, fill_value: Any, dtype: Any = None, buffer: Any = None, name: str = "",
         **kw: Any) -> NkiTensor:
    tile = _new(shape, _dtype_given("nl.full", dtype), buffer, name, kw.get("address"))
    if current().generation == "legacy" and (isinstance(buffer, (ModAlloc, FnAlloc)) or kw.get("address")):
        raise fail("an SBUF / PSUM tensor placed by the kernel is made with an initial value: NKI refuses it in "
                   "an allocated kernel (err_tensor_creation_on_scratchpad_with_init_value_not_allowed); declare "
                   "it with nl.ndarray and set it with nisa.memset or an assignment")
    if kw.get("lazy_initialization") and tile._blocked is not None:
        # neuronx-cc's printed kernels declare whole PSUM arrays so; each block is filled when
        # first used, and not at all when its first use overwrites it (NkiTensor.__setitem__)
        tile._blocked.lazy_fill = lambda block: current().emit_as(lambda: ops.memset(block, fill_value), "nl.zeros")
        return tile
    _fill(tile, fill_value)
    return tile


def _fill(tile: NkiTensor, value: Any) -> None:
    tracer = current()
    if (blocked := tile._blocked) is not None:
        for block in np.ndindex(*blocked.spec.blocks):
            layout = blocked.block(tracer, block)
            tracer.emit(lambda layout=layout: ops.memset(layout, value))
        return
    if not tile.layout.on_chip and tracer.generation == "current":
        # NKI 0.7's nl.zeros / nl.full in HBM (their buffer may be hbm): the values a DMA copies
        # from a constant of them (no engine sets HBM; the legacy API refuses an HBM init value)
        constant = shared_constant(np.full(tile.shape, value), dtype=tile.dtype)
        tracer.emit(lambda: ops.dma(tile.layout, constant.layout))
        return
    if not tile.layout.on_chip:  # (said as the memset it lowers to, it named a call the kernel never wrote: probe_bc)
        raise fail(f"an HBM tensor made with an initial value ({tile.layout.tensor.name}): the legacy API sets "
                   "on-chip tiles only; declare it with nl.ndarray and store a tile into it")
    tracer.emit(lambda: ops.memset(tile.layout, value))


@api("nl.zeros_like")
def zeros_like(x: NkiTensor, dtype: Any = None, buffer: Any = None, name: str = "", **_kw: Any) -> NkiTensor:
    _a_tensor(x, "nl.zeros_like")
    return full(x.shape, 0.0, dtype or x.dtype, buffer or _buffer_of(x), name)


def _a_tensor(x: Any, call: str) -> None:
    if not isinstance(x, NkiTensor):
        raise fail(f"{call}: x is a tensor (or a grid) whose geometry the new one takes, not {shown(x)}")


@api("nl.empty_like")
def empty_like(x: NkiTensor, dtype: Any = None, buffer: Any = None, name: str = "", *, transpose_axes: Any = None,
               address: Any = None, **_kw: Any) -> NkiTensor:
    """New storage of ``x``'s shape, or (``transpose_axes``, the page's SBUF destination of a
    later ``nisa.dma_transpose``) of its shape in that order."""
    _a_tensor(x, "nl.empty_like")
    shape = tuple(x.shape) if transpose_axes is None else transposed_shape(tuple(x.shape), transpose_axes)
    return _new(shape, dtype or x.dtype, buffer or _buffer_of(x), name, address)


def _buffer_name(buffer: Any) -> str | None:
    if isinstance(buffer, Buffer):
        return buffer.kind
    name = getattr(buffer, "name", buffer)
    return name if isinstance(name, str) else None  # (an array compared with a name is no answer)


def is_hbm(buffer: Any) -> bool:
    return _buffer_name(buffer) in ("hbm", "shared_hbm", "private_hbm")


def is_sbuf(buffer: Any) -> bool:
    return _buffer_name(buffer) == "sbuf"


def is_psum(buffer: Any) -> bool:
    return _buffer_name(buffer) == "psum"


def is_on_chip(buffer: Any) -> bool:
    return is_sbuf(buffer) or is_psum(buffer)


def _buffer_of(a: NkiTensor) -> Buffer:
    return {"sbuf": sbuf, "psum": psum}.get(a.buffer, hbm)


@api("nl.shared_identity_matrix")
def shared_identity_matrix(n: int, dtype: Any = "float32", dst: NkiTensor | None = None, **_kw: Any) -> NkiTensor:
    identity = shared_constant(np.eye(operand_rules.positive_int(n, "nl.shared_identity_matrix's n (its size)")), dtype)
    if dst is not None:  # NKI 0.3+: copy it into the kernel's own tensor
        assign(dst, identity)
        return dst
    tracer = current()
    if tracer.generation == "legacy":  # an HBM tensor there: the legacy kernels nl.load it
        return identity
    # the current page: "an identity matrix in SBUF", one per size and dtype that the compiler shares
    # (kernels hand it to nc_matmul as an operand); on-chip tiles are per SPMD instance
    key = (n, str(identity.dtype), tracer.program_id)
    if key not in tracer.shared_tiles:
        tile = _new((n, n), identity.dtype, sbuf, "identity")
        assign(tile, identity)
        tracer.shared_tiles[key] = tile
    return tracer.shared_tiles[key]


@api("nl.shared_constant")
def shared_constant(constant: Any, dtype: Any = None, **_kw: Any) -> NkiTensor:
    """A constant tensor in shared HBM: an input of the program holding ``constant`` (an
    array, or the path of a ``.npy`` file, as NKI 0.7's page allows)."""
    tracer = current()
    if isinstance(constant, (str, os.PathLike)):
        try:
            constant = np.load(constant, allow_pickle=False)
        except (OSError, ValueError) as err:
            raise fail(f"nl.shared_constant({str(constant)!r}): cannot read it as a .npy file ({err})") from None
    values = np.asarray(constant)
    if values.dtype.kind in "OUSMm":  # (an operator or a string ran until the inputs were written: a probe)
        raise fail(f"nl.shared_constant of {shown(constant)}: it holds an array of numbers")
    dtype = to_dtype(dtype if dtype is not None else values.dtype)
    key = (tuple(values.shape), dtype, values.tobytes())
    if key not in tracer.constants:
        name = tracer.tensor_name(f"const{len(tracer.constants)}", *tracer.where())
        ref = tracer.kb.dram_input(name, values.shape, dtype)
        tracer.constants[key] = (NkiTensor(Layout.whole(ref.tensor)), values)
    return tracer.constants[key][0]


# -- memory operations ---------------------------------------------------------------------
@api("nl.load")
def load(src: NkiTensor, *, mask: Any = None, dtype: Any = None, **_kw: Any) -> NkiTensor:
    if not isinstance(src, NkiTensor):
        raise fail(f"nl.load of {shown(src)}: it loads a tensor in HBM (a kernel argument or an nl.ndarray), "
                   "indexed as a tile")
    if not src.shape and current().generation != "legacy":  # (legacy: a [1, 1] tile, as result_tile makes it)
        raise fail("nl.load of a single element (every dimension indexed by an integer) gives a tile of no "
                   "dimensions: index with ranges, e.g. x[0:1, 1:2] for a [1, 1] tile")
    if isinstance(src, OutsideView):  # past its tensor's end: read by nothing when the mask keeps nothing
        return _result(src.shape, dtype or src.dtype, "sbuf", lambda dst: ops.dma(dst, ops.lay(src)), mask, ())
    if src.buffer != "hbm":
        if current().generation == "legacy":  # NKI's err_unsupported_memory, the error page's own example
            raise fail(f"nl.load expects its source in HBM, but got a tile in {src.buffer} ({src.name}): a tile on "
                       "chip is already loaded (use it as it is, or nl.copy it)")
        # NKI 0.7 moved nl.shared_identity_matrix to SBUF; kernels written when it was in HBM load it
        return copy(src, dtype=dtype, mask=mask)
    order = _broadcast_order(src.layout)  # x[jf, ip]: a [len(ip), len(jf)] tile, read transposed
    if order is None:
        return _result(src.shape, dtype or src.dtype, "sbuf", lambda dst: ops.dma(dst, ops.lay(src)), mask, (src,))
    shape = tuple(src.layout.axes[k][2] for k in order)
    # (the source as the call emits it, restricted by the mask, then in the tile's order; the tile
    # keeps the iterators in its own order: a square one took the view's, and its copy undid the
    # transpose, a probe)
    return _result(shape, dtype or src.dtype, "sbuf", lambda dst: ops.dma(dst, ops.lay(src).permuted(order)),
                   mask, (NkiTensor(src.layout.permuted(order)),))


def _broadcast_order(view: Layout) -> tuple[int, ...] | None:
    """The order of a DRAM view's axes that numpy's broadcasting gives its index vectors, when
    it is not theirs: ``x[jf, ip]``, with ``ip = nl.arange(P)[:, None]`` and ``jf =
    nl.arange(F)[None, :]``, is a ``[P, F]`` tile whose element ``[p, f]`` is ``x[f, p]`` (a load
    read transposed, as the store ``y[jf, ip]`` writes one).  None unless every axis has one
    iterator, their positions differ from the axes' order and nothing else (a view's limits,
    an indirect row) hangs on the axes."""
    if view.on_chip or view.tags is None or view.limits is not None or view.indirect is not None:
        return None  # (every tile assignment asks: the cheap answers first)
    its = view.iterators() or ()
    if len(its) != len(view.axes) or len({it.ndim for it in its}) != 1 or len({it.pos for it in its}) != len(its):
        return None
    order = tuple(sorted(range(len(its)), key=lambda k: its[k].pos))
    return None if order == tuple(range(len(its))) else order


@api("nl.load_transpose2d")
def load_transpose2d(src: NkiTensor, *, mask: Any = None, dtype: Any = None, **_kw: Any) -> NkiTensor:
    if len(src.shape) != 2:
        raise fail("nl.load_transpose2d loads a 2-D tensor")

    def emit(dst: Layout) -> None:
        layout = ops.lay(src)
        ops.dma(dst, Layout(layout.tensor, layout.axes[::-1], layout.offset, layout.partitions))

    return _result(src.shape[::-1], dtype or src.dtype, "sbuf", ops.swapped_by_mask(emit, mask, src), mask)


@api("nl.store")
def store(dst: NkiTensor, value: Any, *, mask: Any = None, **_kw: Any) -> None:
    for side, what, want in ((dst, "into", "HBM"), (value, "from", "SBUF")):  # (each ran: kernel-mistake probes)
        if is_tile(side) and (side.buffer == "hbm") != (want == "HBM") and current().generation == "legacy":
            raise fail(f"nl.store stores {what} {want} (its page: an SBUF tile into an HBM tensor), not {what} "
                       f"{side.name} in {side.buffer}: assign the tile (t[...] = value), nl.copy or nl.load it")
    if not is_tile(value):  # the API page: "value - An SBUF tile"
        number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
        shape = tuple(dst.shape) if is_tile(dst) else ()  # an element or a row of DRAM: a 2-D tile on chip
        shape = shape if len(shape) > 1 else (shape[0], 1) if shape else (1, 1)
        if not number or not is_tile(dst) or shape[0] > 128:
            raise fail(f"nl.store stores a tile, not {shown(value)}: store nl.full(shape, value, dtype) (or "
                       f"nl.zeros) of the destination's shape")
        value = full(shape, value, dtype=dst.dtype, buffer=sbuf)  # (NxDI stores -9984.0: the compiler's tile)
    assign(dst, value, mask=mask)


@api("nl.copy")
def copy(x: Any, dtype: Any = None, *, mask: Any = None, engine: Any = None, **_kw: Any) -> NkiTensor:
    x = index_values(x)
    operand_rules.on_chip("nl.copy", x=x)  # (an HBM tensor ran, as a DMA: a probe)
    return _result(x.shape, dtype or x.dtype, "sbuf", lambda dst: ops.copy(dst, ops.lay(x), engine), mask, (x,))


def static_cast(x: Any, dtype: Any) -> Any:
    """``nl.static_cast(x, dtype)``: the values of ``x`` converted to ``dtype``, as C++'s
    ``static_cast`` converts a value (a reinterpretation of its bits would be a
    ``reinterpret_cast``).  No API page documents it; public code calls it on numpy arrays in
    test harnesses (``nl.static_cast(np.random.random_sample(shape), nl.bfloat16)``), where it
    is numpy's ``astype``, and on tiles inside kernels (``nl.static_cast(idx8[:, 0:1],
    nl.uint32)`` after ``nisa.nc_find_index8``), where it is the copy ``nl.copy(x, dtype=dtype)``
    makes."""
    if not tracing():
        return np.asarray(x).astype(np.dtype(dtype))
    return _static_cast(index_values(x), dtype)


@api("nl.static_cast")
def _static_cast(x: Any, dtype: Any) -> Any:
    if not is_tile(x):  # a number or an array the kernel made in Python: numpy's conversion
        if not isinstance(x, (int, float, np.number, np.ndarray)) or isinstance(x, bool):
            raise fail(f"nl.static_cast converts a tile or a number, not {shown(x)}")
        return np.asarray(x).astype(np.dtype(to_dtype(dtype)))
    operand_rules.on_chip("nl.static_cast", x=x)
    return copy(x, dtype=dtype)


@api("nl.broadcast_to")
def broadcast_to(x: NkiTensor, shape: Any, dtype: Any = None) -> NkiTensor:
    x = index_values(x)
    operand_rules.same_rank("nl.broadcast_to", x, shape)  # (a (128, 1) tile to (128, 4, 64) ran: a probe)
    view = x.broadcast_to(shape)
    return view if dtype is None or to_dtype(dtype) == x.dtype else copy(view, dtype=dtype)


@api("nl.expand_dims")
def expand_dims(x: NkiTensor, axis: Any) -> NkiTensor:
    """A view with a new axis of size 1 at each of ``axis`` (numpy's rule)."""
    axes = [axis] if isinstance(axis, int) else list(axis)
    if isinstance(x, ArangeExpr):  # an index vector gains the axes as nl.arange(F)[None, :] does: its values then
        ndim = len(x.shape) + len(axes)
        new = {a % ndim for a in axes}
        return index_values(x[tuple(None if a in new else slice(None) for a in range(ndim))])
    shape = list(x.shape)
    for a in sorted(a % (len(shape) + len(axes)) for a in axes):
        shape.insert(a, 1)
    return x.reshape(tuple(shape))


@api("nl.broadcast_to")
def broadcast_partitions(src: NkiTensor, shape: tuple[int, ...]) -> NkiTensor:
    """A one-partition tile copied to ``shape[0]`` partitions of a fresh SBUF tile
    (:func:`neuronsim.machine.nki.ops.spread`: one Vector Engine stream shuffle per quadrant)."""
    tracer = current()
    tracer.flush()
    row = src.layout.broadcast_to((1, *shape[1:]))  # along the free axes first: a view
    spread: list = []
    tracer.emit(lambda: spread.append(ops.spread(row, int(shape[0]))))
    return NkiTensor(spread[0])


@api("=")
def assign(dst: NkiTensor, value: Any, mask: Any = None) -> None:
    """``dst[...] = value``: the pending call writes ``dst`` directly, else a copy (a DMA
    when either side is in DRAM) or a memset of a number."""
    tracer = current()
    if isinstance(dst, OutsideView) and (isinstance(value, OutsideView) or as_mask(mask) is NEVER or (
            is_tile(value) and (pending := tracer.pending) is not None and pending.proxy is value
            and pending.mask is NEVER)):  # a block past the last, written by nothing: its update or the call
        tracer.take_pending(value)  # writing it is masked off (t[k] += x re-assigned; blockwise matmul's
        return  # prefetch of block i + 1 into its tile of blocks, mask=(i < N - 1))
    order = _broadcast_order(dst.layout)  # y[jf, ip] = t: a [len(ip), len(jf)] view, written transposed
    if order is not None:  # (a square one was written straight: a probe; load reads likewise)
        dst = NkiTensor(dst.layout.permuted(order))
    pending = tracer.take_pending(value) if is_tile(value) else None
    if pending is not None:
        if mask is not None and pending.mask is None and ops.elementwise(pending.emit):
            pending.mask = as_mask(mask)  # (it bounds the result where it bounds the operands)
        if prod(pending.proxy.shape) > prod(dst.shape):  # (it was refused at the call's line, as its emission)
            raise fail(f"assigning a {tuple(pending.proxy.shape)} result to a {tuple(dst.shape)} tile: the "
                       f"destination is smaller (the errors page's err_store_dst_shape_smaller_than_other_shape)")
        if (not dst.layout.on_chip and pending.proxy.buffer != "hbm") or prod(pending.proxy.shape) < prod(dst.shape):
            # a compute result stored to DRAM: through SBUF, then a DMA; a result broadcast into
            # a larger tile (x[...] = y of (128, 1) into (128, 512), the error page's "ok"): its
            # own tile first, then the copy broadcasts it
            tracer.pending = pending
            tracer.flush()
        else:
            tracer.emit_pending_into(pending, dst.layout)
            return
    if is_tile(value):
        if value.layout == dst.layout:
            return  # t[...] += x re-assigns the view it updated
        if not dst.layout.on_chip and value.buffer == "psum":  # DMA cannot read PSUM: through SBUF
            value = copy(value)
            tracer.flush()
        tracer.emit(lambda: ops.copy(ops.lay(dst), ops.lay(value)), mask=mask)
    elif isinstance(value, np.ndarray) and value.size > 1:
        raise tracer.refuse("assigning a numpy array to a tile", "load it from a kernel argument")
    else:
        tracer.emit(lambda: ops.memset(ops.lay(dst), value), mask=mask)


@api("+=")
def accumulate(dst: NkiTensor, value: Any, op: str) -> None:
    """``dst += value``: a matmul into a PSUM tile accumulates in place; anything else is an
    ALU op on ``dst`` (``extras["x-nki-accumulate"]``), a matmul added into an SBUF tile too
    (PE writes PSUM only: its result lands in a PSUM tile of its own, then DVE adds it, as
    students' kernels write ``acc_sbuf += nl.matmul(...)``)."""
    tracer = current()
    mark = {"x-nki-accumulate": True}
    pending = tracer.take_pending(value) if is_tile(value) else None
    if pending is not None and pending.mask is NEVER:  # masked away: nothing runs, nothing is accessed
        return
    if (pending is not None and getattr(pending.emit, "accumulates", False) and op == "add"
            and dst.layout.tensor.memory == MemoryKind.PSUM):
        tracer.emit_pending_into(pending, dst.layout, mark, accumulate=ops.opens_accumulation(dst.layout))
        return
    if pending is not None:
        tracer.pending = pending
    tracer.emit(lambda: ops.binary(ops.lay(dst), dst, value, op), extras=mark)


@api("nl.loop_reduce")
def loop_reduce(x: NkiTensor, op: Any, loop_indices: Any = (), *, dtype: Any = None, mask: Any = None,
                **_kw: Any) -> NkiTensor:
    """``acc = nl.loop_reduce(x, op, loop_indices=[k])``: ``acc = op(acc, x)`` on DVE, the
    destination being also the op's other input (as the legacy API page says).  Written
    ``acc = ...`` the destination is the tile ``acc`` names before the statement; written
    ``acc[...] = ...`` it is the assigned view."""
    alu = alu_name(op)
    tracer = current()
    target = _rebound_tile(tracer)
    if target is not None:
        def emit_into_target() -> None:
            _start_from_identity(tracer, ops.lay(target), alu)
            ops.binary(ops.lay(target), target, x, alu)

        tracer.emit(emit_into_target, extras=_loop_reduce_mark(loop_indices), mask=mask)
        return target

    def emit(dst: Layout) -> None:
        _start_from_identity(tracer, dst, alu)
        ops.binary(dst, NkiTensor(dst), x, alu)

    emit.extras = _loop_reduce_mark(loop_indices)  # type: ignore[attr-defined]
    return _result(x.shape, ops.result_dtype(dtype, x), "sbuf", emit, mask)


#: The value a reduction over no iteration holds, per ALU op: ``op(IDENTITY, x) == x``.
_IDENTITY = {"add": 0.0, "subtract": 0.0, "bitwise_or": 0.0, "bitwise_xor": 0.0, "logical_or": 0.0,
             "logical_xor": 0.0, "multiply": 1.0, "logical_and": 1.0, "max": float("-inf"), "min": float("inf")}


def _start_from_identity(tracer: Any, dst: Layout, alu: str) -> None:
    """A ``loop_reduce`` into a tile nothing has written starts from the op's identity, set
    where the tile was declared (before the loops): the reduction over the loop's iterations
    that the call names.  neuronx-cc prints its NKI so, an ``nl.ndarray`` accumulator never
    initialised (NKIBench's rmsnorm_matmul, bmm_softmax, gqa_full, measured correct on trn1);
    a tile the kernel set first (the API page's ``nl.zeros``) keeps its values."""
    name = dst.tensor.name
    if name in tracer.reductions_seen:
        return
    tracer.reductions_seen.add(name)
    if alu in _IDENTITY and dst.on_chip and not tracer.kb.writes_tensor(name):
        tracer.emit_at_declaration(name, lambda: ops.memset(Layout.whole(dst.tensor), _IDENTITY[alu]))


def _loop_reduce_mark(loop_indices: Any) -> dict[str, Any]:
    """On a ``nl.loop_reduce`` instruction: the loops across which the kernel declared the
    reduction (``loop_indices``; the API page writes it inside ``affine_range``), which carry
    no dependence of the kernel's; another loop crossed is a finding as for any value."""
    return {"x-nki-loop-reduce": reduced_loops(loop_indices)}


def _rebound_tile(tracer: Any) -> NkiTensor | None:
    """The tile the kernel's variable holds when the statement being traced rebinds it
    (``acc = nl.loop_reduce(...)``), else None."""
    name = assigned_name(tracer.where()[0])
    frame = tracer.site_frame
    value = frame.f_locals.get(name) if name and frame is not None else None
    return value if is_tile(value) and value.shape else None


def device_print(print_prefix: Any = "", tensor: Any = None, **_kw: Any) -> None:
    """No instruction: neuronsim prints nothing from a traced kernel."""


from neuronsim.machine.nki.arith import *  # noqa: E402,F401,F403  (the math half of nki.language)
from neuronsim.machine.nki.arith import (add, alu_name, bitwise_and, bitwise_or, bitwise_xor, divide,  # noqa: E402
                                         equal, greater, greater_equal, index_values, invert, less, less_equal,
                                         logical_and, logical_not, logical_or, logical_xor, multiply, not_equal,
                                         subtract, transpose)
from neuronsim.machine.ir.dtypes import is_float  # noqa: E402


def _invert(x: NkiTensor) -> NkiTensor:
    """``~x`` of a tile: :func:`logical_not` (``x == 0``), or on an integer tile :func:`invert`."""
    return invert(x) if not is_float(str(x.dtype)) else logical_not(x)


def _integral(value: Any) -> bool:
    return not is_float(str(value.dtype)) if is_tile(value) else isinstance(value, (int, np.integer))


def _bits_or_truth(logical: Any, bitwise: Any) -> Any:
    """``x & y``, ``x | y``, ``x ^ y`` of tiles, as ``~`` is: on integer operands the bitwise
    call (numpy's ``&`` is ``bitwise_and``), else the logical one, which is what they mean of
    masks (a comparison's tile holds 1.0 / 0.0, whose bits no such call takes)."""
    return lambda x, y: bitwise(x, y) if _integral(x) and _integral(y) else logical(x, y)


# What a tile's Python syntax does (tiles sit below these calls and cannot import them).
register_operators(assign=assign, accumulate=accumulate, broadcast_partitions=broadcast_partitions, copy=copy,
                   expand_dims=expand_dims, transpose=transpose, add=add, subtract=subtract, multiply=multiply,
                   divide=divide, less=less, less_equal=less_equal, greater=greater, greater_equal=greater_equal,
                   equal=equal, not_equal=not_equal, invert=_invert, bitwise_or=_bits_or_truth(logical_or, bitwise_or),
                   bitwise_and=_bits_or_truth(logical_and, bitwise_and),
                   bitwise_xor=_bits_or_truth(logical_xor, bitwise_xor))
