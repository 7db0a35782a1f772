"""Sync counts (the `footprint` command): how many waits a program executes, of which kinds, and the minimum.

Counted per stage (the program as given, then after each pass):

``deps``
    instruction-level deps, by kind (flow / anti / output / ordered).
``waits``
    instance-level waits: one per dep per instance it resolves at (a wait on every
    instance of ``B`` is one wait, on the last: they complete in order), by kind.
``same_engine`` / ``cross_engine``
    a wait is same-engine when the waiter's sequencer is the engine its target completes on
    (rule 1 already orders it: no semaphore is needed); a DMA target completes on its queue,
    so a wait on a DMA is always cross-engine.
``semaphore_waits``
    semaphore wait operations after lowering with one counting semaphore per engine / queue
    (``docs/machine-model.md`` 3.2: a producer increments on completion, the consumer waits for a count):
    a waiter's cross-engine waits on several producers of the same engine collapse into one
    wait on the latest, so this is, summed over waiter instances, the number of distinct
    engines its cross-engine targets complete on.
``minimum``
    the spec's minimum ("Command line"), the one minimum reported: every conflicting instance
    pair that rules 1-3 alone leave unordered gets a wait, and the waits that survive the
    transitive reduction of the resulting happens-before graph are counted.  It is computed in
    one walk and memory linear in the program (:func:`minimum_sync`), never listing the
    conflicting pairs: folding latest first, only the latest conflicting instance of each
    component can survive (an earlier one on the same component is ordered before it), so each
    cell of shadow memory keeps the last write and the last read of each component, and each
    instance folds at most one candidate per component into its clock
    (:meth:`neuronsim.machine.order.hb.HappensBefore.fold`).  Each kept wait's kind (flow, output, anti) is
    read off the same cells.  Reads that no write of the program reaches (kernel inputs) are
    left out first (:mod:`neuronsim.machine.order.reach`): they conflict with nothing, and on loop kernels
    they are most of the byte runs.  It depends on the program order and the placement, so
    it is recomputed when a pass changes either, and never on the deps: a program whose own
    deps race has the same minimum as with race-free deps (``footprint`` warns of the races,
    :mod:`neuronsim.verify.own_races`).  Fewer waits than the minimum are possible when deps order pairs
    through instructions that do not conflict.
``spill_transfers`` / ``spill_bytes``
    the DMA transfers ``alloc`` added to spill SBUF tiles to DRAM and reload them
    (instructions marked ``x-spill``, :mod:`neuronsim.passes.alloc_spill`), one per instance,
    and the bytes they move; written only when there are some.
``loads``
    DRAM-to-on-chip transfers, one per instance (:func:`neuronsim.passes.load_elim.load_count`):
    the loads before and after ``load-elim`` (issue 30), spill reloads included.
``makespan_ns``
    the simulator's nominal makespan (:func:`neuronsim.machine.sim.simulator.simulate`, timing only),
    when the program is placed and simulation is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from neuronsim.machine.order.deptable import dep_table
from neuronsim.machine.ir.edges import KIND_NAMES, EdgeKind
from neuronsim.machine.ir.program import Loop, MemoryKind, Program
from neuronsim.machine.order.stream import InstanceStream, stream_of
from neuronsim.machine.model.geometry import sorted_distinct

from neuronsim.passes.load_elim import load_count
from neuronsim.verify.own_races import OwnRaces, own_races
from neuronsim.passes.analysis.minimum_waits import minimum_waits

__all__ = ["KINDS", "WaitFigures", "Minimum", "StageSync", "SyncReport", "wait_figures",
           "minimum_sync", "stage_sync", "sync_report", "spill_traffic"]

KINDS = ("flow", "anti", "output", "ordered")
_KIND_OF_VALUE = {int(k): name for k, name in KIND_NAMES.items()}


@dataclass(frozen=True, slots=True)
class WaitFigures:
    """Counts over a set of instance-level waits."""

    waits: int
    by_kind: tuple[tuple[str, int], ...]
    same_engine: int
    cross_engine: int
    semaphore_waits: int

    def kind(self, name: str) -> int:
        return dict(self.by_kind).get(name, 0)

    def to_json(self) -> dict:
        return {"waits": self.waits, "by_kind": dict(self.by_kind), "same_engine": self.same_engine,
                "cross_engine": self.cross_engine, "semaphore_waits": self.semaphore_waits}


def wait_figures(stream: InstanceStream, target: Sequence[int] | np.ndarray, waiter: Sequence[int] | np.ndarray,
                 kind: Sequence[int] | np.ndarray) -> WaitFigures:
    """Figures of the waits ``waiter[k]`` waits for ``target[k]``, of edge kind ``kind[k]``.

    >>> from neuronsim.machine.ir.program import Instruction, Program
    >>> body = (Instruction("a", "pe", "x"), Instruction("b", "pe", "x"),
    ...         Instruction("d", "sp", "dma_copy", queue="dma0"), Instruction("c", "dve", "y"))
    >>> f = wait_figures(InstanceStream(Program({}, body)), [0, 1, 2, 0], [3, 3, 3, 1], [4, 2, 4, 1])
    >>> f.waits, f.same_engine, f.cross_engine, f.semaphore_waits   # c: one wait on pe, one on dma0
    (4, 1, 3, 2)
    """
    target = np.asarray(target, np.int64)
    waiter = np.asarray(waiter, np.int64)
    kind = np.asarray(kind, np.int64)
    counts = np.bincount(kind, minlength=5) if len(kind) else np.zeros(5, np.int64)
    by_kind = tuple((name, int(counts[int(k)])) for k, name in zip((EdgeKind.FLOW, EdgeKind.ANTI, EdgeKind.OUTPUT,
                                                                      EdgeKind.ORDERED), KINDS))
    engine = stream.comp[target] if len(target) else np.zeros(0, np.int64)
    same = engine == (stream.seq[waiter] if len(waiter) else np.zeros(0, np.int64))
    cross = ~same
    semaphores = len(sorted_distinct(waiter[cross] * stream.width + engine[cross])) if cross.any() else 0
    return WaitFigures(len(target), by_kind, int(same.sum()), int(cross.sum()), semaphores)


@dataclass(frozen=True, slots=True)
class Minimum:
    """The spec's minimum for one program order and placement."""

    figures: WaitFigures
    """The waits that survive the transitive reduction."""

    def to_json(self) -> dict:
        return {"definition": "spec: conflicting pairs unordered by rules 1-3, transitively reduced",
                **self.figures.to_json()}


def minimum_sync(program: Program, stream: InstanceStream | None = None) -> Minimum:
    """The minimum of a placed program, in one walk
    (:func:`neuronsim.passes.analysis.minimum_waits.minimum_waits`, which ``dep-reduction``
    shares): its waits counted."""
    stream = stream or stream_of(program)
    waits = minimum_waits(stream)
    return Minimum(wait_figures(stream, waits.target, waits.waiter, waits.kind))


@dataclass(frozen=True, slots=True)
class StageSync:
    """The sync counts of the program after one stage."""

    stage: str
    deps: int
    deps_by_kind: tuple[tuple[str, int], ...]
    figures: WaitFigures
    minimum: Minimum | None
    """None while the program still has virtual tensors."""
    makespan_ns: float | None
    spill_transfers: int = 0
    spill_bytes: int = 0
    loads: int = 0

    @property
    def ratio(self) -> float | None:
        """Waits executed per wait of the minimum (None without a minimum, or a zero one)."""
        if self.minimum is None or not self.minimum.figures.waits:
            return None
        return self.figures.waits / self.minimum.figures.waits

    def to_json(self) -> dict:
        out = {"stage": self.stage, "deps": self.deps, "deps_by_kind": dict(self.deps_by_kind),
               **self.figures.to_json(), "minimum": self.minimum.to_json() if self.minimum else None,
               "ratio": self.ratio, "loads": self.loads}
        if self.makespan_ns is not None:
            out["makespan_ns"] = self.makespan_ns
        if self.spill_transfers:
            out["spill_transfers"], out["spill_bytes"] = self.spill_transfers, self.spill_bytes
        return out


def spill_traffic(program: Program) -> tuple[int, int]:
    """``(transfers, bytes)`` of the spill stores and reloads (``x-spill``), per instance."""
    transfers = moved = 0
    for inst, loops in program.instructions():
        if inst.extras and "x-spill" in inst.extras:
            runs = int(np.prod([loop.trip_count for loop in loops], dtype=np.int64))
            tile = next(program.tensors[a.tensor] for a, _w in inst.accesses
                        if program.tensors[a.tensor].memory != MemoryKind.DRAM)
            transfers += runs
            moved += runs * tile.shape[0] * tile.bytes_per_partition
    return transfers, moved


def _makespan(program: Program) -> float:
    from neuronsim.machine.sim.simulator import simulate

    return simulate(program, functional=False).trace.makespan


def stage_sync(program: Program, stage: str, *, minimum: Minimum | None = None, simulate: bool = True,
               stream: InstanceStream | None = None, like: StageSync | None = None) -> StageSync:
    """Figures of one program; ``minimum`` is reused when given, else computed if placed;
    ``stream``: the program's instance stream when at hand; ``like``: the figures of a program
    with the same instructions in the same order (deps apart), whose load and spill counts
    are this one's."""
    stream = stream if stream is not None else stream_of(program)
    table = dep_table(program, stream)
    waits = stream.resolve(table)
    waiter = np.repeat(np.arange(len(stream), dtype=np.int64), np.diff(waits.ptr))
    figures = wait_figures(stream, waits.target, waiter, table.kind[waits.row] if len(table) else [])
    counts = np.bincount(table.kind.astype(np.int64), minlength=5) if len(table) else np.zeros(5, np.int64)
    deps = {name: int(counts[int(k)]) for k, name in KIND_NAMES.items()}
    deps = {name: deps[name] for name in KINDS}
    placed = not program.has_virtual_tensors
    if minimum is None and placed:
        minimum = minimum_sync(program, stream)
    makespan = _makespan(program) if simulate and placed else None
    spills = (like.spill_transfers, like.spill_bytes) if like is not None else spill_traffic(program)
    return StageSync(stage, len(table), tuple(deps.items()), figures, minimum, makespan, *spills,
                     loads=like.loads if like is not None else load_count(program))


@dataclass(frozen=True, slots=True)
class SyncReport:
    """Sync counts of a program through a pipeline."""

    machine: str
    stages: tuple[StageSync, ...]
    passes: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = ()
    """Each pass's spec item with its counters."""
    own_races: OwnRaces | None = None
    """The first stage race-checked under its own deps (None: not asked)."""

    def to_json(self) -> dict:
        out = {"format": "neuronsim.footprint/1", "machine": self.machine,
               "stages": [s.to_json() for s in self.stages],
               "passes": [{"pass": spec, "stats": dict(stats)} for spec, stats in self.passes]}
        if self.own_races is not None:
            out["own_races"] = self.own_races.to_json()
        return out


def _order_key(program: Program) -> tuple:
    """What the minimum, the loads and the spills depend on: the loops, the instructions'
    order, ops, engines and accesses, and the placement (deps are left out)."""
    nodes = tuple((n.name, n.trip_count) if isinstance(n, Loop) else (n.name, n.op, n.engine, n.queue, n.reads,
                                                                      n.writes)
                  for n, _ in program.walk())
    return nodes, tuple(sorted(program.tensors.items(), key=lambda item: item[0]))


def sync_report(programs: Sequence[tuple[str, Program]], *, simulate: bool = True,
                passes: Sequence[tuple[str, dict]] = (), check_given: bool = False,
                streams: Sequence[InstanceStream] | None = None) -> SyncReport:
    """Sync counts of ``(stage, program)`` pairs, reusing the minimum while it cannot change;
    ``check_given`` also race-checks the first program under its own deps
    (:func:`neuronsim.verify.own_races.own_races`); ``streams``: the programs' instance
    streams when at hand (else each stage's shares the previous one's compiled accesses)."""
    from neuronsim.machine.model.presets import resolve_machine

    stages = []
    last_key, last = None, None
    stream = None
    for k, (stage, program) in enumerate(programs):
        key = _order_key(program)
        same = last if key == last_key else None  # the same instructions in the same order
        stream = streams[k] if streams is not None else stream_of(program, like=stream)
        found = stage_sync(program, stage, minimum=same.minimum if same else None, simulate=simulate, stream=stream,
                           like=same)
        last_key, last = key, found
        stages.append(found)
    machine = resolve_machine(programs[0][1].machine).name if programs else "trn1"
    given = own_races(programs[0][1]) if check_given and programs else None
    return SyncReport(machine, tuple(stages), tuple((spec, tuple(stats.items())) for spec, stats in passes), given)
