"""A :class:`~neuronsim.machine.sim.trace.Trace` as Perfetto / Chrome trace JSON (its drawing as a
matplotlib timeline is the application's: :mod:`neuronsim.verify.app.drawings`).

The JSON follows the Chrome trace event format (``traceEvents``; times in µs, so a ns figure
is divided by 1000), which ui.perfetto.dev and chrome://tracing open:

* one process (pid 1) for the NeuronCore and one thread track per component, named and
  sorted with ``M`` metadata events (``process_name``, ``thread_name``, ``thread_sort_index``);
* one complete event (``ph: X``) per compute instance on its sequencer, per transfer on its
  queue, and per DMA trigger (``trigger NAME``) on its sequencer, with the instance id, op,
  bytes and waits in ``args`` (and ``source``, the kernel line, for a traced kernel);
* one flow arrow per wait met: ``ph: s`` bound to the producer's slice, ``ph: f`` (``bp: e``)
  bound to the waiting slice at its trigger time;
* counters (``ph: C``): ``pending NAME`` per DMA queue (transfers triggered and not yet
  complete) and ``semaphore NAME`` per component (its value over time);
* a compute slice is the instance's occupancy (when its engine takes the next one); where its
  whole duration ends later (the engine's fixed overhead: what a hardware profile draws), its
  ``args`` say so (``span_end_us``), and one global instant event ``makespan`` marks the end of
  the run (which the last instance's whole duration may set past every slice's end).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from neuronsim.machine.formats.jsonio import dumps_strict
from neuronsim.machine.ir.collector import collector_paused
from neuronsim.machine.formats.files import write_text
from neuronsim.machine.sim.trace import Trace

__all__ = ["chrome_trace", "write_chrome_trace"]

_PID = 1


def _us(ns: float) -> float:
    return ns / 1000.0


@collector_paused()  # hundreds of thousands of event dicts, no cycles: full collections tripled the time
def chrome_trace(trace: Trace) -> dict[str, Any]:
    """The trace as a Chrome trace JSON document (see the module doc)."""
    tid = {name: k + 1 for k, name in enumerate(trace.components)}
    events: list[dict[str, Any]] = [
        {"ph": "M", "pid": _PID, "name": "process_name", "args": {"name": f"NeuronCore ({trace.machine})"}},
    ]
    for name, t in tid.items():
        events.append({"ph": "M", "pid": _PID, "tid": t, "name": "thread_name", "args": {"name": name}})
        events.append({"ph": "M", "pid": _PID, "tid": t, "name": "thread_sort_index", "args": {"sort_index": t}})
    records = trace.records
    for r in records:
        args = {"id": r.id, "op": r.op, "waits": [f"{records[w.producer].name}: {w.semaphore}>={w.value}"
                                                   for w in r.waits_met]}
        if r.source:  # a traced kernel's instance: the line that made it
            args["source"] = r.source
        if r.is_dma:
            events.append({"ph": "X", "pid": _PID, "tid": tid[r.engine], "name": f"trigger {r.name}", "cat": "trigger",
                           "ts": _us(r.trigger), "dur": _us(r.issued - r.trigger), "args": {**args, "queue": r.queue}})
            events.append({"ph": "X", "pid": _PID, "tid": tid[r.queue], "name": r.name, "cat": r.op,
                           "ts": _us(r.start), "dur": _us(r.end - r.start), "args": {**args, "bytes": r.bytes}})
        else:
            if r.span_end is not None and r.span_end > r.end:
                args["span_end_us"] = _us(r.span_end)
            events.append({"ph": "X", "pid": _PID, "tid": tid[r.engine], "name": r.name, "cat": r.op,
                           "ts": _us(r.start), "dur": _us(r.end - r.start), "args": args})
    flow = 0
    for r in records:
        for w in r.waits_met:
            flow += 1
            producer = records[w.producer]
            events.append({"ph": "s", "pid": _PID, "tid": tid[producer.component], "id": flow, "name": "wait",
                           "cat": "wait", "ts": _us(producer.start)})
            events.append({"ph": "f", "bp": "e", "pid": _PID, "tid": tid[r.engine], "id": flow, "name": "wait",
                           "cat": "wait", "ts": _us(r.trigger)})
    changes: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for r in records:
        if r.is_dma:
            changes[r.queue].append((r.trigger, 1))
            changes[r.queue].append((r.end, -1))
    for queue in trace.components:
        pending = 0
        for time, delta in sorted(changes.get(queue, ()), key=lambda c: (c[0], c[1])):
            pending += delta
            events.append({"ph": "C", "pid": _PID, "name": f"pending {queue}", "ts": _us(time),
                           "args": {"pending": pending}})
    for name, times in zip(trace.components, trace.semaphore_times):
        if times:
            events.append({"ph": "C", "pid": _PID, "name": f"semaphore {name}", "ts": 0.0, "args": {"value": 0}})
        for value, time in enumerate(times, start=1):
            events.append({"ph": "C", "pid": _PID, "name": f"semaphore {name}", "ts": _us(time),
                           "args": {"value": value}})
    events.append({"ph": "i", "s": "g", "pid": _PID, "name": "makespan", "ts": _us(trace.makespan)})
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"machine": trace.machine, "seed": trace.seed, "makespan_ns": trace.makespan}}


def write_chrome_trace(trace: Trace, path: str | Path) -> None:
    """Write :func:`chrome_trace` to ``path`` (opens in ui.perfetto.dev), atomically."""
    write_text(path, dumps_strict(chrome_trace(trace), separators=(",", ":")))  # strict JSON
