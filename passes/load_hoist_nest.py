"""Hoisting a load out of an outer loop when it moves only with the loops inside it.

``load-elim``'s plain hoist moves a load that is the same in every iteration of its own loop.
A weight tile loaded in ``for k`` inside ``for n`` inside ``for i`` moves with ``n`` and
``k`` but not with ``i``: every ``i`` iteration loads the same ``n x k`` tiles again.  A
compiler that has the room keeps them all on chip, loaded once (NKIBench's
``add_rmsnorm_matmul`` measures 75.6 MB of HBM traffic: its 8 MB weight read once, not once
per row tile).  This module does that on the loop form:

- the tile becomes one slot per iteration of the loops between the outer loop and the load
  (its shape ``[P, slots, *free]``); every access to it adds the slot of the current
  iteration (``per_iteration`` of those loops, in elements);
- the load moves in front of the outer loop into copies of those loops (named
  ``<loop>~hoist``), filling every slot; the readers stay where they were.

When: the load is a plain DRAM-to-SBUF ``dma_copy`` into a virtual, non-rotating tile it alone
writes, at a fixed place in that tile; its source does not move with the outer loop, and
nothing in the outer loop writes the DRAM bytes' alias group; every access to the tile is
inside the innermost of the loops between, the load first among them; the slots fit the SBUF
room left (``room``: bytes per partition, all tiles counted once, as :func:`sbuf_allows`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from math import prod

from neuronsim.machine.ir.program import Access, Instruction, Loop, Node, Tensor, frozen_mapping
from neuronsim.machine.model.geometry import access_extent

__all__ = ["hoist_nests"]

Chain = tuple[Loop, ...]


def _loads_in(nodes: tuple[Node, ...], chain: Chain) -> Iterator[tuple[Instruction, Chain]]:
    """Every instruction under ``nodes`` at least one loop deep, with the loops around it."""
    for node in nodes:
        if isinstance(node, Loop):
            inner = (*chain, node)
            for child in node.body:
                if isinstance(child, Loop):
                    yield from _loads_in((child,), inner)
                else:
                    yield child, inner


def _accesses_of(nodes: tuple[Node, ...], tensor: str) -> Iterator[tuple[Instruction, Access]]:
    for node in nodes:
        if isinstance(node, Loop):
            yield from _accesses_of(node.body, tensor)
        else:
            yield from ((node, a) for a, _w in node.accesses if a.tensor == tensor)


def _moves_with(access: Access, loops: set[str]) -> bool:
    return any(name in loops for name, _ in (*access.per_iteration, *access.partitions_per_iteration))


def _slotted(access: Access, tile: Tensor, shifts: tuple[tuple[str, int], ...],
             renamed: dict[str, str] | None = None) -> Access:
    """``access`` to the old ``tile`` as an access to its slotted form: the defaults written out
    (a default pattern would cover every slot) and the slot's shift added per loop."""
    offset, pattern = access_extent(tile, access)
    merged = dict(access.per_iteration)
    for loop, shift in shifts:
        merged[loop] = merged.get(loop, 0) + shift
    per_iteration = tuple(merged.items())
    if renamed:
        per_iteration = tuple((renamed.get(n, n), s) for n, s in per_iteration)
    return replace(access, offset=offset, pattern=pattern, per_iteration=per_iteration)


def _renamed_source(access: Access, renamed: dict[str, str]) -> Access:
    return replace(access, per_iteration=tuple((renamed.get(n, n), s) for n, s in access.per_iteration),
                   partitions_per_iteration=tuple((renamed.get(n, n), s) for n, s in access.partitions_per_iteration))


def _rewrite(nodes: tuple[Node, ...], load: Instruction, tile: Tensor,
             shifts: tuple[tuple[str, int], ...]) -> tuple[Node, ...]:
    """``nodes`` without ``load``, every access to ``tile`` reading its slot."""
    out: list[Node] = []
    for node in nodes:
        if isinstance(node, Loop):
            out.append(Loop(node.name, node.trip_count, _rewrite(node.body, load, tile, shifts), node.extras))
        elif node is load:
            continue
        elif any(a.tensor == tile.name for a, _w in node.accesses):
            def fix(accesses: tuple[Access, ...]) -> tuple[Access, ...]:
                return tuple(_slotted(a, tile, shifts) if a.tensor == tile.name else a for a in accesses)
            out.append(replace(node, reads=fix(node.reads), writes=fix(node.writes)))
        else:
            out.append(node)
    return tuple(out)


def hoist_nests(loop: Loop, tensors: dict[str, Tensor], *, is_load: Callable[[Instruction], bool],
                sole_writer: Callable[[str, Instruction], bool], dram_written: Callable[[Loop, str], bool],
                only_inside: Callable[[str, str], bool], loop_names: set[str],
                room: list[int]) -> tuple[list[Node], Loop]:
    """The preload nests to put in front of ``loop`` and ``loop`` without those loads.

    ``tensors`` is updated with the slotted tiles, ``loop_names`` with the copies' names and
    ``room[0]`` (SBUF bytes per partition still free) with the slots' bytes.
    ``only_inside(tensor, loop_name)``: every access to ``tensor`` is inside that loop."""
    preloads: list[Node] = []
    while True:
        found = next(((load, chain) for load, chain in _loads_in(loop.body, ())
                      if _hoistable(loop, load, chain, tensors, is_load, sole_writer, dram_written, only_inside,
                                    room[0])), None)
        if found is None:
            return preloads, loop
        load, chain = found
        source, target = load.reads[0], load.writes[0]
        tile = tensors[target.tensor]
        slots = prod(c.trip_count for c in chain)
        room[0] -= (slots - 1) * tile.bytes_per_partition
        free = tile.free_elements
        shifts = tuple((c.name, free * prod(d.trip_count for d in chain[k + 1:])) for k, c in enumerate(chain))
        renamed = {}
        for c in chain:
            name, n = f"{c.name}~hoist", 1
            while name in loop_names:
                n += 1
                name = f"{c.name}~hoist{n}"
            loop_names.add(name)
            renamed[c.name] = name
        moved = replace(load, reads=(_renamed_source(source, renamed), *load.reads[1:]),
                        writes=(_slotted(target, tile, shifts, renamed),))
        nest: Node = moved
        for c in reversed(chain):
            nest = Loop(renamed[c.name], c.trip_count, (nest,), c.extras)
        preloads.append(nest)
        loop = Loop(loop.name, loop.trip_count, _rewrite(loop.body, load, tile, shifts), loop.extras)
        left = {loop.name, *(c.name for c in chain)}
        scope = [s for s in (tile.extras or {}).get("x-nki-scope", ()) if s not in left]
        tensors[tile.name] = replace(tile, shape=(tile.shape[0], slots, *tile.shape[1:]),
                                     extras=frozen_mapping({**tile.extras, "x-nki-scope": scope}))


def _hoistable(loop: Loop, load: Instruction, chain: Chain, tensors: dict[str, Tensor], is_load, sole_writer,
               dram_written, only_inside, room: int) -> bool:
    """The module doc's conditions for ``load``, ``chain`` deep in ``loop``."""
    if not is_load(load):
        return False
    source, target = load.reads[0], load.writes[0]
    tile = tensors[target.tensor]
    if (not tile.is_virtual or tile.rotate is not None or _moves_with(source, {loop.name})
            or target.per_iteration or target.partitions_per_iteration
            or not sole_writer(tile.name, load) or not only_inside(tile.name, chain[-1].name)
            or dram_written(loop, source.tensor)):
        return False
    users = list(_accesses_of(chain[-1].body, tile.name))
    if users[0][0] is not load or any(a.partitions_per_iteration for _i, a in users):
        return False
    return (prod(c.trip_count for c in chain) - 1) * tile.bytes_per_partition <= room
