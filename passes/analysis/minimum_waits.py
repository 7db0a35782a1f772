"""The spec's minimum of waits as instance pairs: the one implementation of its walk.

Every conflicting instance pair that rules 1-3 alone leave unordered needs a wait; the waits
that survive the transitive reduction of the resulting happens-before graph are the minimum.
It is computed in one walk and memory linear in the program, never listing the conflicting
pairs: folding latest first, only the latest conflicting instance of each component can
survive (an earlier one on the same component is ordered before it), so each cell of shadow
memory keeps the last write and the last read of each component, and each instance folds at
most one candidate per component into its clock
(:meth:`neuronsim.machine.order.hb.HappensBefore.fold`).  Reads that no write of the program
reaches (kernel inputs) are left out first (:mod:`neuronsim.machine.order.reach`).

Two users: the sync counts (:func:`neuronsim.verify.sync_counts.minimum_sync` counts the pairs)
and ``dep-reduction`` (:mod:`neuronsim.passes.dep_reduction`, ``orders=needed``: which of the
deps' waits realize the minimum).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.order.conflicts import conflict_kind, pair_kinds
from neuronsim.machine.order.deptable import DepTable
from neuronsim.machine.order.hb import HappensBefore, active_sequencers
from neuronsim.machine.order.reach import conflicting_accesses
from neuronsim.machine.order.splitmap import CellSpace, cell_bins
from neuronsim.machine.order.stream import InstanceStream

__all__ = ["MinimumWaits", "minimum_waits", "needed_waits", "keeps_a_needless_wait"]

_FORGET_EVERY = 4096


class MinimumWaits(NamedTuple):
    """Wait ``k`` of the minimum: instance ``waiter[k]`` waits for ``target[k]``, of edge kind
    ``kind[k]`` (RAW, then WAW, then WAR, the strongest the pair's shared bytes give)."""

    target: list[int]
    waiter: list[int]
    kind: list[int]


def minimum_waits(stream: InstanceStream) -> MinimumWaits:
    """The minimum's waits of a placed program's instance stream, waiters in program order.

    Two clocks run side by side: one with rules 1-3 only, which says which conflicting
    instances a candidate pair leaves unordered, and one with the minimum's own waits, which
    folds the candidates latest first and keeps those it does not already order.

    A cell of shadow memory is one dict: component ``c`` -> the last instance of ``c`` that
    wrote it, ``~c`` -> the last that read it.  The kind of a kept wait (RAW, then WAW, then
    WAR, as :func:`neuronsim.machine.order.conflicts.conflict_kind` ranks them) is read off the same cells:
    every cell where the latest conflicting instance ``x`` of a component shares a byte with
    ``y`` still names ``x`` (a later access of that component there would conflict with ``y``
    too, so it would be the latest), so the strongest kind over those cells is the pair's.
    ``y``'s own component is skipped: rules 1 and 3 order it (a same-component pair is never
    a candidate), which also makes recording ``y`` in a cell before its later accesses safe.
    """
    cells = CellSpace(stream.masks(), cell_bins(stream.spec), None, dict)
    alias_last: dict[tuple, dict] = {}  # (group, tensor) -> last write / read per component
    engines_only = HappensBefore(stream.spec.dma_queues, keep={})
    hb = HappensBefore(stream.spec.dma_queues)
    seq, comp, pos, instr = stream.seq.tolist(), stream.comp.tolist(), stream.pos.tolist(), stream.instr.tolist()
    accesses = conflicting_accesses(stream)  # reads no write reaches conflict with nothing
    pieces_of, footprint_at = cells.pieces, stream.footprint_at
    out = MinimumWaits([], [], [])
    active = active_sequencers(stream.seq)
    for y in range(len(stream)):
        s, c = seq[y], comp[y]
        rules13, _ = engines_only.complete(y, s, c, engines_only.trigger(s))
        latest: dict[int, int] = {}  # component -> latest conflicting instance
        kinds: dict[int, int] = {}  # component -> the strongest kind of that pair so far
        for ca in accesses[instr[y]]:
            is_write = ca.is_write
            key = c if is_write else ~c
            mask, byteset = footprint_at(ca, y)
            if isinstance(ca.space, tuple):
                _alias_candidates(alias_last, cells, ca, byteset, y, c, is_write, latest, kinds)
                continue
            for smap, lo, hi in pieces_of(ca.space, ca.space, mask, byteset):
                i, j = smap.span(lo, hi)
                values = smap.values
                for k in range(i, j):
                    cell = values[k]
                    if cell is None:
                        values[k] = {key: y}
                        continue
                    if len(cell) > 1 or key not in cell:
                        _latest_conflicts(cell, c, is_write, latest, kinds)
                    cell[key] = y
        targets = sorted((x for x in latest.values() if rules13[comp[x]] < pos[x]), reverse=True)
        clock, needed = hb.fold(s, targets, comp, pos)
        for x, keep in zip(targets, needed):
            if keep:
                out.target.append(x)
                out.waiter.append(y)
                out.kind.append(kinds[comp[x]])
        hb.complete(y, s, c, clock)
        if not y % _FORGET_EVERY:
            hb.forget(hb.horizon(active(y)), comp, pos)
    return out


def _latest_conflicts(cell: dict[int, int], c: int, is_write: bool, latest: dict[int, int],
                      kinds: dict[int, int]) -> None:
    """Fold the instances a cell names that conflict with an access of component ``c`` into
    ``latest`` / ``kinds``: last writes (RAW for a read, WAW for a write) and, for a write,
    last reads (WAR)."""
    for key, x in cell.items():
        if key >= 0:
            cc, kind = key, (3 if is_write else 4)
        elif is_write:
            cc, kind = ~key, 2
        else:
            continue
        if cc == c:
            continue
        old = latest.get(cc, -1)
        if x > old:
            latest[cc] = x
            kinds[cc] = kind
        elif x == old and kind > kinds[cc]:
            kinds[cc] = kind


def _alias_candidates(alias_last: dict, cells: CellSpace, ca, byteset, y: int, c: int, is_write: bool,
                      latest: dict[int, int], kinds: dict[int, int]) -> None:
    """DRAM alias groups: an access conflicts with every access to another tensor of its group
    (their addresses are unknown: the tensors' last accesses per component), and with the
    accesses to its own tensor that share its bytes (cells keyed by group and tensor)."""
    group = ca.space[1]
    key = c if is_write else ~c
    for (g, tensor), cell in alias_last.items():
        if g == group and tensor != ca.tensor:
            _latest_conflicts(cell, c, is_write, latest, kinds)
    for smap, lo, hi in cells.pieces(("alias", group, ca.tensor), "dram", 0, byteset):
        i, j = smap.span(lo, hi)
        values = smap.values
        for k in range(i, j):
            cell = values[k]
            if cell is None:
                cell = values[k] = {}
            _latest_conflicts(cell, c, is_write, latest, kinds)
            cell[key] = y
    alias_last.setdefault((group, ca.tensor), {})[key] = y


def _byte_kinds(kinds: frozenset) -> np.ndarray:
    return np.asarray([int(k) for k in (EdgeKind.FLOW, EdgeKind.ANTI, EdgeKind.OUTPUT) if k in kinds], np.int8)


def keeps_a_needless_wait(stream: InstanceStream, table: DepTable, resolved, redundant: bytearray,
                           kinds: frozenset) -> bool:
    """Whether a Flow / Anti / Output wait the exact reduction keeps orders a pair sharing no
    byte.  Otherwise every kept wait is one of the minimum's already (a kept wait on a
    conflicting instance is on the latest conflicting one of its component, and nothing else
    orders it), so :func:`needed_waits` could drop nothing: the gate spares its walk."""
    kept = np.frombuffer(bytes(redundant), np.uint8) == 0 if len(redundant) else np.zeros(0, bool)
    kept &= np.isin(table.kind[resolved.row], _byte_kinds(kinds))
    if not kept.any():
        return False
    waiter = np.repeat(np.arange(len(stream), dtype=np.int64), np.diff(resolved.ptr))[kept]
    target = resolved.target.astype(np.int64)[kept]
    shared = pair_kinds(stream, target, waiter)
    if shared is None:  # DRAM alias groups: ask pair by pair
        return any(conflict_kind(stream, a, b) == 0 for a, b in zip(target.tolist(), waiter.tolist()))
    return bool((shared == 0).any())


def needed_waits(stream: InstanceStream, table: DepTable, resolved, kinds: frozenset) -> np.ndarray | None:
    """Per resolved wait entry, whether the fold may keep it under ``orders="needed"``, or
    None when the deps do not realize the spec's minimum (then every order is kept).

    A wait resolves to the *last* instance of its target that the dep names: from after a
    loop, the target's last iteration, which may share no byte with the waiter while an
    earlier iteration does.  Such a wait orders more than any conflict needs, and the exact
    reduction cannot drop it (nothing else orders that last iteration), so the pipeline kept
    one wait above the minimum (the regression in ``tests/unit/test_reduction_needed.py``).
    Here each wait of the minimum (``x`` before ``y``,
    :func:`neuronsim.passes.analysis.minimum_waits.minimum_waits`) is realized by ``y``'s
    resolved wait on the earliest target at or after ``x`` on ``x``'s component (it completes
    after ``x``: rules 1 and 3), and the other Flow / Anti / Output waits are set aside; Ordered
    waits, and kinds outside ``kinds``, always stay.  The waits kept order every pair the
    minimum orders, so every conflicting pair: the result stays race-free.  A wait of the
    minimum that no resolved wait of ``y`` realizes (deps that race, or order a pair only
    through other instances) returns None.
    """
    ptr, target = resolved.ptr.tolist(), resolved.target.tolist()
    comp, pos = stream.comp.tolist(), stream.pos.tolist()
    usable = ~np.isin(table.kind[resolved.row], _byte_kinds(kinds))
    minimum = minimum_waits(stream)
    for x, y in zip(minimum.target, minimum.waiter):
        cx, px = comp[x], pos[x]
        # Entries are latest target first: the earliest realizing one is the last that fits.
        chosen = -1
        for k in range(ptr[y], ptr[y + 1]):
            t = target[k]
            if comp[t] == cx and pos[t] >= px:
                chosen = k
        if chosen < 0:
            return None
        usable[chosen] = True
    return usable
