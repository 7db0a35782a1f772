"""Access events on flat arrays: every access of every instance, cut into elementary segments.

The split interval maps of :mod:`neuronsim.machine.order.splitmap` answer "which earlier accesses share bytes
with this one" one access at a time, in Python.  When every question is asked of every
access anyway (a race check, the dependence builders), the same answer comes out of one sort:

* every access of every instance becomes *runs* ``(group, lo, hi)``: its bytes cut at the
  partition atoms of its mask (:func:`neuronsim.machine.order.splitmap.atoms_of`), ``group`` naming the
  (key, atom) pair - the key is the memory space for physical conflicts, the tensor for
  logical ones;
* the run boundaries of each group, sorted, define *segments*: maximal byte ranges every run
  covers whole or misses whole (the cells of a split interval map, computed at once);
* an *event* is (segment, instance, is-write); events sorted by segment then instance list,
  per segment, its accesses in program order.

Two accesses share a byte of one space iff they have events in one segment, so per-segment
neighbours in that order are exactly what the checkers and builders look at (the last write
before an access, the reads since it).  Everything is numpy: per event a few bytes and no
Python object; the only Python loop runs over the distinct compiled accesses of the program
(:attr:`neuronsim.machine.order.stream.InstanceStream.templates`), never over instances.

DRAM alias groups (tensors whose addresses are unknown and may alias any other tensor of the
group) cannot be cut into segments: every access to a group falls into one segment of its
own (``alias_whole``), which over-approximates sharing; users that need the exact answer for
them (the race report) take it from the split maps.

Examples
--------
>>> from neuronsim.machine.ir.program import Access, Instruction, MemoryKind, Program, Tensor
>>> t = {"a": Tensor("a", MemoryKind.SBUF, "float32", (128, 8), partition=0, offset=0)}
>>> body = (Instruction("w", "dve", "memset", writes=(Access("a"),)),
...         Instruction("r", "act", "tensor_copy", reads=(Access("a", offset=4, pattern=((1, 4),)),),
...                     writes=(Access("a", offset=0, pattern=((1, 2),)),)))
>>> from neuronsim.machine.order.stream import InstanceStream
>>> ev = access_events(InstanceStream(Program(t, body)))
>>> [(int(s), int(i), bool(w)) for s, i, w in zip(ev.seg, ev.inst, ev.write)]
[(0, 0, True), (0, 1, True), (1, 0, True), (2, 0, True), (2, 1, False)]
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from neuronsim.machine.model.geometry import sorted_distinct
from neuronsim.machine.order.reach import reached_templates
from neuronsim.machine.order.splitmap import atoms_of
from neuronsim.machine.order.stream import InstanceStream

__all__ = ["Events", "access_events", "merge_pairs", "latest_first_keys"]

_POS_BITS = 41  # byte positions below 2 TiB; group ids above


class Events(NamedTuple):
    """Events sorted by segment, then instance, reads before writes (see the module doc).

    One event per (segment, instance, direction): an instance that touches a segment twice
    the same way has one event there.
    """

    seg: np.ndarray
    inst: np.ndarray
    write: np.ndarray
    template: np.ndarray
    """The compiled access (:attr:`neuronsim.machine.order.stream.InstanceStream.templates` index) behind
    each event (one of them, when several accesses of an instance collapse)."""
    seg_lo: np.ndarray
    """First byte of each segment (by segment id)."""
    seg_hi: np.ndarray
    seg_group: np.ndarray
    """Group id of each segment."""
    groups: list
    """Group id -> ``(key, atom mask)``."""

    def __len__(self) -> int:
        return len(self.seg)


def _aliased(ca, by: str) -> bool:
    """Whether the access falls in its alias group's one segment (physical keys only)."""
    return by == "space" and isinstance(ca.space, tuple)


def _key_of(ca, by: str):
    if by == "tensor":
        return ca.tensor
    if isinstance(ca.space, tuple):
        return ("alias", ca.space[1])  # every tensor of an alias group: one segment (see module doc)
    return ca.space


def access_events(stream: InstanceStream, by: str = "space", *, templates: np.ndarray | None = None,
                  per_tensor: bool = False, keep: bool = True) -> Events:
    """The events of ``stream``'s accesses, grouped by memory space (``by="space"``: physical
    conflicts) or by tensor (``by="tensor"``: the logical chains of ``build-fdeps``).

    ``templates`` restricts the events to those compiled accesses (a boolean mask over
    :attr:`~neuronsim.machine.order.stream.InstanceStream.templates`).  ``per_tensor`` keeps one event per
    (segment, instance, direction, tensor) instead, ties in the order of the instruction's
    accesses (the last write event of an instance is its last write access there).
    ``keep=False`` neither reads nor fills the stream's cache (events asked for once: by tensor,
    ``build-fdeps``; a cached set holds ~13 B per event for the stream's lifetime).  The
    per-tensor set is dropped from the cache once the per-direction one is made from it.
    """
    temps = stream.templates
    if templates is not None and np.all(templates):
        templates = None
    if templates is None and keep:  # every access: cached with the compiled accesses (a later check reuses them)
        cache = getattr(stream, "_event_cache", None)
        if cache is None or cache[0] is not temps:
            cache = stream._event_cache = (temps, {})
        found = cache[1].get((by, per_tensor))
        if found is None and not per_tensor and (by, True) in cache[1]:
            # derived, and the per-tensor set let go (~13 B an event held through the rest of
            # the pipeline and the check): only anti-deps' candidates read it, and they come first
            found = cache[1][(by, False)] = _per_direction(cache[1].pop((by, True)))
        if found is None:
            found = cache[1][(by, per_tensor)] = _access_events(stream, by, None, per_tensor)
        return found
    return _access_events(stream, by, templates, per_tensor)


def _per_direction(ev: Events) -> Events:
    """Per-tensor events collapsed to one per (segment, instance, direction): the first."""
    new = np.ones(len(ev.seg), bool)
    new[1:] = (ev.seg[1:] != ev.seg[:-1]) | (ev.inst[1:] != ev.inst[:-1]) | (ev.write[1:] != ev.write[:-1])
    return Events(ev.seg[new], ev.inst[new], ev.write[new], ev.template[new], ev.seg_lo, ev.seg_hi, ev.seg_group,
                  ev.groups)


def _access_events(stream: InstanceStream, by: str, templates: np.ndarray | None, per_tensor: bool) -> Events:
    temps = stream.templates
    cols = _columns(stream)
    of_mask, atom_masks = atoms_of(stream.masks())
    of_mask[0] = (0,)
    group_ids: dict[tuple, int] = {}
    groups: list = []

    def group(key, atom: int, mask: int) -> int:
        gid = group_ids.get((key, atom))
        if gid is None:
            gid = group_ids[(key, atom)] = len(groups)
            groups.append((key, atom_masks[atom] if mask else 0))
        return gid

    wanted = np.ones(len(temps), bool) if templates is None else np.asarray(templates, bool)
    wanted = wanted & ~_unwritten_reads(stream, cols, by)
    moving_parts = cols.moving_parts
    run_t, run_g, run_lo, run_hi = _template_runs(temps, cols, wanted & ~moving_parts, by, of_mask, group)
    # Access slots -> (instance, template, byte shift) rows: every instance of the slot.
    slot_x, slot_t = stream.slot_x, stream.slot_t
    keep = wanted[slot_t] & ~moving_parts[slot_t]
    inst, tmpl, delta, slot = _instance_rows(stream, slot_x[keep], slot_t[keep], np.flatnonzero(keep))
    if by == "space" and stream.has_loops:  # an alias group is one segment, wherever the access moves
        delta[cols.alias[tmpl]] = 0
    # Rows x runs: each (instance, template) over the template's runs.
    first_run = np.searchsorted(run_t, np.arange(len(temps) + 1))
    nruns = (first_run[1:] - first_run[:-1])[tmpl]
    if (nruns == 1).all():  # one run per template (whole tiles, contiguous rows): a row is its run's row
        row, r = None, first_run[tmpl]
        ev_inst, ev_tmpl = inst.astype(np.int32, copy=False), tmpl.astype(np.int32, copy=False)
        ev_slot = slot.astype(np.int32)
        del inst, slot  # the int64 rows: ~8 B per row each, at what was this function's peak
    else:
        row = np.repeat(np.arange(len(tmpl)), nruns)
        r = first_run[tmpl[row]] + (np.arange(len(row)) - np.repeat(np.cumsum(nruns) - nruns, nruns))
        ev_inst, ev_tmpl, ev_slot = inst[row], tmpl[row], slot[row]
        del inst, slot
    del nruns
    moving_rows = bool(moving_parts.any())
    if not moving_rows and not delta.any():  # no byte moves: boundaries are the runs' (far fewer than rows)
        used = np.bincount(r, minlength=len(run_t)) > 0
        lo_key = (run_g << _POS_BITS) + run_lo
        hi_key = (run_g << _POS_BITS) + run_hi
        bounds = sorted_distinct(np.concatenate([lo_key[used], hi_key[used]]))
        run_s = np.searchsorted(bounds, lo_key)
        run_span = np.searchsorted(bounds, hi_key) - run_s
        if len(r) and (run_span[used] == 1).all():  # each run one segment: the rows are the events
            seg, s_lo, span = run_s.astype(np.int32)[r], None, None  # (no int64 column per row)
        else:
            s_lo, span = run_s[r], run_span[r]
        del run_s, run_span
    else:
        shift = delta if row is None else delta[row]
        g, lo, hi = run_g[r], run_lo[r] + shift, run_hi[r] + shift
        del shift
        if moving_rows:  # partitions that move with a loop: atoms per instance, in Python (rare)
            extra = _moving_rows(stream, wanted & moving_parts, by, of_mask, group)
            ev_inst, ev_tmpl, ev_slot, g, lo, hi = (np.concatenate([a, b]) for a, b in
                                                    zip((ev_inst, ev_tmpl, ev_slot, g, lo, hi), extra))
        # Segments: the sorted distinct boundaries of each group.
        lo_key = (g << _POS_BITS) + lo
        hi_key = (g << _POS_BITS) + hi
        bounds = sorted_distinct(np.concatenate([lo_key, hi_key]))
        s_lo = np.searchsorted(bounds, lo_key)
        span = np.searchsorted(bounds, hi_key) - s_lo
        del g, lo, hi
    del row, r, tmpl, delta, lo_key, hi_key  # the rows' columns: ~8 B per row each
    # From here on every column is per event and int32 (ids below 2**31; users widen before
    # combining keys): 13 B per event kept, and each reordering below rebinds one column at a
    # time, so only one old column is alive beside the new ones (performance notes, section 2.9).
    if span is not None and len(span) and (span == 1).all():  # each row one segment: the rows are the events
        seg = s_lo.astype(np.int32)
    elif span is not None:  # (None: the segments were found per run above, each row one)
        rep = np.repeat(np.arange(len(s_lo)), span)
        seg = (s_lo[rep] + (np.arange(len(rep)) - np.repeat(np.cumsum(span) - span, span))).astype(np.int32)
        ev_inst, ev_tmpl, ev_slot = ev_inst[rep], ev_tmpl[rep], ev_slot[rep]
        del rep
    del s_lo, span
    ev_inst, ev_tmpl, ev_slot = (ev_inst.astype(np.int32, copy=False), ev_tmpl.astype(np.int32, copy=False),
                                 ev_slot.astype(np.int32, copy=False))
    write = cols.write[ev_tmpl]
    if len(seg) and np.any(ev_slot[1:] < ev_slot[:-1]):  # ties broken by slot: rows in slot order first
        by_slot = np.argsort(ev_slot, kind="stable")
        seg = seg[by_slot]
        ev_inst = ev_inst[by_slot]
        write = write[by_slot]
        ev_tmpl = ev_tmpl[by_slot]
        ev_slot = ev_slot[by_slot]
    if per_tensor and len(seg):  # one event per (segment, instance, direction, tensor) first
        tensor = cols.tensor[ev_tmpl].astype(np.int32)
        order = _stable_order((seg, len(bounds)), (ev_inst, len(stream)), (write, 2),
                              (tensor, len(stream.tensor_names)))
        seg = seg[order]
        ev_inst = ev_inst[order]
        write = write[order]
        ev_tmpl = ev_tmpl[order]
        ev_slot = ev_slot[order]
        tensor = tensor[order]
        new = np.ones(len(seg), bool)
        new[1:] = (seg[1:] != seg[:-1]) | (ev_inst[1:] != ev_inst[:-1]) | (write[1:] != write[:-1]) | \
            (tensor[1:] != tensor[:-1])
        del tensor
        seg, ev_inst, write, ev_tmpl, ev_slot = seg[new], ev_inst[new], write[new], ev_tmpl[new], ev_slot[new]
        by_slot = np.argsort(ev_slot, kind="stable")
        seg = seg[by_slot]
        ev_inst = ev_inst[by_slot]
        write = write[by_slot]
        ev_tmpl = ev_tmpl[by_slot]
    del ev_slot
    order = _stable_order((seg, len(bounds)), (ev_inst, len(stream)), (write, 2))
    seg = seg[order]
    ev_inst = ev_inst[order]
    write = write[order]
    ev_tmpl = ev_tmpl[order]
    del order
    if len(seg) and not per_tensor:  # one event per (segment, instance, direction)
        new = np.ones(len(seg), bool)
        new[1:] = (seg[1:] != seg[:-1]) | (ev_inst[1:] != ev_inst[:-1]) | (write[1:] != write[:-1])
        seg, ev_inst, write, ev_tmpl = seg[new], ev_inst[new], write[new], ev_tmpl[new]
    seg_group = bounds >> _POS_BITS
    seg_lo = bounds - (seg_group << _POS_BITS)
    seg_hi = np.append(seg_lo[1:], 0)
    return Events(seg, ev_inst, write, ev_tmpl, seg_lo, seg_hi, seg_group, groups)



class _Columns(NamedTuple):
    """Per compiled access (template), what the event builder reads, as arrays: built in one
    Python pass per stream and placement and shared by every :func:`access_events` call."""

    tensor: np.ndarray
    write: np.ndarray
    alias: np.ndarray
    """Falls in a DRAM alias group (one segment per group when keyed by space)."""
    space: np.ndarray
    """Id of the space key (``spaces``)."""
    spaces: list
    mask: np.ndarray
    """Id of the partition mask (``masks``)."""
    masks: list
    nruns: np.ndarray
    lo: np.ndarray
    """First byte of the first run (0 when none)."""
    hi: np.ndarray
    moving_parts: np.ndarray


def _columns(stream: InstanceStream) -> _Columns:
    temps = stream.templates
    cached = getattr(stream, "_event_columns", None)
    if cached is not None and cached[0] is temps:
        return cached[1]
    spaces: dict = {}
    masks: dict[int, int] = {}
    m = len(temps)

    def column(values, dtype) -> np.ndarray:
        return np.fromiter(values, dtype, m)

    # one array per column, straight from the templates: no row tuples (~200 B per template
    # while they lived) and no 9-wide block kept alive by its column views
    aliased = column((isinstance(ca.space, tuple) for ca in temps), bool)
    first = [ca.bytes[0] if ca.bytes else (0, 0) for ca in temps]
    out = _Columns(column((ca.tensor for ca in temps), np.int64), column((ca.is_write for ca in temps), bool),
                   aliased,
                   column((spaces.setdefault(("alias", ca.space[1]) if alias else ca.space, len(spaces))
                           for ca, alias in zip(temps, aliased.tolist())), np.int64), list(spaces),
                   column((masks.setdefault(ca.mask, len(masks)) for ca in temps), np.int64), list(masks),
                   column((len(ca.bytes) for ca in temps), np.int64), column((lo for lo, _ in first), np.int64),
                   column((hi for _, hi in first), np.int64), column((bool(ca.pshifts) for ca in temps), bool))
    del first
    stream._event_columns = (temps, out)
    return out


def latest_first_keys(pairs: list, n: int) -> np.ndarray:
    """``later * n + (n - 1 - earlier)`` of instance pairs ``pairs = [later, earlier]`` (ids
    below ``n``): ascending, the keys order by ``later``, then latest ``earlier`` first.  Made in
    place as one int64 column, and the list is emptied as it goes, so that the caller holds
    neither column while the key is made (at a million instances each is megabytes).

    >>> latest_first_keys([np.array([2, 2, 3]), np.array([0, 1, 2])], 4).tolist()
    [11, 10, 13]
    """
    key = pairs.pop(0).astype(np.int64)
    key *= n
    key += n - 1
    key -= pairs.pop()
    return key


def merge_pairs(key: np.ndarray, bits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each distinct ``key`` once, ascending, with the ``bits`` of its occurrences or-ed: how
    the builders merge the instance pairs they find (rule bits per pair).

    >>> k, b = merge_pairs(np.array([5, 2, 5]), np.array([1, 4, 2]))
    >>> k.tolist(), b.tolist()
    ([2, 5], [4, 3])
    """
    order = np.argsort(key, kind="stable")
    key, bits = key[order], bits[order]
    first = np.ones(len(key), bool)
    first[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(first)
    return key[starts], (np.bitwise_or.reduceat(bits, starts) if len(starts) else bits[:0])


def _unwritten_reads(stream: InstanceStream, cols: _Columns, by: str) -> np.ndarray:
    """Per template: a read that can share a segment with no write, left out of the events
    (it can neither conflict nor chain).  By space, a read no write's bytes reach
    (:func:`neuronsim.machine.order.reach.reached_templates`); by tensor, a read of a tensor never written."""
    if by == "space":
        return ~reached_templates(stream)
    written = np.zeros(len(stream.tensor_names), bool)
    written[cols.tensor[cols.write]] = True
    return ~cols.write & ~written[cols.tensor]


def _stable_order(*columns: tuple[np.ndarray, int]) -> np.ndarray:
    """The stable sort order by ``columns`` (most significant first), each ``(values, bound)``
    with ``0 <= values < bound``: one argsort of a combined key when it fits 63 bits (much
    faster than a lexsort over millions of rows), a lexsort otherwise."""
    total = 1
    for _, bound in columns:
        total *= max(bound, 1)
    if total >= 1 << 63:
        return np.lexsort(tuple(values for values, _ in reversed(columns)))
    key = np.zeros(len(columns[0][0]), np.int64)
    for values, bound in columns:
        key *= max(bound, 1)
        key += values
    return np.argsort(key, kind="stable")


def _template_runs(temps, cols: _Columns, wanted: np.ndarray, by: str, of_mask: dict, group):
    """``(template, group, lo, hi)`` arrays: the runs of every wanted template at iteration 0,
    sorted by template.  Templates of one run and one partition atom (nearly all) are laid
    out with numpy; the others in Python."""
    aliased = cols.alias if by == "space" else np.zeros(len(temps), bool)
    if by == "tensor":
        key_id, key_list = cols.tensor, list(range(int(cols.tensor.max()) + 1 if len(temps) else 0))
    else:
        key_id, key_list = cols.space, cols.spaces
    zero_mask = cols.masks.index(0) if 0 in cols.masks else len(cols.masks)
    mask_list = cols.masks + ([0] if zero_mask == len(cols.masks) else [])
    mask_id = np.where(aliased, zero_mask, cols.mask)
    nruns = np.where(aliased, 1, cols.nruns)
    natoms = np.asarray([len(of_mask[m]) if m else 1 for m in mask_list], np.int64)[mask_id] if len(temps) else \
        np.zeros(0, np.int64)
    simple = wanted & (nruns == 1) & (natoms == 1)
    ts = np.flatnonzero(simple)
    first_atom = np.asarray([of_mask[m][0] if m else 0 for m in mask_list], np.int64)
    # group ids of the simple templates: one per (key, atom), created in a deterministic order
    pairs = np.unique(np.stack([key_id[ts], first_atom[mask_id[ts]], mask_id[ts]], axis=1), axis=0) \
        if len(ts) else np.zeros((0, 3), np.int64)
    code: dict[tuple[int, int], int] = {}
    for k, atom, mid in pairs.tolist():
        code[(k, atom)] = group(key_list[k], atom, mask_list[mid])
    if len(ts):
        combined = key_id[ts] * (len(of_mask) + len(mask_list) + 1) + first_atom[mask_id[ts]]
        table = {k * (len(of_mask) + len(mask_list) + 1) + a: g for (k, a), g in code.items()}
        uniq, inverse = np.unique(combined, return_inverse=True)
        g_simple = np.asarray([table[u] for u in uniq.tolist()], np.int64)[inverse]
        lo_simple = np.where(aliased[ts], 0, cols.lo[ts])
        hi_simple = np.where(aliased[ts], 1, cols.hi[ts])
    else:
        g_simple = lo_simple = hi_simple = np.zeros(0, np.int64)
    rest_t, rest_g, rest_lo, rest_hi = [], [], [], []
    for t in np.flatnonzero(wanted & ~simple).tolist():
        ca = temps[t]
        alias = _aliased(ca, by)
        key = _key_of(ca, by)
        for atom in ((0,) if alias or not ca.mask else of_mask[ca.mask]):
            g = group(key, atom, 0 if alias else ca.mask)
            for lo, hi in ((0, 1),) if alias else ca.bytes:
                rest_t.append(t)
                rest_g.append(g)
                rest_lo.append(lo)
                rest_hi.append(hi)
    run_t = np.concatenate([ts, np.asarray(rest_t, np.int64)])
    order = np.argsort(run_t, kind="stable")
    return (run_t[order], np.concatenate([g_simple, np.asarray(rest_g, np.int64)])[order],
            np.concatenate([lo_simple, np.asarray(rest_lo, np.int64)])[order],
            np.concatenate([hi_simple, np.asarray(rest_hi, np.int64)])[order])


def _instance_rows(stream: InstanceStream, slot_x: np.ndarray, slot_t: np.ndarray, slots: np.ndarray):
    """``(instance, template, byte shift, slot)`` for every instance of every access slot."""
    if not stream.has_loops:
        return slot_x, slot_t, np.zeros(len(slot_x), np.int64), slots
    temps = stream.templates
    depth = np.asarray([len(t) for t in stream.trips], np.int64)[slot_x]
    simple = depth == 0
    parts_i = [np.asarray(stream.first, np.int64)[slot_x[simple]]]
    parts_t = [slot_t[simple]]
    parts_d = [np.zeros(int(simple.sum()), np.int64)]
    parts_s = [slots[simple]]
    for x, t, k in zip(slot_x[~simple].tolist(), slot_t[~simple].tolist(), slots[~simple].tolist()):
        ids = stream.instances_of(x)
        ca = temps[t]
        delta = np.zeros(len(ids), np.int64)
        if ca.shifts or ca.rotation:
            digits = stream.digits_of(x)
            for k, s in ca.shifts:
                delta += digits[:, k] * s
            if ca.rotation is not None:
                k, slots, stride = ca.rotation
                delta += (digits[:, k] % slots) * stride
        parts_i.append(ids)
        parts_t.append(np.full(len(ids), t, np.int64))
        parts_d.append(delta)
        parts_s.append(np.full(len(ids), k, np.int64))
    return np.concatenate(parts_i), np.concatenate(parts_t), np.concatenate(parts_d), np.concatenate(parts_s)


def _moving_rows(stream: InstanceStream, wanted: np.ndarray, by: str, of_mask: dict, group):
    """Rows of the templates whose partitions move with a loop, instance by instance."""
    rows: list[tuple[int, int, int, int, int, int]] = []
    temps = stream.templates
    for k, (x, t) in enumerate(zip(stream.slot_x.tolist(), stream.slot_t.tolist())):
        if not wanted[t]:
            continue
        ca = temps[t]
        key = _key_of(ca, by)
        for i in stream.instances_of(x).tolist():
            mask, byteset = stream.footprint_at(ca, i)
            for atom in of_mask[mask] if mask else (0,):
                g = group(key, atom, mask)
                rows.extend((i, t, k, g, lo, hi) for lo, hi in byteset)
    cols = np.asarray(rows, np.int64).reshape(-1, 6).T
    return cols[0], cols[1], cols[2], cols[3], cols[4], cols[5]
