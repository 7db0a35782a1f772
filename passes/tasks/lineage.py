"""Storage lineage: which roots, and which regions of them, a tensor variable may name.

``docs/task-rules.md`` section 3 item 1 (PyPTO ``StorageRootAnalysis``).  A *location* is a tuple of
at most :data:`MAX_ALTERNATIVES` ``(root, region)`` alternatives; a variable is *known*,
*unresolved* (no lineage: results of builtin ops other than create / slice / assemble) or
*unsupported* (gather / scatter results, more than four alternatives, a branch or loop merge
with an unresolvable side).

* parameters and ``create`` results are their own root, ``FULL`` (widened by the view type:
  ``valid_shape`` -> ``CONSERVATIVE``; strides, DN, padding -> ``UNKNOWN``);
* ``slice`` composes the window with the parent's region, ``assemble`` names the base's whole
  location, a copy or a call output names the argument's location (a kernel output is the
  caller's argument for the returned parameter);
* ``if`` return vars merge both yields (one root with two regions becomes ``UNKNOWN``);
  ``for`` return vars merge the init and the yield and widen to ``CONSERVATIVE`` (``UNKNOWN``
  for non-packed views), ``while`` return vars to ``UNKNOWN``.

Iter_args: the seed gives an iter_arg its init's location inside the body, which is wrong from
the second iteration on when the yield names other storage (ping-pong buffers).  ``sound``
lineage (the default) iterates the body until the iter_arg covers both init and yield.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from neuronsim.machine.tasks.task_geometry import byte_ranges_may_overlap, packed_strides
from neuronsim.machine.tasks.ir import (
    Alias, Assemble, Call, Create, For, If, IndexedView, MemRef, Operand, RuntimeScope, Slice, Stmt, TaskProgram,
    TensorParam, TensorType, While,
)
from neuronsim.machine.tasks.task_validate import Symbols
from neuronsim.passes.tasks.regions import CONSERVATIVE, FULL, UNKNOWN, Region, slice_region

__all__ = ["MAX_ALTERNATIVES", "Alternative", "Location", "Status", "Lineage", "storage_lineage", "merge_locations",
           "packed_nd", "conservative_nd"]

#: PyPTO ``kMaxStaticRootAlternatives``.
MAX_ALTERNATIVES = 4


@dataclass(frozen=True, slots=True)
class Alternative:
    root: str
    region: Region


Location = tuple[Alternative, ...]


class Status(str, Enum):
    KNOWN = "known"
    UNRESOLVED = "unresolved"
    UNSUPPORTED = "unsupported"


def _packed_strides(t: TensorType) -> bool:
    view = t.view
    if view is None or view.strides is None:
        return True
    return all(isinstance(n, int) for n in t.shape) and tuple(view.strides) == packed_strides(tuple(t.shape))  # type: ignore[arg-type]


def packed_nd(t: TensorType | None) -> bool:
    """A bare tensor or a packed ND view (no valid_shape, no padding)."""
    if t is None or t.view is None:
        return True
    v = t.view
    return v.layout == "nd" and v.valid_shape is None and v.pad is None and _packed_strides(t)


def conservative_nd(t: TensorType | None) -> bool:
    """A packed ND view that only adds ``valid_shape``."""
    if t is None or t.view is None:
        return False
    v = t.view
    return v.layout == "nd" and v.valid_shape is not None and v.pad is None and _packed_strides(t)


def _widen(location: Location, region: Region) -> Location:
    return tuple(Alternative(a.root, region) for a in location)


def _for_type(location: Location, t: TensorType | None) -> Location:
    """PyPTO ``MaybeUnknownRegionsForTensorType``."""
    if packed_nd(t):
        return location
    return _widen(location, CONSERVATIVE if conservative_nd(t) else UNKNOWN)


def merge_locations(a: Location, b: Location) -> Location:
    """Union keeping one alternative per root; one root with two regions becomes ``UNKNOWN``."""
    out: list[Alternative] = []
    for alt in (*a, *b):
        for i, seen in enumerate(out):
            if seen.root == alt.root:
                if seen.region != alt.region:
                    out[i] = Alternative(seen.root, UNKNOWN)
                break
        else:
            out.append(alt)
    return tuple(out)


@dataclass
class Lineage:
    locations: dict[str, Location] = field(default_factory=dict)
    unsupported: set[str] = field(default_factory=set)
    memrefs: dict[str, MemRef] = field(default_factory=dict)
    """Root -> the MemRef placing it (roots without one never alias another root)."""

    def resolve(self, var: Operand) -> tuple[Status, Location]:
        if not isinstance(var, str) or var in self.unsupported:
            return (Status.UNSUPPORTED if isinstance(var, str) else Status.UNRESOLVED), ()
        location = self.locations.get(var)
        if not location:
            return Status.UNRESOLVED, ()
        if len(location) > MAX_ALTERNATIVES:
            return Status.UNSUPPORTED, location
        return Status.KNOWN, location

    def may_alias(self, a: str, b: str) -> bool:
        """Same root, or MemRefs of one allocation whose bytes overlap or whose offset is symbolic."""
        if a == b:
            return True
        ma, mb = self.memrefs.get(a), self.memrefs.get(b)
        if ma is None or mb is None or ma.base != mb.base:
            return False
        off_a = ma.offset if isinstance(ma.offset, int) else None
        off_b = mb.offset if isinstance(mb.offset, int) else None
        return byte_ranges_may_overlap(off_a, ma.size, off_b, mb.size)

    # -- registration -----------------------------------------------------------------------
    def set(self, var: str, location: Location, t: TensorType | None) -> None:
        if not location:
            return
        if len(location) > MAX_ALTERNATIVES:
            self.unsupport(var)
            return
        self.unsupported.discard(var)
        self.locations[var] = location
        if t is not None and t.memref is not None:
            for alt in location:
                self.memrefs.setdefault(alt.root, t.memref)

    def unsupport(self, var: str) -> None:
        self.locations.pop(var, None)
        self.unsupported.add(var)

    def of(self, operand: Operand) -> Location:
        """PyPTO ``ResolveExpr``: the location, empty for unresolved or unsupported."""
        return self.locations.get(operand, ()) if isinstance(operand, str) else ()


class _Builder:
    def __init__(self, program: TaskProgram, symbols: Symbols, sound: bool) -> None:
        self.program, self.types, self.sound = program, symbols.types, sound
        self.lineage = Lineage()

    def body(self, body: tuple[Stmt, ...]) -> None:
        for stmt in body:
            self.stmt(stmt)

    def stmt(self, s: Stmt) -> None:
        lin, types = self.lineage, self.types
        if isinstance(s, Create):
            lin.set(s.var, _for_type((Alternative(s.var, FULL),), s.type), s.type)
        elif isinstance(s, Slice):
            parent = lin.of(s.source)
            sliced: list[Alternative] = []
            for alt in parent:
                sliced = list(merge_locations(tuple(sliced),
                                              (Alternative(alt.root, slice_region(alt.region, s.shape, s.offset)),)))
            lin.set(s.var, _for_type(tuple(sliced), types.get(s.var)), types.get(s.var))
        elif isinstance(s, Assemble):
            lin.set(s.var, _for_type(lin.of(s.base), types.get(s.var)), types.get(s.var))
        elif isinstance(s, IndexedView):
            lin.unsupport(s.var)
        elif isinstance(s, Alias):
            if s.source in types:
                lin.set(s.var, _for_type(lin.of(s.source), types.get(s.var)), types.get(s.var))
        elif isinstance(s, Call):
            kernel = self.program.kernels[s.kernel]
            for var, returned in zip(s.outputs, kernel.returns):
                source = s.args[kernel.param_index(returned)]
                lin.set(var, _for_type(lin.of(source), types.get(var)), types.get(var))
        elif isinstance(s, RuntimeScope):
            self.body(s.body)
        elif isinstance(s, If):
            self.branch(s)
        elif isinstance(s, (For, While)):
            self.loop(s)

    def branch(self, s: If) -> None:
        self.body(s.then_body)
        if s.else_body is not None:
            self.body(s.else_body)
        for var, a, b in zip(s.returns, s.then_yields, s.else_yields):
            if var not in self.types:
                continue
            la, lb = self.lineage.of(a), self.lineage.of(b)
            if not la or not lb:
                self.lineage.unsupport(var)
                continue
            self.lineage.set(var, merge_locations(la, lb), self.types.get(var))

    def loop(self, s: For | While) -> None:
        lin = self.lineage
        tensors = [(i, a.name) for i, a in enumerate(s.iter_args) if a.name in self.types]
        inits = {name: lin.of(s.iter_args[i].init) for i, name in tensors}
        carried = dict(inits)
        for _ in range(2 * MAX_ALTERNATIVES + 2 if self.sound else 1):
            for _, name in tensors:
                if carried[name]:
                    lin.set(name, carried[name], self.types.get(name))
                else:
                    lin.locations.pop(name, None)
            self.body(s.body)
            grown = {name: merge_locations(inits[name], lin.of(s.yields[i])) if inits[name] and lin.of(s.yields[i])
                     else () for i, name in tensors}
            if grown == carried:
                break
            carried = grown
        else:
            if self.sound:  # no fixed point within the bound: nothing is known about the carried tensors
                for _, name in tensors:
                    lin.unsupport(name)
                self.body(s.body)
        for i, name in tensors:
            var = s.returns[i]
            init, yielded = inits[name], lin.of(s.yields[i])
            if not init or not yielded:
                lin.unsupport(var)
                continue
            merged = merge_locations(init, yielded)
            t = self.types.get(var)
            if isinstance(s, While):
                merged = _widen(merged, UNKNOWN)
            else:
                merged = _widen(merged, CONSERVATIVE if packed_nd(t) or conservative_nd(t) else UNKNOWN)
            lin.set(var, merged, t)


def storage_lineage(program: TaskProgram, symbols: Symbols, *, sound: bool = True) -> Lineage:
    """The lineage of every tensor variable of ``program`` (``sound=False``: the seed's iter_args)."""
    builder = _Builder(program, symbols, sound)
    for p in program.function.params:
        if isinstance(p, TensorParam):
            builder.lineage.set(p.name, _for_type((Alternative(p.name, FULL),), p.type), p.type)
    builder.body(program.function.body)
    return builder.lineage

