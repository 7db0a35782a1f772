"""Split interval maps over partition x byte space: the one overlap structure of the project.

The seed buckets every physical access into a ``boost::icl::split_interval_map``: the map
splits at every access boundary, so each maximal sub-interval (a *cell*) carries exactly the
accesses that touch it, and "two accesses share bytes" becomes "they share a cell".  The race
checker (shadow memory), the flow builder (last writer per byte) and the anti-dependence
builder (last write and reads since, per byte) all keep their per-cell state in these maps:

* :class:`SplitMap` covers one byte range ``[lo, hi)``; ``bounds[k] .. bounds[k+1]`` is cell
  ``k`` with value ``values[k]``.  :meth:`SplitMap.span` splits at ``lo`` and ``hi`` and
  returns the index range of the cells in between.  A split gives both halves the value of
  the cell it cuts: immutable values (ints, tuples) are shared, a mutable value is copied
  with the map's ``copy`` function (the race checker's per-cell histories).
* :class:`CellSpace` keys many maps: partitions are cut into *atoms* (maximal sets of
  partitions that every partition mask of the program either contains whole or misses
  whole), and bytes into *bins* (PSUM per bank, SBUF per :data:`SBUF_BIN`, DRAM per
  :data:`DRAM_BIN`: :func:`cell_bins`).  Bins keep every map short (a list insert is a
  memmove), which is also why the seed bins DRAM; atoms make partition x byte exact with
  one-dimensional maps.

Examples
--------
>>> m = SplitMap(0, 100, -1)
>>> i, j = m.span(10, 20); m.values[i:j] = [7] * (j - i)
>>> i, j = m.span(15, 30); [(m.bounds[k], m.bounds[k + 1], m.values[k]) for k in range(i, j)]
[(15, 20, 7), (20, 30, -1)]
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Hashable, Iterable, Iterator

__all__ = ["SplitMap", "CellSpace", "atoms_of", "cell_bins", "SBUF_BIN", "DRAM_BIN", "Pieces"]

#: Bytes per SBUF bin (a bookkeeping choice: it only bounds the length of each map).
SBUF_BIN = 8192

#: Bytes per DRAM bin, likewise a bookkeeping choice, apart from the machine's
#: ``dram_bin_bytes`` (the seed's conservative bins of ``anti-deps{dram=bins}``, 64 KiB): an
#: access with an element stride cuts a map into a cell per element, and 64 KiB bins of fp32
#: elements held up to 16 K cells, each split a memmove of both lists (performance notes 2.13).
DRAM_BIN = 8192

#: ``[(map, lo, hi), ...]``: a footprint cut at atom and bin boundaries.
Pieces = list


def cell_bins(spec) -> dict[str, int]:
    """Bin bytes of a :class:`CellSpace` per memory for a machine ``spec``: PSUM by bank, SBUF
    and DRAM by their bookkeeping bins (exact whatever the size: a bin only shortens the maps)."""
    return {"sbuf": SBUF_BIN, "psum": spec.psum_bank_bytes, "dram": DRAM_BIN}


class SplitMap:
    """Cells over ``[lo, hi)``, split on demand; ``copy`` duplicates a mutable cell value."""

    __slots__ = ("bounds", "values", "copy", "tag")

    def __init__(self, lo: int, hi: int, empty: object, copy: Callable[[object], object] | None = None,
                 tag: object = None) -> None:
        self.bounds = [lo, hi]
        self.values = [empty]
        self.copy = copy
        self.tag = tag
        """What the owner knows of this map (:class:`CellSpace`: the partition atom)."""

    def split(self, x: int) -> int:
        """Index of the cell starting at ``x`` (``lo <= x <= hi``), splitting if needed."""
        bounds = self.bounds
        k = bisect_left(bounds, x)
        if bounds[k] != x:
            bounds.insert(k, x)
            value = self.values[k - 1]
            if self.copy is not None and value is not None:
                value = self.copy(value)
            self.values.insert(k, value)
        return k

    def span(self, lo: int, hi: int) -> tuple[int, int]:
        """``(i, j)``: cells ``i .. j-1`` tile ``[lo, hi)`` exactly."""
        bounds = self.bounds
        i = bisect_left(bounds, lo)
        # Fast path: the access matches one existing cell (a buffer touched again).
        if bounds[i] == lo and i + 1 < len(bounds) and bounds[i + 1] == hi:
            return i, i + 1
        i = self.split(lo)
        return i, self.split(hi)

    def cells(self) -> Iterator[tuple[int, int, object]]:
        """``(lo, hi, value)`` of every cell."""
        b = self.bounds
        for k, v in enumerate(self.values):
            yield b[k], b[k + 1], v

    def __len__(self) -> int:
        return len(self.values)


def atoms_of(masks: Iterable[int]) -> tuple[dict[int, tuple[int, ...]], list[int]]:
    """Cut partitions into atoms: ``(mask -> atom ids, atom masks)``.

    Two partitions are in one atom iff every mask contains both or neither.

    >>> of, atoms = atoms_of([0b0011, 0b0110])
    >>> [bin(a) for a in atoms], of[0b0110]
    (['0b1', '0b10', '0b100'], (1, 2))
    """
    masks = sorted(set(m for m in masks if m))
    signature: dict[tuple[int, ...], int] = {}
    atom_masks: list[int] = []
    atom_of_partition: dict[int, int] = {}
    union = 0
    for m in masks:
        union |= m
    p = 0
    while union >> p:
        if union >> p & 1:
            bit = 1 << p
            sig = tuple(k for k, m in enumerate(masks) if m & bit)
            a = signature.get(sig)
            if a is None:
                a = signature[sig] = len(atom_masks)
                atom_masks.append(0)
            atom_masks[a] |= bit
            atom_of_partition[p] = a
        p += 1
    of: dict[int, tuple[int, ...]] = {}
    for m in masks:
        ids = sorted({atom_of_partition[q] for q in range(m.bit_length()) if m >> q & 1})
        of[m] = tuple(ids)
    return of, atom_masks


class CellSpace:
    """Split maps keyed by ``(key, atom, bin)``, created on first touch.

    Parameters
    ----------
    masks:
        Every partition mask that will be touched (0 for DRAM, which has no partitions).
    bin_bytes:
        Bin size per space name (``"sbuf"``, ``"psum"``, ``"dram"``; alias spaces use the
        DRAM size).
    empty:
        Value of a cell no access has touched.
    copy:
        How a split copies a mutable cell value (None: values are immutable).
    """

    __slots__ = ("maps", "atoms", "atom_masks", "bin_bytes", "empty", "copy", "_pieces")

    #: Footprints whose cut into pieces is remembered (cleared when full).
    CACHE = 1 << 16

    def __init__(self, masks: Iterable[int], bin_bytes: dict[str, int], empty: object,
                 copy: Callable[[object], object] | None = None) -> None:
        self.atoms, self.atom_masks = atoms_of(masks)
        self.atoms[0] = (0,)
        self.maps: dict[tuple, SplitMap] = {}
        self.bin_bytes = bin_bytes
        self.empty = empty
        self.copy = copy
        self._pieces: dict[tuple, Pieces] = {}

    def pieces(self, key: Hashable, space: object, mask: int, byteset: tuple[tuple[int, int], ...]) -> Pieces:
        """``(map, lo, hi)``: the footprint cut at atom and bin boundaries, map by map.

        ``map.span(lo, hi)`` then gives the cells; the cut itself is cached per footprint.
        """
        ckey = (key, mask, byteset)
        found = self._pieces.get(ckey)
        if found is not None:
            return found
        size = self.bin_bytes[space if isinstance(space, str) else "dram"]
        atoms = self.atoms.get(mask)
        if atoms is None:  # a mask no access announced (a moving footprint): split the atoms
            atoms = self._atoms_within(mask)
        maps = self.maps
        out = []
        for lo, hi in byteset:
            for b in range(lo // size, (hi - 1) // size + 1):
                blo = b * size
                piece_lo = lo if lo > blo else blo
                piece_hi = hi if hi < blo + size else blo + size
                for atom in atoms:
                    mkey = (key, atom, b)
                    smap = maps.get(mkey)
                    if smap is None:
                        smap = maps[mkey] = SplitMap(blo, blo + size, self.empty, self.copy, atom)
                    out.append((smap, piece_lo, piece_hi))
        if len(self._pieces) >= self.CACHE:
            self._pieces.clear()
        self._pieces[ckey] = out
        return out

    def _atoms_within(self, mask: int) -> tuple[int, ...]:
        found = tuple(a for a, am in enumerate(self.atom_masks) if am & mask)
        if any(self.atom_masks[a] & ~mask for a in found):
            raise ValueError(f"partition mask {mask:#x} cuts an atom; announce every mask to CellSpace")
        return found

    def touch(self, key: Hashable, space: object, mask: int,
              byteset: tuple[tuple[int, int], ...]) -> Iterator[tuple[SplitMap, int, int]]:
        """``(map, i, j)`` for every run of cells the footprint covers, map by map."""
        for smap, lo, hi in self.pieces(key, space, mask, byteset):
            i, j = smap.span(lo, hi)
            yield smap, i, j
