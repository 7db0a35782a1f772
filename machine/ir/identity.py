"""Memoising by object identity, for the objects a flattened kernel shares.

``expand-scheduling-units`` unrolls a kernel into one instruction per instance, and the
instances of one instruction share its attribute mapping and, where they touch the same bytes,
one :class:`~neuronsim.machine.ir.program.Access` object (ring slots, PSUM banks, a tile
reloaded).  Whatever is computed per access (a footprint, a memory view, an op's cost) is then
the same for every instance holding the object, and finding it by ``id`` skips hashing a frozen
dataclass field by field, which cost a tenth to a third of those computations on a tiled
4096^3 matmul's 25,000 instances (issue 31).

An ``id`` names an object only while it lives, so each entry holds its object: no other object
can take the id while the cache does.

>>> cache, made = {}, []
>>> key = ("x",)
>>> by_identity(cache, key, lambda k: made.append(k) or len(made))
1
>>> by_identity(cache, key, lambda k: made.append(k) or len(made)), len(made)
(1, 1)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["by_identity"]

T = TypeVar("T")


def by_identity(cache: dict[int, tuple[Any, T]], obj: Any, make: Callable[[Any], T]) -> T:
    """``make(obj)``, computed once per object held in ``cache`` (keyed by ``id(obj)``)."""
    seen = cache.get(id(obj))
    if seen is None:
        seen = cache[id(obj)] = (obj, make(obj))
    return seen[1]
