"""Where a tile view sits in its tensor: the logical axes of an NKI view over a program tensor.

A :class:`Layout` is what slicing, ``nl.ds``, ``nl.arange`` indices, ``.ap(...)``, ``.reshape`` and
``.broadcast_to`` produce, and what an instruction's operand becomes: :meth:`Layout.view` writes it as the
builder's :class:`~neuronsim.machine.build.views.View` (the format's ``partitions`` / ``offset`` / ``pattern``).
On SBUF / PSUM one axis is the partition axis (``P``: its range is ``partitions``); every other axis is
a free axis ``(stride, count)`` in the tensor's per-partition element numbering (DRAM: all elements).

>>> from neuronsim.machine.ir.program import MemoryKind, Tensor
>>> t = Layout.whole(Tensor("t", MemoryKind.SBUF, "float32", (128, 4, 64)))
>>> v = t.index((slice(0, 64), 2, slice(0, 64, 2))).view().access()
>>> v.partitions, v.offset, v.pattern
((0, 64, 1), 128, ((2, 32),))
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import prod
from typing import Any

import numpy as np

from neuronsim.machine.ir.dtypes import numpy_dtype
from neuronsim.machine.ir.program import MemoryKind, Tensor
from neuronsim.machine.ir.fast_dataclasses import cached, quick_init
from neuronsim.machine.nki.errors import IndexOutside, NkiError, fail, past_end, shown, unsupported, user_line
from neuronsim.machine.nki.indexing import (ArangeExpr, Iter, as_index, check_broadcastable, concrete, new_iter,
                                           without_ellipsis)
from neuronsim.machine.build.views import Index, View, is_int
from neuronsim.machine.nki.vector_index import (F, P, grid_order as _grid_order, is_index_tile as _is_tile,
                                                vector_limit as _vector_limit)

__all__ = ["Layout", "Indirect", "P", "check_index_tile"]



def _shift(offset: Index, index: Any, stride: int) -> Index:
    """``offset + index * stride`` (plain integers without building Index objects)."""
    if is_int(index):
        return offset if not index or not stride else Index(offset.const + index * stride, offset.terms)
    return offset + as_index(index) * stride


def _row_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(prod(shape[d + 1:]) for d in range(len(shape)))


_INDEX_DTYPES = ("int32", "uint32", "int64", "uint64", "int16", "uint16", "int8", "uint8")


@dataclass(frozen=True)
class Indirect:
    """One axis of a DRAM view driven by a tile of row numbers (an indirect DMA's gather or
    scatter): position ``k`` of the axis is row ``index[k]`` of the tensor's dimension ``dim``.
    The rows are known only on the device; the DMA that uses the view reads them on the traced
    inputs (:mod:`~neuronsim.machine.nki.indirect`).  Until then the axis stands as rows
    ``0 .. count - 1`` (stride ``stride``), which gives the view its shape."""

    index: Layout
    """The index tile: one integer per partition, partition ``k`` for position ``k``."""
    axis: int
    """The view's axis the indices drive."""
    stride: int
    """Elements between consecutive rows of the indexed dimension."""
    size: int
    """Rows of that dimension: an index outside ``[0, size)`` is out of bounds."""
    dim: int


@quick_init
@dataclass(frozen=True)
class Layout:
    tensor: Tensor
    axes: tuple[tuple[str, int, int], ...]
    """``(P, 0, count)`` for the partition axis, ``(F, stride, count)`` for a free one."""
    offset: Index = Index()
    partitions: tuple[int, int, int] | None = None
    tags: tuple[Any, ...] | None = None
    """The :class:`~neuronsim.machine.nki.indexing.Iter` each axis came from (index vectors), or None."""
    limits: tuple[tuple[int, int, int, int] | None, ...] | None = None
    """Per axis of a view that reaches past its tensor (``x[k * 128:(k + 1) * 128]`` of 300 rows, ``x[i_p, 32 +
    i_f]``, a device start read): ``(first, stop, dimension, size)``, the positions along the axis inside dimension
    ``dimension`` (``size`` elements), else None.  Such a view is fine; an access through it must stay in ``[first,
    stop)`` once its mask is applied (:meth:`check_bounds`), as NKI checks the access, not the view."""
    indirect: Indirect | None = None
    """The axis a tile of indices drives, if any (only a DMA's source or destination)."""
    dtype: str | None = None
    """The dtype the view reads its tensor's bytes as, set by a reinterpretation (``.view(dtype)``, ``.ap(dtype=)``:
    :mod:`~neuronsim.machine.nki.reinterpret`); None: the tensor's own."""

    @property
    def element_dtype(self) -> str:
        return self.dtype or str(self.tensor.dtype)

    @property
    def bitcast(self) -> bool:
        """True when the view reads its bytes as a dtype stored otherwise (its axes stay in the
        tensor's own elements; an engine reads the bytes reinterpreted, a DMA copies them as
        they are: :mod:`~neuronsim.machine.nki.reinterpret`)."""
        return self.dtype is not None and numpy_dtype(self.dtype) != numpy_dtype(str(self.tensor.dtype))

    @staticmethod
    def whole(tensor: Tensor, logical: tuple[int, ...] | None = None, par_axis: int = 0) -> Layout:
        """The whole tensor; ``logical`` orders its axes as the kernel declared them (block
        dimensions before the partition axis at ``par_axis``)."""
        if tensor.memory == MemoryKind.DRAM:
            return Layout(tensor, tuple((F, s, n) for s, n in zip(_row_strides(tensor.shape), tensor.shape)))
        free = tensor.shape[1:]
        axes = [(F, s, n) for s, n in zip(_row_strides(free), free)]
        axes.insert(par_axis, (P, 0, tensor.shape[0]))
        return Layout(tensor, tuple(axes), Index(), (0, tensor.shape[0], 1))

    @cached
    def shape(self) -> tuple[int, ...]:
        return tuple(n for _k, _s, n in self.axes)

    @property
    def on_chip(self) -> bool:
        return self.partitions is not None

    def view(self) -> View:
        """The builder's view of this layout (computed once: operands are viewed often)."""
        return self._view

    def storage_view(self) -> View:
        """The builder's view in the tensor's own elements, also of a :attr:`bitcast` view."""
        dims = tuple((s, n) for k, s, n in self.axes if k == F) or ((1, 1),)
        return View(self.tensor, self.partitions, self.offset, dims)

    @cached
    def _view(self) -> View:
        if self.bitcast:  # the same bytes, read by the engine as the view's dtype
            return replace(self.storage_view(), read_as=self.dtype)
        if self.indirect is not None:  # its rows exist only once the DMA reads the indices
            raise fail(f"an access of {self.tensor.name} through a tile of indices is the source or destination "
                       "of a DMA (nl.load, nl.store, nisa.dma_copy) only")
        return self.storage_view()

    # -- basic and advanced indexing ---------------------------------------------------------
    def index(self, key: Any, keep_partition: bool = False) -> Layout:
        if self.bitcast and numpy_dtype(self.dtype).itemsize != self.tensor.itemsize:
            # (a view of as many bytes an element, int8 read as fp8, indexes as its tensor does)
            raise unsupported(f"indexing a view of {self.tensor.name} read as {self.dtype}",
                              "give the whole access to .ap(pattern, dtype=) and copy it by DMA")
        if key is Ellipsis or (type(key) is tuple and len(key) == 1 and key[0] is Ellipsis):
            return self  # ``x[...]``, a tiled kernel's most common index: every axis as it is
        key = key if isinstance(key, tuple) else (key,)
        key = without_ellipsis(key, len(self.axes))
        if self.on_chip and len(self.axes) == 1 and len(key) == 2 and is_int(key[1]) and key[1] == 0:
            key = key[:1]  # a (P,) tile is (P, 1) to NKI: idx_tile[i_p, 0] (not t[:, :, 0] of a 2-D tile)
        if len(key) > len(self.axes):
            raise fail(f"{len(key)} indices for a {len(self.axes)}-dimensional tile of {self.tensor.name}")
        if self.indirect is not None:
            raise unsupported("indexing a view that a tile of indices already drives",
                              "NKI's indirect views cannot be sliced or indexed again")
        if self.tags is None and self.limits is None:
            plain = self._plain(key, keep_partition)
            if plain is not None:
                return plain
        if any(_is_tile(k) for k in key):
            return self._indirect(key)
        if any(isinstance(k, ArangeExpr) for k in key):
            return self._advanced(key)
        layout, axes, tags, limits = self, [], [], []
        old_tags = self.tags or (None,) * len(self.axes)
        old_limits = self.limits or (None,) * len(self.axes)
        for dim, (k, axis, tag, limit) in enumerate(zip(key, self.axes, old_tags, old_limits)):
            whole = isinstance(k, slice) and k.start is None and k.stop is None and k.step is None
            layout, kept = layout._basic(k, axis)
            if kept is None and keep_partition and axis[0] == P:  # NKI 0.7: t[0, :] keeps the partition axis
                kept = (P, 0, 1)
            if kept is not None:
                axes.append(kept)
                tags.append(tag)
                limits.append(limit if whole else layout._past_end(k, axis, dim))
        axes.extend(self.axes[len(key):])
        tags.extend(old_tags[len(key):])
        limits.extend(old_limits[len(key):])
        if keep_partition and self.on_chip and len(axes) == 1:  # and a free axis of one: (P, 1), as NKI 0.7 shows it
            axes.append((F, 0, 1))
            tags.append(None)
            limits.append(None)
        return Layout(layout.tensor, tuple(axes), layout.offset, layout.partitions,
                      tuple(tags) if any(t is not None for t in tags) else None,
                      tuple(limits) if any(lim is not None for lim in limits) else None, dtype=layout.dtype)

    def _plain(self, key: tuple[Any, ...], keep_partition: bool) -> Layout | None:
        """:meth:`index` of integers and integer slices inside their axes (a tiled kernel's
        ``x[k * 128:(k + 1) * 128, 0:512]``, a few an instruction): one layout built, not one an
        axis (15 to 5 us); None for anything else, which the general path takes."""
        const, partitions, axes = self.offset.const, self.partitions, []
        for k, axis in zip(key, self.axes):
            kind, stride, count = axis
            if type(k) is slice:
                if k.start is None and k.stop is None and k.step is None:
                    axes.append(axis)
                    continue
                start, stop, step = k.start, k.stop, k.step  # no truthiness: an end may be a loop index
                start, stop, step = 0 if start is None else start, count if stop is None else stop, \
                    1 if step is None else step
                if type(start) is not int or type(stop) is not int or type(step) is not int \
                        or not 0 <= start < stop <= count or step < 1:
                    return None
                n = -(-(stop - start) // step)
                if kind == P:
                    partitions = (partitions[0] + start * partitions[2], n, partitions[2] * step)
                    axes.append((P, 0, n))
                else:
                    const += start * stride
                    axes.append((F, stride * step, n))
            elif type(k) is int and 0 <= k < count:
                if kind == P:
                    partitions = (partitions[0] + k * partitions[2], 1, 1)
                    if keep_partition:  # NKI 0.7: t[0, :] keeps the partition axis
                        axes.append((P, 0, 1))
                else:
                    const += k * stride
            else:
                return None
        axes.extend(self.axes[len(key):])
        if keep_partition and self.on_chip and len(axes) == 1:  # and a free axis of one: (P, 1)
            axes.append((F, 0, 1))
        return Layout(self.tensor, tuple(axes), self.offset if const == self.offset.const else
                      Index(const, self.offset.terms), partitions, dtype=self.dtype)

    def _past_end(self, k: Any, axis: tuple[str, int, int], dim: int) -> tuple[int, int, int, int] | None:
        """The in-bounds positions of slice ``k`` of ``axis`` when it reaches past the end."""
        if isinstance(k, slice) and is_int(getattr(k.start, "value", None)):  # a device start as read (it wrapped)
            k = slice(k.start.value, getattr(k.stop, "value", k.stop), k.step)
        if not isinstance(k, slice) or not is_int(k.start if k.start is not None else 0):
            return None
        count = axis[2]
        start, step = (k.start or 0), (k.step or 1)
        start += count if start < 0 else 0
        stop = count if k.stop is None else k.stop
        if not is_int(stop) or stop <= count:
            return None
        return (0, max(0, -(-(count - start) // step)), dim, count)

    def check_bounds(self, where: Any = None) -> None:
        """Refuse an access reaching past its tensor (see :attr:`limits`), at kernel line
        ``where`` (the instruction's; default: the line being traced)."""
        for (_kind, _s, n), limit in zip(self.axes, self.limits or ()):
            if limit is not None and n and not (limit[0] <= 0 and n <= limit[1]):
                message = past_end(self.tensor, *limit, n)
                raise NkiError(where, message) if where is not None else fail(message)

    def _basic(self, k: Any, axis: tuple[str, int, int]) -> tuple[Layout, tuple[str, int, int] | None]:
        kind, stride, count = axis
        if isinstance(k, slice):
            if k.start is None and k.stop is None and k.step is None:
                return self, axis  # ``:``, the most common index: the axis as it is
            start = 0 if k.start is None else k.start
            stop = count if k.stop is None else k.stop
            step = 1 if k.step is None else concrete(k.step, "a slice step")
            # negative ends count from the end, as in Python (``a[-64:]`` is the last 64 rows)
            start, stop = (v + count if is_int(v) and v < 0 else v for v in (start, stop))
            span = as_index(stop) - as_index(start)
            if span.terms or step < 1:
                raise fail(f"slice {k} of {self.tensor.name} needs a constant length and a positive step")
            n = -(-span.const // step)
            if n < 1 or (is_int(start) and not 0 <= start):  # past the end: checked on the access (limits)
                raise fail(f"slice {_ends(k)} of {self.tensor.name} "  # (an empty one is no access either)
                           f"{'selects no element' if n < 1 else f'is outside its {count} elements'}")
            if kind == P:
                p0, _pn, ps = self.partitions
                first = concrete(start, "a partition index")
                return Layout(self.tensor, self.axes, self.offset, (p0 + first * ps, n, ps * step),
                    dtype=self.dtype), (P, 0, n)
            shifted = Layout(self.tensor, self.axes, _shift(self.offset, start, stride), self.partitions,
                dtype=self.dtype)
            return shifted, (F, stride * step, n)
        if k is None:
            return self, (F, 0, 1)
        if is_int(k) and k < 0:
            k += count
        if is_int(k) and not 0 <= k < count:
            raise IndexOutside(user_line(), f"index {k} of {self.tensor.name} is outside its {count} elements")
        if kind == P:
            p0, _pn, ps = self.partitions
            return Layout(self.tensor, self.axes, self.offset, (p0 + concrete(k, "a partition index") * ps, 1, 1),
                dtype=self.dtype), None
        return Layout(self.tensor, self.axes, _shift(self.offset, k, stride), self.partitions, dtype=self.dtype), None

    def _indirect(self, key: tuple[Any, ...]) -> Layout:
        """``x[idx_tile, i_f]`` / ``x[idx_tile[i_p, 0], :]``: dimension ``d`` of an HBM tensor indexed by a
        tile of row numbers, one per partition (NKI's indirect DMA).  The view is the one the same key
        with ``0 .. P - 1`` in place of the tile would give, its axis for ``d`` marked :class:`Indirect`."""
        at = [d for d, k in enumerate(key) if _is_tile(k)]
        if len(at) > 1:
            raise unsupported("an access indexed by two tiles of indices", "one indirect dimension per access")
        d = at[0]
        if self.on_chip and (d >= len(self.axes) or self.axes[d][0] != P):  # on chip: partitions only
            raise unsupported(f"a tile of indices into a free dimension of on-chip {self.tensor.name}",
                              "an indirect DMA gathers or scatters HBM rows or on-chip partitions")
        index = key[d].layout
        rows = check_index_tile(index, self.tensor.name)
        _kind, stride, size = self.axes[d]
        # an index tile of rows, one a partition, stands where nl.arange(rows)[:, None] would
        vectors = [k.ndim for k in key if isinstance(k, ArangeExpr) and k.terms]
        it = _partition_iter(index) or (new_iter(0, max(vectors), rows) if vectors else new_iter(d, len(key), rows))
        if any(isinstance(k, ArangeExpr) for k in key):
            out = self._advanced(key[:d] + (ArangeExpr(0, ((it, 1),)),) + key[d + 1:])
            pos = next(p for p, tag in enumerate(out.tags) if it in tag)
        else:
            out = self.index(key[:d] + (slice(None),) + key[d + 1:])
            pos = sum(1 for k in key[:d] if isinstance(k, slice) or k is None)
        axes = out.axes[:pos] + ((out.axes[pos][0], stride, rows),) + out.axes[pos + 1:]  # P: on-chip partitions
        tags = list(out.tags or (frozenset(),) * len(axes))
        tags[pos] = frozenset((it,))
        limits = out.limits[:pos] + (None,) + out.limits[pos + 1:] if out.limits is not None else None
        return replace(out, axes=axes, tags=tuple(tags), limits=limits,
                       indirect=Indirect(index=index, axis=pos, stride=stride, size=size, dim=d))

    def _advanced(self, key: tuple[Any, ...]) -> Layout:
        """Index vectors (``nl.arange`` / ``nl.mgrid``) and integers: one tile axis per
        iterator, in the order the index first uses them, so the partition index's iterator
        comes first (``g[i_one, i_f]`` of ``nl.mgrid[0:128, 0:F, 0:1]`` is a ``(1, F)`` tile);
        past it numpy's broadcast order where a subscript sums two (``t[i0, 2*i1 + i3, 2*i2 + i4]``).
        Each axis is tagged with its iterator: a copy between views of the same iterators in
        another order permutes (``out[i_f, i_p] = t[i_p, i_f]`` stores a transpose)."""
        if any(isinstance(k, slice) for k in key):  # NKI's err_unsupported_mixing_basic_advanced_tensor_indexing
            raise fail(f"indexing {self.tensor.name} mixes slices with nl.arange index vectors, which NKI does not "
                       "take either: index every axis with vectors (nl.arange) or integers, or every one with slices")
        if (self.on_chip or len(key) > 1) and any(isinstance(k, ArangeExpr) and k.terms and k.ndim == 1 for k in key):
            # NKI's err_1d_arange_not_supported: "tile indices ... at least two dimensions"
            raise fail(f"indexing {self.tensor.name} with a 1-D nl.arange is not supported: give the index its "
                       "axes, nl.arange(n)[:, None] for partitions or [None, :] for a free axis")
        exprs = [k if isinstance(k, ArangeExpr) else ArangeExpr(k, ()) for k in key]
        order = list(dict.fromkeys(it for e in exprs for it in sorted(e.iters, key=lambda it: it.pos)))  # first use
        if any(len(e.iters) > 1 for e in exprs[1:]):  # t[i0, 2*i1 + i3, 2*i2 + i4]: numpy's broadcast order
            order = order[:len(exprs[0].iters)] + sorted(order[len(exprs[0].iters):], key=lambda it: it.pos)
        check_broadcastable(self.tensor.name, order)
        offset, strides, partitions, p_iter, shift = self.offset, dict.fromkeys(order, 0), self.partitions, None, 0
        for e, (kind, stride, _count) in zip(exprs, self.axes):
            if kind == P:
                p0, _pn, ps = self.partitions
                first = concrete(e.const, "a partition index")
                moving = [(it, c) for it, c in e.terms if c]
                if len(moving) > 1:
                    raise unsupported("a partition index over two index vectors", "one vector per partition axis")
                if moving:
                    p_iter, coeff = moving[0]
                    partitions = (p0 + first * ps, p_iter.count, coeff * ps)
                else:
                    partitions = (p0 + first * ps, 1, 1)
                    p_iter = next((it for it, _c in e.terms), None)
                continue
            if type(e.const) is int:  # the common case: no Index arithmetic
                shift += e.const * stride
            else:
                offset = offset + as_index(e.const) * stride
            for it, c in e.terms:
                strides[it] += c * stride
        if shift:
            offset = offset + shift
        if p_iter is not None and strides.get(p_iter):
            raise unsupported("an index vector that moves both the partition and a free axis", "diagonal access")
        axes = [(P, 0, partitions[1]) if it == p_iter else (F, strides[it], it.count) for it in order]
        tags = [frozenset((it,)) for it in order]
        limits = [_vector_limit(exprs, self.axes, it) for it in order]
        if self.on_chip and p_iter is None:
            axes.insert(0, (P, 0, partitions[1]))
            tags.insert(0, frozenset())
            limits.insert(0, None)
        elif not self.on_chip and any(not isinstance(k, ArangeExpr) for k in key):
            axes, tags, limits = _grid_order(exprs, order, axes, tags, limits)
        axes.extend(self.axes[len(key):])
        tags.extend([frozenset()] * (len(self.axes) - len(key)))
        limits.extend([None] * (len(self.axes) - len(key)))
        return Layout(self.tensor, tuple(axes), offset, partitions, tuple(tags),
                      tuple(limits) if any(lim is not None for lim in limits) else None, dtype=self.dtype)

    def iterators(self) -> tuple[Any, ...] | None:
        """The iterator of each axis when every axis of count > 1 has exactly one, else None."""
        if self.tags is None:
            return None
        out = []
        for (_kind, _s, n), tag in zip(self.axes, self.tags):
            if n == 1:
                continue
            if tag is None or len(tag) != 1:  # (a view keeps the tags of the axes that have them)
                return None
            out.append(next(iter(tag)))
        return tuple(out)

    def permuted_like(self, other: Layout) -> Layout:
        """This DRAM view with its axes in the iterator order of ``other`` (an on-chip tile
        indexed by the same iterators in another order), else unchanged."""
        mine, theirs = self.iterators(), other.iterators()
        if self.on_chip or not mine or not theirs or mine == theirs or set(mine) != set(theirs):
            return self
        by_iter = {next(iter(tag)): k for k, (axis, tag) in enumerate(zip(self.axes, self.tags)) if axis[2] != 1}
        return self.permuted([by_iter[it] for it in theirs])

    def permuted(self, order: tuple[int, ...] | list[int]) -> Layout:
        """This DRAM view with its axes (and their iterators) taken in ``order``."""
        return Layout(self.tensor, tuple(self.axes[k] for k in order), self.offset, None,
                      tuple(self.tags[k] for k in order), dtype=self.dtype)

    # -- masks, access patterns, reshapes -----------------------------------------------------
    def restrict(self, it: Any, lo: int, hi: int, transposed: bool = False) -> Layout:
        """Keep elements ``[lo, hi)`` along iterator ``it``: the axis indexed by it, or, in a
        view not indexed by iterators, the axis at its position.  ``transposed``: the view is
        a 2-D transpose's destination and the mask is written in its source's indices, so an
        iterator it does not name bounds the axis at the other place."""
        return self if (pos := self.axis_of(it, transposed)) is None else self.restrict_axis(pos, lo, hi)

    def axis_of(self, it: Any, transposed: bool = False) -> int | None:
        """The axis a mask's iterator ``it`` bounds in this view (:meth:`restrict`), or None."""
        if transposed and it.ndim == 2 and len(self.axes) == 2:  # a 2-D transpose's source index: the other axis,
            return 1 - it.pos  # whichever iterators index the view (dst[p, f] = nc_transpose(src[p, f], mask=p < n))
        if self.tags is not None and any(self.tags):
            pos = next((k for k, tag in enumerate(self.tags) if tag and it in tag), None)
            return self._same_axis(it, transposed) if pos is None else pos
        return it.pos if 0 <= it.pos < len(self.axes) else None

    def _same_axis(self, it: Any, transposed: bool = False) -> int | None:
        """The one axis indexed by an iterator at ``it``'s place in the iteration space (its
        position among as many axes) when ``it`` itself indexes none: an index vector is an
        array shaped for broadcasting, so a mask written with ``nl.arange(128)[:, None]`` of its
        own means the access's ``nl.arange(128)[:, None]`` (neuronx-cc prints each operand and
        mask with fresh aranges).  None when no axis, or more than one, is at that place."""
        place = 1 - it.pos if transposed and it.ndim == 2 else it.pos
        found = [k for k, tag in enumerate(self.tags) if tag
                 and any(other.pos == place and other.ndim == it.ndim for other in tag)]
        return found[0] if len(found) == 1 else None

    def restrict_axis(self, pos: int, lo: int, hi: int) -> Layout:
        """Keep elements ``[lo, hi)`` of axis ``pos`` (an axis of indices: those indices)."""
        if not 0 <= pos < len(self.axes):
            return self
        kind, stride, count = self.axes[pos]
        if count == 1:
            return self
        hi = min(hi, count)
        axes = list(self.axes)
        axes[pos] = (kind, stride, max(0, hi - lo))
        limits = self.limits
        if limits is not None and limits[pos] is not None:  # positions now count from lo
            first, stop, dim, size = limits[pos]
            limits = limits[:pos] + ((first - lo, stop - lo, dim, size),) + limits[pos + 1:]
        indirect = self.indirect
        if indirect is not None and pos == indirect.axis:  # the rows are the indices kept
            index = indirect.index
            kept = index.restrict_axis(next(k for k, axis in enumerate(index.axes) if axis[0] == P), lo, hi)
            return replace(self, axes=tuple(axes), limits=limits, indirect=replace(indirect, index=kept))
        if kind == P:
            p0, _pn, ps = self.partitions
            return Layout(self.tensor, tuple(axes), self.offset, (p0 + lo * ps, max(0, hi - lo), ps), self.tags,
                          limits, indirect, dtype=self.dtype)
        return Layout(self.tensor, tuple(axes), self.offset + lo * stride, self.partitions, self.tags, limits, indirect,
            dtype=self.dtype)

    def rows(self, first: int, step: int) -> Layout:
        """This view with its indirect axis made rows ``first, first + step, ...`` (an
        ordinary view: the indices are known)."""
        indirect = self.indirect
        kind, _stride, count = self.axes[indirect.axis]
        if kind == P:  # an on-chip tile's partitions, picked by the indices
            p0, _n, ps = self.partitions
            return Layout(self.tensor, self.axes, self.offset, (p0 + first * ps, count, ps * step), self.tags,
                          self.limits)
        axes = self.axes[:indirect.axis] + ((kind, indirect.stride * step, count),) + self.axes[indirect.axis + 1:]
        return Layout(self.tensor, axes, self.offset + first * indirect.stride, self.partitions, self.tags,
                      self.limits, dtype=self.dtype)

    @property
    def empty(self) -> bool:
        return any(n == 0 for _k, _s, n in self.axes)

    def ap(self, pattern: Any, offset: Any = 0) -> Layout:
        """``tensor.ap(pattern=[[step, count], ...], offset=...)``: a physical access pattern
        over the whole tensor; on chip the first pair is the partition axis (its step in
        partitions, or in elements of a partition row)."""
        self._direct("an .ap() access pattern")
        pairs = _pattern_pairs(pattern)
        off = as_index(offset)
        if not self.on_chip:
            return Layout(self.tensor, tuple((F, s, n) for s, n in pairs), off, dtype=self.dtype)
        row = self.tensor.free_elements
        (pstep, pcount), free = pairs[0], pairs[1:]
        if off.terms:
            raise unsupported("an .ap() offset that depends on a loop variable on chip", "unroll the loop")
        if pcount > 1 and pstep != row:
            # the access-pattern guide: on NeuronCore v2 to v4 the partitions of an SBUF / PSUM
            # access are contiguous, the first step the free dimension's element count
            raise fail(f"an .ap() on chip steps {pstep} elements between partitions: the first step must be the "
                       f"tile's {row} elements a partition (partition accesses are contiguous on NeuronCore "
                       f"v2 to v4; a step of {2 * row} would read every other partition)")
        if row > 1 and pstep % row == 0:
            pstep //= row
        start, foff = divmod(off.const, row)
        axes = ((P, 0, pcount),) + tuple((F, s, n) for s, n in free)
        return Layout(self.tensor, axes, Index(foff), (start, pcount, max(pstep, 1)), dtype=self.dtype)

    def _direct(self, what: str) -> None:
        if self.indirect is not None:
            raise unsupported(f"{what} of a view that a tile of indices drives",
                              "NKI's indirect views cannot be reshaped or re-addressed")

    def contiguous(self) -> bool:
        free = [(s, n) for k, s, n in self.axes if k == F and n > 1]
        expect = 1
        for s, n in reversed(free):
            if s != expect:
                return False
            expect *= n
        return True

    def reshape(self, shape: tuple[int, ...]) -> Layout:
        if not isinstance(shape, (tuple, list)) or not all(isinstance(n, (int, np.integer)) for n in shape):
            raise fail(f"reshape to {shape!r}: a shape is a tuple of integers")
        shape = tuple(int(n) for n in shape)
        self._direct("a reshape")
        if prod(shape) != prod(self.shape):
            raise fail(f"cannot reshape {self.shape} of {self.tensor.name} to {shape}")
        if not self.contiguous():
            raise unsupported(f"reshaping a strided view of {self.tensor.name}", "reshape a contiguous one")
        if not self.on_chip:
            return replace(self, axes=tuple((F, s, n) for s, n in zip(_row_strides(shape), shape)), tags=None,
                           limits=None)
        pcount = self.partitions[1]
        if shape[0] != pcount:
            raise unsupported("a reshape that changes the partition axis", "keep the first dimension")
        free = shape[1:]
        free_axes = tuple((F, s, n) for s, n in zip(_row_strides(free), free))
        return replace(self, axes=((P, 0, pcount),) + free_axes, tags=None, limits=None)

    def broadcast_to(self, shape: tuple[int, ...]) -> Layout:
        shape = tuple(int(n) for n in shape)
        self._direct("broadcast_to")
        added = len(shape) - len(self.axes)
        if self.on_chip and added > 0:  # tiles align on the partition axis: new axes go last
            axes = list(self.axes) + [(F, 0, 1)] * added
            tags = self.tags + (frozenset(),) * added if self.tags is not None else None
        else:
            axes = [(F, 0, 1)] * added + list(self.axes)
            tags = (frozenset(),) * added + self.tags if self.tags is not None and added > 0 else self.tags
        if len(axes) != len(shape):
            raise fail(f"cannot broadcast {self.shape} of {self.tensor.name} to {shape}")
        out = []
        for (kind, stride, count), n in zip(axes, shape):
            if count == n:
                out.append((kind, stride, count))
            elif count == 1 and kind == F:
                out.append((F, 0, n))
            elif count == 1:
                raise unsupported("broadcasting an on-chip tile along partitions",
                                  "broadcast the DRAM source of the load instead")
            else:
                raise fail(f"cannot broadcast {self.shape} of {self.tensor.name} to {shape}")
        return replace(self, axes=tuple(out), tags=tags, limits=None)


def check_index_tile(index: Layout, name: str, columns: bool = False) -> int:
    """The number of indices in ``index``, a tile of row numbers of an access of tensor
    ``name``: integers in SBUF, one per partition (``columns``: or several, ``[P, K]``, read
    column after column, as ``nisa.dma_transpose``'s page allows)."""
    if not index.on_chip:
        raise fail(f"the indices of an access of {name} are read from SBUF: load them into a tile")
    if index.tensor.dtype not in _INDEX_DTYPES:
        raise fail(f"the indices of an access of {name} are integers, not {index.tensor.dtype}")
    rows = index.partitions[1]
    if prod(index.shape) != rows and not (columns and len(index.shape) == 2 and index.shape[0] == rows):
        raise unsupported(f"a tile of indices of shape {index.shape}", "one row index per partition: shape (P, 1)")
    return prod(index.shape)


def _partition_iter(index: Layout) -> Iter | None:
    """The index vector that indexed the partition axis of a tile of indices (``idx[i_p, 0]``):
    a mask on it then keeps the same indices."""
    for (kind, _s, _n), tag in zip(index.axes, index.tags or ()):
        if kind == P and tag and len(tag) == 1:
            return next(iter(tag))
    return None


def _pattern_pairs(pattern: Any) -> list[tuple[int, int]]:
    """``.ap(pattern=[[step, count], ...])`` as integer pairs; anything else refused at the line."""
    pairs = list(pattern) if isinstance(pattern, (tuple, list)) else None
    if not pairs or not all(isinstance(p, (tuple, list)) and len(p) == 2 and
                            all(isinstance(v, (int, np.integer)) for v in p) for p in pairs):
        raise fail(f"pattern={shown(pattern)}: an access pattern is a list of [step, count] pairs of integers")
    if any(s < 0 for s, _n in pairs):
        raise unsupported("a negative step in an access pattern", "neuronsim's access patterns step forward: "
                                                                  "walk the elements in increasing order")
    return [(int(s), int(n)) for s, n in pairs]


def _ends(k: slice) -> str:
    """``start:stop`` of ``k`` as the kernel wrote it."""
    return f"{'' if k.start is None else k.start}:{'' if k.stop is None else k.stop}"
