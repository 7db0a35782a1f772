"""Views for the scenario builder: tensors sliced like numpy, written as the spec's accesses.

A :class:`TensorRef` is a declared tensor; indexing it gives a :class:`View`, a footprint in
the spec's units (elements): on SBUF / PSUM the first index is the partition dimension
(constant, optionally stepped), the others are free dimensions; in DRAM every dimension is
free.  Slice bounds may be affine :class:`Index` expressions of loop variables, which become
the access's ``per_iteration`` shift.  An integer index selects one element and drops the
dimension.  :meth:`View.access` writes the view as an :class:`~neuronsim.machine.ir.program.Access`, defaults
omitted and adjacent dimensions merged, so it enumerates exactly the elements numpy's
slicing would, in the same (row-major) order.

>>> from neuronsim.machine.ir.program import MemoryKind, Tensor
>>> t = TensorRef(Tensor("t", MemoryKind.SBUF, "float32", (128, 4, 64)))
>>> k = Index(0, (("k", 1),))
>>> a = t[0:64, k, 0:64:2].access()
>>> a.partitions, a.offset, a.pattern, a.per_iteration
((0, 64, 1), None, ((2, 32),), (('k', 64),))
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from math import prod
from typing import Any

from neuronsim.machine.ir.dtypes import READ_AS_KEY, itemsize
from neuronsim.machine.ir.program import Access, MemoryKind, Tensor, frozen_mapping
from neuronsim.machine.ir.fast_dataclasses import quick_init

__all__ = ["Index", "View", "TensorRef", "Operand", "as_view", "is_int"]

def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@quick_init
@dataclass(frozen=True, slots=True)
class Index:
    """An affine index ``const + sum(coeff * loop)``: a slice bound or a tile number.

    >>> k = Index(0, (("k", 1),))
    >>> (k + 1) * 128, (128 * k - 64).const
    (Index(const=128, terms=(('k', 128),)), -64)
    """

    const: int = 0
    terms: tuple[tuple[str, int], ...] = ()

    @staticmethod
    def of(value: Any) -> Index:
        if isinstance(value, Index):
            return value
        if is_int(value):
            return Index(value)
        raise TypeError(f"an index is an integer or an affine expression of loop variables, not {value!r}")

    def __add__(self, other: Any) -> Index:
        other = Index.of(other)
        terms = dict(self.terms)
        for loop, coeff in other.terms:
            terms[loop] = terms.get(loop, 0) + coeff
        return Index(self.const + other.const, tuple((k, c) for k, c in terms.items() if c))

    __radd__ = __add__

    def __mul__(self, factor: Any) -> Index:
        if not is_int(factor):
            raise TypeError("loop indices multiply by integers only (accesses are affine)")
        return Index(self.const * factor, tuple((k, c * factor) for k, c in self.terms if c * factor))

    __rmul__ = __mul__

    def __neg__(self) -> Index:
        return self * -1

    def __sub__(self, other: Any) -> Index:
        return self + -Index.of(other)

    def __rsub__(self, other: Any) -> Index:
        return Index.of(other) - self


@quick_init
@dataclass(frozen=True, slots=True)
class View:
    """A footprint inside one tensor, in the spec's units (elements).

    ``partitions`` is ``(start, count, step)`` (None for DRAM), ``offset`` the affine element
    offset in the free numbering (DRAM: all dimensions), ``dims`` the ``(stride, count)``
    dimensions of the view, outermost first.
    """

    tensor: Tensor
    partitions: tuple[int, int, int] | None
    offset: Index
    dims: tuple[tuple[int, int], ...]
    read_as: str | None = None
    """The dtype an engine reads these bytes as (a reinterpreting view, NKI's ``.view(dtype)`` /
    ``.ap(dtype=)``), or None for the tensor's own.  ``dims`` stay in the tensor's elements (the
    footprint is the same bytes); :attr:`shape` counts the innermost dimension in ``read_as``
    elements, and the access carries it as ``x-read-as`` for the simulator."""

    @property
    def name(self) -> str:
        return self.tensor.name

    @property
    def memory(self) -> MemoryKind:
        return self.tensor.memory

    @property
    def num_partitions(self) -> int:
        """Partitions of the view (1 for DRAM)."""
        return 1 if self.partitions is None else self.partitions[1]

    @property
    def free_count(self) -> int:
        """Elements per partition (DRAM: all elements), of the dtype they are read as."""
        return prod(self._counts())

    def _counts(self) -> tuple[int, ...]:
        counts = tuple(count for _stride, count in self.dims)
        if self.read_as is None:
            return counts
        # the innermost run of own elements holds this many elements of the dtype read
        return (*counts[:-1], counts[-1] * self.tensor.itemsize // itemsize(self.read_as))

    @property
    def count(self) -> int:
        return self.num_partitions * self.free_count

    @property
    def shape(self) -> tuple[int, ...]:
        """Element shape: ``(partitions, counts...)`` on chip, ``(counts...)`` in DRAM."""
        counts = self._counts()
        return counts if self.partitions is None else (self.partitions[1], *counts)

    def access(self, merge: bool = True) -> Access:
        """The :class:`~neuronsim.machine.ir.program.Access`: defaults omitted, adjacent dimensions merged.

        ``merge=False`` keeps every dimension of the view in the pattern, so the access's
        element shape is the view's :attr:`shape` (for ops that number dimensions, like
        ``tensor_reduce`` ``axis``).
        """
        partitions = self.partitions
        if partitions == (0, self.tensor.shape[0], 1):
            partitions = None
        pattern = _merged(self.dims) if merge else self.dims
        extras = frozen_mapping({READ_AS_KEY: self.read_as} if self.read_as is not None else None)
        whole = pattern == ((1, self.tensor.free_elements),)
        if whole and not self.offset.terms and self.offset.const == 0:
            return Access(self.tensor.name, partitions, extras=extras)
        return Access(self.tensor.name, partitions, self.offset.const or None, pattern, self.offset.terms, extras)


def _merged(dims: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """Drop unit dimensions and merge an outer dimension into a contiguous inner one."""
    out: list[tuple[int, int]] = []
    for stride, count in dims:
        if count == 1:
            continue
        if out and out[-1][0] == stride * count:
            out[-1] = (stride, out[-1][1] * count)
        else:
            out.append((stride, count))
    return tuple(out) or ((1, 1),)


def _row_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(prod(shape[d + 1:]) for d in range(len(shape)))


def _partition_range(key: Any, size: int, tensor: str) -> tuple[int, int, int]:
    if isinstance(key, slice):
        start, stop, step = key.start or 0, size if key.stop is None else key.stop, key.step or 1
        if not all(is_int(v) for v in (start, stop, step)):
            raise ValueError(f"{tensor}: the partition index is constant (per_iteration moves the free offset only)")
        count = -(-(stop - start) // step)
        if not (0 <= start < size and step >= 1 and 1 <= count and start + (count - 1) * step < size):
            raise IndexError(f"{tensor}: partitions {start}:{stop}:{step} outside [0, {size})")
        return start, count, step
    if not is_int(key) or not 0 <= key < size:
        raise IndexError(f"{tensor}: partition index {key!r} outside [0, {size}) (or not a constant)")
    return key, 1, 1


def _free_range(key: slice, size: int, tensor: str) -> tuple[Index, int, int]:
    start = Index.of(0 if key.start is None else key.start)
    stop = Index.of(size if key.stop is None else key.stop)
    step = 1 if key.step is None else key.step
    span = stop - start
    if span.terms or not is_int(step) or step < 1:
        raise ValueError(f"{tensor}: slice {key} must have a constant length and a positive step")
    count = -(-span.const // step)
    if count < 1:
        raise IndexError(f"{tensor}: empty slice {key}")
    if not start.terms and not (0 <= start.const and start.const + (count - 1) * step < size):
        raise IndexError(f"{tensor}: slice {key} outside [0, {size})")
    return start, count, step


@dataclass(frozen=True, slots=True)
class TensorRef:
    """A declared tensor: slice it (``t[...]``, :meth:`tile`) or pass it whole to an op."""

    tensor: Tensor

    @property
    def name(self) -> str:
        return self.tensor.name

    @property
    def shape(self) -> tuple[int, ...]:
        return self.tensor.shape

    @property
    def dtype(self) -> str:
        return self.tensor.dtype

    def view(self) -> View:
        """The whole tensor."""
        return self[(slice(None),) * len(self.tensor.shape)]

    def __getitem__(self, key: Any) -> View:
        key = key if isinstance(key, tuple) else (key,)
        shape, name = self.tensor.shape, self.tensor.name
        if len(key) > len(shape):
            raise IndexError(f"{name}: {len(key)} indices for a {len(shape)}-dimensional tensor")
        key = key + (slice(None),) * (len(shape) - len(key))
        partitions = None
        free_shape, free_keys = shape, key
        if self.tensor.memory != MemoryKind.DRAM:
            partitions = _partition_range(key[0], shape[0], name)
            free_shape, free_keys = shape[1:], key[1:]
        offset, dims = Index(), []
        for k, size, stride in zip(free_keys, free_shape, _row_strides(free_shape)):
            if isinstance(k, slice):
                start, count, step = _free_range(k, size, name)
                offset = offset + start * stride
                dims.append((step * stride, count))
            else:
                offset = offset + Index.of(k) * stride  # one element: the dimension goes away
        return View(self.tensor, partitions, offset, tuple(dims) or ((1, 1),))

    def tile(self, index: Any, size: int, dim: int = 0) -> View:
        """Tile number ``index`` (an int or a loop expression) of ``size`` along ``dim``."""
        key: list[Any] = [slice(None)] * len(self.tensor.shape)
        start = Index.of(index) * size
        key[dim] = slice(start, start + size)
        return self[tuple(key)]

    def strided(self, pattern: Iterable[tuple[int, int]], offset: Any = 0,
                partitions: tuple[int, ...] | None = None) -> View:
        """A view in the spec's own terms, for what slicing cannot say (permuted dimensions).

        ``pattern`` is ``[(stride, count), ...]`` outermost first and ``offset`` an element
        offset (loop expressions allowed), both in the free numbering (DRAM: all
        dimensions); ``partitions`` is ``(start, count[, step])``, all by default.

        >>> out = TensorRef(Tensor("out", MemoryKind.DRAM, "float32", (4, 6), address=0))
        >>> out.strided([(1, 6), (6, 4)]).access().pattern   # column-major order
        ((1, 6), (6, 4))
        """
        dims = tuple((int(stride), int(count)) for stride, count in pattern)
        if self.tensor.memory == MemoryKind.DRAM:
            if partitions is not None:
                raise ValueError(f"{self.name}: a DRAM view has no partitions")
            return View(self.tensor, None, Index.of(offset), dims)
        start, count, *step = partitions or (0, self.tensor.shape[0])
        return View(self.tensor, (start, count, step[0] if step else 1), Index.of(offset), dims)


Operand = View | TensorRef


def as_view(operand: Operand) -> View:
    """The :class:`View` of a view, or of a whole tensor."""
    if isinstance(operand, TensorRef):
        return operand.view()
    if isinstance(operand, View):
        return operand
    raise TypeError(f"expected a tensor or a view, got {operand!r}")
