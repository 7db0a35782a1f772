"""NkiTensor's shape views of the current API (NKI 0.6 / 0.7): ``permute``, ``broadcast``,
``expand_dim``, ``squeeze_dim``, ``reshape_dim``, ``flatten_dims`` and ``rearrange``, each a new
:class:`~neuronsim.machine.nki.layout.Layout` of the same bytes (no data moves, as the
``nki.language.NkiTensor`` reference says of every view).  ``slice`` and ``select`` are
indexing (:meth:`NkiTensor.__getitem__ <neuronsim.machine.nki.tiles.NkiTensor.__getitem__>`).

The reference's constraints are kept, each refused at the kernel line that breaks it: on an
on-chip tensor dimension 0 is the partition axis, which only ``permute`` may name, and in
first place; a broadcast or squeezed dimension has size 1; merged dimensions lie contiguous.
A view keeps the index vectors (``tags``) and the out-of-bounds marks (``limits``) of the
axes it keeps, each moved with its axis.  :class:`BlockPrefix` is ``t[i]`` of a tensor with
two or more block dimensions, waiting for the rest of its block indices.
"""

from __future__ import annotations

from dataclasses import replace
from math import prod
from typing import Any

from neuronsim.machine.build.views import is_int
from neuronsim.machine.nki.errors import NkiError, fail, unsupported
from neuronsim.machine.nki.indexing import ArangeExpr, without_ellipsis
from neuronsim.machine.nki.layout import F, Layout
from neuronsim.machine.nki.vector_index import is_index_tile

__all__ = ["permute", "broadcast", "expand_dim", "squeeze_dim", "reshape_dim", "flatten_dims", "rearrange",
           "transposed_shape", "index_rows", "reshape_rows", "BlockPrefix", "BlocksReadAs"]

#: ``nl.empty_like``'s ``transpose_axes`` by rank (its page: "(1, 0), (2, 1, 0), and (3, 1, 2, 0)").
_TRANSPOSE_ORDERS = {2: (1, 0), 3: (2, 1, 0), 4: (3, 1, 2, 0)}


def transposed_shape(shape: tuple[int, ...], axes: Any) -> tuple[int, ...]:
    """``shape`` in the order ``nl.empty_like(transpose_axes=axes)`` allocates it (the SBUF
    destination of a later ``nisa.dma_transpose``), an order the page lists for its rank."""
    order = _TRANSPOSE_ORDERS.get(len(shape))
    if not isinstance(axes, (tuple, list)) or tuple(axes) != order or any(isinstance(a, bool) for a in axes):
        raise fail(f"nl.empty_like(transpose_axes={axes!r}) of a {len(shape)}-dimensional tensor: the page supports "
                   "(1, 0), (2, 1, 0) and (3, 1, 2, 0) for ranks two to four")
    return tuple(shape[a] for a in order)


def index_rows(layout: Layout, key: Any, keep_partition: bool) -> Layout:
    """Slices and integers into the dimensions of an indirect view (``vector_select``, a tile
    of indices) that its indices do not drive: each gathered row indexed.  The vector_select
    page forbids only slicing "the selected dimension", the slice page "a dimension that
    participates in the indirection"."""
    axis = layout.indirect.axis
    key = without_ellipsis(key if isinstance(key, tuple) else (key,), len(layout.axes))
    whole = axis >= len(key) or (isinstance(key[axis], slice) and key[axis] == slice(None))
    if not whole or any(is_index_tile(k) or isinstance(k, ArangeExpr) for k in key):
        raise unsupported(f"indexing the selected dimension of a view of {layout.tensor.name} that a tile of indices "
                          "drives, or indexing it with index vectors", "its other dimensions take slices and integers")
    out = replace(layout, indirect=None).index(key, keep_partition)
    kept = sum(1 for k in key[:axis] if not is_int(k))  # the axes before it that stay
    return replace(out, indirect=replace(layout.indirect, axis=kept))


def reshape_rows(layout: Layout, shape: tuple[int, ...]) -> Layout:
    """``reshape`` of an indirect view, which keeps its selected dimension (the reshape page:
    "After vector_select: shape[0] must equal t.shape[0]"): each gathered row, contiguous,
    takes the rest of ``shape``."""
    axis, shape = layout.indirect.axis, tuple(int(n) for n in shape)
    if axis != 0 or not shape or shape[0] != layout.shape[0] or prod(shape) != prod(layout.shape):
        raise fail(f"cannot reshape {layout.shape} of {layout.tensor.name}, rows picked by a tile of indices, to "
                   f"{shape}: the first dimension stays (the reshape page: \"shape[0] must equal t.shape[0]\")")
    rows = replace(layout, axes=layout.axes[1:], indirect=None, tags=None, limits=None)
    if not rows.contiguous():
        raise unsupported(f"reshaping a strided view of {layout.tensor.name}", "reshape a contiguous one")
    inner = min((s for _k, s, n in rows.axes if n > 1), default=1)  # 1: the rows' elements follow one another
    strides = [inner * prod(shape[k + 1:]) for k in range(1, len(shape))]
    axes = tuple((F, s, n) for s, n in zip(strides, shape[1:]))
    tags = (layout.tags[0],) + (None,) * len(axes) if layout.tags is not None else None
    limits = (layout.limits[0],) + (None,) * len(axes) if layout.limits is not None and layout.limits[0] else None
    return replace(layout, axes=(layout.axes[0],) + axes, tags=tags, limits=limits)


def permute(layout: Layout, dims: tuple[int, ...]) -> Layout:
    """Dimensions in the order ``dims`` (a permutation; on chip ``dims[0] == 0``)."""
    dims = tuple(int(d) for d in dims)
    if sorted(dims) != list(range(len(layout.axes))):
        raise fail(f"permute{dims}: not a permutation of the {len(layout.axes)} dimensions of {layout.tensor.name}")
    if layout.on_chip and dims[0] != 0:
        raise fail(f"permute{dims}: the partition dimension of {layout.tensor.name} stays first (dims[0] == 0)")
    if layout.indirect is not None and dims[layout.indirect.axis] != layout.indirect.axis:
        raise fail(f"permute{dims}: the dimension a tile of indices selects stays where it is (the permute page: "
                   "after vector_select, \"dims[0] must be 0\")")
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


def rearrange(layout: Layout, src: Any, dst: Any, sizes: dict[str, int]) -> Layout:
    """Named dimensions in einops' way: ``src`` names each dimension (a tuple of names splits
    it, ``sizes`` giving all but one of their lengths), ``dst`` orders the names (a tuple of
    names merges them, contiguous in memory): ``rearrange(('b', ('h', 'w')), ('b', 'w', 'h'),
    {'h': 4})`` of a ``(128, 24)`` tile is its ``(128, 6, 4)`` transpose of ``(128, 4, 6)``.
    The splits, the order and the merges are :func:`reshape_dim`, :func:`permute` and
    :func:`flatten_dims`, whose rules hold (the partition dimension stays first and whole)."""
    src, dst = _pattern(src, "source"), _pattern(dst, "destination")
    if len(src) != len(layout.axes):
        raise fail(f"rearrange: the source pattern names {len(src)} dimensions; {layout.tensor.name}'s view has "
                   f"{len(layout.axes)}")
    names = [name for entry in src for name in entry]
    order = [name for entry in dst for name in entry]
    if len(set(names)) != len(names) or sorted(names) != sorted(order):
        raise fail(f"rearrange: the destination pattern {dst} must name each of the source's {tuple(names)} once")
    for name, size in sizes.items():  # einops refuses a size it cannot use, or that disagrees
        if name not in names:
            raise fail(f"rearrange: a size is given for {name!r}, which the source pattern does not name")
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise fail(f"rearrange: the size of {name!r} is a positive int, not {size!r}")
    for d, entry in enumerate(src):
        if len(entry) == 1 and entry[0] in sizes and sizes[entry[0]] != layout.axes[d][2]:
            raise fail(f"rearrange: {entry[0]!r} is given size {sizes[entry[0]]}; its dimension has "
                       f"{layout.axes[d][2]}")
    for d in reversed(range(len(src))):  # right to left: each split leaves the positions before it
        if len(src[d]) > 1:
            known = [sizes[name] if name in sizes else -1 for name in src[d]]
            if known.count(-1) > 1:
                raise fail(f"rearrange: give the sizes of all but one of {src[d]}")
            layout = reshape_dim(layout, d, tuple(known))
    layout = permute(layout, tuple(names.index(name) for name in order))
    end = len(order)
    for entry in reversed(dst):  # right to left again, merging each group
        if len(entry) > 1:
            try:
                layout = flatten_dims(layout, end - len(entry), end - 1)
            except NkiError as err:  # (the kernel wrote no flatten_dims: say its group, the step as detail)
                raise NkiError(err.path, f"rearrange merging {entry}: {err.message}") from None
        end -= len(entry)
    return layout


def _pattern(pattern: Any, what: str) -> list[tuple[str, ...]]:
    """A rearrange pattern as one tuple of names per dimension: from a tuple whose entries are
    names or tuples of names, or from einops' text (``"b (h w)"``)."""
    if isinstance(pattern, str):
        entries: list[tuple[str, ...]] = []
        group: list[str] | None = None
        for token in pattern.replace("(", " ( ").replace(")", " ) ").split():
            if token == "(" and group is None:
                group = []
            elif token == ")" and group is not None:
                entries.append(tuple(group))
                group = None
            elif token not in ("(", ")") and group is None:
                entries.append((token,))
            elif token not in ("(", ")"):
                group.append(token)
            else:
                raise fail(f"rearrange: unbalanced parentheses in the {what} pattern {pattern!r}")
        if group is not None:
            raise fail(f"rearrange: unbalanced parentheses in the {what} pattern {pattern!r}")
        return entries
    if not isinstance(pattern, (tuple, list)):
        raise fail(f"rearrange: the {what} pattern is a tuple of dimension names, not {pattern!r}")
    out = []
    for entry in pattern:
        group = tuple(entry) if isinstance(entry, (tuple, list)) else (entry,)
        if not group or not all(isinstance(name, str) for name in group):
            raise fail(f"rearrange: the {what} pattern's entries are names or tuples of names, not {entry!r}")
        out.append(group)
    return out


def _dim(layout: Layout, dim: Any, what: str) -> int:
    """``dim`` as a position of a free dimension (negative counts from the end)."""
    dim = int(dim)
    dim += len(layout.axes) if dim < 0 else 0
    if not 0 <= dim < len(layout.axes):
        raise fail(f"{what}: {layout.tensor.name} has {len(layout.axes)} dimensions, no dimension {dim}")
    if layout.on_chip and dim == 0:
        raise fail(f"{what}: dimension 0 of {layout.tensor.name} is its partition dimension, which views keep")
    if layout.indirect is not None and dim <= layout.indirect.axis:  # the axes after it move, not it
        raise unsupported(f"{what} of the selected dimension (or one before it) of a view that a tile of indices "
                          "drives", "NKI's indirect views keep their selected dimension where it is")
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


#: What ``t[i]`` of a tensor of blocks answers as the tensor does (:class:`BlockPrefix`).
_THE_TENSORS = frozenset(("dtype", "buffer", "itemsize"))


class BlockPrefix:
    """``t[0]`` of a tensor with two or more block dimensions: the leading block indices, waiting
    for the rest (``t[0][j][:, :]`` picks the block ``t[0, j]``, as the comma form does).  Its
    ``dtype``, ``buffer`` and ``itemsize`` are the tensor's (nki-samples' flash-attention backward reads
    ``dy_o_sum[i_q_head].dtype``); anything else is asked of a block, once indexed."""

    __slots__ = ("tensor", "prefix")

    def __init__(self, tensor: Any, prefix: tuple[Any, ...]) -> None:
        self.tensor, self.prefix = tensor, prefix

    @property
    def shape(self) -> tuple[int, ...]:
        return self.tensor.shape[len(self.prefix):]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in _THE_TENSORS:
            return getattr(self.tensor, name)
        blocks = len(self.tensor._blocked.spec.blocks)
        raise fail(f".{name} of a tensor with {blocks} block dimensions indexed along {len(self.prefix)} of them: "
                   f"index every block dimension first (t[i][j] or t[i, j]), then ask the block")

    def __getitem__(self, key: Any) -> Any:
        return self.tensor[self.prefix + (key if isinstance(key, tuple) else (key,))]

    def __setitem__(self, key: Any, value: Any) -> None:
        self.tensor[self.prefix + (key if isinstance(key, tuple) else (key,))] = value


class BlocksReadAs:
    """``t.view(dtype)`` of a tensor of blocks (nki-samples' rmsnorm quantization, ``t.view(nl.uint8)[g, :,
    :4]``): indexed, its block indices pick the block, which is read as ``dtype`` and indexed by the rest."""

    __slots__ = ("tensor", "dtype")

    def __init__(self, tensor: Any, dtype: Any) -> None:
        self.tensor, self.dtype = tensor, dtype

    def __getitem__(self, key: Any) -> Any:
        parts = key if isinstance(key, tuple) else (key,)
        blocks = len(self.tensor._blocked.spec.blocks)
        if len(parts) < blocks:
            raise fail(f".view({self.dtype}) of a tensor with {blocks} block dimensions: index every block first")
        read = self.tensor[parts[:blocks]].view(self.dtype)
        return read[parts[blocks:]] if parts[blocks:] else read
