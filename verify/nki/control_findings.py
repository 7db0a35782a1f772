"""Findings of NKI 0.6 / 0.7 semantics, on the traced program:

``loop-state``
    a compiled loop body (``nl.fori_loop`` / ``nl.while_loop``) that changes Python state: a
    variable it closes over rebound (``nonlocal``), or a list / dict it changes in place; and a
    legacy ``affine_range`` / ``sequential_range`` body (or a legacy ``for`` over ``range``, the
    compiler's ``sequential_range``), also traced once, that carries Python state from one
    iteration to the next (reads a plain value before rebinding it, or builds a list;
    :mod:`neuronsim.machine.nki.loop_state`).  The
    NKI docs say the body is traced once and run every iteration, the induction value handed in
    by value, and that other state must go through SBUF / HBM (or, for ``while_loop``, the
    condition register the body returns); a Python change happens once, at trace time.  The
    frontend notes it (``extras["x-nki-loop-state"]``, :mod:`neuronsim.machine.nki.control`) at
    the line that makes the change.  This is the compiled-loop analogue of ``carried`` for
    ``affine_range``.
``psum-uninitialised``
    a matmul that accumulates (``accumulate=True``, or ``+=``) onto PSUM bytes nothing wrote
    before it (in program order, per instance): the bank holds whatever was there.  NKI's CPU
    simulator only warns about it (since NKI 0.5).
``psum-overlap``
    a matmul that accumulates onto bytes an accumulation group over a *different* region holds
    (a matmul wrote them with another partition / byte footprint): the two groups overlap, which
    NKI 0.6's simulator started to flag as producing wrong results on hardware.

``psum-restarted`` (a warning)
    ``nisa.nc_matmul(dst, ..., accumulate=None)`` in a compiled loop's body writing a PSUM tile
    declared before the loop, at the same place every iteration, which nothing in the body reads
    after it: its sum is meant to grow over the iterations, but the body is traced once, and its
    one matmul, the first write there, starts the group (the ``nc_matmul`` page: the first
    write overwrites), so every iteration overwrites the sum of the ones before.  NKI 0.7's
    guidance keeps nothing from one compiled iteration to the next but in SBUF / HBM.  The
    frontend marks such a matmul (``extras["x-nki-accumulate-inferred"]``).

Both PSUM checks walk the instances once, keeping per PSUM tensor which matmul region last
wrote each byte (linear in the instances that touch PSUM).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

import numpy as np

from neuronsim.machine.ir.program import Instruction, Loop, MemoryKind, Program
from neuronsim.machine.model.geometry import footprint, mask_range
from neuronsim.machine.ir.source import SOURCE_KEY, source_line, source_text

from neuronsim.verify.nki.finding import NkiFinding

__all__ = ["control_findings", "loop_state_findings", "psum_findings", "restarted_findings", "ControlFinding"]

LOOP_STATE_KEY = "x-nki-loop-state"
ACCUMULATE_KEY = "x-nki-accumulate"
INFERRED_KEY = "x-nki-accumulate-inferred"
_UNWRITTEN, _ZEROED = 0, -1  # group ids: nothing wrote the byte / a non-matmul write set it


class ControlFinding(NkiFinding):
    """A finding of this module: its own sentence."""

    __slots__ = ("message",)

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(**fields)
        object.__setattr__(self, "message", message)

    def describe(self) -> str:
        return self.message


def control_findings(program: Program) -> list[NkiFinding]:
    """Every finding of this module (registered in :func:`neuronsim.verify.nki.findings.nki_findings`)."""
    return loop_state_findings(program) + psum_findings(program) + restarted_findings(program)


def restarted_findings(program: Program) -> list[NkiFinding]:
    """``psum-restarted`` (module doc): each marked matmul whose PSUM destination outlives an
    iteration of a compiled loop around it, unread in the body after it."""
    found: dict[str, NkiFinding] = {}
    for inst, loops in program.instructions():
        if inst.op != "matmul" or INFERRED_KEY not in inst.extras or not loops:
            continue
        for access in inst.writes:
            tensor = program.tensors[access.tensor]
            scope = (tensor.extras or {}).get("x-nki-scope", ())
            moves = {name for name, _ in access.per_iteration}
            loop = next((lp for lp in reversed(loops) if lp.name not in scope and lp.name not in moves
                         and (tensor.rotate is None or tensor.rotate.loop != lp.name)), None)
            if loop is None or tensor.memory != MemoryKind.PSUM or _read_after(loop, inst, access.tensor):
                continue
            where = source_line(inst)
            label = f"nisa.nc_matmul at {where}" if where else inst.name
            variable = ((tensor.extras or {}).get("x-source") or {}).get("variable") or access.tensor
            found.setdefault(label, ControlFinding(
                f"{label}: nisa.nc_matmul(accumulate=None) into PSUM {variable}, declared before the compiled "
                f"loop {loop.name}, starts its group in every iteration: the body is traced once and its matmul is "
                f"the first write there, so each iteration overwrites the sum of the ones before (carry a sum "
                f"across compiled iterations in SBUF, or make the steps a Python loop)",
                kind="psum-restarted", dependence="RAW", first=label, second=label, loop=loop.name,
                tensors=(access.tensor,), severity="warning"))
    return list(found.values())


def _read_after(loop: Loop, inst: Instruction, tensor: str) -> bool:
    """Whether an instruction of ``loop``'s body after ``inst`` reads ``tensor`` (the body uses
    each iteration's product: overwriting it is meant)."""
    seen = False
    for node, _ in Program({}, loop.body).walk():
        if node is inst:
            seen = True
        elif seen and isinstance(node, Instruction) and any(a.tensor == tensor for a in node.reads):
            return True
    return False


def loop_state_findings(program: Program) -> list[NkiFinding]:
    found = []
    for note in program.extras.get(LOOP_STATE_KEY, ()):
        at = f"{note['file']}:{note['line']}"
        loop = f"{note['loop_file']}:{note['loop_line']}"
        kind = note.get("kind")
        if kind is None:  # nl.fori_loop / nl.while_loop
            message = (f"compiled loop at {loop}: its body {note['how']} Python variable {note['name']!r} at {at}; "
                       f"NKI traces the body once, so the change is not carried from one iteration to the next on "
                       f"the device (keep the state in an SBUF / HBM tile the body updates)")
        else:  # a legacy loop traced once (machine/nki/loop_state.py): a warning, as a kernel may
            # rely on the single change (a student's `cols = cols // 2` in the body, right on hardware)
            label = ("for loop over range(...)" if kind == "python" else f"nl.{kind}_range loop")
            read_as = " (the compiler's nl.sequential_range)" if kind == "python" else ""
            message = (f"{label} at {loop}{read_as}: its body {note['how']} Python variable {note['name']!r} at {at}, "
                       f"which an iteration {'reads first' if note['how'] == 'rebinds' else 'builds on'}; NKI "
                       f"traces the body once, so the change is made once, not once per iteration, here as on "
                       f"NKI (to carry it across iterations keep it in an SBUF / HBM tile, or unroll the loop with "
                       f"nl.static_range)")
        found.append(ControlFinding(message, kind="loop-state", dependence="python", first=at, second=at,
                                    loop=loop, tensors=(), severity="error" if kind is None else "warning"))
    return found


def psum_findings(program: Program) -> list[NkiFinding]:
    # Only a matmul that accumulates reads what the walk records, and only of the tensor it
    # writes: the PSUM tiles nothing accumulates onto need no walk (21,248 of NKIBench's
    # gqa_full's 21,760: its transposes' and one-step matmuls', a 64-256 KiB state each, 1 GB
    # and 2 s in all).
    psum = {access.tensor for inst, _ in program.instructions() if inst.op == "matmul" and inst.attrs.get("accumulate")
            for access in inst.writes if program.tensors[access.tensor].memory == MemoryKind.PSUM}
    if not psum:
        return []
    from neuronsim.verify.nki.placement import identity_placement as _identity_placement

    placed = _identity_placement(program)
    # per element, made when a tensor is first written (a printed kernel's thousands of PSUM
    # blocks: a state per byte of each, made up front, was most of lora's 30 s)
    state: dict[str, np.ndarray] = {}
    regions: dict[tuple, int] = {}
    # Per distinct footprint: its rows, columns, region number and block index (an
    # accumulation group writes one region once per K step: issue 31's matmul, 8,192 writes
    # onto 256 regions).
    seen: dict[tuple, tuple[np.ndarray, np.ndarray, int, Any]] = {}
    # The region a tensor's last write filled with its own number: the next matmul onto that
    # same region finds only it there (an accumulation group's every matmul after its first),
    # so the block need not be read, nor written again.
    filled: dict[str, int] = {}
    found: dict[tuple[str, str], NkiFinding] = {}
    for inst, index in _instances(placed.body, {}, psum):
        accumulates = inst.op == "matmul" and (inst.attrs.get("accumulate") or inst.extras.get(ACCUMULATE_KEY))
        for access in inst.writes:
            if access.tensor not in psum:
                continue
            tensor = placed.tensors[access.tensor]
            fp = footprint(tensor, access, index)
            known = seen.get((access.tensor, fp.partitions, fp.bytes))
            if known is None:
                base = tensor.byte_base
                rows, cols, cells, key = _cells(tensor.partition or 0, tensor.shape[0], tensor.itemsize,
                                                tensor.bytes_per_partition, fp.partitions,
                                                tuple((a - base, b - base) for a, b in fp.bytes))
                region = regions.setdefault((access.tensor, key), len(regions) + 1)
                known = seen[access.tensor, fp.partitions, fp.bytes] = (rows, cols, region, cells)
            rows, cols, region, cells = known
            if inst.op == "matmul" and filled.get(access.tensor) == region:
                continue
            grid = state.get(access.tensor)
            if grid is None:
                grid = state[access.tensor] = np.zeros((tensor.shape[0], -(-tensor.bytes_per_partition //
                                                                         tensor.itemsize)), np.int32)
            held = grid[cells] if rows.size and cols.size else np.zeros(0)
            if accumulates and inst.attrs.get("accumulate"):
                label = source_text(inst, index) if SOURCE_KEY in inst.extras else inst.name
                if (held == _UNWRITTEN).any():
                    found.setdefault(("psum-uninitialised", label), _psum(
                        "psum-uninitialised", label, access.tensor,
                        f"matmul {label} accumulates onto PSUM {access.tensor} bytes nothing wrote before it "
                        f"(start the group with accumulate=False; a memset first is undefined on NeuronCore-v2 "
                        f"and -v3, the nc_matmul page)"))
                others = held[(held > 0) & (held != region)]
                if others.size:
                    found.setdefault(("psum-overlap", label), _psum(
                        "psum-overlap", label, access.tensor,
                        f"matmul {label} accumulates onto PSUM {access.tensor} bytes another accumulation group "
                        f"holds over a different region (the groups overlap: accumulate onto the same region, "
                        f"or use separate banks)"))
            if rows.size and cols.size:
                grid[cells] = region if inst.op == "matmul" else _ZEROED
                filled[access.tensor] = region if inst.op == "matmul" else 0
            else:
                filled.pop(access.tensor, None)
    return list(found.values())


def _psum(kind: str, label: str, tensor: str, message: str) -> ControlFinding:
    return ControlFinding(message, kind=kind, dependence="RAW", first=label, second=label, tensors=(tensor,))


@lru_cache(maxsize=4096)
def _cells(first: int, height: int, size: int, width_bytes: int, mask: int, spans: tuple[tuple[int, int], ...]
           ) -> tuple[np.ndarray, np.ndarray, Any, tuple[bytes, bytes]]:
    """Rows (partitions) and element columns of a PSUM tensor that a footprint covers (a byte
    range not on element boundaries: every element it touches), their block index and a key
    naming the two.  The tensor is given by its first partition, partitions, item size and
    bytes a partition; the footprint by its partition mask and its byte spans from the
    tensor's first byte: a printed kernel's hundreds of PSUM tiles of one shape share one
    answer."""
    lo, hi = mask_range(mask) if mask else (0, 0)
    rows = np.array([p - first for p in range(lo, hi) if mask >> p & 1], np.int64)
    cols = (np.concatenate([np.arange(a // size, -(-b // size)) for a, b in spans])
            if spans else np.zeros(0, np.int64))
    rows = rows[(rows >= 0) & (rows < height)]
    cols = cols[(cols >= 0) & (cols < -(-width_bytes // size))]
    rows.flags.writeable = cols.flags.writeable = False  # shared by every tile alike
    return rows, cols, _block(rows, cols), (rows.tobytes(), cols.tobytes())


def _block(rows: np.ndarray, cols: np.ndarray) -> Any:
    """The index of the ``rows`` x ``cols`` block: slices when both are runs (a tile's usual
    footprint: a view, where the general ``np.ix_`` copies the block; issue 31 measured 1.4 ms
    an access for a 128x512 float32 PSUM tile)."""
    def run(values: np.ndarray) -> Any:
        if values.size and int(values[-1]) - int(values[0]) == values.size - 1 and (np.diff(values) == 1).all():
            return slice(int(values[0]), int(values[-1]) + 1)
        return None

    row_run, col_run = run(rows), run(cols)
    if row_run is not None and col_run is not None:
        return row_run, col_run
    return np.ix_(rows, cols)


def _instances(body: tuple, index: dict[str, int], psum: set[str]) -> Iterator[tuple[Instruction, dict[str, int]]]:
    """Instructions touching PSUM, per instance, in program order (loops without any skipped)."""
    for node in body:
        if isinstance(node, Loop):
            if not _touches(node, psum):
                continue
            for k in range(node.trip_count):
                yield from _instances(node.body, {**index, node.name: k}, psum)
        elif any(a.tensor in psum for a, _w in node.accesses):
            yield node, index


def _touches(loop: Loop, psum: set[str]) -> bool:
    return any(isinstance(n, Instruction) and any(a.tensor in psum for a, _w in n.accesses)
               or isinstance(n, Loop) and _touches(n, psum) for n in loop.body)
