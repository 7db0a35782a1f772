"""Static access regions, the overlap rule and the hazard rule of the dependence analysis.

A region says what part of a storage root an access may touch, as far as the compiler can tell
(``docs/task-rules.md`` section 2; the hazard and overlap rules are ``docs/task-rules.md``
section 3 items 5-6):

* ``FULL``: the whole root (parameters, ``create`` results);
* ``BOX``: a constant rectangle, absolute offsets and shape in the root's index space;
* ``CONSERVATIVE``: unknown extent but tame (loop return vars over packed tensors, views with
  ``valid_shape``); overlaps everything, still eligible for direction demotion;
* ``DYNAMIC``: a window with a runtime offset or shape of a known parent; overlaps everything;
* ``UNKNOWN``: strided / DN / padded views, while results, branch merges of one root with
  different regions; overlaps everything.

Two boxes of equal rank are disjoint iff one dimension's half-open intervals miss each other;
anything else may overlap (like the seed, arithmetic that leaves int64 counts as overlap).

>>> a = Region.box((0, 0), (32, 64)); b = Region.box((32, 0), (32, 64))
>>> regions_may_overlap(a, b), regions_may_overlap(a, FULL), slice_region(a, (16, 8), (4, 8))
(False, True, Region(kind=<RegionKind.BOX: 'Box'>, offsets=(4, 8), shape=(16, 8)))
>>> sorted(h.value for h in hazards(AccessKind.READ_WRITE, AccessKind.WRITE))
['RAW', 'WAW']
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, IntFlag

from neuronsim.machine.tasks.ir import ArgDirection

__all__ = ["RegionKind", "Region", "FULL", "CONSERVATIVE", "DYNAMIC", "UNKNOWN", "slice_region", "regions_may_overlap",
           "first_extent", "demotable_region", "AccessKind", "access_kind", "Hazard", "hazards"]

_INT64 = (-(1 << 63), (1 << 63) - 1)


class RegionKind(str, Enum):
    FULL = "Full"
    BOX = "Box"
    CONSERVATIVE = "Conservative"
    DYNAMIC = "Dynamic"
    UNKNOWN = "Unknown"


@dataclass(frozen=True, slots=True)
class Region:
    kind: RegionKind
    offsets: tuple[int, ...] = ()
    shape: tuple[int, ...] = ()

    @staticmethod
    def box(offsets: tuple[int, ...], shape: tuple[int, ...]) -> Region:
        return Region(RegionKind.BOX, tuple(offsets), tuple(shape))

    def __str__(self) -> str:
        if self.kind != RegionKind.BOX:
            return self.kind.value
        return "Box[" + ", ".join(f"{o}:{o + n}" for o, n in zip(self.offsets, self.shape)) + "]"


FULL = Region(RegionKind.FULL)
CONSERVATIVE = Region(RegionKind.CONSERVATIVE)
DYNAMIC = Region(RegionKind.DYNAMIC)
UNKNOWN = Region(RegionKind.UNKNOWN)


def _fits(value: int) -> bool:
    return _INT64[0] <= value <= _INT64[1]


def slice_region(parent: Region, shape: tuple, offsets: tuple) -> Region:
    """The region of a window ``offsets .. offsets + shape`` of a value in ``parent``.

    A non-constant window is ``DYNAMIC`` (``UNKNOWN`` under an unknown parent); a constant one
    keeps ``CONSERVATIVE`` / ``DYNAMIC`` / ``UNKNOWN`` parents and is a ``BOX`` otherwise.
    """
    constant = all(isinstance(v, int) for v in (*shape, *offsets)) and len(shape) == len(offsets)
    if not constant:
        return UNKNOWN if parent.kind == RegionKind.UNKNOWN else DYNAMIC
    if parent.kind in (RegionKind.UNKNOWN, RegionKind.CONSERVATIVE, RegionKind.DYNAMIC):
        return parent
    if parent.kind == RegionKind.FULL:
        return Region.box(tuple(offsets), tuple(shape))
    if len(parent.offsets) != len(offsets):
        return DYNAMIC
    absolute = tuple(a + b for a, b in zip(parent.offsets, offsets))
    if not all(_fits(v) for v in absolute):
        return DYNAMIC
    return Region.box(absolute, tuple(shape))


def regions_may_overlap(a: Region, b: Region) -> bool:
    """The overlap rule (``docs/task-rules.md`` section 3 item 6)."""
    if a.kind != RegionKind.BOX or b.kind != RegionKind.BOX:
        return True
    if not (len(a.offsets) == len(b.offsets) == len(a.shape) == len(b.shape)):
        return True
    for ao, an, bo, bn in zip(a.offsets, a.shape, b.offsets, b.shape):
        a_end, b_end = ao + an, bo + bn
        if not (_fits(a_end) and _fits(b_end)):
            return True
        if a_end <= bo or b_end <= ao:
            return False
    return True


def first_extent(region: Region) -> tuple[int, int] | None:
    """``[lo, hi)`` of a box's first dimension when the overlap rule separates boxes by it: two
    such boxes of one rank whose first extents do not meet never overlap; ``None`` for anything
    the rule may not separate (not a box, rank 0, an empty extent, an end beyond int64).

    >>> first_extent(Region.box((4, 0), (2, 8))), first_extent(FULL), first_extent(Region.box((4,), (0,)))
    ((4, 6), None, None)
    """
    if region.kind != RegionKind.BOX or not region.offsets or len(region.offsets) != len(region.shape):
        return None
    lo, n = region.offsets[0], region.shape[0]
    if n < 1 or not (_fits(lo) and _fits(lo + n)):
        return None
    return lo, lo + n


def demotable_region(region: Region) -> bool:
    """Regions precise enough for NoDep / OutputExisting demotion: Full, Box, Conservative."""
    return region.kind in (RegionKind.FULL, RegionKind.BOX, RegionKind.CONSERVATIVE)


class AccessKind(IntFlag):
    READ = 1
    WRITE = 2
    READ_WRITE = 3

    @property
    def label(self) -> str:
        return {1: "Read", 2: "Write", 3: "ReadWrite"}[int(self)]


def access_kind(direction: ArgDirection) -> AccessKind | None:
    """Input reads; Output / OutputExisting write; InOut does both; NoDep and Scalar are ignored."""
    return {
        ArgDirection.INPUT: AccessKind.READ,
        ArgDirection.OUTPUT: AccessKind.WRITE,
        ArgDirection.OUTPUT_EXISTING: AccessKind.WRITE,
        ArgDirection.INOUT: AccessKind.READ_WRITE,
    }.get(direction)


class Hazard(str, Enum):
    RAW = "RAW"
    WAR = "WAR"
    WAW = "WAW"


def _hazards(current: int, prior: int) -> frozenset[Hazard]:
    out = set()
    if current & 1 and prior & 2:
        out.add(Hazard.RAW)
    if current & 2 and prior & 1:
        out.add(Hazard.WAR)
    if current & 2 and prior & 2:
        out.add(Hazard.WAW)
    return frozenset(out)


_HAZARDS = {(c, p): _hazards(c, p) for c in (1, 2, 3) for p in (1, 2, 3)}


def hazards(current: AccessKind, prior: AccessKind) -> frozenset[Hazard]:
    """The hazard rule (``docs/task-rules.md`` section 3 item 5): which of RAW / WAR / WAW
    ``current`` has on ``prior``."""
    return _HAZARDS[int(current), int(prior)]
