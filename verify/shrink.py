"""Shrinking a fuzz failure to a small program, quickly and within a bound.

Hypothesis' own shrinker works on the random choices behind a program, not on the program:
on the fuzzer's crowded programs it takes minutes (and may give up with a warning) and still
leaves instructions and tensors that play no part.  :func:`shrink_program` works on the
program itself, greedily, and stops at a deadline:

1. drop one node (an instruction, or a whole loop) - the largest cut first;
2. cut a loop's trip count to 1 or 2;
3. drop the tensors no access names any more.

A candidate is kept when it is still a valid program (:func:`neuronsim.machine.formats.validate.validate_program`)
and still fails the same check (``still_fails``); the passes repeat until none applies or
the deadline passes.  Every candidate is smaller than the program before it, so it ends.

>>> from neuronsim.machine.ir.program import Instruction, Loop, Program
>>> body = (Instruction("a", "dve", "op_a"), Loop("i", 4, (Instruction("b", "act", "op_b"),)))
>>> small = shrink_program(Program({}, body), lambda p: any(i.name == "b" for i, _ in p.instructions()),
...                        valid=lambda p: True)
>>> [(i.name, [l.trip_count for l in loops]) for i, loops in small.instructions()]
[('b', [1])]
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import replace

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import Instruction, Loop, Node, Program

__all__ = ["shrink_program", "instruction_count", "SHRINK_SECONDS"]

#: Seconds a shrink may take at most (the fuzz command's progress line says when it shrinks).
SHRINK_SECONDS = 60.0


def instruction_count(program: Program) -> int:
    return sum(1 for _ in program.instructions())


def _valid(program: Program) -> bool:
    from neuronsim.machine.formats.validate import validate_program

    try:
        validate_program(program)
    except (ProgramError, ValueError):
        return False
    return True


def _without(nodes: tuple[Node, ...], path: tuple[int, ...]) -> tuple[Node, ...]:
    """``nodes`` without the node at ``path`` (a loop left empty goes too)."""
    head, rest = path[0], path[1:]
    if not rest:
        return nodes[:head] + nodes[head + 1:]
    loop = nodes[head]
    assert isinstance(loop, Loop)
    inner = _without(loop.body, rest)
    if not inner:
        return nodes[:head] + nodes[head + 1:]
    return nodes[:head] + (replace(loop, body=inner),) + nodes[head + 1:]


def _with_trip(nodes: tuple[Node, ...], path: tuple[int, ...], trip: int) -> tuple[Node, ...]:
    head, rest = path[0], path[1:]
    loop = nodes[head]
    assert isinstance(loop, Loop)
    changed = replace(loop, trip_count=trip) if not rest else replace(loop, body=_with_trip(loop.body, rest, trip))
    return nodes[:head] + (changed,) + nodes[head + 1:]


def _paths(nodes: tuple[Node, ...], prefix: tuple[int, ...] = ()) -> Iterator[tuple[tuple[int, ...], Node]]:
    for k, node in enumerate(nodes):
        yield prefix + (k,), node
        if isinstance(node, Loop):
            yield from _paths(node.body, prefix + (k,))


def _size(node: Node) -> int:
    return 1 if isinstance(node, Instruction) else sum(_size(n) for n in node.body)


def _used_tensors(program: Program) -> set[str]:
    used = set()
    for instr, _ in program.instructions():
        used.update(a.tensor for a in (*instr.reads, *instr.writes))
    return used


def _candidates(program: Program) -> Iterator[Program]:
    """Smaller programs, the largest cuts first."""
    nodes = sorted(_paths(program.body), key=lambda pn: -_size(pn[1]))
    for path, _ in nodes:
        yield program.with_body(_without(program.body, path))
    for path, node in _paths(program.body):
        if isinstance(node, Loop):
            for trip in (1, 2):
                if trip < node.trip_count:
                    yield program.with_body(_with_trip(program.body, path, trip))
    used = _used_tensors(program)
    unused = [name for name in program.tensors if name not in used]
    if unused:
        yield program.with_tensors({n: t for n, t in program.tensors.items() if n in used})


def shrink_program(program: Program, still_fails: Callable[[Program], bool], *,
                   seconds: float = SHRINK_SECONDS, valid: Callable[[Program], bool] = _valid,
                   progress: Callable[[int], None] | None = None) -> Program:
    """The smallest program reached from ``program`` that still fails (see the module doc);
    ``progress(instructions)`` is called after every step kept."""
    deadline = time.monotonic() + seconds
    current = program
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for candidate in _candidates(current):
            if time.monotonic() >= deadline:
                break
            if not valid(candidate) or not still_fails(candidate):
                continue
            current, improved = candidate, True
            if progress is not None:
                progress(instruction_count(current))
            break
    used = _used_tensors(current)  # the last step: tensors nothing names (always valid to drop)
    trimmed = current.with_tensors({n: t for n, t in current.tensors.items() if n in used})
    return trimmed if trimmed != current and valid(trimmed) and still_fails(trimmed) else current
