"""Reinterpreting a tensor's bytes as another dtype: ``t.view(dtype)`` and ``t.ap(..., dtype=)``.

The NKI API reference (``NkiTensor.view``, ``NkiTensor.ap``) describes both as views that copy
nothing and read the same storage as the new dtype, and its ``NkiTensor`` page has views consumed
by ISA instructions in general (its examples: ``nisa.tensor_copy``, ``nisa.dma_copy``).  MX
kernels use them on the packed weights their frameworks hand over as plain integers (``uint16``
words holding four fp4 codes, ``uint32`` words holding four fp8 codes), then give the view to
``nisa.nc_matmul_mx``.

A view keeps its axes in the tensor's own elements (so every footprint, dependence and race
check sees the same bytes) and names the dtype it is read as (:attr:`Layout.dtype`).  Where
both dtypes are stored alike (``machine/ir/dtypes.py``: ``uint32`` and the fp8 ``_x4`` formats,
``uint16`` and ``float4_e2m1fn_x4``) every element keeps its bits and the ops that read the
view by its dtype (the MX ops) take it from :attr:`Layout.element_dtype`.  Otherwise (a
:attr:`Layout.bitcast` view) an engine reads or writes the bytes reinterpreted: the access
carries ``x-read-as`` and the simulator takes numpy's ``.view`` of the innermost run, whose
element count scales by the size ratio (``machine/sim/memory.py``); a DMA copies the bytes as
they are (``dma_copy`` with ``bitcast``, :func:`dma_bytes`), and a DMA transpose from DRAM
moves whole elements of the dtype read (:func:`permuted`).

A pattern given to ``.ap(pattern, dtype=)`` counts elements of the new dtype (nki-library
stores an fp32 scale as four fp8 bytes, reads pairs of bf16 as one fp32): :func:`bitcast_ap`
turns it into the tensor's own elements over the same bytes.  The innermost run must be
contiguous and hold whole elements of both dtypes, else the kernel line says so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from neuronsim.machine.ir.dtypes import itemsize
from neuronsim.machine.nki.dtypes import to_dtype
from neuronsim.machine.nki.errors import fail, unsupported
from neuronsim.machine.nki.indexing import as_index, without_ellipsis
from neuronsim.machine.nki.layout import F, P, Layout
from neuronsim.machine.nki.tracer import current

__all__ = ["reinterpret", "bitcast_ap", "dma_bytes", "other_size", "permuted", "index_read_as"]

_WHOLE = "the pattern must cover whole elements of the tensor's own dtype"


def reinterpret(layout: Layout, dtype: Any, what: str) -> Layout:
    """``layout`` read as ``dtype`` (``what``: the kernel's spelling, for the refusal)."""
    target, own = str(to_dtype(dtype)), str(layout.tensor.dtype)
    if target == layout.element_dtype:
        return layout
    if itemsize(target) != itemsize(own):  # the innermost run must hold whole elements of both
        inner = [(stride, count) for kind, stride, count in layout.axes if kind != P]
        stride, count = inner[-1] if inner else (1, 1)
        if (count > 1 and stride != 1) or (count * itemsize(own)) % itemsize(target):
            raise fail(f"{what}: reading {layout.tensor.name} ({own}) as {target} needs a contiguous innermost "
                       f"dimension of whole {target} elements ({count} {own} elements with step {stride})")
    return replace(layout, dtype=None if target == own else target)


def other_size(layout: Layout, dtype: Any) -> bool:
    """True when ``dtype`` has another element size than ``layout``'s tensor."""
    return itemsize(str(to_dtype(dtype))) != itemsize(str(layout.tensor.dtype))


def bitcast_ap(layout: Layout, pattern: Any, offset: Any, dtype: Any) -> Layout:
    """``t.ap(pattern, offset, dtype=)`` for a dtype of another element size: the same bytes in
    the tensor's own elements (outer steps and the offset scaled, the innermost run of new
    elements, which must be contiguous, as a run of own elements), read as ``dtype``."""
    target, own = str(to_dtype(dtype)), str(layout.tensor.dtype)
    what = f".ap(dtype=): reading {layout.tensor.name} ({own}) as {target}"
    new_size, own_size = itemsize(target), itemsize(own)
    pairs = [(int(step), int(count)) for step, count in pattern]
    lead, free = (pairs[:1], pairs[1:]) if layout.on_chip else ([], pairs)
    off = as_index(0 if offset is None else offset)
    if off.terms or not free or free[-1][0] != 1:
        raise unsupported(what, "of another element size only with a constant offset and an innermost step of 1")
    if new_size > own_size:
        k = new_size // own_size
        own_pairs = [(step * k, count) for step, count in lead + free[:-1]] + [(1, free[-1][1] * k)]
        start = off.const * k
    else:
        k = own_size // new_size
        outer = lead + free[:-1]
        if free[-1][1] % k or off.const % k or any(step % k for step, _count in outer):
            raise unsupported(what, _WHOLE)
        own_pairs = [(step // k, count) for step, count in outer] + [(1, free[-1][1] // k)]
        start = off.const // k
    return replace(layout.ap(own_pairs, start), dtype=target)


def index_read_as(layout: Layout, key: Any, keep_partition: bool = False) -> Layout:
    """``layout[key]`` of a view read as a dtype of another element size, ``key`` counted in the
    dtype read (``t[g].view(nl.uint8)[:, :4]``, nki-samples' rmsnorm quantization): the outer axes
    as the tensor's (their counts are the same), the innermost by a slice of step 1 that starts
    and ends on whole elements of both dtypes."""
    new, own = itemsize(layout.element_dtype), layout.tensor.itemsize
    parts = without_ellipsis(key if isinstance(key, tuple) else (key,), len(layout.axes))
    if len(parts) == len(layout.axes):
        last = parts[-1]
        count = layout.axes[-1][2] * own // new
        start, stop, step = last.indices(count) if isinstance(last, slice) else (0, 0, 0)
        if step != 1 or (start * new) % own or (stop * new) % own or stop <= start:
            raise unsupported(f"indexing {layout.tensor.name} ({layout.tensor.dtype}) read as {layout.element_dtype} "
                              f"with {last!r} innermost", "a slice of whole elements of both dtypes, step 1")
        parts = parts[:-1] + (slice(start * new // own, stop * new // own),)
    return replace(replace(layout, dtype=None).index(parts, keep_partition=keep_partition), dtype=layout.dtype)


def dma_bytes(dst: Layout, src: Layout, *, engine: str, queue: str, dge: str | None) -> None:
    """A DMA where a side is read as another element size: the source bytes become the
    destination's as they are (``dma_copy`` with ``bitcast``); the byte counts must agree."""
    d, s = dst.storage_view(), src.storage_view()
    if d.count * dst.tensor.itemsize != s.count * src.tensor.itemsize:
        raise fail(f"DMA of {s.count * src.tensor.itemsize} bytes of {src.tensor.name} ({src.element_dtype}) into "
                   f"{d.count * dst.tensor.itemsize} bytes of {dst.tensor.name} ({dst.element_dtype})")
    tracer = current()
    tracer.note_write(dst)
    tracer.kb.instruction("dma_copy", engine, [s], [d], attrs={"dge": dge, "bitcast": True}, queue=queue)


def permuted(layout: Layout, perm: tuple[int, ...]) -> Layout:
    """A reinterpreting DRAM view with its axes, counted in the dtype read, in the order ``perm``
    (a DMA transpose's source): the innermost run of own elements splits into the read elements
    and the bytes of one, which stay innermost, so the transfer copies whole read elements."""
    *outer, (kind, stride, count) = layout.axes
    own, new = layout.tensor.itemsize, itemsize(layout.element_dtype)
    last = len(layout.axes) - 1
    if new < own and perm[-1] != last:  # a read element is part of an own one: it cannot move alone
        raise unsupported(f"nisa.dma_transpose of {layout.tensor.name} ({layout.tensor.dtype}) read as "
                          f"{layout.element_dtype}", "moving elements smaller than the tensor's own apart")
    k = max(new // own, 1)
    axes = (*outer, (kind, stride * k, count // k))
    run = ((F, 1, k),) if k > 1 else ()
    return Layout(layout.tensor, tuple(axes[a] for a in perm) + run, layout.offset, layout.partitions,
                  dtype=layout.dtype)
