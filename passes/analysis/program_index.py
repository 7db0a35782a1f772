"""Where every node and access of a program sits, from one walk: the seed's SAPs
(:class:`AccessSite`) and a name index (:class:`ProgramIndex`) for analyses that look up many
loops, such as the loop distances (:mod:`neuronsim.passes.analysis.distance`), ``neuronsim
loops`` and the fusion verdicts.

>>> from neuronsim.machine.ir.program import Access, Instruction, Loop, MemoryKind, Program, Tensor
>>> t = {"t": Tensor("t", MemoryKind.SBUF, "float32", (32, 16), partition=0, offset=0)}
>>> w = Instruction("w", "dve", "memset", writes=(Access("t"),))
>>> r = Instruction("r", "act", "tensor_copy", reads=(Access("t"),), writes=(Access("t"),))
>>> index = ProgramIndex.of(Program(t, (w, Loop("i", 3, (r,)))))
>>> index.loop("i").path, [s.label for s in index.node_sites("i")[1]], [i.name for i in index.instructions_of("i")]
('body[1]', ['r.reads[0]'], ['r'])
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from math import prod

import numpy as np

from neuronsim.machine.ir.errors import ProgramError, join_path
from neuronsim.machine.ir.program import Access, Instruction, Loop, Node, Program, loop_nest
from neuronsim.machine.order.unroll import instance_name

__all__ = ["AccessSite", "LoopPlace", "NodePlace", "ProgramIndex", "find_loop", "index_of", "loop_sites", "node_sites",
           "require_loops"]


@dataclass(frozen=True, slots=True)
class AccessSite:
    """One access of one instruction (the seed's SAP), with its loop nest and JSON path."""

    instruction: str
    is_write: bool
    index: int
    """Position in the instruction's ``writes`` (a def) or ``reads`` (a use)."""
    access: Access
    nest: tuple[tuple[str, int], ...]
    """``(loop name, trip count)`` of every enclosing loop, outermost first."""
    path: str

    @property
    def role(self) -> str:
        return "def" if self.is_write else "use"

    @property
    def label(self) -> str:
        """``NAME.writes[k]`` / ``NAME.reads[k]``."""
        return f"{self.instruction}.{'writes' if self.is_write else 'reads'}[{self.index}]"

    @property
    def instances(self) -> int:
        return prod(trip for _, trip in self.nest)

    def instance(self, flat: int) -> str:
        """Name of the ``flat``-th instance in program order (``w[1,2]``)."""
        index = np.unravel_index(flat, [t for _, t in self.nest]) if self.nest else ()
        return instance_name(self.instruction, tuple(int(i) for i in index))


@dataclass(frozen=True, slots=True)
class LoopPlace:
    """A loop, the loops around it (outermost first), its JSON path and its position in
    its block."""

    loop: Loop
    parents: tuple[Loop, ...]
    path: str
    position: int


@dataclass(frozen=True, slots=True)
class NodePlace:
    """Where one node (loop or instruction) sits: the loops around it, its JSON path, its
    position in its block, and its spans of the index's lists: how many defs, uses and
    instructions come before it (``start``) and before the next node after it (``end``)."""

    node: Node
    loops: tuple[Loop, ...]
    path: str
    position: int
    start: tuple[int, int, int]
    end: tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class ProgramIndex:
    """Every node of one program by name, and every access site and instruction in program
    order, from one walk.  An analysis that visits many loop pairs (``neuronsim loops``,
    fusion verdicts) builds it once and looks names up: walking the whole program for every
    lookup made 10,000 sibling loops take hours.  Node names are unique (the loader checks;
    the first one counts otherwise), and a node's sites are contiguous in program order, so a
    loop's defs and uses are slices."""

    program: Program
    places: Mapping[str, NodePlace]
    loop_places: Mapping[str, LoopPlace]
    defs: tuple[AccessSite, ...]
    uses: tuple[AccessSite, ...]
    instructions: tuple[Instruction, ...]
    """Leaf instructions in program order."""
    loops: tuple[str, ...]
    """Loop names in program order."""
    restricting: Mapping[str, tuple[int, int, int, str]]
    """Loop name -> the first dep restricting its iterations (``x-iterations``): (instruction
    order, dep position, restriction position, instruction name)."""
    rotating: Mapping[str, tuple[int, str]]
    """Loop name -> the first tensor rotating with it (``x-rotate``): (tensor order, name)."""

    @classmethod
    def of(cls, program: Program) -> ProgramIndex:
        places: dict[str, NodePlace] = {}
        defs: list[AccessSite] = []
        uses: list[AccessSite] = []
        instructions: list[Instruction] = []
        loops: list[str] = []
        restricting: dict[str, tuple[int, int, int, str]] = {}

        def counts() -> tuple[int, int, int]:
            return len(defs), len(uses), len(instructions)

        # An explicit stack (no recursion); a loop's entry is closed by its marker once its body is done.
        stack: list = [(node, (), join_path("body", i), i) for i, node in reversed(list(enumerate(program.body)))]
        while stack:
            item = stack.pop()
            if len(item) == 1:  # (loop,): the end of a loop's body
                loop = item[0]
                if places[loop.name].node is loop:
                    places[loop.name] = dataclasses.replace(places[loop.name], end=counts())
                continue
            node, around, path, position = item
            start = counts()
            if isinstance(node, Loop):
                loops.append(node.name)
                stack.append((node,))
                inner, body = (*around, node), join_path(path, "body")
                stack.extend((child, inner, join_path(body, k), k) for k, child in reversed(list(enumerate(node.body))))
            else:
                for d, dep in enumerate(node.deps):
                    for r, (loop, _, _) in enumerate(dep.iterations):
                        restricting.setdefault(loop, (len(instructions), d, r, node.name))
                for site in _sites_of(node, around, path):
                    (defs if site.is_write else uses).append(site)
                instructions.append(node)
            places.setdefault(node.name, NodePlace(node=node, loops=around, path=path, position=position, start=start,
                                                   end=counts()))
        rotating: dict[str, tuple[int, str]] = {}
        for k, tensor in enumerate(program.tensors.values()):
            if tensor.rotate is not None:
                rotating.setdefault(tensor.rotate.loop, (k, tensor.name))
        loop_places = {name: LoopPlace(loop=place.node, parents=place.loops, path=place.path, position=place.position)
                       for name, place in places.items() if isinstance(place.node, Loop)}
        return cls(program=program, places=places, loop_places=loop_places, defs=tuple(defs), uses=tuple(uses),
                   instructions=tuple(instructions), loops=tuple(loops), restricting=restricting, rotating=rotating)

    def loop(self, name: str) -> LoopPlace:
        """The loop called ``name``; a ProgramError naming the loops that exist otherwise."""
        place = self.loop_places.get(name)
        if place is None:
            raise ProgramError("body", f"no loop named {name!r}; loops are {list(self.loops)}")
        return place

    def _place(self, name: str) -> NodePlace:
        place = self.places.get(name)
        if place is None:
            raise ProgramError("body", f"no loop or instruction named {name!r}")
        return place

    def instructions_of(self, name: str) -> tuple[Instruction, ...]:
        """The leaf instructions of the loop or instruction called ``name``, in program order."""
        place = self._place(name)
        return self.instructions[place.start[2]:place.end[2]]

    def node_sites(self, name: str) -> tuple[tuple[AccessSite, ...], tuple[AccessSite, ...]]:
        """``(defs, uses)`` of the loop or instruction called ``name``, in program order."""
        place = self._place(name)
        return self.defs[place.start[0]:place.end[0]], self.uses[place.start[1]:place.end[1]]


def index_of(program: Program, index: ProgramIndex | None = None) -> ProgramIndex:
    """``index`` when a caller judging many loops passes its own, else one built now."""
    return index if index is not None else ProgramIndex.of(program)


def find_loop(program: Program, name: str, *, index: ProgramIndex | None = None) -> LoopPlace:
    """The loop called ``name``; a ProgramError naming the loops that exist otherwise (pass
    ``index`` when looking up many: see :class:`ProgramIndex`)."""
    return index_of(program, index).loop(name)


def require_loops(program: Program, names: Iterable[str], where: str) -> None:
    """Each of ``names`` names a loop of ``program``; else a ProgramError at ``where`` (a pass's
    option: a misspelt loop in ``only=`` would leave the pass doing nothing, silently)."""
    index = index_of(program)
    for name in sorted(names):
        if name not in index.loop_places:
            raise ProgramError(where, f"no loop named {name!r}; loops are {list(index.loops)}")


def _sites_of(inst: Instruction, loops: tuple[Loop, ...], path: str) -> Iterator[AccessSite]:
    nest = loop_nest(loops)
    for key, group, is_write in (("reads", inst.reads, False), ("writes", inst.writes, True)):
        for k, access in enumerate(group):
            yield AccessSite(inst.name, is_write, k, access, nest, join_path(join_path(path, key), k))


def loop_sites(program: Program, name: str, *,
               index: ProgramIndex | None = None) -> tuple[tuple[AccessSite, ...], tuple[AccessSite, ...]]:
    """``(defs, uses)`` of every instruction inside loop ``name`` (nested loops included), in
    program order: the seed's ``collect_def_in_loop`` / ``collect_use_in_loop``."""
    index = index_of(program, index)
    index.loop(name)  # a located error when ``name`` is no loop
    return index.node_sites(name)


def node_sites(program: Program, name: str, *,
               index: ProgramIndex | None = None) -> tuple[tuple[AccessSite, ...], tuple[AccessSite, ...]]:
    """``(defs, uses)`` of the loop or instruction called ``name`` (:func:`loop_sites` for a loop)."""
    return index_of(program, index).node_sites(name)
