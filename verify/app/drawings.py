"""The drawings of the command line: a simulated run's timeline and a task run's, as images.

Each draws with matplotlib (imported when first drawing: the commands that draw nothing never
load it) in the colours of :mod:`neuronsim.machine.sim.palette`, and writes the file
atomically in the format its extension names (:func:`plot_format` refuses any other before
anything is drawn).  The traces themselves and their Perfetto JSON are the simulator's
(:mod:`neuronsim.machine.sim.export`, :mod:`neuronsim.machine.sim.task_trace`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from neuronsim.machine.formats.files import OutputError, write_atomically
from neuronsim.machine.sim.trace import Trace

if TYPE_CHECKING:  # an annotation only: a kernel's run, which draws no task, never loads the task runtime
    from neuronsim.machine.sim.task_trace import TaskTrace

__all__ = ["plot_format", "save_figure", "plot_timeline", "plot_task_timeline"]


def _us(ns: float) -> float:
    return ns / 1000.0


def plot_format(path: str | Path) -> str:
    """The image format a plot path asks for (its extension); a located
    :class:`~neuronsim.machine.formats.files.OutputError` when matplotlib cannot write it.

    >>> plot_format("out/t.png"), plot_format("t.SVG")
    ('png', 'svg')
    """
    from matplotlib.backend_bases import FigureCanvasBase

    # (pgf is LaTeX source matplotlib makes by running xelatex, which a machine may not have)
    supported = {ext: about for ext, about in FigureCanvasBase.get_supported_filetypes().items() if ext != "pgf"}
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


def plot_task_timeline(trace: TaskTrace, path: str | Path, title: str = "", program: str = "task program") -> None:
    """One row for the orchestrator and one per worker, tasks coloured by kernel (the colours
    of :mod:`neuronsim.machine.sim.palette`), to ``path``; the title names ``program`` and the run."""
    from neuronsim.machine.sim.palette import op_color, picture_title

    plot_format(path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = ["orchestrator", *(f"worker {k}" for k in range(trace.cores))]
    kernels: Sequence[str] = sorted({r.kernel for r in trace.records if r.kernel})
    color = {k: op_color(k) for k in kernels}
    fig, ax = plt.subplots(figsize=(12, 0.5 * len(rows) + 1.5))
    p = trace.preset
    costs = [p.submit_cost(r.lookups, r.inserts, r.explicit, r.creator) for r in trace.records]
    submits = [(_us(r.submitted - c), _us(c)) for r, c in zip(trace.records, costs)]
    ax.broken_barh(submits, (len(rows) - 1 - 0.3, 0.6), facecolors="grey")
    for k in kernels:
        for w in range(trace.cores):
            spans = [(_us(r.start), _us(r.end - r.start)) for r in trace.records if r.kernel == k and r.worker == w]
            if spans:
                ax.broken_barh(spans, (len(rows) - 2 - w - 0.4, 0.8), facecolors=color[k], edgecolors="black",
                               linewidth=0.3)
    ax.set_yticks(range(len(rows)), list(reversed(rows)))
    ax.set_xlabel("time (µs)")
    ax.set_title(title or picture_title(program, f"task runtime on {trace.cores} cores, makespan "
                                                 f"{trace.makespan:,.1f} ns", trace.seed))
    handles = [plt.Rectangle((0, 0), 1, 1, facecolor=color[k], edgecolor="black", linewidth=0.3) for k in kernels]
    handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="grey"))
    ax.legend(handles, [*kernels, "submission (orchestrator)"], loc="upper left", bbox_to_anchor=(1.0, 1.0),
              fontsize="small")
    save_figure(fig, path, dpi=120)
