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
    (reference 3.2: a producer increments on completion, the consumer waits for a count):
    a waiter's cross-engine waits on several producers of the same engine collapse into one
    wait on the latest, so this is, summed over waiter instances, the number of distinct
    engines its cross-engine targets complete on.
``minimum``
    the spec's minimum ("Command line"): every conflicting instance pair that rules 1-3 alone
    leave unordered gets a wait (these pairs are exactly the races the race checker reports
    with every dep stripped), and the waits that survive the transitive reduction of the
    resulting happens-before graph are counted (:func:`passes.dep_reduction.redundant_waits`,
    exact).  It depends on the program order and the placement, so it is recomputed when a
    pass changes either.  Fewer waits than the minimum are possible when deps order pairs
    through instructions that do not conflict.
``makespan_ns``
    the simulator's nominal makespan (:func:`machine.sim.simulator.simulate`, timing only), when
    the program is placed and simulation is asked for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from machine.edges import KIND_NAMES
from machine.ir import Loop, Program
from machine.presets import resolve_machine
from machine.unroll import Unrolled, unroll
from passes.dep_reduction import InstanceWaits, instance_waits, redundant_waits, waits_from_targets
from passes.analysis.syncstate import EnginePositions, assign_ids

from verify.racecheck import check_waits

__all__ = ["KINDS", "WaitFigures", "Minimum", "StageSync", "SyncReport", "wait_figures",
           "minimum_sync", "stage_sync", "sync_report"]

KINDS = ("flow", "anti", "output", "ordered")
_RACE_KIND = {"RAW": "flow", "WAW": "output", "WAR": "anti"}


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


def wait_figures(positions: EnginePositions, pairs: Sequence[tuple[int, int, str]]) -> WaitFigures:
    """Figures of ``(target, waiter, kind name)`` waits.

    >>> from machine.ir import Instruction, Program
    >>> from machine.presets import PRESETS
    >>> body = (Instruction("a", "pe", "x"), Instruction("b", "pe", "x"),
    ...         Instruction("d", "sp", "dma_copy", queue="dma0"), Instruction("c", "dve", "y"))
    >>> ids = assign_ids(unroll(Program({}, body)), PRESETS["trn1"])
    >>> f = wait_figures(ids, [(0, 3, "flow"), (1, 3, "anti"), (2, 3, "flow"), (0, 1, "ordered")])
    >>> f.waits, f.same_engine, f.cross_engine, f.semaphore_waits   # c: one wait on pe, one on dma0
    (4, 1, 3, 2)
    """
    counts = dict.fromkeys(KINDS, 0)
    same = 0
    engines: dict[int, set[int]] = {}
    for target, waiter, kind in pairs:
        counts[kind] += 1
        engine = positions.engine[target]
        if engine == positions.issuer[waiter]:
            same += 1
        else:
            engines.setdefault(waiter, set()).add(engine)
    return WaitFigures(len(pairs), tuple(counts.items()), same, len(pairs) - same,
                       sum(len(found) for found in engines.values()))


@dataclass(frozen=True, slots=True)
class Minimum:
    """The spec's minimum for one program order and placement."""

    unordered_pairs: int
    """Conflicting instance pairs that rules 1-3 alone leave unordered."""
    figures: WaitFigures
    """The waits that survive the transitive reduction."""

    def to_json(self) -> dict:
        return {"unordered_conflicting_pairs": self.unordered_pairs, **self.figures.to_json()}


def minimum_sync(program: Program, unrolled: Unrolled | None = None) -> Minimum:
    """The minimum of a placed program (see the module documentation)."""
    unrolled = unrolled or unroll(program)
    races = check_waits(program, [()] * len(unrolled), unrolled).races
    kinds: dict[tuple[int, int], str] = {}
    per_waiter: list[list[int]] = [[] for _ in range(len(unrolled))]
    for race in races:
        kinds[(race.first_id, race.second_id)] = _RACE_KIND[race.kind]
        per_waiter[race.second_id].append(race.first_id)
    positions = assign_ids(unrolled, resolve_machine(program.machine))
    waits = waits_from_targets(positions, per_waiter)
    redundant = redundant_waits(waits)
    kept = [(waits.target[k], y, kinds[(waits.target[k], y)])
            for y in range(len(unrolled)) for k in waits.waits_of(y) if not redundant[k]]
    return Minimum(len(races), wait_figures(positions, kept))


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

    @property
    def ratio(self) -> float | None:
        """Waits executed per wait of the minimum (None without a minimum, or a zero one)."""
        if self.minimum is None or not self.minimum.figures.waits:
            return None
        return self.figures.waits / self.minimum.figures.waits

    def to_json(self) -> dict:
        out = {"stage": self.stage, "deps": self.deps, "deps_by_kind": dict(self.deps_by_kind),
               **self.figures.to_json(), "minimum": self.minimum.to_json() if self.minimum else None,
               "ratio": self.ratio}
        if self.makespan_ns is not None:
            out["makespan_ns"] = self.makespan_ns
        return out


def _makespan(program: Program) -> float:
    from machine.sim.simulator import simulate

    return simulate(program, functional=False).trace.makespan


def stage_sync(program: Program, stage: str, *, minimum: Minimum | None = None, simulate: bool = True,
               waits: InstanceWaits | None = None) -> StageSync:
    """Figures of one program; ``minimum`` is reused when given, else computed if placed."""
    waits = waits or instance_waits(program)
    pairs = [(waits.target[k], y, KIND_NAMES[waits.deps[waits.slot[k]].dep.kind])
             for y in range(len(waits.start) - 1) for k in waits.waits_of(y)]
    deps = dict.fromkeys(KINDS, 0)
    for instr, _ in program.instructions():
        for dep in instr.deps:
            deps[KIND_NAMES[dep.kind]] += 1
    placed = not program.has_virtual_tensors
    if minimum is None and placed:
        minimum = minimum_sync(program, waits.unrolled)
    makespan = _makespan(program) if simulate and placed else None
    return StageSync(stage, sum(deps.values()), tuple(deps.items()), wait_figures(waits.positions, pairs),
                     minimum, makespan)


@dataclass(frozen=True, slots=True)
class SyncReport:
    """Sync counts of a program through a pipeline."""

    machine: str
    stages: tuple[StageSync, ...]
    passes: tuple[tuple[str, tuple[tuple[str, int], ...]], ...] = ()
    """Each pass's spec item with its counters."""

    def to_json(self) -> dict:
        return {"format": "neuronsim.footprint/1", "machine": self.machine,
                "stages": [s.to_json() for s in self.stages],
                "passes": [{"pass": spec, "stats": dict(stats)} for spec, stats in self.passes]}


def _order_key(program: Program) -> tuple:
    """What the minimum depends on: the loops, the instructions' order, engines and accesses,
    and the placement (deps are left out)."""
    nodes = tuple((n.name, n.trip_count) if isinstance(n, Loop) else (n.name, n.engine, n.queue, n.reads, n.writes)
                  for n, _ in program.walk())
    return nodes, tuple(sorted(program.tensors.items(), key=lambda item: item[0]))


def sync_report(programs: Sequence[tuple[str, Program]], *, simulate: bool = True,
                passes: Sequence[tuple[str, dict]] = ()) -> SyncReport:
    """Sync counts of ``(stage, program)`` pairs, reusing the minimum while it cannot change."""
    stages = []
    last_key, last_min = None, None
    for stage, program in programs:
        key = _order_key(program)
        minimum = last_min if key == last_key else None
        found = stage_sync(program, stage, minimum=minimum, simulate=simulate)
        last_key, last_min = key, found.minimum
        stages.append(found)
    machine = resolve_machine(programs[0][1].machine).name if programs else "trn1"
    return SyncReport(machine, tuple(stages), tuple((spec, tuple(stats.items())) for spec, stats in passes))

