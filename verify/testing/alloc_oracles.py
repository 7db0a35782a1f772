"""Brute-force oracles for the allocator, read off the format and the pass contract.

Every instance is unrolled (:func:`neuronsim.machine.order.unroll.unroll`) and every access expanded into its
explicit cells (partition x byte, as integer codes) with :func:`neuronsim.machine.model.geometry.footprint`,
which honours ``x-rotate``; nothing here uses the allocator's own analysis.

* :func:`holding_clashes`: tensor ``T`` *holds* the cells it touches in a window (one
  iteration of its ``x-rotate`` loop; the whole program when it does not rotate) from its
  first to its last access in that window.  Two different tensors must never hold one cell
  at one instance (the contract's sharing rule, counting every iteration).
* :func:`stale_reads`: every read of a cell that the logical program (each virtual tensor in
  storage of its own, no rotation) has written must see the same writer instance in the
  placed program: the allocation changes no value.
* :func:`private_over`: is a tensor iteration-private over a loop in the logical program
  (every cell read was last written in the same iteration of that loop)?
* :func:`reuse_pairs`: instance pairs the placement makes conflict (one writes, they share a
  physical cell) that touch *different* tensors: the allocator-created reuse.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from neuronsim.machine.model.geometry import Footprint, footprint
from neuronsim.machine.ir.program import Access, MemoryKind, Program, Tensor
from neuronsim.machine.order.unroll import unroll

_SPACES = {"sbuf": 0, "psum": 1, "dram": 2}


def _codes(fp: Footprint, space: int) -> np.ndarray:
    """Sorted int64 codes ``space << 56 | partition << 40 | byte`` of a footprint's cells."""
    parts = np.asarray([p for p in range(fp.partitions.bit_length()) if fp.partitions >> p & 1] or [0], np.int64)
    nbytes = np.concatenate([np.arange(lo, hi, dtype=np.int64) for lo, hi in fp.bytes])
    return ((np.int64(space) << 56) | (parts[:, None] << 40) | nbytes[None, :]).ravel()


def _unique(codes: np.ndarray) -> np.ndarray:
    """Sorted distinct codes (a sort: faster here than numpy's hashing ``unique``)."""
    codes = np.sort(codes)
    return codes[np.concatenate(([True], codes[1:] != codes[:-1]))] if len(codes) else codes


def _space(tensor: Tensor, own: dict[str, int], logical: bool) -> int:
    """Physical spaces are shared; a virtual tensor (logically) and an alias-group tensor
    have a space of their own."""
    if tensor.alias is not None or (logical and tensor.is_virtual):
        return own.setdefault(tensor.name, 3 + len(own))
    return _SPACES[{MemoryKind.SBUF: "sbuf", MemoryKind.PSUM: "psum", MemoryKind.DRAM: "dram"}[tensor.memory]]


def accesses(program: Program, logical: bool):
    """``[(instance, [(tensor name, is_write, cell codes), ...]), ...]`` in program order."""
    own: dict[str, int] = {}
    out = []
    for inst in unroll(program):
        mine = []
        for access, is_write in inst.instr.accesses:
            tensor = program.tensors[access.tensor]
            fp = footprint(tensor, access, inst.iteration)
            mine.append((access.tensor, is_write, _codes(fp, _space(tensor, own, logical))))
        out.append((inst, mine))
    return out


def _window(inst, tensor: Tensor) -> tuple:
    if tensor.rotate is None:
        return ()
    depth = [loop.name for loop in inst.loops].index(tensor.rotate.loop)
    return inst.index[:depth + 1]


def holding_clashes(original: Program, placed: Program) -> list[tuple]:
    """``(T, window, U, window, instances, cell)`` where two different tensors hold one cell at
    one instance.  Tensors placed before allocation hold their every cell forever (the
    contract keeps new placements off them) but are not checked against each other."""
    holds: dict[tuple[str, tuple], list] = {}
    for inst, mine in accesses(placed, logical=False):
        for name, _, codes in mine:
            key = (name, _window(inst, placed.tensors[name]))
            entry = holds.setdefault(key, [inst.id, inst.id, []])
            entry[1] = inst.id
            entry[2].append(codes)
    forever = (-1, 1 << 62)
    entries = []
    for (name, window), (lo, hi, codes) in holds.items():
        if not original.tensors[name].is_virtual:
            lo, hi = forever
        entries.append((lo, hi, name, window, _unique(np.concatenate(codes))))
    for t in original.tensors.values():  # untouched bytes of placed tensors count too
        if not t.is_virtual and t.alias is None:
            whole = footprint(t, Access(t.name), {})
            entries.append((*forever, t.name, "whole", _codes(whole, _space(t, {}, False))))
    entries.sort(key=lambda e: e[0])
    clashes = []
    for k, (lo, hi, name, window, codes) in enumerate(entries):
        for lo2, hi2, name2, window2, codes2 in entries[k + 1:]:
            if lo2 > hi:
                break
            if name2 == name or (not original.tensors[name].is_virtual and not original.tensors[name2].is_virtual):
                continue
            shared = np.intersect1d(codes, codes2, assume_unique=True)
            if len(shared):
                clashes.append((name, window, name2, window2, (max(lo, lo2), min(hi, hi2)), int(shared[0])))
    return clashes


def _writers(program: Program, logical: bool):
    """Per instance and access: the writer instance of each cell it reads (-1: none yet),
    aligned with the cells in code order; plus the instances."""
    trace = accesses(program, logical)
    universe = _unique(np.concatenate([c for _, mine in trace for _, _, c in mine] or [np.zeros(0, np.int64)]))
    writer = np.full(len(universe), -1, np.int64)
    seen = []
    for inst, mine in trace:
        row = []
        for name, is_write, codes in mine:
            index = np.searchsorted(universe, codes)
            if is_write:
                writer[index] = inst.id
            else:
                row.append((name, writer[index].copy()))
        seen.append((inst, row))
    return seen


def stale_reads(original: Program, placed: Program) -> list[tuple[str, str, int, int]]:
    """``(instance, tensor, logical writer, physical writer)`` of reads whose value the
    placement changes (the logical writer exists and differs)."""
    out = []
    for (inst, logical), (_, physical) in zip(_writers(original, True), _writers(placed, False)):
        for (name, want), (_, got) in zip(logical, physical):
            bad = np.flatnonzero((want >= 0) & (want != got))
            if len(bad):
                out.append((inst.name, name, int(want[bad[0]]), int(got[bad[0]])))
    return out


def private_over(original: Program, tensor: str, loop: str) -> bool:
    """Brute force: every cell an instance reads from ``tensor`` was last written (logically)
    by an instance in the same iteration of ``loop``."""
    instances = {inst.id: inst for inst in unroll(original)}

    def window(inst) -> tuple:
        depth = [lp.name for lp in inst.loops].index(loop)
        return inst.index[:depth + 1]

    for inst, reads in _writers(original, True):
        for name, writers in reads:
            if name != tensor:
                continue
            if (writers < 0).any() or any(window(instances[w]) != window(inst) for w in set(writers.tolist())):
                return False
    return True


def reuse_pairs(original: Program, placed: Program) -> int:
    """Instance pairs (one writes) sharing a physical cell, on two different tensors of which
    at least one was virtual: conflicts the allocation created."""
    by_tensor: dict[str, list[tuple[int, bool, np.ndarray]]] = defaultdict(list)
    for inst, mine in accesses(placed, logical=False):
        for name, is_write, codes in mine:
            by_tensor[name].append((inst.id, is_write, codes))
    cells = {name: _unique(np.concatenate([c for _, _, c in uses])) for name, uses in by_tensor.items()}
    names = sorted(by_tensor)
    pairs = set()
    for k, a in enumerate(names):
        for b in names[k + 1:]:
            if not (original.tensors[a].is_virtual or original.tensors[b].is_virtual):
                continue
            if not len(np.intersect1d(cells[a], cells[b], assume_unique=True)):
                continue
            for i, wi, ci in by_tensor[a]:
                for j, wj, cj in by_tensor[b]:
                    if (wi or wj) and len(np.intersect1d(ci, cj)):
                        pairs.add((min(i, j), max(i, j)))
    return len(pairs)


def _common_loops(program: Program, name: str) -> tuple:
    nests = [loops for inst, loops in program.instructions() if any(a.tensor == name for a, _ in inst.accesses)]
    common = nests[0] if nests else ()
    for loops in nests[1:]:
        k = 0
        while k < len(common) and k < len(loops) and common[k] is loops[k]:
            k += 1
        common = common[:k]
    return common


def rotation_mismatches(original: Program, placed: Program, slots: int = 2) -> list[tuple[str, str]]:
    """``(tensor, what is wrong)`` where the rotation decision is not the exact one: a tensor
    rotates iff it is a virtual, non-input/output tensor iteration-private over one of the
    loops (of trip count >= 2) enclosing all its accesses, over the innermost such loop, with
    ``min(slots, trip count)`` slots (``slots`` 2, the default ``buffers`` and
    ``psum_buffers``)."""
    out = []
    for name, tensor in original.tensors.items():
        internal = tensor.memory != MemoryKind.DRAM or tensor.role == "internal"
        eligible = tensor.is_virtual and tensor.alias is None and internal
        candidates = [loop for loop in _common_loops(original, name) if loop.trip_count >= 2] if eligible else []
        private = [loop for loop in candidates if private_over(original, name, loop.name)]
        rotate = placed.tensors[name].rotate
        if rotate is None:
            if private:
                out.append((name, f"private over {private[-1].name} but not rotated"))
            continue
        if not private or rotate.loop != private[-1].name:
            out.append((name, f"rotates over {rotate.loop}; private over {[loop.name for loop in private]}"))
        elif rotate.slots != min(slots, private[-1].trip_count):
            out.append((name, f"{rotate.slots} slots"))
    return out
