"""Peeling for ``fuse-loops{unequal=peel}``: two loops with trip counts ``T1 != T2`` fused over
``m = min(T1, T2)`` iterations, the rest of the longer loop peeled off.

* ``T2 > T1``: the second loop keeps its first ``m`` iterations and a *remainder* loop
  ``NAME~rest`` runs the other ``T2 - m`` right after it;
* ``T1 > T2``: a *head* loop ``NAME~rest`` runs the first loop's first ``T1 - m`` iterations
  before it, and the loop keeps its last ``m``.

Either way every instance keeps its bytes (the peeled part's offsets and partition starts are
moved by the iterations it skips) and the loops' own order, so peeling alone changes nothing;
the equal-trip fusion check then runs on the ``m`` iterations that get fused and is exact for
loops outside any other loop.  The peeled body is a copy: its instructions are renamed
``NAME~rest``, so a dep that names or belongs to an instruction of the loop to peel would need
copying too; such a pair is refused (run fusion before dependence construction, as the
default pipeline does), and so is one whose loops' indices a dep restricts (``x-iterations``)
or a tensor rotates with (``x-rotate``).

>>> from neuronsim.machine.ir.program import Access, Instruction, Loop, MemoryKind, Program, Tensor
>>> t = {"t": Tensor("t", MemoryKind.SBUF, "float32", (32, 16), partition=0, offset=0)}
>>> w = Instruction("w", "dve", "memset", writes=(Access("t", offset=1, pattern=((1, 1),), per_iteration=(("b", 2),)),))
>>> p, rest = peel(Program(t, (Loop("a", 2, ()), Loop("b", 5, (w,)))), "a", "b")
>>> rest, [(n.name, n.trip_count) for n in p.body], p.body[2].body[0].writes[0].offset
('b~rest', [('a', 2), ('b', 2), ('b~rest', 3)], 5)
"""

from __future__ import annotations

import dataclasses

from neuronsim.machine.ir.program import Access, Loop, Node, Program

from neuronsim.passes.analysis.distance import find_loop

__all__ = ["peel", "peel_blocker"]


def _names_in(node: Node) -> set[str]:
    return {inst.name for inst, _ in Program({}, (node,)).instructions()}


def peel_blocker(program: Program, first: str, second: str) -> str | None:
    """Why the longer loop cannot be peeled (None: it can)."""
    a, b = find_loop(program, first).loop, find_loop(program, second).loop
    longer = a if a.trip_count > b.trip_count else b
    inside = _names_in(longer)
    for inst, _ in program.instructions():
        for dep in inst.deps:
            if inst.name in inside or dep.on in inside:
                return (f"peeling {longer.name} would copy {inst.name if inst.name in inside else dep.on}, which a "
                        f"dep names (fuse before dependence construction)")
            for loop, _, _ in dep.iterations:
                if loop in (first, second):
                    return f"a dep of {inst.name} restricts iterations of loop {loop} (x-iterations)"
    for tensor in program.tensors.values():
        if tensor.rotate is not None and tensor.rotate.loop in (first, second):
            return f"tensor {tensor.name} rotates with loop {tensor.rotate.loop} (x-rotate)"
    return None


def _skipped(access: Access, loop: str, skip: int, tensors) -> Access:
    """The access with ``loop``'s index advanced by ``skip`` iterations."""
    shift = dict(access.per_iteration).get(loop, 0)
    pshift = dict(access.partitions_per_iteration).get(loop, 0)
    if not shift and not pshift:
        return access
    changes = {}
    if shift:
        changes["offset"] = (access.offset or 0) + shift * skip
    if pshift:
        start, count, step = access.partitions or (0, tensors[access.tensor].shape[0], 1)
        changes["partitions"] = (start + pshift * skip, count, step)
    return dataclasses.replace(access, **changes)


def _copy(node: Node, loop: str, new_loop: str, skip: int, names: dict[str, str], tensors) -> Node:
    """``node`` with ``loop``'s index advanced by ``skip``, renamed per ``names`` and, when
    ``new_loop`` differs, its shifts keyed by ``new_loop``."""
    if isinstance(node, Loop):
        return Loop(node.name, node.trip_count, tuple(_copy(n, loop, new_loop, skip, names, tensors)
                                                      for n in node.body), node.extras)

    def moved(access: Access) -> Access:
        access = _skipped(access, loop, skip, tensors)
        if new_loop == loop:
            return access
        return dataclasses.replace(
            access, per_iteration=tuple((new_loop if k == loop else k, v) for k, v in access.per_iteration),
            partitions_per_iteration=tuple((new_loop if k == loop else k, v)
                                           for k, v in access.partitions_per_iteration))

    return dataclasses.replace(node, name=names.get(node.name, node.name), reads=tuple(moved(a) for a in node.reads),
                               writes=tuple(moved(a) for a in node.writes))


def _fresh(taken: set[str], base: str) -> str:
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}#{k}"
    taken.add(name)
    return name


def peel(program: Program, first: str, second: str) -> tuple[Program, str]:
    """Split the longer of sibling loops ``first`` and ``second`` so that both run ``min``
    iterations (see module doc); returns the program and the peeled loop's name.  No check:
    see :func:`peel_blocker`."""
    a, b = find_loop(program, first).loop, find_loop(program, second).loop
    m = min(a.trip_count, b.trip_count)
    longer = a if a.trip_count > b.trip_count else b
    rest = longer.trip_count - m
    taken = {node.name for node, _ in program.walk()}
    rest_name = _fresh(taken, f"{longer.name}~rest")
    names = {name: _fresh(taken, f"{name}~rest") for name in sorted(_names_in(longer))}
    tensors = program.tensors
    if longer is b:  # the remainder runs iterations m.. after the fused part
        kept = Loop(b.name, m, b.body, b.extras)
        peeled = Loop(rest_name, rest, tuple(_copy(n, b.name, rest_name, m, names, tensors) for n in b.body), b.extras)
        replacement = (kept, peeled)
    else:  # the head runs iterations 0..rest-1 before the fused part
        peeled = Loop(rest_name, rest, tuple(_copy(n, a.name, rest_name, 0, names, tensors) for n in a.body), a.extras)
        kept = Loop(a.name, m, tuple(_copy(n, a.name, a.name, rest, {}, tensors) for n in a.body), a.extras)
        replacement = (peeled, kept)

    return program.replace_node(longer, replacement), rest_name
