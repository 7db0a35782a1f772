"""Reinterpreting a tensor's bytes as another dtype: ``t.view(dtype)`` and ``t.ap(..., dtype=)``.

The NKI API reference (``NkiTensor.view``, ``NkiTensor.ap``) describes both as views that copy
nothing and read the same storage as the new dtype.  MX kernels use them on the packed weights
their frameworks hand over as plain integers (``uint16`` words holding four fp4 codes,
``uint32`` words holding four fp8 codes), then give the view to ``nisa.nc_matmul_mx``.

neuronsim's program types bytes by their tensor: the simulator reads a tensor's elements as its
dtype's numpy storage.  A view can therefore name another dtype exactly when both are stored
alike (``machine/ir/dtypes.py``: ``uint32`` and the fp8 ``_x4`` formats, ``uint16`` and
``float4_e2m1fn_x4``): every element keeps its bits, and the ops that read the view by its
dtype (the MX ops) take it from :attr:`Layout.element_dtype`.

A pattern given to ``.ap(pattern, dtype=)`` counts elements of the new dtype.  Of another element
size (nki-library stores an fp32 scale as four fp8 bytes, reads pairs of bf16 as one fp32) the
view is kept in the tensor's own elements, covering the same bytes (:func:`bitcast_ap`), and only
a DMA may use it: the transfer copies the bytes as they are (``dma_copy`` with ``bitcast``,
:func:`dma_bytes`).  Any other reinterpretation (the same size stored differently, as ``uint16``
read as ``bfloat16``; another element size through ``.view``, or read by a compute engine) is
refused at the kernel line, naming both dtypes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from neuronsim.machine.ir.dtypes import itemsize, numpy_dtype
from neuronsim.machine.nki.dtypes import to_dtype
from neuronsim.machine.nki.errors import fail, unsupported
from neuronsim.machine.nki.indexing import as_index
from neuronsim.machine.nki.layout import Layout
from neuronsim.machine.nki.tracer import current

__all__ = ["reinterpret", "bitcast_ap", "dma_bytes", "other_size"]

_WHOLE = "the pattern must cover whole elements of the tensor's own dtype"


def reinterpret(layout: Layout, dtype: Any, what: str) -> Layout:
    """``layout`` read as ``dtype`` (``what``: the kernel's spelling, for the refusal)."""
    target, own = str(to_dtype(dtype)), str(layout.tensor.dtype)
    if target == layout.element_dtype:
        return layout
    if numpy_dtype(target) != numpy_dtype(own):
        size = "the same element size stored differently" if numpy_dtype(target).itemsize == \
            numpy_dtype(own).itemsize else "another element size"
        raise unsupported(f"{what}: reading {layout.tensor.name} ({own}) as {target}",
                          f"{size}; neuronsim reinterprets only between dtypes stored alike, as uint32 and the "
                          "fp8 _x4 formats or uint16 and float4_e2m1fn_x4")
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
