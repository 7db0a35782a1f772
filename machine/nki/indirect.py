"""Indirect DMA: a tile of row numbers as a DMA's index (``nl.load(x[idx, i_f])``,
``nl.store(out[idx[i_p, 0], i_f], t)``, ``nisa.dma_copy(src=x.ap(..., vector_offset=idx))``).

On the device the software DGE reads the index tile and writes one descriptor per row (the
NKI docs of ``nisa.dma_copy``: "when sw_dge is selected, nisa.dma_copy can also perform a
gather or scatter operation, using a list of dynamic indices from SBUF"); the rows exist only
when the kernel runs.  neuronsim traces the kernel with its inputs, so it reads the index
tile's values on them (:func:`~neuronsim.machine.nki.device_values.tile_values`) and emits what the
descriptors do, concretely:

* one ``dge_indices`` instruction on POOL reading the index tile (the descriptor generation:
  what writes the indices is ordered before it, what overwrites them after);
* one ``dma_copy`` (POOL-triggered, software DGE) per *run* of positions whose rows step
  evenly (``0, 2, 4, ...`` is one run, one transfer, as a strided access would be; scattered
  rows are one transfer per row), each with its concrete rows, so the race checker and the
  simulator see the real footprint;
* the index values as a decision in ``extras["x-nki-decisions"]`` with the kernel line: the
  trace is exact for these inputs.

Out-of-bounds rows follow ``oob_mode`` (the legacy calls' ``mode``): ``error`` (the default) is an error at the kernel
line naming the index, ``skip`` drops those rows (the destination keeps what it held), and with
``skip`` also a row inside the dimension whose transfer reaches past the tensor's ends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from math import prod
from typing import Any

import numpy as np

from neuronsim.machine.nki.errors import NkiError, unsupported
from neuronsim.machine.nki.indexing import as_index
from neuronsim.machine.nki.layout import Indirect, Layout, check_index_tile
from neuronsim.machine.nki.device_values import record_decision, tile_values
from neuronsim.machine.nki.tracer import current

__all__ = ["indirect_dma", "runs", "vector_offset_view", "dimension", "repeated_rows_warning"]

Emit = Callable[..., None]


def indirect_dma(dst: Layout, src: Layout, emit: Emit, columns: bool = False) -> None:
    """The DMA ``dst = src`` where one side is indexed by a tile of rows; ``emit(dst, src,
    engine=, dge=)`` emits one ordinary transfer.  ``columns``: a ``[P, K]`` tile of indices
    is read column after column (``nisa.dma_transpose``'s page: ``indices.T.flatten()``)."""
    if dst.indirect is not None and src.indirect is not None:
        raise unsupported("a DMA indexed by tiles of indices on both sides", "gather or scatter, one at a time")
    tracer = current()
    where = tracer.emit_site or tracer.where()[0]
    side, other = (src, dst) if src.indirect is not None else (dst, src)
    indirect = side.indirect
    index = indirect.index
    pos = _matching_axis(other, side, indirect.axis)
    rows = tile_values(index, "an indirect DMA").astype(np.int64)
    if len(index.shape) == 2 and index.shape[1] > 1:  # [P, K]: the page's indices.T.flatten()[:rows]
        if not columns:
            raise unsupported(f"a tile of indices of shape {index.shape} in a gather or scatter",
                              "one row index per partition: shape (P, 1) (several only for nisa.dma_transpose)")
        rows = rows.reshape(index.shape).T.reshape(-1)[:side.shape[indirect.axis]]
    # the legacy pages name it mode= (nisa.dma_copy(..., mode=oob_mode.skip)), the current oob_mode=
    options = tracer.call_options
    skip = _oob_mode(options.get("oob_mode", options.get("mode"))) == "skip"
    past = _overrunning(side, rows) if skip else np.zeros(rows.size, dtype=bool)
    outside = np.flatnonzero((rows < 0) | (rows >= indirect.size) | past)
    name = side.tensor.name
    if outside.size and not skip:
        k = int(outside[0])
        at = f"partition {k}" if len(index.shape) < 2 or index.shape[1] == 1 else \
            f"partition {k % index.shape[0]}, column {k // index.shape[0]}"
        raise NkiError(where, f"index {int(rows[k])} ({at} of {index.tensor.name}) is outside the "
                              f"{indirect.size} rows of {name} along dimension {indirect.dim} "
                              f"(oob_mode=error, the default; oob_mode=skip drops such rows)")
    verb = "gathers" if side is src else "scatters"
    what = f"indirect DMA {verb} rows of {name} at the indices in {index.tensor.name}"
    if outside.size:
        what += f" ({outside.size} out of bounds, skipped)"
    record_decision(what, [int(r) for r in rows], where=where)
    tracer.kb.instruction("dge_indices", "pool", reads=[index.view()])
    keep = np.ones(rows.size, dtype=bool)
    keep[outside] = False
    pieces = [(first, stop, row, step, None) for first, stop, row, step in runs(rows, keep, writes=side is dst)]
    pieces += [(k, k + 1, int(rows[k]), 1, inside)
               for k in np.flatnonzero(past & (rows >= 0) & (rows < indirect.size)).tolist()
               for inside in _inside(side, other, int(rows[k]))]
    for first, stop, row, step, inside in pieces:
        part = side.restrict_axis(indirect.axis, first, stop).rows(row, step)
        piece = other.restrict_axis(pos, first, stop) if pos is not None else other
        if inside is not None:  # one run of a row reaching past the tensor's ends: its elements inside it
            outer, lo, hi = inside
            for (axis, j), other_axis in zip(outer, range(len(piece.axes) - len(outer) - 1, len(piece.axes) - 1)):
                part, piece = part.restrict_axis(axis, j, j + 1), piece.restrict_axis(other_axis, j, j + 1)
            part = part.restrict_axis(len(part.axes) - 1, lo, hi)
            piece = piece.restrict_axis(len(piece.axes) - 1, lo, hi)
        pair = (part, piece) if side is dst else (piece, part)
        emit(*pair, engine="pool", dge="swdge")


def _overrunning(side: Layout, rows: np.ndarray) -> np.ndarray | bool:
    """Which rows' transfers reach past the ends of a DRAM tensor though the row is inside its
    dimension (a run of two rows from the last one: pave's bilinear gather pairs each pixel with
    its right neighbour and skips the edge's), for ``oob_mode=skip``, which the page has "skip
    the runtime out-of-bounds access", a transfer's address checked as it runs; False where the
    offset moves with a loop or the view reads another dtype (the program's bounds check
    stands).  What of such a row lies inside is kept, run by run (:func:`_inside`)."""
    if side.on_chip or side.offset.terms or side.dtype is not None:
        return False
    low = high = side.offset.const
    for k, (_kind, stride, count) in enumerate(side.axes):
        if k != side.indirect.axis:
            low, high = low + min(0, (count - 1) * stride), high + max(0, (count - 1) * stride)
    base = rows * side.indirect.stride
    return (base + low < 0) | (base + high >= prod(side.tensor.shape))


def _inside(side: Layout, other: Layout, row: int) -> list[tuple[tuple[tuple[int, int], ...], int, int]]:
    """The runs of row ``row``'s transfer with elements inside the tensor, each as ``(outer, lo,
    hi)``: ``outer`` the index along each axis of the row but the last (``(axis, index)`` pairs
    of ``side``), ``lo .. hi - 1`` the elements of the run along the last axis inside it (the rest
    skipped, as the page's runtime check skips each out-of-bounds access: a `[2, C]` block of a
    pixel's row and the row below keeps its first row at the bottom edge, probe_bb; a run
    beginning before the tensor or walking backwards keeps its elements inside too, probe_bd).
    Nothing (the row dropped whole) when the runs do not pair one for one with the other side's
    last axis, or do not move."""
    axes = [(k, a) for k, a in enumerate(side.axes) if k != side.indirect.axis]
    if not axes or side.indirect.axis != 0 or axes[-1][1][1] == 0 or other.shape[-1] != axes[-1][1][2]:
        return []
    outer_axes = axes[:-1]
    if outer_axes and tuple(other.shape[-len(axes):-1]) != tuple(count for _k, (_kind, _s, count) in outer_axes):
        return []  # the other side's outer axes do not line up with the row's
    stride, count = axes[-1][1][1], axes[-1][1][2]
    end = prod(side.tensor.shape)
    out = []
    for index in np.ndindex(*(n for _k, (_kind, _s, n) in outer_axes)):
        start = side.offset.const + row * side.indirect.stride
        start += sum(j * step for j, (_k, (_kind, step, _n)) in zip(index, outer_axes))
        # the elements j with 0 <= start + j * stride < end, a range of j for either sign of stride
        first, last = (-start, end - 1 - start) if stride > 0 else (end - 1 - start, -start)
        lo, hi = max(0, -(-first // stride)), min(count, last // stride + 1)
        if lo < hi:
            out.append((tuple((k, j) for j, (k, _a) in zip(index, outer_axes)), lo, hi))
    return out


def runs(rows: np.ndarray, keep: np.ndarray, writes: bool) -> list[tuple[int, int, int, int]]:
    """``(first, stop, row, step)``: positions ``first .. stop - 1`` (all kept) hold rows
    ``row, row + step, ...``, each run as long as it goes.  Steps go forward (an access pattern's
    do); a read may repeat a row (step 0), a write writes each row once per transfer.

    >>> runs(np.array([0, 2, 4, 9, 9, 1]), np.ones(6, bool), writes=True)
    [(0, 3, 0, 2), (3, 4, 9, 1), (4, 5, 9, 1), (5, 6, 1, 1)]
    >>> runs(np.array([0, 2, 4, 9, 9, 1]), np.array([1, 1, 1, 1, 1, 0], bool), writes=False)
    [(0, 3, 0, 2), (3, 5, 9, 0)]
    """
    out: list[tuple[int, int, int, int]] = []
    k, n = 0, rows.size
    while k < n:
        if not keep[k]:
            k += 1
            continue
        stop, step = k + 1, 1
        if stop < n and keep[stop]:
            delta = int(rows[stop] - rows[k])
            if delta > 0 or (delta == 0 and not writes):
                step = delta
                while stop < n and keep[stop] and rows[stop] - rows[stop - 1] == step:
                    stop += 1
        out.append((k, stop, int(rows[k]), step))
        k = stop
    return out


def _matching_axis(other: Layout, side: Layout, axis: int) -> int | None:
    """The axis of ``other`` that moves with the indirect ``axis`` of ``side`` when the DMA
    pairs their elements in row-major order: as many elements outside it, as many along it.
    None for one index (``data[:, idx[0, k]]``, a single dynamic row): all of ``other``
    pairs with it, whatever its axes."""
    outer, count = prod(side.shape[:axis]), side.shape[axis]
    for pos, n in enumerate(other.shape):
        if prod(other.shape[:pos]) == outer and n == count and (n > 1 or pos == len(other.shape) - 1):
            return pos
    if count == 1 and prod(other.shape) == prod(side.shape):
        return None
    raise unsupported(f"an indirect DMA between {side.shape} of {side.tensor.name} and {other.shape} of "
                      f"{other.tensor.name}", "the indexed axis must line up with an axis of the other side")


def _oob_mode(value: Any) -> str:
    """``nisa.oob_mode.skip`` / ``"skip"`` (either generation's enum) as its name."""
    name = getattr(value, "name", value)
    return "skip" if name == "skip" else "error"


def vector_offset_view(layout: Layout, pattern: Any, offset: Any, index: Layout, indirect_dim: Any) -> Layout:
    """``t.ap(pattern=[[step, P], ...], vector_offset=idx, indirect_dim=d)`` of an HBM tensor:
    position ``p`` of the first pair starts at row ``idx[p]`` of dimension ``d`` (the docs'
    gather and scatter examples: one row per partition); the other pairs walk from there."""
    if layout.on_chip:
        raise unsupported("vector_offset= on an on-chip tensor", "an indirect DMA gathers or scatters HBM rows")
    dim = int(indirect_dim)
    stride, size = dimension(layout, dim, "vector_offset=")
    pairs = [(int(s), int(n)) for s, n in pattern]
    whole = Layout(layout.tensor, tuple(("F", s, n) for s, n in pairs), as_index(offset), dtype=layout.dtype)
    count = check_index_tile(index, layout.tensor.name, columns=True)
    if count != pairs[0][1] and not (index.shape[-1] > 1 and count >= pairs[0][1]):
        raise unsupported(f"vector_offset= with {count} indices for a first pattern pair of {pairs[0][1]}",
                          "one index per position of the first pair")
    axes = (("F", stride, pairs[0][1]),) + whole.axes[1:]
    return replace(whole, axes=axes, tags=None,
                   indirect=Indirect(index=index, axis=0, stride=stride, size=size, dim=dim))


def dimension(layout: Layout, dim: int, what: str) -> tuple[int, int]:
    """``(elements per index, indices)`` of dimension ``dim`` of an HBM tensor as the kernel
    sees it: a reshaped view (``x.reshape((T * 4, H // 512, 128)).ap(..., indirect_dim=0)``)
    counts its own rows, not those of the tensor it views."""
    if not 0 <= dim < len(layout.axes):
        raise unsupported(f"{what} with indirect_dim={dim} on the {len(layout.axes)}-dimensional "
                          f"{layout.tensor.name}", "indirect_dim names a dimension of the tensor")
    _kind, stride, count = layout.axes[dim]
    return stride, count


def repeated_rows_warning(call: str, indirect: Indirect) -> None:
    """A warning at the kernel line when a scatter read-modify-write promised unique indices
    (``unique_indices=True``, the default) repeats a row among them: nki-library's scatter-add
    page says "indices within a tile of 128 rows should be unique for correctness" (its dedup
    variant combines repeats on PE first), so the device need not add every repeat as the model
    does (a public MoE scatter-add, every row on one index, came out summed without a word: a
    probe)."""
    rows = tile_values(indirect.index, "an indirect DMA").astype(np.int64).ravel()
    values, counts = np.unique(rows, return_counts=True)
    if (counts > 1).any():
        row = int(values[np.argmax(counts > 1)])
        current().warn("indices", f"{call}: unique_indices=True, but row {row} is scattered to {int(counts.max())} "
                                  f"times in one call: the repeats need not all add on the device (nki-library's "
                                  f"scatter-add keeps a tile's indices unique for correctness); pass "
                                  f"unique_indices=False, or combine the repeats first")
