"""How the NKI frontend reads a device value while tracing (``nisa.scalar_load``,
``nisa.register_load``, a ``scalar_offset`` tile): the instructions traced so far, each tile on
bytes of its own (the storage the NKI compiler reasons with), run in program order on the
kernel's inputs, and the one tensor read back.  Registered with
:func:`neuronsim.machine.nki.device_values.set_value_reader` when :mod:`neuronsim.verify.nki` is
imported (the frontend sits below the simulator's placement and cannot call it itself).

A trace only appends to its program, so a read resumes from the last one: the memory (and the
engines' random generators) the last read left is kept, and only the
instructions traced since run, on that memory grown for the new tensors (nki-library's find_nonzero_indices
reads 128 offsets: running the whole prefix each time cost minutes).  A read whose program does
not extend the last one (a new trace, a restarted one, other inputs) runs from the start, as
does a read after one with rotating or aliased tensors (kept out: their placement moves).

A tile the kernel can no longer reach gives its bytes to the tiles declared after it
(:mod:`~neuronsim.machine.nki.liveness`), so the memory follows what the kernel holds at once,
not every tile it ever declared.  Each node is checked, before it first runs, not to access a
tile retired before it; one that does pins the tile and the read runs from the start.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import islice

import numpy as np

from neuronsim.machine.ir.program import Loop, Program
from neuronsim.machine.nki.device_values import set_value_reader
from neuronsim.machine.nki.liveness import TileLiveness
from neuronsim.machine.sim.memory import DramLayout, Memory, initial_memory
from neuronsim.machine.sim.plan import build_plan
from neuronsim.machine.sim.simulator import run_sequential

from neuronsim.verify.nki.placement import Apart, place_apart_after

__all__ = ["read_tensor"]


@dataclass(frozen=True)
class _State:
    """What the last read left: the body of the program it ran and how many of its nodes were
    the kernel's (the last is the probe's copy), the inputs it ran them on, the placement of its
    tensors (the probe's excluded), its memory afterwards, and the liveness version it placed
    them under."""

    body: tuple
    ran: int
    inputs: dict
    apart: Apart
    memory: Memory
    version: int = 0


_LAST: list[_State] = []


def read_tensor(program: Program, inputs: dict[str, np.ndarray], tensor: str,
                liveness: TileLiveness | None = None) -> np.ndarray:
    """DRAM output ``tensor`` after ``program`` (virtual tiles allowed, its last node the copy
    into ``tensor``) runs on ``inputs``; ``liveness``: the trace's retired tiles, whose bytes
    later tiles may take."""
    last = _LAST[0] if _LAST else None
    _LAST.clear()  # its memory is reused below: never resume from it twice
    body, ran = program.body, len(program.body) - 1  # (not a copy of the body without the probe: one per read)
    known = {name: value for name, value in inputs.items() if name in program.tensors}
    retired = liveness.retired if liveness is not None else None
    version = liveness.version if liveness is not None else 0
    if last is not None and last.version != version:
        last = None  # a tile it gave away was reached again
    extends = last is not None and _extends(last, body, ran, known)
    accessed = _accessed(body, last.ran if extends else 0, liveness)
    if liveness is not None and liveness.version != version:  # a node reached a tile it gave away
        last, extends, version = None, False, liveness.version
    kept = dict(program.tensors)
    del kept[tensor]  # (placed after the kernel's own, so that the next read resumes from theirs)
    apart = place_apart_after(program.with_tensors(kept), last.apart if last is not None else None, retired)
    placed = place_apart_after(program, apart).program
    if extends and apart.resumed:  # (only the tensors the new nodes access: a walk of all of them per read
        # was quadratic, 10,000 tiles read 512 times in find_nonzero_indices)
        run = replace(placed, tensors={name: placed.tensors[name] for name in accessed}, body=body[last.ran:])
        plan = build_plan(run, timed=False)
        memory = _grown(last.memory, DramLayout.of(run))
    else:
        plan = build_plan(placed, timed=False)
        memory = initial_memory(placed, plan.spec, 0, known)
    memory = run_sequential(plan, memory)
    new = islice(placed.tensors.values(), len(last.apart.declared) if extends and apart.resumed else 0, None)
    if not apart.rotating and not any(t.alias is not None for t in new):  # (older ones: checked before)
        _LAST.append(_State(body=body, ran=ran, inputs=known, apart=apart, memory=memory, version=version))
    return memory.dram_array(placed.tensors[tensor], True)


def _accessed(body: tuple, start: int, liveness: TileLiveness | None) -> set[str]:
    """The tensors the nodes of ``body`` from ``start`` on access.  Each one a node accesses
    though it was retired before that node is pinned (the nodes before ``start`` were checked
    when they first ran)."""
    retired = liveness.retired if liveness is not None else {}
    names, reached = set(), []
    for at in range(start, len(body)):
        stack = [body[at]]
        while stack:
            node = stack.pop()
            if isinstance(node, Loop):
                stack.extend(node.body)
                continue
            for access in (*node.reads, *node.writes):
                names.add(access.tensor)
                gone = retired.get(access.tensor)
                if gone is not None and gone.at <= at:
                    reached.append(access.tensor)
    for name in reached:
        liveness.pin(name)
    return names


def _extends(last: _State, body: tuple, ran: int, known: dict) -> bool:
    """The first ``ran`` nodes of ``body`` are those ``last`` ran with nodes appended, on the
    same inputs (its tensors were placed as they were: :attr:`Apart.resumed`)."""
    done = last.ran  # a trace appends and never edits what a read ran (device_values._new_part), and the
    # last read's nodes are alive, so its last node at its place is the same prefix (a check of every
    # node per read was quadratic: an nl.while_loop reads its condition each iteration)
    if ran < done or (done and body[done - 1] is not last.body[done - 1]):
        return False
    return known.keys() == last.inputs.keys() and all(known[k] is last.inputs[k] for k in known)


def _grown(memory: Memory, layout: DramLayout) -> Memory:
    """``memory`` with room for ``layout``: each memory's bytes kept at their place, tensors
    declared since on zeros (what they hold before a write is undefined anyway).  A memory that
    must grow doubles at least, so a trace of N reads copies its bytes O(log N) times."""
    partitions, spaces, rows = memory.partitions, [], []
    for k, need in enumerate((layout.sbuf_row, layout.psum_row)):
        old = memory.spaces[k].reshape(partitions, -1)
        row = old.shape[1] if need <= old.shape[1] else max(need, 2 * old.shape[1])
        if row != old.shape[1]:
            grown = np.zeros((partitions, row), np.uint8)
            grown[:, :old.shape[1]] = old
            old = grown
        spaces.append(old.reshape(-1))
        rows.append(row)
    dram = memory.spaces[2]
    if layout.size > dram.size:
        dram = np.zeros(max(layout.size, 2 * dram.size), np.uint8)
        dram[:memory.spaces[2].size] = memory.spaces[2]
    room = replace(layout, size=dram.size, sbuf_row=rows[0], psum_row=rows[1])
    out = Memory([*spaces, dram], room, partitions, memory.rng_seed)
    out.rngs, out.saved_rngs = memory.rngs, memory.saved_rngs  # the engines' generators go on from where they were
    return out


set_value_reader(read_tensor)
