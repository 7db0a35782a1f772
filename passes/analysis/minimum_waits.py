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

from neuronsim.machine.order.hb import HappensBefore
from neuronsim.machine.order.reach import conflicting_accesses
from neuronsim.machine.order.splitmap import SBUF_BIN, CellSpace
from neuronsim.machine.order.stream import InstanceStream

__all__ = ["MinimumWaits", "minimum_waits"]

_FORGET_EVERY = 4096


class MinimumWaits(NamedTuple):
    """Wait ``k`` of the minimum: instance ``waiter[k]`` waits for ``target[k]``, of edge kind
    ``kind[k]`` (RAW, then WAW, then WAR, the strongest the pair's shared bytes give)."""

    target: list[int]
    waiter: list[int]
    kind: list[int]


def _bins(stream: InstanceStream) -> dict[str, int]:
    return {"sbuf": SBUF_BIN, "psum": stream.spec.psum_bank_bytes, "dram": stream.spec.dram_bin_bytes}


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
    cells = CellSpace(stream.masks(), _bins(stream), None, dict)
    alias_last: dict[tuple, dict] = {}  # (group, tensor) -> last write / read per component
    engines_only = HappensBefore(stream.spec.dma_queues, keep={})
    hb = HappensBefore(stream.spec.dma_queues)
    seq, comp, pos, instr = stream.seq.tolist(), stream.comp.tolist(), stream.pos.tolist(), stream.instr.tolist()
    accesses = conflicting_accesses(stream)  # reads no write reaches conflict with nothing
    pieces_of, footprint_at = cells.pieces, stream.footprint_at
    out = MinimumWaits([], [], [])
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
            hb.forget(hb.horizon(), comp, pos)
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
