"""A kernel's line profile: per line of the author's code, what its instructions did in the
simulated run, and how much of the makespan the line holds on the critical path.

For every kernel line (the instructions' ``x-source``, :mod:`neuronsim.machine.ir.source`) of
the nominal run (:class:`~neuronsim.machine.sim.trace.Trace`):

* **instructions**: instances issued;
* **busy** per engine and DMA queue: :func:`~neuronsim.machine.sim.trace.summarize` of the
  line's records alone (busy time is additive, so the lines add up to the run's busy time per
  component exactly; a DMA's trigger is busy time of its sequencer, its transfer of its queue);
* **waited**: time its instances sat at their sequencer, ready but blocked (``trigger -
  ready``), charged to what released them last: the latest producer met (named by its line
  and engine), or the producers' results when no semaphore was waited on;
* **DMA bytes** moved;
* **critical share**: the critical path is walked back from the instance that finished last;
  each instance on it is preceded by whichever of its gates opened last (a wait met, the
  previous instance of its sequencer, for a transfer the previous transfer of its queue), and
  holds the time from that gate to its end.  These intervals tile ``[0, makespan]``, so the
  shares of the lines add up to 100 %.

Instructions without a kernel line (a program not traced from a kernel) count under
:data:`NO_LINE`; the allocator's spill transfers carry the line that declared the tile they
spill (``store of qk (a spill)``, :mod:`neuronsim.passes.alloc_spill`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

from neuronsim.machine.sim.trace import InstanceRecord, Trace, summarize

__all__ = ["NO_LINE", "LineFigures", "LineProfile", "line_profile", "critical_path", "line_of", "profile_kernel"]

#: The line of an instruction the kernel did not write (no ``x-source``).
NO_LINE = "(no kernel line)"

_AT = re.compile(r" at (.+?):(\d+)(?: \[|$)")


def line_of(record: InstanceRecord) -> str:
    """``file.py:LINE`` of the record's kernel line, or :data:`NO_LINE`."""
    found = _AT.search(record.source or "")
    return f"{found.group(1)}:{found.group(2)}" if found else NO_LINE


@dataclass(frozen=True, slots=True)
class LineFigures:
    """What one kernel line's instances did (module doc)."""

    where: str
    """``file.py:LINE`` or :data:`NO_LINE`."""
    calls: tuple[str, ...]
    """The NKI calls made at the line."""
    instructions: int
    busy_ns: dict[str, float]
    """Per component (engine or DMA queue) with busy time."""
    waited_ns: float
    waited_on: dict[str, float]
    """What released the waits: ``LINE (engine)`` of the producer, or ``results``."""
    dma_bytes: int
    critical_ns: float

    def to_json(self, makespan_ns: float) -> dict[str, Any]:
        return {"line": self.where, "calls": list(self.calls), "instructions": self.instructions,
                "busy_ns": self.busy_ns, "waited_ns": self.waited_ns, "waited_on": self.waited_on,
                "dma_bytes": self.dma_bytes, "critical_ns": self.critical_ns,
                "critical_share": self.critical_ns / makespan_ns if makespan_ns else 0.0}


@dataclass(frozen=True, slots=True)
class LineProfile:
    """The lines of one run, in file and line order, with the run's totals."""

    kernel: str
    makespan_ns: float
    lines: tuple[LineFigures, ...]
    busy_ns: dict[str, float]
    """The whole run's busy time per component (:func:`summarize`)."""
    critical: tuple[int, ...]
    """Instance ids on the critical path, first to last."""
    trace: Trace

    def line(self, where: str) -> LineFigures | None:
        return next((f for f in self.lines if f.where == where), None)

    def critical_lines(self, share: float = 0.0) -> list[LineFigures]:
        """Lines holding more than ``share`` of the makespan on the critical path, most first."""
        held = [f for f in self.lines if f.critical_ns > share * self.makespan_ns]
        return sorted(held, key=lambda f: -f.critical_ns)

    def to_json(self) -> dict[str, Any]:
        return {"format": "neuronsim.profile/1", "kernel": self.kernel, "makespan_ns": self.makespan_ns,
                "busy_ns": self.busy_ns, "lines": [f.to_json(self.makespan_ns) for f in self.lines]}


def _gates(trace: Trace) -> dict[int, list[tuple[float, int]]]:
    """Per instance, ``(time, instance)`` of each gate that had to open before it started."""
    gates: dict[int, list[tuple[float, int]]] = defaultdict(list)
    last_on: dict[str, InstanceRecord] = {}
    for r in trace.records:  # program order: each component's stream in its own order
        previous = last_on.get(r.engine)
        if previous is not None:
            gates[r.id].append((previous.issued, previous.id))
        last_on[r.engine] = r
        gates[r.id].extend((w.time, w.producer) for w in r.waits_met)
        if r.is_dma:
            before = last_on.get(r.queue)
            if before is not None:
                gates[r.id].append((before.end, before.id))
            last_on[r.queue] = r
    return gates


def critical_path(trace: Trace) -> list[tuple[int, float]]:
    """``(instance, time it holds)`` on the critical path, first to last; the times add up to
    the makespan (module doc)."""
    if not trace.records:
        return []
    gates = _gates(trace)
    current = max(trace.records, key=lambda r: (max(r.end, r.issued), r.id))
    finish = max(current.end, current.issued)
    path = []
    while True:
        opened = [(t, i) for t, i in gates[current.id] if t <= current.start + 1e-9]
        if not opened:
            path.append((current.id, finish))
            break
        time, before = max(opened)  # the gate that opened last; ties: the later instance
        path.append((current.id, finish - time))
        current, finish = trace.records[before], time
    return path[::-1]


def line_profile(trace: Trace, kernel: str = "kernel") -> LineProfile:
    """The line profile of ``trace`` (module doc)."""
    records = trace.records
    by_line: dict[str, list[InstanceRecord]] = defaultdict(list)
    for r in records:
        by_line[line_of(r)].append(r)
    critical = dict(critical_path(trace))
    rows = []
    for where, own in by_line.items():
        summary = summarize(replace(trace, records=tuple(own)))
        waited_on: dict[str, float] = defaultdict(float)
        for r in own:
            if r.trigger > r.ready:
                last = max(r.waits_met, key=lambda w: w.time, default=None)
                producer = records[last.producer] if last is not None else None
                what = f"{line_of(producer)} ({producer.component})" if producer is not None else "results"
                waited_on[what] += r.trigger - r.ready
        calls = tuple(dict.fromkeys((r.source or r.op).split(" at ")[0] for r in own))
        rows.append(LineFigures(
            where=where, calls=calls, instructions=len(own),
            busy_ns={c.name: c.busy_ns for c in summary.components if c.busy_ns},
            waited_ns=sum(waited_on.values()), waited_on=dict(waited_on), dma_bytes=summary.dma_bytes,
            critical_ns=sum(critical.get(r.id, 0.0) for r in own)))
    rows.sort(key=_line_order)
    total = summarize(trace)
    return LineProfile(kernel=kernel, makespan_ns=trace.makespan, lines=tuple(rows),
                       busy_ns={c.name: c.busy_ns for c in total.components if c.busy_ns},
                       critical=tuple(i for i, _ in critical_path(trace)), trace=trace)


def _line_order(row: LineFigures) -> tuple:
    if row.where == NO_LINE:
        return ("~", 0)
    file, _, line = row.where.rpartition(":")
    return (file, int(line))


def profile_kernel(kernel: Any, *arrays: Any, **kwargs: Any):
    """Trace ``kernel`` on ``arrays`` and run it (timing only, nominal); ``(profile, report)``
    with the :class:`~neuronsim.verify.nki.run.KernelReport` of the run (its findings)."""
    from neuronsim.verify.nki.run import run_traced, trace_kernel

    traced = trace_kernel(kernel, *arrays, **kwargs)
    name = getattr(kernel, "__name__", None) or str(kernel).split("::")[-1]
    report = run_traced(traced, name, seeds=(None,), functional=False)
    return line_profile(report.run.simulation.runs[0].trace, name), report
