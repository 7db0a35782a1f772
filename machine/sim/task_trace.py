"""What a simulated task runtime recorded (:mod:`neuronsim.machine.sim.runtime`): one record per task instance.

A :class:`TaskTrace` is plain data: submission, readiness, start and end times, the worker,
the edges the task waited on with their origin (TensorMap lookup, creator, explicit user or
compiler dep) and the tracking work its submission cost.  It knows nothing of races; the task
race checker (:mod:`neuronsim.verify.tasks.check`) reads the edges and the accesses.

:func:`task_chrome_trace` writes it in the Chrome trace event format of
:mod:`neuronsim.machine.sim.export` (ui.perfetto.dev opens it): one thread track for the orchestrator
(a slice per submission, as long as its tracking took) and one per worker core, flow arrows
for the edges a task actually waited on, and a counter of ready tasks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neuronsim.machine.formats.jsonio import dumps_strict
from neuronsim.machine.formats.files import write_text
from neuronsim.machine.sim.tensormap import Edge
from neuronsim.machine.tasks.orchestrator import ArgAccess

__all__ = ["RuntimePreset", "TaskRecord", "TaskTrace", "task_chrome_trace", "write_task_trace"]


@dataclass(frozen=True, slots=True)
class RuntimePreset:
    """The simulated runtime: worker cores and the orchestrator's cost per tracking step (ns).

    The costs are model parameters (an orchestrator thread doing simpler's per-submit work),
    not measurements of a device: what matters is that tracking work is paid on the one
    orchestrator thread, so the work the compiler removes shows up in the makespan of programs
    of short tasks.
    """

    cores: int = 4
    submit_ns: float = 40.0
    """Per task: building the task descriptor and handing it to the scheduler."""
    lookup_ns: float = 25.0
    """Per TensorMap lookup (hash, bucket walk, overlap tests)."""
    insert_ns: float = 15.0
    """Per TensorMap insert."""
    dep_ns: float = 5.0
    """Per explicit dep (``set_dependencies``) and per creator edge."""
    spread: float = 4.0
    """With a seed, durations are scaled by ``spread ** u``, ``u`` uniform in ``[-1, 1)``."""

    def submit_cost(self, lookups: int, inserts: int, explicit: int, creator: int) -> float:
        """Orchestrator time to submit one task with this tracking work."""
        return self.submit_ns + self.lookup_ns * lookups + self.insert_ns * inserts + self.dep_ns * (explicit + creator)

    def to_json(self) -> dict[str, Any]:
        return {"cores": self.cores, "submit_ns": self.submit_ns, "lookup_ns": self.lookup_ns,
                "insert_ns": self.insert_ns, "dep_ns": self.dep_ns, "spread": self.spread}


@dataclass(frozen=True, slots=True)
class TaskRecord:
    index: int
    call: str
    name: str
    """``call`` with its loop indices."""
    kernel: str | None
    """None for a ``task_dummy`` barrier (it runs on no worker)."""
    manual: bool
    submitted: float
    """When the orchestrator finished submitting it (its tracking done)."""
    ready: float
    """When its last wait was met (at least ``submitted``)."""
    start: float
    end: float
    worker: int | None
    waits: tuple[Edge, ...]
    """Every edge the runtime gave it, with its origin."""
    lookups: int
    inserts: int
    explicit: int
    creator: int
    no_dep: int
    accesses: tuple[ArgAccess, ...]
    task_var: str | None
    path: str
    iteration: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class TaskTrace:
    records: tuple[TaskRecord, ...]
    preset: RuntimePreset
    seed: int | None
    orchestration_ns: float
    """Time the orchestrator thread spent submitting."""

    def __len__(self) -> int:
        return len(self.records)

    @property
    def makespan(self) -> float:
        return max((r.end for r in self.records), default=0.0)

    @property
    def cores(self) -> int:
        return self.preset.cores

    def totals(self) -> dict[str, int]:
        """Tracking work over the run."""
        out = {"tasks": len(self.records), "manual_tasks": sum(r.manual for r in self.records)}
        for key in ("lookups", "inserts", "explicit", "creator", "no_dep"):
            out[key] = sum(getattr(r, key) for r in self.records)
        out["edges"] = sum(len(r.waits) for r in self.records)
        return out

    def busy_ns(self) -> float:
        return sum(r.end - r.start for r in self.records if r.worker is not None)

    def summary(self) -> dict[str, Any]:
        span = self.makespan
        return {**self.totals(), "makespan_ns": round(span, 3), "orchestration_ns": round(self.orchestration_ns, 3),
                "utilisation": round(self.busy_ns() / (span * self.cores), 4) if span else 0.0,
                "cores": self.cores, "seed": self.seed}


def _us(ns: float) -> float:
    return ns / 1000.0


def task_chrome_trace(trace: TaskTrace, title: str = "task runtime") -> dict[str, Any]:
    """The trace as a Chrome trace JSON document (see the module doc)."""
    pid = 1
    events: list[dict[str, Any]] = [{"ph": "M", "pid": pid, "name": "process_name",
                                     "args": {"name": f"{title} ({trace.cores} cores)"}}]
    tracks = ["orchestrator", *(f"worker {k}" for k in range(trace.cores))]
    for t, name in enumerate(tracks, start=1):
        events.append({"ph": "M", "pid": pid, "tid": t, "name": "thread_name", "args": {"name": name}})
        events.append({"ph": "M", "pid": pid, "tid": t, "name": "thread_sort_index", "args": {"sort_index": t}})
    p = trace.preset
    records = trace.records
    for r in records:
        cost = p.submit_cost(r.lookups, r.inserts, r.explicit, r.creator)
        args = {"id": r.index, "lookups": r.lookups, "inserts": r.inserts, "explicit": r.explicit,
                "scope": "manual" if r.manual else "auto"}
        events.append({"ph": "X", "pid": pid, "tid": 1, "name": f"submit {r.name}", "cat": "submit",
                       "ts": _us(r.submitted - cost), "dur": _us(cost), "args": args})
        if r.worker is not None:
            waits = [f"{records[e.on].name} ({e.origin.value})" for e in r.waits]
            events.append({"ph": "X", "pid": pid, "tid": 2 + r.worker, "name": r.name, "cat": r.kernel,
                           "ts": _us(r.start), "dur": _us(r.end - r.start), "args": {**args, "waits": waits}})
    flow = 0
    for r in records:
        if r.worker is None:
            continue
        for e in {e.on: e for e in r.waits}.values():
            producer = records[e.on]
            if producer.worker is None:
                continue
            flow += 1
            events.append({"ph": "s", "pid": pid, "tid": 2 + producer.worker, "id": flow, "name": e.origin.value,
                           "cat": "wait", "ts": _us(producer.start)})
            events.append({"ph": "f", "bp": "e", "pid": pid, "tid": 2 + r.worker, "id": flow, "name": e.origin.value,
                           "cat": "wait", "ts": _us(r.start)})
    changes = sorted([(r.ready, 1) for r in records if r.worker is not None]
                     + [(r.start, -1) for r in records if r.worker is not None])
    pending = 0
    for time, delta in changes:
        pending += delta
        events.append({"ph": "C", "pid": pid, "name": "ready tasks", "ts": _us(time), "args": {"ready": pending}})
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"seed": trace.seed, "makespan_ns": trace.makespan, "preset": p.to_json()}}


def write_task_trace(trace: TaskTrace, path: str | Path) -> None:
    """Write :func:`task_chrome_trace` to ``path`` atomically."""
    write_text(path, dumps_strict(task_chrome_trace(trace), separators=(",", ":")))  # strict JSON
