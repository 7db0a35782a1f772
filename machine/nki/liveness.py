"""Which on-chip tiles a traced kernel can still reach: what lets a trace's device reads
(:mod:`~neuronsim.machine.nki.device_values`) reuse the bytes of tiles gone out of reach.

The reader runs the program traced so far with every tile on bytes of its own.  A kernel that
declares a tile per iteration of a long loop (``t = nl.ndarray(...)`` in a ``for`` reading an
expert index on the device) then needs memory for every tile it ever declared: nki-library's
find_nonzero_indices at its test's largest row held 25 MB an SBUF partition, 9 GB in all.  On
the device, and in the compiler's allocator, a tile's bytes are free once the kernel can no
longer use it.

A kernel uses a tile only through a Python object that refers to it: an
:class:`~neuronsim.machine.nki.tiles.NkiTensor` (the tile, any view of it, a block of a
directly allocated tensor).  Each such object holds its tensor's *token*; when the last one
goes, the tensor is *dying*, and at the next device read (:meth:`TileLiveness.retire`) it is
*retired*, with where the trace is then: how many tensors were declared and how many top-level
nodes emitted.  A tensor declared after that may take its bytes, and the nodes emitted after
it never touch it.  (At the read, not when the token dies: a call held back until the next
statement keeps its operands' layouts but not their objects, ``nl.exp(nl.load(x))``; and a
kept loop's body, traced once, is whole by then.)

That is a promise of Python's reference counts, not of the frontend's every corner, so the
reader checks it: a node after the retirement that accesses the tensor, or a new object for
it, *pins* it (never retired again) and bumps :attr:`TileLiveness.version`, and the reader
then places and runs the program from the start with that tensor kept.  Slower, never wrong.
"""

from __future__ import annotations

import weakref
from typing import Any, NamedTuple

from neuronsim.machine.ir.program import MemoryKind

__all__ = ["Retired", "TileLiveness"]


class Retired(NamedTuple):
    """When a tensor went out of the kernel's reach: ``declared`` tensors had been declared
    and ``at`` nodes emitted at the top level (an access at node ``at`` or later breaks it)."""

    declared: int
    at: int


class _Token:
    """What every object reaching a tensor holds: its death is the tensor's."""

    __slots__ = ("__weakref__",)


class _Ref(weakref.ref):
    __slots__ = ("name",)


class TileLiveness:
    """The tokens and retirements of one trace (see the module)."""

    def __init__(self) -> None:
        self._refs: dict[str, _Ref] = {}
        self._dying: dict[str, None] = {}
        self.retired: dict[str, Retired] = {}
        """Retired tensors by name, in the order they went (their ``declared`` never decreases)."""
        self.pinned: set[str] = set()
        self.version = 0
        """Bumped whenever a retired tensor is pinned: a placement that gave its bytes away is void."""

    def hold(self, layout: Any) -> _Token | None:
        """The token of ``layout``'s tensor (None for one the kernel placed, or in DRAM: never retired)."""
        tensor = layout.tensor
        if tensor.memory is MemoryKind.DRAM or tensor.partition is not None:
            return None
        name = tensor.name
        ref = self._refs.get(name)
        token = ref() if ref is not None else None
        if token is None:
            token = _Token()
            ref = _Ref(token, self._gone)
            ref.name = name
            self._refs[name] = ref
            self._dying.pop(name, None)
            if name in self.retired:  # reached again after it went
                self.pin(name)
        return token

    def retire(self, declared: int, at: int) -> None:
        """Retire the dying tensors: ``declared`` tensors are declared and ``at`` nodes emitted
        at the top level (no kept loop open, no call held back)."""
        for name in self._dying:
            self.retired[name] = Retired(declared=declared, at=at)
        self._dying.clear()

    def pin(self, name: str) -> None:
        """Keep ``name`` from now on (a placement that reused its bytes is void)."""
        self.pinned.add(name)
        self._dying.pop(name, None)
        if self.retired.pop(name, None) is not None:
            self.version += 1

    def _gone(self, ref: _Ref) -> None:
        name = ref.name
        if self._refs.get(name) is ref:
            del self._refs[name]
            if name not in self.pinned:
                self._dying[name] = None
