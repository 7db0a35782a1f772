"""NKI 0.7's tile and block grids: ``nl.tiles``, ``nl.blocks``, ``nl.alloc_tiles``,
``nl.alloc_blocks`` and ``nl.empty_like`` / ``nl.zeros_like`` of a grid.

A grid is a view of a tensor in tile (or block) coordinates: the trailing dimensions of the
source are cut into tiles of ``tile_shape`` (a block groups ``block_shape`` tiles), the leading
dimensions stay whole and are indexed one slab at a time.  Indexing a grid gives a grid (an
integer selects one tile and keeps its dimension; a slice a run of tiles), the last tile of a
dimension is clamped to the source's extent, and ``.data`` is the selection as the tensor view
an instruction takes (the ``nl.tiles`` / ``NkiTileGrid`` / ``NkiBlockGrid`` pages: "Creating and
indexing the view allocates no storage and moves no data").

Every selection of a grid over a tensor is a rectangle of it, so ``.data`` is a plain view.  An
allocated grid (``alloc_tiles``, ``empty_like``) is a tensor of the grid's element shape.  On
chip a grid taller than 128 partitions cannot be one: the ``alloc_blocks`` page says SBUF and
PSUM grids use a "dense rank-two capacity layout", so neuronsim lays its tile rows side by side
along the free dimension (a ``[tile rows' partitions, rows, width]`` tensor, ``Grid.stacked``).
A selection within one tile row is a plain view of it; one across tile rows is no one tensor on
chip (``is_data_representable`` is False, and its ``.data`` is refused at the line).  How the
compiler orders the rows in the free dimension no page says; only such a layout's bytes, never a
value, depend on it.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from neuronsim.machine.nki import language
from neuronsim.machine.nki.errors import fail, unsupported
from neuronsim.machine.nki.tiles import NkiTensor
from neuronsim.machine.nki.tracer import api

__all__ = ["Grid", "TileGrid", "BlockGrid", "tiles", "blocks", "alloc_tiles", "alloc_blocks", "grid_aware",
           "language_names"]


@dataclass(frozen=True, eq=False)  # eq: grids compare as objects (a field-wise == compares tensors)
class Grid:
    """A selection of ``source`` in grid coordinates (see the module doc).

    ``region``: per tiled dimension, the selected ``[start, stop)`` in the source's elements.
    ``block_shape``: tiles per block (a block grid), or None (a tile grid)."""

    source: NkiTensor
    tile_shape: tuple[int, ...]
    region: tuple[tuple[int, int], ...]
    block_shape: tuple[int, ...] | None = None
    stacked: int = 0
    """An on-chip grid taller than 128 partitions (module doc): the partitions of one tile row,
    the source being ``[stacked, rows, width]``; 0 for a grid that is a view of its source."""

    @property
    def _prefix(self) -> int:
        return 0 if self.stacked else len(self.source.shape) - len(self.tile_shape)

    @property
    def _tile_rows(self) -> tuple[int, int]:
        """The tile rows of a stacked grid the selection spans, ``[first, last)``."""
        start, stop = self.region[0]
        return start // self.stacked, -(-stop // self.stacked)

    @property
    def _cells(self) -> tuple[int, ...]:
        """Elements per grid step along each tiled dimension (a tile, or a block of tiles)."""
        blocks = self.block_shape or (1,) * len(self.tile_shape)
        return tuple(t * b for t, b in zip(self.tile_shape, blocks))

    @property
    def shape(self) -> tuple[int, ...]:
        """The leading dimensions' sizes, then the tiles (blocks) along each tiled one."""
        tiled = tuple(-(-(stop - start) // cell) for (start, stop), cell in zip(self.region, self._cells))
        return (*self.source.shape[:self._prefix], *tiled)

    @property
    def element_shape(self) -> tuple[int, ...]:
        return (*self.source.shape[:self._prefix], *(stop - start for start, stop in self.region))

    @property
    def index_step_elements(self) -> tuple[int, ...]:
        return (1,) * self._prefix + self._cells

    @property
    def is_remainder(self) -> bool:
        """True when a selected tile (block) is clamped at the source's edge."""
        return any((stop - start) % cell for (start, stop), cell in zip(self.region, self._cells))

    @property
    def is_data_representable(self) -> bool:
        """A rectangle of a tensor, but across the tile rows of a stacked grid (module doc)."""
        first, last = self._tile_rows if self.stacked else (0, 1)
        return last - first <= 1

    @property
    def dtype(self) -> Any:
        return self.source.dtype

    @property
    def buffer(self) -> Any:
        return self.source.buffer

    @property
    def data(self) -> NkiTensor:
        """The selection as one tensor view."""
        if self.stacked:
            if not self.is_data_representable:
                raise fail(f"{self!r}: .data of a selection across tile rows of an on-chip grid taller than 128 "
                           "partitions is no one tensor (is_data_representable is False: the rows lie side by side "
                           "in the free dimension); take .data one tile row at a time")
            row = self._tile_rows[0]
            (start, stop), *rest = self.region
            key = (slice(start - row * self.stacked, stop - row * self.stacked), row, *(slice(a, b) for a, b in rest))
            return self.source[key]
        key = (slice(None),) * self._prefix + tuple(slice(start, stop) for start, stop in self.region)
        return self.source[key]

    def __getitem__(self, key: Any) -> Grid:
        key = key if isinstance(key, tuple) else (key,)
        if len(key) > len(self.shape):
            raise fail(f"{len(key)} grid coordinates for a grid of {len(self.shape)} dimensions {self.shape}")
        source, prefix, region = self.source, self._prefix, list(self.region)
        slabs = []
        for d, k in enumerate(key):
            if d < prefix:  # a leading, untiled dimension: one slab at a time
                if isinstance(k, slice) and k == slice(None):
                    slabs.append(k)
                    continue
                if isinstance(k, slice) or not _is_int(k):
                    raise unsupported(f"a grid coordinate {k!r} of untiled leading dimension {d}",
                                      "the tile-grid pages index leading dimensions one slab at a time (an int)")
                slabs.append(_coordinate(operator.index(k), self.shape[d], d))
                continue
            t = d - prefix
            (start, stop), cell = region[t], self._cells[t]
            count = self.shape[d]
            if isinstance(k, slice):
                if not all(v is None or _is_int(v) for v in (k.start, k.stop, k.step)) or k.step == 0:
                    raise fail(f"grid slice {k} of dimension {d}: its bounds and step are ints (a step of 1)")
                first, last, step = slice(*(None if v is None else operator.index(v) for v in (k.start, k.stop,
                                                                                                 k.step))).indices(count)
                if step != 1:  # cells apart, which .data cannot always hold as one view
                    raise unsupported(f"a grid slice with step {step}", "runs of adjacent tiles (a step of 1)")
                if last <= first:
                    raise fail(f"grid slice {k} of dimension {d} selects no tile")
            elif _is_int(k):
                first = _coordinate(operator.index(k), count, d)
                last = first + 1
            else:
                raise fail(f"a grid coordinate is an int or a slice, not {k!r}")
            region[t] = (start + first * cell, min(start + last * cell, stop))
        if slabs:
            source = source[tuple(slabs)]
        return replace(self, source=source, region=tuple(region))

    def __repr__(self) -> str:
        kind = "NkiBlockGrid" if self.block_shape else "NkiTileGrid"
        return f"{kind}(shape={self.shape}, tile_shape={self.tile_shape}, element_shape={self.element_shape})"

    __str__ = __repr__


class _Kind(Grid):
    """What every grid a kernel holds refuses, at its line: changing a field, and iteration (a
    grid is indexed by its coordinates)."""

    def __setattr__(self, name: str, value: Any) -> None:
        raise fail(f"setting {name} of a grid: a grid is a view, fixed when made (make another with nl.tiles)")

    def __iter__(self) -> Any:
        raise fail("a grid is not iterable: loop over its coordinates, for i in range(grid.shape[0]): grid[i, ...]")


class TileGrid(_Kind):
    """``nl.NkiTileGrid``: a grid whose cells are tiles."""


class BlockGrid(_Kind):
    """``nl.NkiBlockGrid``: a grid whose cells are blocks of ``block_shape`` tiles."""


def _grid(source: NkiTensor, tile_shape: tuple[int, ...], region: tuple[tuple[int, int], ...],
          block_shape: tuple[int, ...] | None, stacked: int = 0) -> Grid:
    """A tile grid, or a block grid when ``block_shape`` is given."""
    kind = TileGrid if block_shape is None else BlockGrid
    return kind(source, tile_shape, region, block_shape, stacked)


def _coordinate(k: int, count: int, d: int) -> int:
    at = k + count if k < 0 else k
    if not 0 <= at < count:
        raise fail(f"grid coordinate {k} of dimension {d} is outside its {count} tiles")
    return at


def _is_int(value: Any) -> bool:
    """An int, numpy's, or what stands for one (``__index__``: a device scalar, its value on the
    traced inputs recorded as a decision); not a bool."""
    if isinstance(value, (bool, np.bool_)):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def _shape(value: Any, what: str) -> tuple[int, ...]:
    """A shape given as a tuple (or list) of positive ints, numpy's included."""
    if not isinstance(value, (tuple, list)) or not value or not all(_is_int(n) and n > 0 for n in value):
        raise fail(f"{what} is a tuple of positive ints, not {value!r}")
    return tuple(operator.index(n) for n in value)


def _over(source: Any, tile_shape: Any, block_shape: tuple[int, ...] | None, call: str) -> Grid:
    if isinstance(source, Grid) and source.stacked:  # a block's tiles, or a tile grid's blocks, of a tall one
        tile_shape = source.tile_shape if tile_shape is None else _shape(tile_shape, f"{call}: tile_shape")
        if tile_shape[0] != source.stacked:
            raise unsupported(f"{call} of tile shape {tile_shape} over an on-chip grid of {source.stacked}-partition "
                              "tile rows", "the grid's own tile rows (its tile_shape)")
        return _grid(source.source, tile_shape, source.region, block_shape, source.stacked)
    if isinstance(source, Grid):
        tile_shape = source.tile_shape if tile_shape is None else tile_shape
        source = source.data
    if not isinstance(source, NkiTensor):
        raise fail(f"{call}: the source is a tensor or a grid, not {source!r}")
    tile_shape = _shape(tile_shape, f"{call}: tile_shape")
    if len(tile_shape) < 2 or len(tile_shape) > len(source.shape):
        raise fail(f"{call}: tile_shape {tile_shape} needs two dimensions at least and no more than the source's "
                   f"{len(source.shape)}")
    if block_shape is not None:
        block_shape = _shape(block_shape, f"{call}: block_shape")
        if len(block_shape) != len(tile_shape):
            raise fail(f"{call}: block_shape {block_shape} must have as many dimensions as tile_shape {tile_shape}")
    if source.layout.on_chip and len(tile_shape) != len(source.shape):
        raise unsupported(f"{call} of an on-chip tensor whose partition dimension is not tiled",
                          "on chip every dimension is tiled (the pages lay untiled leading ones out in their own "
                          "dense layout)")
    trailing = source.shape[len(source.shape) - len(tile_shape):]
    return _grid(source, tile_shape, tuple((0, n) for n in trailing), block_shape)


@api("nl.tiles")
def tiles(source: Any, *, tile_shape: Any = None, **_kw: Any) -> Grid:
    return _over(source, tile_shape, None, "nl.tiles")


@api("nl.blocks")
def blocks(source: Any, *, tile_shape: Any = None, block_shape: Any = None, **_kw: Any) -> Grid:
    if block_shape is None and isinstance(source, Grid):
        block_shape = source.block_shape
    if block_shape is None:
        raise fail("nl.blocks: block_shape (tiles per block along each tiled dimension) is required")
    return _over(source, tile_shape, block_shape, "nl.blocks")


def _allocated(element_shape: Any, tile_shape: Any, block_shape: Any, buffer: Any, dtype: Any, address: Any,
               name: str, call: str, zeroed: bool = False) -> Grid:
    element_shape = _shape(element_shape, f"{call}: element_shape")
    tile_shape = _shape(tile_shape, f"{call}: tile_shape")
    on_chip = language.is_on_chip(buffer)
    if on_chip and len(element_shape) != len(tile_shape):
        raise unsupported(f"{call} of element shape {element_shape} on chip",
                          "SBUF / PSUM grids with untiled leading dimensions use the pages' own dense layout; "
                          "allocate one slab at a time, or a plain nl.ndarray")
    declare = language.zeros if zeroed else language.ndarray
    if on_chip and element_shape[0] > 128 and tile_shape[0] <= 128:  # tile rows side by side (module doc)
        rows = -(-element_shape[0] // tile_shape[0])
        tensor = declare((tile_shape[0], rows, *element_shape[1:]), dtype, buffer=buffer, name=name, address=address)
        return _grid(tensor, tile_shape, tuple((0, n) for n in element_shape), block_shape, tile_shape[0])
    tensor = declare(element_shape, dtype, buffer=buffer, name=name, address=address)
    return _over(tensor, tile_shape, block_shape, call)


@api("nl.alloc_tiles")
def alloc_tiles(*, tile_shape: Any, element_shape: Any, buffer: Any, dtype: Any, address: Any = None,
                name: str = "", **_kw: Any) -> Grid:
    return _allocated(element_shape, tile_shape, None, buffer, dtype, address, name, "nl.alloc_tiles")


@api("nl.alloc_blocks")
def alloc_blocks(*, tile_shape: Any, block_shape: Any, element_shape: Any, buffer: Any, dtype: Any,
                 address: Any = None, name: str = "", **_kw: Any) -> Grid:
    if block_shape is None:
        raise fail("nl.alloc_blocks: block_shape (tiles per block along each tiled dimension) is required")
    return _allocated(element_shape, tile_shape, block_shape, buffer, dtype, address, name, "nl.alloc_blocks")


def grid_aware(like: Any, fill: float | None) -> Any:
    """``nl.empty_like`` (``fill`` None) / ``nl.zeros_like`` (0.0) taking a grid too: new storage
    of the grid's element shape, as a grid of its tiles (blocks)."""

    what = "nl.empty_like" if fill is None else "nl.zeros_like"

    def call(x: Any, dtype: Any = None, buffer: Any = None, name: str = "", *, transpose_axes: Any = None,
             address: Any = None, **kw: Any) -> Any:
        if not isinstance(x, Grid):
            more = {"transpose_axes": transpose_axes} if transpose_axes is not None else {}
            return like(x, dtype=dtype, buffer=buffer, name=name, address=address, **more, **kw)
        if transpose_axes is not None:
            raise unsupported(f"{what}(transpose_axes=) of a grid", "of a tensor it is modelled")
        return _allocated(x.element_shape, x.tile_shape, x.block_shape, buffer or language._buffer_of(x.source),
                          dtype or x.dtype, address, name, what, zeroed=fill is not None)

    call.__name__ = like.__name__
    return api(what)(call)  # a keyword it does not take is named, as of every NKI call


def language_names(empty_like: Any, zeros_like: Any) -> dict[str, Any]:
    return {"tiles": tiles, "blocks": blocks, "alloc_tiles": alloc_tiles, "alloc_blocks": alloc_blocks,
            "NkiGrid": Grid, "NkiTileGrid": TileGrid, "NkiBlockGrid": BlockGrid,
            "empty_like": grid_aware(empty_like, None), "zeros_like": grid_aware(zeros_like, 0.0)}
