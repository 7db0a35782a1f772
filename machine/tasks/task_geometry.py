"""Byte-exact geometry of task-level tensor accesses: which bytes of which storage a view touches.

Every tensor view is a window of a *root* (a function parameter or a ``create`` result).  A root
instance lives in a storage *space*: its own private space, or, when its type carries a
``MemRef``, the allocation ``base`` at ``offset`` bytes (two roots placed in one allocation may
share bytes).  A root's elements sit at ``origin + itemsize * sum(index[k] * stride[k])`` with
the strides of its view (:func:`view_strides`: row-major for ``nd``, the last two dimensions
column-major for ``dn``, or explicit strides).

A :class:`Region` is what one access touches: a box ``start .. start + shape`` in the root's
index space, laid out with the root's strides.  :func:`overlaps` / :func:`shared_bytes` are
exact; :func:`overlaps` answers two boxes in one injective layout by per-dimension interval
tests (no byte enumeration), and anything else by intersecting sorted byte runs.

Examples
--------
>>> root = Region.of(space="x", origin=0, itemsize=4, strides=view_strides((8, 8), None))
>>> top, bottom = root.window((0, 0), (4, 8)), root.window((4, 0), (4, 8))
>>> overlaps(top, bottom), top.byte_range, bottom.byte_range
(False, (0, 128), (128, 256))
>>> left = root.window((0, 0), (8, 2))
>>> overlaps(left, bottom), shared_bytes(left, bottom)[:2]
(True, ((128, 136), (160, 168)))
>>> dn = Region.of("y", 0, 4, packed_strides((4, 6), "dn"))    # column-major in the last two dims
>>> dn.window((0, 0), (4, 1)).byte_runs()                        # one column is contiguous
((0, 16),)
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from math import prod

from neuronsim.machine.model.geometry import ByteSet, element_runs, intersect_intervals

__all__ = ["packed_strides", "view_strides", "is_injective", "Region", "overlaps", "shared_bytes", "covers",
           "byte_ranges_may_overlap", "span_elements", "root_region"]


def packed_strides(shape: tuple[int, ...], layout: str = "nd") -> tuple[int, ...]:
    """Element strides of a packed tensor: row-major (``nd``) or last two dims swapped (``dn``).

    >>> packed_strides((2, 3, 4)), packed_strides((2, 3, 4), "dn")
    ((12, 4, 1), (12, 1, 3))
    """
    order = list(range(len(shape)))
    if layout == "dn" and len(shape) >= 2:
        order[-2], order[-1] = order[-1], order[-2]
    strides = [0] * len(shape)
    step = 1
    for dim in reversed(order):
        strides[dim] = step
        step *= shape[dim]
    return tuple(strides)


def view_strides(shape: tuple[int, ...], view) -> tuple[int, ...]:
    """The strides a view gives a root of ``shape`` (``view`` a TensorView or None)."""
    if view is None:
        return packed_strides(shape)
    if view.strides is not None:
        return tuple(view.strides)
    return packed_strides(shape, view.layout)


def span_elements(shape: tuple[int, ...], strides: tuple[int, ...]) -> int:
    """Elements from the first to one past the last a layout addresses (0 for an empty shape)."""
    if any(n == 0 for n in shape):
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(shape, strides))


def is_injective(extent: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Do distinct indices below ``extent`` always reach distinct elements?

    >>> is_injective((4, 4), (4, 1)), is_injective((4, 4), (2, 1)), is_injective((3,), (0,))
    (True, False, False)
    """
    reach = 0
    for stride, n in sorted((s, n) for s, n in zip(strides, extent) if n > 1):
        if stride <= reach:
            return False
        reach += stride * (n - 1)
    return True


@dataclass(frozen=True, slots=True)
class Region:
    """A box of a root's index space: ``shape`` elements per dimension from ``start``.

    ``space`` identifies the storage (root instance or MemRef allocation), ``origin`` is the
    byte of the root's element 0 in it.
    """

    space: Hashable
    origin: int
    itemsize: int
    strides: tuple[int, ...]
    start: tuple[int, ...]
    shape: tuple[int, ...]
    extent: tuple[int, ...] | None = field(default=None, compare=False)
    """The window's declared shape when a ``valid_shape`` clipped ``shape`` below it (None:
    ``shape``).  A slice of a clipped view is a window of this frame, as the static validator
    checks it against the view's type; only the touched bytes follow ``shape``.  Not compared:
    two regions touching the same box are equal."""

    @classmethod
    def of(cls, space: Hashable, origin: int, itemsize: int, strides: tuple[int, ...],
           shape: tuple[int, ...] | None = None) -> Region:
        """The whole root (``shape`` defaults to one element per stride: give it for real use)."""
        shape = shape if shape is not None else tuple(1 for _ in strides)
        return cls(space, origin, itemsize, tuple(strides), tuple(0 for _ in strides), tuple(shape))

    @property
    def frame(self) -> tuple[int, ...]:
        """The shape a window of this region must stay inside: :attr:`extent`, else :attr:`shape`.

        >>> r = Region.of("x", 0, 4, (8, 1), (32, 8)).clipped((31, 8))
        >>> r.shape, r.frame, r.window((16, 0), (16, 8)).shape
        ((31, 8), (32, 8), (16, 8))
        """
        return self.extent if self.extent is not None else self.shape

    def window(self, offset: tuple[int, ...], shape: tuple[int, ...]) -> Region:
        """The sub-box ``offset .. offset + shape`` relative to this box (a slice of a slice)."""
        if len(offset) != len(self.start) or len(shape) != len(self.start):
            raise ValueError(f"rank {len(offset)} window of a rank {len(self.start)} region")
        start = tuple(a + b for a, b in zip(self.start, offset))
        return Region(self.space, self.origin, self.itemsize, self.strides, start, tuple(shape))

    def clipped(self, valid: tuple[int, ...]) -> Region:
        """Only the first ``valid`` elements per dimension (a view's ``valid_shape``)."""
        return Region(self.space, self.origin, self.itemsize, self.strides, self.start,
                      tuple(max(0, min(n, v)) for n, v in zip(self.shape, valid)), self.frame)

    @property
    def empty(self) -> bool:
        return any(n <= 0 for n in self.shape)

    @property
    def elements(self) -> int:
        return 0 if self.empty else prod(self.shape)

    @property
    def base(self) -> int:
        """Byte of the box's first element."""
        return self.origin + self.itemsize * sum(a * s for a, s in zip(self.start, self.strides))

    @property
    def byte_range(self) -> tuple[int, int]:
        """Smallest half-open byte range covering the box (``(base, base)`` when empty)."""
        base = self.base
        if self.empty:
            return base, base
        return base, base + self.itemsize * span_elements(self.shape, self.strides)

    def byte_runs(self) -> ByteSet:
        """Sorted disjoint half-open byte ranges the box touches."""
        if self.empty:
            return ()
        pattern = tuple((s, n) for s, n in zip(self.strides, self.shape)) or ((1, 1),)
        base, size = self.base, self.itemsize
        return tuple((base + lo * size, base + hi * size) for lo, hi in element_runs(pattern))


def _same_layout(a: Region, b: Region) -> bool:
    return a.origin == b.origin and a.itemsize == b.itemsize and a.strides == b.strides


def overlaps(a: Region, b: Region) -> bool:
    """Exact: do ``a`` and ``b`` share a byte?"""
    if a.space != b.space or a.empty or b.empty:
        return False
    (alo, ahi), (blo, bhi) = a.byte_range, b.byte_range
    if ahi <= blo or bhi <= alo:
        return False
    if _same_layout(a, b):
        extent = tuple(max(x + n, y + m) for x, n, y, m in zip(a.start, a.shape, b.start, b.shape))
        if is_injective(extent, a.strides) and all(a.strides):
            return all(x < y + m and y < x + n for x, n, y, m in zip(a.start, a.shape, b.start, b.shape))
    return bool(intersect_intervals(a.byte_runs(), b.byte_runs()))


def shared_bytes(a: Region, b: Region) -> ByteSet:
    """The bytes ``a`` and ``b`` share, as sorted disjoint half-open ranges."""
    if not overlaps(a, b):
        return ()
    return intersect_intervals(a.byte_runs(), b.byte_runs())


def covers(outer: Region, inner: Region) -> bool:
    """Exact: is every byte of ``inner`` a byte of ``outer``?  (An empty ``inner`` is covered.)

    >>> root = Region.of("x", 0, 4, (8, 1), (8, 8))
    >>> covers(root, root.window((2, 0), (2, 8))), covers(root.window((0, 0), (4, 8)), root.window((2, 0), (4, 8)))
    (True, False)
    >>> covers(root.window((0, 0), (8, 4)), root.window((0, 0), (1, 8)))   # half of a row
    False
    """
    if inner.empty:
        return True
    if outer.space != inner.space or outer.empty:
        return False
    (ilo, ihi), (olo, ohi) = inner.byte_range, outer.byte_range
    if ilo < olo or ihi > ohi:
        return False
    if _same_layout(outer, inner):
        extent = tuple(max(x + n, y + m) for x, n, y, m in zip(outer.start, outer.shape, inner.start, inner.shape))
        if is_injective(extent, outer.strides) and all(outer.strides):
            return all(x <= y and y + m <= x + n
                       for x, n, y, m in zip(outer.start, outer.shape, inner.start, inner.shape))
    runs = inner.byte_runs()
    shared = intersect_intervals(runs, outer.byte_runs())
    return sum(hi - lo for lo, hi in shared) == sum(hi - lo for lo, hi in runs)


def root_region(instance: Hashable, t, scalars: Mapping[str, int]) -> Region:
    """The whole of one root instance of type ``t`` (a TensorType) for runtime ``scalars``.

    The storage is the instance's own (``instance`` is its key: a parameter name, or a
    ``create`` and the execution that made it), or, with a MemRef, the allocation
    ``("memref", base)`` from its evaluated offset; a view's ``valid_shape`` clips it.

    >>> from neuronsim.machine.tasks.ir import MemRef, TensorType
    >>> r = root_region("x", TensorType((4, "n"), "float32", memref=MemRef("hbm", "off", 1024)), {"n": 8, "off": 64})
    >>> r.space, r.byte_range
    (('memref', 'hbm'), (64, 192))
    """
    from neuronsim.machine.ir.dtypes import itemsize
    from neuronsim.machine.tasks.expr import Sym, evaluate

    def value(v):
        return evaluate(Sym(v) if isinstance(v, str) else v, scalars)

    shape = tuple(value(n) for n in t.shape)
    for d, n in enumerate(shape):  # the loader checks static dimensions; these are the runtime ones
        if n < 0:
            raise ValueError(f"dimension {d} is {n} for these scalars; a dimension is at least 0")
    space, origin = instance, 0
    strides = view_strides(shape, t.view)
    if t.memref is not None:
        space, origin = ("memref", t.memref.base), value(t.memref.offset)
        need = itemsize(t.dtype) * span_elements(shape, strides)
        if origin < 0:
            raise ValueError(f"its memref offset is {origin} bytes for these scalars; an offset is at least 0")
        if need > t.memref.size:
            raise ValueError(f"its memref of {t.memref.size} bytes cannot hold it ({need} bytes) for these scalars")
    region = Region.of(space, origin, itemsize(t.dtype), strides, shape)
    if t.view is not None and t.view.valid_shape is not None:
        region = region.clipped(tuple(value(v) for v in t.view.valid_shape))
    return region


def byte_ranges_may_overlap(a_offset: int | None, a_size: int, b_offset: int | None, b_size: int) -> bool:
    """MemRef placement test: two ranges of one allocation; ``None`` is a symbolic offset (may be anywhere).

    >>> (byte_ranges_may_overlap(0, 64, 64, 64), byte_ranges_may_overlap(0, 65, 64, 64),
    ...  byte_ranges_may_overlap(None, 1, 900, 1))
    (False, True, True)
    """
    if a_offset is None or b_offset is None:
        return True
    return a_offset < b_offset + b_size and b_offset < a_offset + a_size
