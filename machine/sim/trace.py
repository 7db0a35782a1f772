"""Traces: what one simulated run did, instance by instance, and its summary figures.

A :class:`Trace` is the simulator's only output about timing and synchronisation; it knows
nothing of races.  ``verify/`` checks happens-before over it, people read its summary, and
:mod:`neuronsim.machine.sim.export` writes it as Perfetto / Chrome trace JSON and
:mod:`neuronsim.verify.app.drawings` draws it.

Times are in ns from the start of the run.  For every instance X: ``trigger`` T(X),
``start`` S(X), ``end`` E(X) as the spec defines them (for a compute instruction T = S); a
DMA's ``issued`` is when its trigger released the sequencer.  ``waits_met`` lists, per wait of
X, the producer instance, the semaphore (named after the component whose completions it
counts: ``pe`` ... ``sp``, ``dma0`` ...), the threshold and the time the semaphore reached it
(which is E(producer), completions being in order on each component).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from rich.table import Table

from neuronsim.machine.ir.fast_dataclasses import quick_init

__all__ = ["WaitMet", "InstanceRecord", "Trace", "ComponentFigures", "TraceSummary", "summarize", "summary_table",
           "makespan_of"]


class WaitMet(NamedTuple):
    """One wait of an instance, as met: ``(producer, semaphore, value, time)``."""

    producer: int
    """Instance id of the producer B of "Y waits for B"."""
    semaphore: str
    value: int
    """Threshold: the semaphore had to reach this value."""
    time: float
    """When the semaphore reached it."""


@quick_init
@dataclass(frozen=True, slots=True)
class InstanceRecord:
    """What one instance did."""

    id: int
    """Position in program order."""
    name: str
    """``NAME`` or ``NAME[i,j]``."""
    op: str
    engine: str
    """The sequencer that issued it."""
    queue: str | None
    """The DMA queue that carried it out (DMA instances only)."""
    is_dma: bool
    ready: float
    """When its sequencer reached it (before waiting)."""
    trigger: float
    issued: float
    start: float
    end: float
    waits_met: tuple[WaitMet, ...]
    bytes: int
    """Bytes moved (DMA instances)."""
    source: str | None = None
    """The kernel line that made the instance (``x-source``: call at file:line [indices]),
    None for an instruction without one."""
    span_end: float | None = None
    """A compute instance: the end of its whole duration, element cost plus the engine's fixed
    overhead (what a hardware profile draws as the instruction; ``end`` is its occupancy, when
    the engine takes the next one).  None: ``end``."""

    @property
    def component(self) -> str:
        """Where it executes: its queue for a DMA, else its sequencer."""
        return self.queue if self.queue is not None else self.engine


def makespan_of(ends: Iterable[float], issued: Iterable[float], span_ends: Iterable[float]) -> float:
    """When a run ends: the latest end of an instance, issue of a trigger or end of a compute
    instance's whole duration (its engine's active time counts it, not only its occupancy: a
    one-instruction program was active 212 %, a probe); 0 for no instance.  The one formula of
    :attr:`Trace.makespan` and the simulator's run result, which knows it without the trace.

    >>> makespan_of([10.0, 30.0], [5.0], [42.0, 0.0])
    42.0
    """
    return max(max(ends, default=0.0), max(issued, default=0.0), max(span_ends, default=0.0))


@dataclass(frozen=True, slots=True)
class Trace:
    """One run: records in program order plus the semaphores' histories."""

    records: tuple[InstanceRecord, ...]
    components: tuple[str, ...]
    """Sequencers then DMA queues."""
    semaphore_times: tuple[tuple[float, ...], ...]
    """Per component, the times its semaphore reached 1, 2, ..."""
    machine: str
    seed: int | None
    """The interleaving seed (None: nominal durations)."""

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[InstanceRecord]:
        return iter(self.records)

    @property
    def makespan(self) -> float:
        """Time the last instance (or trigger) finished: a compute instance's whole duration
        (:attr:`InstanceRecord.span_end`), which its engine's active time counts, not only its
        occupancy."""
        records = self.records
        return makespan_of((r.end for r in records), (r.issued for r in records), (r.span_end or 0.0 for r in records))

    def stream(self, component: str) -> list[InstanceRecord]:
        """Records a component executes, in program order (a sequencer's include its triggers)."""
        return [r for r in self.records if r.engine == component or r.queue == component]


@dataclass(frozen=True, slots=True)
class ComponentFigures:
    """Summary of one sequencer or DMA queue."""

    name: str
    instances: int
    busy_ns: float
    """Time spent executing (compute, DMA triggers, transfers)."""
    wait_ns: float
    """Sequencer: time blocked on semaphores.  Queue: idle time with its next transfer untriggered."""
    bytes: int
    active_ns: float | None = None
    """Time with at least one instance in flight, each over its whole duration
    (:attr:`InstanceRecord.span_end`): a hardware profile's *active time*.  It exceeds
    ``busy_ns`` where the engine waits on its own results (docs/timing.md, "Busy and active")."""


@dataclass(frozen=True, slots=True)
class TraceSummary:
    makespan_ns: float
    components: tuple[ComponentFigures, ...]
    dma_bytes: int

    @property
    def dma_throughput(self) -> float:
        """DMA bytes per ns over the makespan (= GB/s)."""
        return self.dma_bytes / self.makespan_ns if self.makespan_ns else 0.0

    def to_json(self) -> dict:
        return {
            "makespan_ns": self.makespan_ns,
            "dma_bytes": self.dma_bytes,
            "dma_gb_per_s": self.dma_throughput,
            "engines": [
                {"name": c.name, "instances": c.instances, "busy_ns": c.busy_ns,
                 "busy_percent": 100.0 * c.busy_ns / self.makespan_ns if self.makespan_ns else 0.0,
                 "active_ns": c.active_ns,
                 "active_percent": 100.0 * (c.active_ns or 0.0) / self.makespan_ns if self.makespan_ns else 0.0,
                 "wait_ns": c.wait_ns, "bytes": c.bytes}
                for c in self.components
            ],
        }


def summarize(trace: Trace) -> TraceSummary:
    """Busy time, active time, wait time and bytes per component, and the makespan.

    Active time is the union of the instances' whole spans; a component starts its instances
    in program order, so one running end per component measures it."""
    busy = dict.fromkeys(trace.components, 0.0)
    active = dict.fromkeys(trace.components, 0.0)
    covered = dict.fromkeys(trace.components, 0.0)
    wait = dict.fromkeys(trace.components, 0.0)
    count = dict.fromkeys(trace.components, 0)
    moved = dict.fromkeys(trace.components, 0)
    queue_free: dict[str, float] = {}

    def span(component: str, low: float, high: float) -> None:
        reached = covered[component]
        if high > reached:
            active[component] += high - max(low, reached)
            covered[component] = high

    for r in trace.records:
        count[r.engine] += 1
        wait[r.engine] += r.trigger - r.ready
        if not r.is_dma:
            busy[r.engine] += r.end - r.start
            span(r.engine, r.start, r.end if r.span_end is None else max(r.end, r.span_end))
            continue
        busy[r.engine] += r.issued - r.trigger
        span(r.engine, r.trigger, r.issued)
        q = r.queue
        count[q] += 1
        busy[q] += r.end - r.start
        span(q, r.start, r.end)
        moved[q] += r.bytes
        wait[q] += max(0.0, r.issued - queue_free.get(q, 0.0))
        queue_free[q] = r.end
    rows = tuple(ComponentFigures(c, count[c], busy[c], wait[c], moved[c], active[c]) for c in trace.components)
    return TraceSummary(trace.makespan, rows, sum(moved.values()))


def summary_table(summary: TraceSummary, title: str | None = None) -> Table:
    """The summary as a rich table, one row per component that executed something.

    ``title`` defaults to the makespan; ``""`` for none.
    """
    if title is None:
        title = f"makespan {summary.makespan_ns:,.1f} ns"
    table = Table(title=title or None, title_justify="left")
    for header in ("engine", "instances", "busy ns", "busy %", "active %", "wait ns", "DMA bytes", "GB/s"):
        # fold, never cut: a narrow terminal wraps a long figure rather than showing 12,917,5…
        table.add_column(header, justify="left" if header == "engine" else "right", overflow="fold")
    span = summary.makespan_ns or 1.0
    for c in summary.components:
        if not c.instances:
            continue
        rate = f"{c.bytes / c.busy_ns:,.1f}" if c.bytes and c.busy_ns else ""
        table.add_row(c.name, str(c.instances), f"{c.busy_ns:,.1f}", f"{100 * c.busy_ns / span:.1f}",
                      f"{100 * (c.active_ns or 0.0) / span:.1f}", f"{c.wait_ns:,.1f}",
                      f"{c.bytes:,}" if c.bytes else "", rate)
    table.caption = f"DMA: {summary.dma_bytes:,} bytes, {summary.dma_throughput:,.1f} GB/s over the makespan"
    return table
