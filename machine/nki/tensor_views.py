"""NkiTensor's shape views of the current API (NKI 0.6 / 0.7): ``permute``, ``broadcast``,
``expand_dim``, ``squeeze_dim``, ``reshape_dim`` and ``flatten_dims``, each a new
:class:`~neuronsim.machine.nki.layout.Layout` of the same bytes (no data moves, as the
``nki.language.NkiTensor`` reference says of every view).  ``slice`` and ``select`` are
indexing (:meth:`NkiTensor.__getitem__ <neuronsim.machine.nki.tiles.NkiTensor.__getitem__>`).

The reference's constraints are kept, each refused at the kernel line that breaks it: on an
on-chip tensor dimension 0 is the partition axis, which only ``permute`` may name, and in
first place; a broadcast or squeezed dimension has size 1; merged dimensions lie contiguous.
A view keeps the index vectors (``tags``) and the out-of-bounds marks (``limits``) of the
axes it keeps, each moved with its axis.
"""

from __future__ import annotations

from dataclasses import replace
from math import prod
from typing import Any

from neuronsim.machine.nki.errors import fail, unsupported
from neuronsim.machine.nki.layout import F, Layout

__all__ = ["permute", "broadcast", "expand_dim", "squeeze_dim", "reshape_dim", "flatten_dims"]


def permute(layout: Layout, dims: tuple[int, ...]) -> Layout:
    """Dimensions in the order ``dims`` (a permutation; on chip ``dims[0] == 0``)."""
    dims = tuple(int(d) for d in dims)
    if sorted(dims) != list(range(len(layout.axes))):
        raise fail(f"permute{dims}: not a permutation of the {len(layout.axes)} dimensions of {layout.tensor.name}")
    if layout.on_chip and dims[0] != 0:
        raise fail(f"permute{dims}: the partition dimension of {layout.tensor.name} stays first (dims[0] == 0)")
    return _rebuilt(layout, [(layout.axes[d], _tag(layout, d), _limit(layout, d)) for d in dims])


def broadcast(layout: Layout, dim: int, size: int) -> Layout:
    """Dimension ``dim`` (of size 1) repeated ``size`` times (stride 0)."""
    dim = _dim(layout, dim, "broadcast")
    kind, _stride, count = layout.axes[dim]
    if count != 1:
        raise fail(f"broadcast({dim}, {size}): dimension {dim} of {layout.tensor.name} has size {count}, not 1")
    parts = _parts(layout)
    parts[dim] = ((kind, 0, int(size)), parts[dim][1], None)
    return _rebuilt(layout, parts)


def expand_dim(layout: Layout, dim: int) -> Layout:
    """A new dimension of size 1 at position ``dim``."""
    dim = int(dim)
    if not 0 <= dim <= len(layout.axes) or (layout.on_chip and dim == 0):
        raise fail(f"expand_dim({dim}) of {layout.tensor.name}: a position from "
                   f"{1 if layout.on_chip else 0} to {len(layout.axes)}")
    parts = _parts(layout)
    parts.insert(dim, ((F, 0, 1), None, None))
    return _rebuilt(layout, parts)


def squeeze_dim(layout: Layout, dim: int) -> Layout:
    """Dimension ``dim`` (of size 1) removed."""
    dim = _dim(layout, dim, "squeeze_dim")
    if layout.axes[dim][2] != 1:
        raise fail(f"squeeze_dim({dim}): dimension {dim} of {layout.tensor.name} has size "
                   f"{layout.axes[dim][2]}, not 1")
    parts = _parts(layout)
    del parts[dim]
    return _rebuilt(layout, parts)


def reshape_dim(layout: Layout, dim: int, shape: tuple[int, ...]) -> Layout:
    """Dimension ``dim`` split into ``shape`` (one entry may be -1: inferred)."""
    shape = [int(n) for n in shape]
    dim = int(dim)
    if layout.on_chip and dim == 0:
        if len(shape) == 1 and shape[0] in (-1, layout.axes[0][2]):
            return layout  # the trivial split the reference allows on the partition dimension
        raise fail(f"reshape_dim(0, {tuple(shape)}): the partition dimension of {layout.tensor.name} cannot split")
    dim = _dim(layout, dim, "reshape_dim")
    kind, stride, count = layout.axes[dim]
    if shape.count(-1) == 1:
        known = prod(n for n in shape if n != -1)
        shape[shape.index(-1)] = count // known if known and count % known == 0 else 0
    if prod(shape) != count or any(n < 1 for n in shape):
        raise fail(f"reshape_dim({dim}, {tuple(shape)}): dimension {dim} of {layout.tensor.name} has {count} "
                   "elements")
    strides = [stride * prod(shape[k + 1:]) for k in range(len(shape))]
    parts = _parts(layout)
    parts[dim:dim + 1] = [((kind, s, n), None, None) for s, n in zip(strides, shape)]
    return _rebuilt(layout, parts)


def flatten_dims(layout: Layout, start_dim: int, end_dim: int) -> Layout:
    """Dimensions ``start_dim`` to ``end_dim`` (inclusive, contiguous in memory) as one."""
    start, end = _dim(layout, start_dim, "flatten_dims"), _dim(layout, end_dim, "flatten_dims")
    if end < start:
        raise fail(f"flatten_dims({start_dim}, {end_dim}): the first dimension comes before the last")
    axes = layout.axes[start:end + 1]
    for (_k, outer, _n), (_k2, inner, n) in zip(axes, axes[1:]):
        if outer != inner * n:
            raise unsupported(f"flatten_dims({start_dim}, {end_dim}) of a view of {layout.tensor.name} whose "
                              "dimensions are not contiguous", "the reference requires them contiguous in memory")
    merged = (F, axes[-1][1], prod(n for _k, _s, n in axes))
    parts = _parts(layout)
    parts[start:end + 1] = [(merged, None, None)]
    return _rebuilt(layout, parts)


def _dim(layout: Layout, dim: Any, what: str) -> int:
    """``dim`` as a position of a free dimension (negative counts from the end)."""
    dim = int(dim)
    dim += len(layout.axes) if dim < 0 else 0
    if not 0 <= dim < len(layout.axes):
        raise fail(f"{what}: {layout.tensor.name} has {len(layout.axes)} dimensions, no dimension {dim}")
    if layout.on_chip and dim == 0:
        raise fail(f"{what}: dimension 0 of {layout.tensor.name} is its partition dimension, which views keep")
    if layout.indirect is not None:
        raise unsupported(f"{what} of a view that a tile of indices drives", "NKI's indirect views are not reshaped")
    return dim


def _tag(layout: Layout, d: int) -> Any:
    return layout.tags[d] if layout.tags is not None else None


def _limit(layout: Layout, d: int) -> Any:
    return layout.limits[d] if layout.limits is not None else None


def _parts(layout: Layout) -> list[tuple[Any, Any, Any]]:
    return [(axis, _tag(layout, d), _limit(layout, d)) for d, axis in enumerate(layout.axes)]


def _rebuilt(layout: Layout, parts: list[tuple[Any, Any, Any]]) -> Layout:
    """``layout`` with these ``(axis, tag, limit)`` in this order; a limit names the tensor's
    dimension it bounds, so moved axes keep theirs."""
    tags = tuple(t for _a, t, _l in parts)
    limits = tuple(lim for _a, _t, lim in parts)
    return replace(layout, axes=tuple(a for a, _t, _l in parts),
                   tags=tags if any(t is not None for t in tags) else None,
                   limits=limits if any(lim is not None for lim in limits) else None)
