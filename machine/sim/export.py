"""Draw a :class:`~neuronsim.machine.sim.trace.Trace`: Perfetto / Chrome trace JSON and a matplotlib timeline.

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
  complete) and ``semaphore NAME`` per component (its value over time).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from neuronsim.machine.formats.jsonio import dumps_strict
from neuronsim.machine.formats.files import OutputError, write_atomically, write_text
from neuronsim.machine.sim.trace import Trace

__all__ = ["chrome_trace", "write_chrome_trace", "plot_timeline", "plot_format", "save_figure"]

_PID = 1


def _us(ns: float) -> float:
    return ns / 1000.0


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
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"machine": trace.machine, "seed": trace.seed, "makespan_ns": trace.makespan}}


def write_chrome_trace(trace: Trace, path: str | Path) -> None:
    """Write :func:`chrome_trace` to ``path`` (opens in ui.perfetto.dev), atomically."""
    write_text(path, dumps_strict(chrome_trace(trace), separators=(",", ":")))  # strict JSON


def plot_format(path: str | Path) -> str:
    """The image format a plot path asks for (its extension); a located
    :class:`~neuronsim.machine.formats.files.OutputError` when matplotlib cannot write it.

    >>> plot_format("out/t.png"), plot_format("t.SVG")
    ('png', 'svg')
    """
    from matplotlib.backend_bases import FigureCanvasBase

    supported = FigureCanvasBase.get_supported_filetypes()
    ext = Path(path).suffix[1:].lower()
    if ext not in supported:
        given = f"the extension .{ext} is not an image format" if ext else "the file name has no extension"
        raise OutputError(str(path), f"{given}; use one of {', '.join('.' + e for e in sorted(supported))}")
    return ext


def save_figure(fig, path: str | Path, **options) -> None:
    """Lay ``fig`` out tight, ``fig.savefig`` it to ``path`` atomically in the format of its
    extension, and close it (also when saving fails: the plots are drawn once)."""
    import matplotlib.pyplot as plt

    try:
        fig.tight_layout()
        fmt = plot_format(path)
        write_atomically(path, lambda fh: fig.savefig(fh, format=fmt, **options))
    finally:
        plt.close(fig)


def plot_timeline(trace: Trace, path: str | Path, title: str = "", program: str = "program") -> None:
    """Draw one row per component to ``path`` (PNG, SVG, PDF, ... by its extension),
    atomically: ops in their colours of :mod:`neuronsim.machine.sim.palette`, DMA triggers as thin black
    hatched bars on their sequencer, the title naming ``program`` and the run (nominal or
    seed S)."""
    plot_format(path)  # before any drawing: a bad name costs nothing
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from neuronsim.machine.sim.palette import DMA_TRIGGER, DMA_TRIGGER_HATCH, op_color, picture_title

    rows = [c for c in trace.components if trace.stream(c)]
    row = {name: len(rows) - 1 - k for k, name in enumerate(rows)}
    ops = sorted({r.op for r in trace.records})
    bars: dict[tuple[float, float, str], list[tuple[float, float]]] = defaultdict(list)
    triggers: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for r in trace.records:  # one broken_barh call per (row, op): fast on big traces
        bars[(row[r.component] - 0.4, 0.8, r.op)].append((_us(r.start), _us(r.end - r.start)))
        if r.is_dma:
            triggers[row[r.engine]].append((_us(r.trigger), _us(r.issued - r.trigger)))
    fig, ax = plt.subplots(figsize=(12, 0.5 * len(rows) + 1.5))
    for (y, height, op), spans in bars.items():
        ax.broken_barh(spans, (y, height), facecolors=op_color(op), edgecolors="black", linewidth=0.3)
    for y, spans in triggers.items():
        ax.broken_barh(spans, (y - 0.15, 0.3), facecolors=DMA_TRIGGER, edgecolors="white", hatch=DMA_TRIGGER_HATCH,
                       linewidth=0.3)
    ax.set_yticks(range(len(rows)), list(reversed(rows)))
    ax.set_xlabel("time (µs)")
    ax.set_title(title or picture_title(program, f"timeline on {trace.machine}, makespan {trace.makespan:,.1f} ns",
                                        trace.seed))
    handles = [plt.Rectangle((0, 0), 1, 1, facecolor=op_color(op), edgecolor="black", linewidth=0.3) for op in ops]
    labels = list(ops)
    if triggers:
        handles.append(plt.Rectangle((0, 0), 1, 1, facecolor=DMA_TRIGGER, edgecolor="white", hatch=DMA_TRIGGER_HATCH))
        labels.append("DMA trigger (on its sequencer)")
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    ax.grid(axis="x", linestyle=":", linewidth=0.5)
    save_figure(fig, path, dpi=120)
