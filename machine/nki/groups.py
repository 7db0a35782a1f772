"""PSUM accumulation groups opened as NKI's compiler opens them: by the first matmul.

The matmul tutorial opens each group with ``acc = nl.zeros(..., buffer=nl.psum)`` and then
``acc += nl.matmul(...)``.  Traced literally that is a memset of the bank and matmuls that all
accumulate onto it; the ISA leaves a matmul accumulating onto a bank that no matmul of its
group wrote undefined, and the compiler instead starts the group with an overwriting matmul
(accumulate flag off) and emits no memset.  :func:`open_groups` lowers the traced program so:
a memset of zeros on a PSUM tile whose bytes are next touched only by accumulating matmuls that
write exactly those bytes is dropped, and the first of those matmuls overwrites.  When that
first matmul is the body of a kept loop (one body for every iteration), the loop's first
iteration is peeled (its instructions copied before the loop, ``NAME~first``, the index at 0;
tiles made in the body get copies of their own, as an unrolled iteration would) and the loop
keeps the other iterations, its kernel indices shifted by one (``"k+1"`` in ``x-source``).
Anything else (the zeros read first, partly overwritten, a loop nested deeper, a tensor that
rotates with the loop, a program with deps already) keeps the memset: the numbers are the same
either way, only the instructions differ.

>>> from neuronsim.machine.ir.program import Access, Instruction, MemoryKind, Program, Tensor
>>> t = {"acc": Tensor("acc", MemoryKind.PSUM, "float32", (128, 512)),
...      "a": Tensor("a", MemoryKind.SBUF, "bfloat16", (128, 128)),
...      "b": Tensor("b", MemoryKind.SBUF, "bfloat16", (128, 512))}
>>> zero = Instruction("z", "dve", "memset", writes=(Access("acc"),), attrs={"value": 0.0})
>>> mm = Instruction("mm", "pe", "matmul", (Access("a"), Access("b"), Access("acc")), (Access("acc"),),
...                  attrs={"accumulate": True})
>>> [(i.name, dict(i.attrs), len(i.reads)) for i in open_groups(Program(t, (zero, mm))).body]
[('mm', {'accumulate': False}, 2)]
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Mapping

import numpy as np

from neuronsim.machine.ir.program import Access, Instruction, Loop, MemoryKind, Node, Program, Tensor, frozen_mapping
from neuronsim.machine.model.geometry import element_runs
from neuronsim.machine.nki.vector_index import F

__all__ = ["open_groups", "OpenGroups"]

_SCOPE_KEY = "x-nki-scope"


def open_groups(program: Program) -> Program:
    """``program`` with every PSUM group that opens on zeros opened by its first matmul
    (module doc); unchanged when there is none."""
    if any(inst.deps for inst, _ in program.instructions()):
        return program  # peeling would have to copy deps: the traced program has none
    lowering = _Lowering(program)
    body = lowering.body(program.body)
    if not lowering.changed:
        return program
    return Program(frozen_mapping(lowering.tensors), body, program.machine, program.extras)


def _footprint(access: Access) -> tuple:
    return (access.tensor, access.partitions, access.offset, access.pattern, access.per_iteration,
            access.partitions_per_iteration)


def _zeroing(node: Node, tensors: Mapping[str, Tensor]) -> Access | None:
    """The PSUM footprint a memset of zeros writes, or None."""
    if not (isinstance(node, Instruction) and node.op == "memset" and not node.reads and len(node.writes) == 1):
        return None
    value = node.attrs.get("value")
    write = node.writes[0]
    if isinstance(value, bool) or value != 0 or tensors[write.tensor].memory != MemoryKind.PSUM:
        return None
    return write


def _accumulates_onto(node: Node, zeros: Access) -> bool:
    """An accumulating matmul that writes exactly ``zeros`` and reads it last (builder order)."""
    return (isinstance(node, Instruction) and node.op == "matmul" and bool(node.attrs.get("accumulate"))
            and [_footprint(w) for w in node.writes] == [_footprint(zeros)]
            and bool(node.reads) and _footprint(node.reads[-1]) == _footprint(zeros))


def _overwriting(inst: Instruction) -> Instruction:
    """The matmul starting its group: accumulate off, the PSUM tile no longer read."""
    return dataclasses.replace(inst, reads=inst.reads[:-1], attrs=frozen_mapping({**inst.attrs, "accumulate": False}))


#: A zeroing looks this many nodes ahead for its group's first node before it looks the tensor up.
_NEAR = 64


def _tensors_of(node: Node) -> set[str]:
    if isinstance(node, Loop):
        return set().union(*(_tensors_of(child) for child in node.body)) if node.body else set()
    return {access.tensor for access, _ in node.accesses}


def _positions(nodes: list[Node]) -> dict[str, list[int]]:
    """Per tensor, the positions of the nodes of ``nodes`` that touch it, ascending."""
    found: dict[str, list[int]] = {}
    for j, node in enumerate(nodes):
        for tensor in _tensors_of(node):
            found.setdefault(tensor, []).append(j)
    return found


def _touches(node: Node, tensor: str) -> bool:
    if isinstance(node, Loop):
        return any(_touches(child, tensor) for child in node.body)
    return any(access.tensor == tensor for access, _ in node.accesses)


class _Lowering:
    """One walk over the program, rewriting bodies (module doc)."""

    def __init__(self, program: Program) -> None:
        self.tensors: dict[str, Tensor] = dict(program.tensors)
        self.taken = {node.name for node, _ in program.walk()} | set(program.tensors)
        self.changed = False
        # tensor -> names of the loops around every access to it
        self.within: dict[str, set[str]] = {}
        for inst, loops in program.instructions():
            for access, _ in inst.accesses:
                names = {loop.name for loop in loops}
                self.within[access.tensor] = self.within.get(access.tensor, names) & names

    def body(self, nodes: tuple[Node, ...]) -> tuple[Node, ...]:
        out = list(nodes)
        touching: dict[str, list[int]] | None = None  # tensor -> positions in ``out`` touching it
        k = 0
        while k < len(out):
            zeros = _zeroing(out[k], self.tensors)
            following = None
            if zeros is not None:  # only a zeroing looks ahead (every node looking made 1e5 quadratic: 70 s)
                following = next((j for j in range(k + 1, min(k + 1 + _NEAR, len(out)))
                                  if _touches(out[j], zeros.tensor)), None)
                if following is None and k + 1 + _NEAR < len(out):
                    # far: thousands of zeroings in a row (a kernel's nl.zeros of many blocks) made
                    # the plain scan quadratic (issue 31): look it up, the positions listed once
                    if touching is None:
                        touching = _positions(out)
                    found = touching.get(zeros.tensor, ())
                    at = bisect.bisect_right(found, k + _NEAR)
                    following = found[at] if at < len(found) else None
            if following is not None:
                opened = self._opened(out[following], zeros)
                if opened is not None:
                    out[following:following + 1] = opened
                    del out[k]
                    self.changed = True
                    touching = None  # positions moved
                    continue
            k += 1
        return tuple(Loop(n.name, n.trip_count, self.body(n.body), n.extras) if isinstance(n, Loop) else n
                     for n in out)

    def _opened(self, node: Node, zeros: Access) -> list[Node] | None:
        """The nodes replacing ``node`` (the first to touch the zeroed tile) when its first
        matmul can open the group, else None."""
        if isinstance(node, Instruction):
            return [_overwriting(node)] if _accumulates_onto(node, zeros) else None
        if any(isinstance(child, Loop) for child in node.body) or node.trip_count < 1:
            return None
        touching = [inst for inst in node.body if _touches(inst, zeros.tensor)]
        if not all(_accumulates_onto(inst, zeros) for inst in touching):
            return None
        if any(t.rotate is not None and t.rotate.loop == node.name for t in self.tensors.values()):
            return None
        return self._peeled(node, touching[0])

    def _peeled(self, loop: Loop, opener: Instruction) -> list[Node]:
        clones = {}
        for inst in loop.body:
            for access, _ in inst.accesses:
                tensor = self.tensors[access.tensor]
                private = _made_in(tensor, loop.name) and loop.name in self.within[tensor.name]
                if private and tensor.name not in clones:
                    clones[tensor.name] = self._clone(tensor, loop.name)
        head = []
        for inst in loop.body:
            copy = _first_iteration(inst, loop.name, clones, self._fresh(f"{inst.name}~first"))
            head.append(_overwriting(copy) if inst is opener else copy)
        if loop.trip_count == 1:
            return head
        rest = tuple(_later_iterations(inst, loop.name, self.tensors) for inst in loop.body)
        return [*head, Loop(loop.name, loop.trip_count - 1, rest, loop.extras)]

    def _fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.taken:
            k += 1
            name = f"{base}#{k}"
        self.taken.add(name)
        return name

    def _clone(self, tensor: Tensor, loop: str) -> str:
        name = self._fresh(f"{tensor.name}~first")
        extras = dict(tensor.extras or {})
        if isinstance(extras.get(_SCOPE_KEY), (list, tuple)):
            extras[_SCOPE_KEY] = [name_ for name_ in extras[_SCOPE_KEY] if name_ != loop]
        self.tensors[name] = dataclasses.replace(tensor, name=name, extras=frozen_mapping(extras))
        return name


def _first_iteration(inst: Instruction, loop: str, clones: Mapping[str, str], name: str) -> Instruction:
    """``inst`` at iteration 0 of ``loop``, outside it: its shifts by ``loop`` dropped, tiles
    made in the body replaced by their copies, the kernel index 0."""

    def at_zero(access: Access) -> Access:
        return dataclasses.replace(
            access, tensor=clones.get(access.tensor, access.tensor),
            per_iteration=tuple((k, v) for k, v in access.per_iteration if k != loop),
            partitions_per_iteration=tuple((k, v) for k, v in access.partitions_per_iteration if k != loop))

    return dataclasses.replace(inst, name=name, reads=tuple(map(at_zero, inst.reads)),
                               writes=tuple(map(at_zero, inst.writes)),
                               extras=_indexed(inst.extras, loop, lambda: 0))


def _made_in(tensor: Tensor, loop: str) -> bool:
    """A virtual tile the kernel declared in ``loop``'s body (``x-nki-scope``): new in every
    iteration, so the peeled iteration gets one of its own."""
    scope = tensor.extras.get(_SCOPE_KEY) if tensor.extras else None
    return tensor.is_virtual and isinstance(scope, (list, tuple)) and loop in scope


def _later_iterations(inst: Instruction, loop: str, tensors: Mapping[str, Tensor]) -> Instruction:
    """``inst`` in ``loop`` running from its second iteration: every shift by ``loop`` applied
    once, the kernel index ``loop + 1``."""

    def advanced(access: Access) -> Access:
        shift = dict(access.per_iteration).get(loop, 0)
        pshift = dict(access.partitions_per_iteration).get(loop, 0)
        changes = {}
        if shift:
            changes["offset"] = (access.offset or 0) + shift
        if pshift:
            start, count, step = access.partitions or (0, tensors[access.tensor].shape[0], 1)
            changes["partitions"] = (start + pshift, count, step)
        return dataclasses.replace(access, **changes) if changes else access

    return dataclasses.replace(inst, reads=tuple(map(advanced, inst.reads)), writes=tuple(map(advanced, inst.writes)),
                               extras=_indexed(inst.extras, loop, lambda: f"{loop}+1"))


def _indexed(extras: Mapping, loop: str, value) -> Mapping:
    """``extras`` with the ``x-source`` index that names ``loop`` replaced by ``value()``."""
    source = extras.get("x-source") if extras else None
    if not isinstance(source, Mapping) or not isinstance(source.get("indices"), Mapping):
        return extras
    indices = {var: value() if v == loop else v for var, v in source["indices"].items()}
    return frozen_mapping({**extras, "x-source": {**source, "indices": indices}})


def footprint_of(dst: object) -> tuple:
    """``(tensor, partitions, offset, pattern)`` of a tile layout as :class:`OpenGroups` reads a
    footprint (an offset with loop terms: None, the whole tile)."""
    return (dst.tensor, dst.partitions, dst.offset.const if not dst.offset.terms else None,  # type: ignore[attr-defined]
            tuple((s, n) for k, s, n in dst.axes if k == F) or ((1, 1),))  # type: ignore[attr-defined]


class OpenGroups:
    """Which elements of each PSUM tile hold an open accumulation group while a kernel is traced,
    for ``nisa.nc_matmul(accumulate=None)``.  The ``nc_matmul`` reference says the compiler then
    infers the flag per PSUM location: the first write overwrites, later writes accumulate.  So
    a group is open on the elements a write touched and closed on those a read (other than by an
    accumulating matmul) touched: matmuls into different columns of one bank (nki-library's
    down projection writes ``T`` columns per hidden tile) each start their own group.  A
    footprint that moves with a kept loop (``nl.fori_loop`` body, a rotating tile) counts as
    the whole tile, as one body stands for every iteration."""

    def __init__(self) -> None:
        self._open: dict[str, np.ndarray] = {}
        self._written: dict[str, np.ndarray] = {}  # elements holding a value other than zeroing's
        self._by_other: dict[str, np.ndarray] = {}  # elements last written by an instruction not a matmul

    def _cells(self, tensor: Tensor, partitions: object, offset: object,
               pattern: tuple[tuple[int, int], ...] | None) -> list[tuple[slice, slice]]:
        """The ``(partitions, elements)`` slices of a footprint in the tile's open map."""
        whole = [(slice(None), slice(None))]
        if tensor.rotate is not None or not isinstance(offset, int):
            return whole
        start, count, step = partitions if partitions is not None else (0, tensor.shape[0], 1)
        if not all(isinstance(v, int) for v in (start, count, step)):
            return whole
        rows = slice(start, start + count * step, step)
        if pattern is None:
            return [(rows, slice(offset, None))]
        return [(rows, slice(offset + lo, offset + hi)) for lo, hi in element_runs(tuple(pattern))]

    def _map(self, tensor: Tensor, maps: dict[str, np.ndarray] | None = None) -> np.ndarray:
        maps = self._open if maps is None else maps
        if tensor.name not in maps:
            maps[tensor.name] = np.zeros((tensor.shape[0], tensor.free_elements), bool)
        return maps[tensor.name]

    def holds(self, tensor: Tensor, partitions: object, offset: object,
              pattern: tuple[tuple[int, int], ...] | None) -> bool:
        """Whether a write of this footprint adds to an open group (any of its elements open:
        a write over open and unwritten elements at once accumulates, and the PSUM findings
        name the unwritten ones)."""
        if tensor.name not in self._open:
            return False
        held = self._open[tensor.name]
        return any(held[cell].any() for cell in self._cells(tensor, partitions, offset, pattern))

    def holds_a_value(self, tensor: Tensor, partitions: object, offset: object,
                      pattern: tuple[tuple[int, int], ...] | None) -> bool:
        """Whether any element of this footprint holds an open group (:meth:`holds`) or a value
        written before other than a memset's zero (a group since closed by a read still holds
        its sum: ``psum += matmul`` adds to it; onto zeros, starting a group is the same sum)."""
        if self.holds(tensor, partitions, offset, pattern):
            return True
        if tensor.name not in self._written:
            return False
        written = self._written[tensor.name]
        return any(written[cell].any() for cell in self._cells(tensor, partitions, offset, pattern))

    def value_initialised(self, tensor: Tensor, partitions: object, offset: object,
                          pattern: tuple[tuple[int, int], ...] | None) -> bool:
        """Whether an element of this footprint was last written by an instruction other than a
        matmul (a memset, a tensor_copy): what the nc_matmul page calls a PSUM location
        "value-initialized by a non-matmul instruction"."""
        if tensor.name not in self._by_other:
            return False
        by_other = self._by_other[tensor.name]
        return any(by_other[cell].any() for cell in self._cells(tensor, partitions, offset, pattern))

    def note(self, inst: Instruction, tensors: Mapping[str, Tensor]) -> None:
        """Open and close groups by what ``inst`` (a traced instruction) reads and writes."""
        accumulating = inst.op == "matmul" and inst.attrs.get("accumulate")
        # (a read closes only what is open, and only PSUM tiles are ever opened: most reads end
        # at the first test; this runs for every traced instruction)
        reads = () if accumulating else [(a, False) for a in inst.reads if a.tensor in self._open]
        for access, opens in (*reads, *((a, True) for a in inst.writes)):
            tensor = tensors[access.tensor]
            if tensor.memory != MemoryKind.PSUM:
                continue
            offset = None if access.moves else (access.offset or 0)
            held = self._map(tensor)
            written = self._map(tensor, self._written) if opens else None
            by_other = self._map(tensor, self._by_other) if opens else None
            zeroing = inst.op == "memset" and inst.attrs.get("value") == 0
            for cell in self._cells(tensor, access.partitions, offset, access.pattern):
                held[cell] = opens
                if written is not None:
                    written[cell] = not zeroing
                    by_other[cell] = inst.op != "matmul"
