"""Memoising by object identity, for the objects a flattened kernel shares.

``expand-scheduling-units`` unrolls a kernel into one instruction per instance, and the
instances of one instruction share its attribute mapping and, where they touch the same bytes,
one :class:`~neuronsim.machine.ir.program.Access` object (ring slots, PSUM banks, a tile
reloaded).  Whatever is computed per access (a footprint, a memory view, an op's cost) is then
the same for every instance holding the object, and finding it by ``id`` skips hashing a frozen
dataclass field by field, which cost a tenth to a third of those computations on a tiled
4096^3 matmul's 25,000 instances (issue 31).

An ``id`` names an object only while it lives, so each entry holds its object: no other object
can take the id while the memo does.  A program whose objects are not shared (one loaded from
JSON has an object per access) would only fill the memo: after :data:`TRIAL` misses with fewer
than one hit per eight misses, it lets its entries go and computes directly from then on.  (A
flattened kernel's op costs hit about once per two misses: each load reads a DRAM tile of its
own, each matmul one of a few slot combinations; its views and extents hit far more often.)

>>> memo, made = IdentityMemo(), []
>>> key = ("x",)
>>> memo.get(key, lambda k: made.append(k) or len(made))
1
>>> memo.get(key, lambda k: made.append(k) or len(made)), len(made)
(1, 1)
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
import weakref
from typing import Any, Generic, TypeVar

__all__ = ["IdentityMemo", "TRIAL", "WhileAlive"]

T = TypeVar("T")

#: Misses after which a memo that hits less than once per eight misses stops holding objects.
TRIAL = 4096


class IdentityMemo(Generic[T]):
    """``make(obj)`` once per object, found by ``id(obj)`` (or by a key of several objects'
    ids, :meth:`get_keyed`) while the objects turn out to be shared."""

    __slots__ = ("_cache", "_hits", "_misses", "_on")

    def __init__(self) -> None:
        self._cache: dict[Hashable, tuple[Any, T]] = {}
        self._hits = self._misses = 0
        self._on = True

    @property
    def active(self) -> bool:
        """False once the memo found its objects unshared and stopped holding them."""
        return self._on

    def get(self, obj: Any, make: Callable[[Any], T]) -> T:
        """``make(obj)``, computed once per object while the memo holds objects."""
        if not self._on:
            return make(obj)
        seen = self._cache.get(id(obj))
        if seen is not None:
            self._hits += 1
            return seen[1]
        value = make(obj)
        self._record(id(obj), obj, value)
        return value

    def get_keyed(self, key: Hashable, holds: Any, make: Callable[[], T]) -> T:
        """``make()`` once per ``key``, a key of ids of objects that ``holds`` keeps alive."""
        if not self._on:
            return make()
        seen = self._cache.get(key)
        if seen is not None:
            self._hits += 1
            return seen[1]
        value = make()
        self._record(key, holds, value)
        return value

    def _record(self, key: Hashable, holds: Any, value: T) -> None:
        self._misses += 1
        if self._misses >= TRIAL and 8 * self._hits < self._misses:  # hardly anything shared: stop holding
            self._on = False
            self._cache.clear()
        else:
            self._cache[key] = (holds, value)


class WhileAlive(Generic[T]):
    """Values per object (and a key), found by ``id`` and kept only while the object lives:
    unlike :class:`IdentityMemo` it does not hold the object, and an entry leaves when the
    object is collected, so an id names one object while its entries stand.  For what is
    computed from a whole immutable program (its validation, its identity placement).

    >>> class Thing: pass
    >>> memo, thing = WhileAlive(), Thing()
    >>> _ = memo.put(thing, "checked"); memo.get(thing), memo.get(thing, "other key")
    ('checked', None)
    >>> del thing; len(memo._values)
    0
    """

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: dict[tuple[int, Hashable], T] = {}

    def get(self, obj: Any, key: Hashable = None) -> T | None:
        return self._values.get((id(obj), key))

    def put(self, obj: Any, value: T, key: Hashable = None) -> T:
        entry = (id(obj), key)
        if entry not in self._values:
            weakref.finalize(obj, self._values.pop, entry, None)
        self._values[entry] = value
        return value
