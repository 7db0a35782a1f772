"""One self-contained HTML page about a program: timeline, races, sync footprint, engines.

:func:`build_report` gathers what the page shows, :func:`render_html` renders it with the
Jinja2 template ``verify/app/templates/report.html.j2``, :func:`write_report` does both and writes
the file atomically.  The page works offline: CSS, a few lines of JavaScript and the SVG
drawings are inline, nothing is fetched.  It has four parts:

* **timeline** of the nominal simulated run (:func:`neuronsim.machine.sim.simulator.simulate`, timing
  only): one row per sequencer and DMA queue, one bar per instance on the component that
  executes it (a DMA's trigger as a thin bar on its sequencer, its transfer on its queue),
  and one arrow per wait met, from the producer's completion to the waiter's trigger.
  Instances in a race are outlined in red.  At most :data:`MAX_DRAWN` instances (and their
  waits) are drawn; the page says when it shows a prefix;
* **races** under the program's deps (:func:`neuronsim.verify.racecheck.check_waits`), grouped per
  instruction pair with the dep that fixes each group (:func:`neuronsim.verify.race_report.group_races`);
* **sync footprint**: waits by kind for the program as given, after each pass of the
  footprint pipeline, and the spec's minimum (:func:`neuronsim.verify.sync_counts.sync_report`);
* **engines**: busy time, wait time and DMA bytes per component
  (:func:`neuronsim.machine.sim.trace.summarize`).

Examples
--------
>>> from neuronsim.machine.formats.program_json import load_program
>>> report = build_report(load_program("examples/matmul_k_loop_racy.json"), "racy")
>>> report.total_races, [(g.first, g.second, g.fix) for g in report.race_groups]
(3, [('mm', 'ld_x', '{"on": "mm", "loop_carried": true}')])
>>> html = render_html(report)
>>> html.startswith("<!DOCTYPE html>"), "http" in html.replace("http://www.w3.org/2000/svg", "")
(True, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import jinja2

from neuronsim.machine.formats.jsonio import dumps_strict
from neuronsim.machine.formats.files import write_text
from neuronsim.machine.sim.palette import DMA_TRIGGER, KIND_COLORS, MINIMUM_LINE, RACY_OUTLINE, css_variables, op_color
from neuronsim.machine.ir.program import Program
from neuronsim.machine.sim.accuracy import load_accuracy, makespan_kind
from neuronsim.machine.sim.simulator import simulate
from neuronsim.machine.ir.source import instance_source, source_text
from neuronsim.machine.sim.trace import Trace, summarize
from neuronsim.machine.order.unroll import unroll
from neuronsim.passes import DEFAULT_PIPELINE, PassContext, parse_pipeline, run_pipeline

from neuronsim.verify.racecheck import check_waits
from neuronsim.verify.race_report import group_races
from neuronsim.verify.sync_counts import KINDS, SyncReport, sync_report

__all__ = ["Report", "RaceGroupView", "build_report", "render_html", "write_report", "timeline", "footprint_chart",
           "MAX_DRAWN", "MAX_RACES"]

#: Instances drawn on the timeline at most (a prefix in program order beyond that).
MAX_DRAWN = 3000
#: Races listed at most (all are counted).
MAX_RACES = 2000
#: Instance pairs shown per race group.
PAIRS_SHOWN = 8

_ROW, _LABEL, _WIDTH = 30, 64, 1100

def nice_ticks(span_ns: float, target: int = 10) -> list[float]:
    """Tick positions in ns at a round step in µs (1, 2 or 5 times a power of ten), about
    ``target`` of them, from 0 to at most ``span_ns``.

    >>> [t / 1000 for t in nice_ticks(7_748.5)]
    [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    >>> [t / 1000 for t in nice_ticks(31_034.9)]
    [0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0]
    """
    import math

    span_us = max(span_ns / 1000, 1e-9)
    raw = span_us / target
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    count = int(span_us / step + 1e-9)
    return [k * step * 1000 for k in range(count + 1)]


def _tick_label(ns: float) -> str:
    us = ns / 1000
    return f"{us:,.0f}" if abs(us - round(us)) < 1e-9 else f"{us:,.3f}".rstrip("0").rstrip(".")


@dataclass(frozen=True, slots=True)
class RaceGroupView:
    """One instruction pair's races as the page lists them."""

    first: str
    second: str
    kinds: str
    count: int
    pairs: tuple[dict, ...]
    """``kind``, ``first``, ``second``, ``where``, ``ids`` (the two instance ids) per shown pair."""
    fix: str
    """The dep to add to ``second``'s deps, as JSON."""
    first_source: str | None = None
    """Kernel line of ``first`` (``x-source``: call at file:line), None when unknown."""
    second_source: str | None = None


@dataclass(frozen=True, slots=True)
class Report:
    """Everything the page shows (plain data: the template only lays it out)."""

    name: str
    machine: str
    instructions: int
    instances: int
    makespan_ns: float
    total_races: int
    race_groups: tuple[RaceGroupView, ...]
    timeline: dict
    footprint: SyncReport
    chart: dict
    engines: tuple[dict, ...]
    dma_bytes: int
    dma_gb_per_s: float
    makespan_kind: str = "in source order"
    """``scheduled`` or ``in source order`` (:func:`neuronsim.machine.sim.accuracy.makespan_kind`)."""
    model_accuracy: str = ""
    """The timing model's measured accuracy on the published figures, one line ("" when none is stored)."""
    findings: tuple[dict, ...] = ()
    """A traced NKI program's findings (:meth:`NkiFinding.to_json`, alike ones grouped): an
    error among them means the kernel as written is wrong, whatever the races say."""

    @property
    def finding_errors(self) -> int:
        return sum(f["severity"] == "error" for f in self.findings)


def _where(race) -> str:
    if race.memory == "dram":
        prefix = f"alias {race.alias} offsets" if race.alias else "dram bytes"
        return f"{prefix} [{race.bytes[0]}, {race.bytes[1]})"
    p, b = race.partitions, race.bytes
    return f"{race.memory} partitions [{p[0]}, {p[1]}) bytes [{b[0]}, {b[1]})"


def _race_views(report, unrolled) -> tuple[RaceGroupView, ...]:
    views = []
    stream = unrolled.stream
    by_name = {inst.name: inst for inst in stream.instrs}
    for group in group_races(report, unrolled):
        dep = {"on": group.first, **({"loop_carried": True} if group.fix.loop_carried else {})}
        pairs = tuple({"kind": r.kind, "first": r.first, "second": r.second, "where": _where(r),
                       "ids": f"{r.first_id} {r.second_id}", "first_source": instance_source(stream, r.first_id),
                       "second_source": instance_source(stream, r.second_id)} for r in group.races[:PAIRS_SHOWN])
        views.append(RaceGroupView(group.first, group.second, "/".join(group.kinds), len(group.races), pairs,
                                   dumps_strict(dep), source_text(by_name[group.first]),
                                   source_text(by_name[group.second])))
    return tuple(views)


def timeline(trace: Trace, racy: frozenset[int] = frozenset(), limit: int = MAX_DRAWN,
             span: float | None = None) -> dict:
    """SVG geometry of the timeline: rows, bars, wait arrows and time ticks (see the module doc).

    >>> from neuronsim.machine.formats.program_json import load_program
    >>> trace = simulate(load_program("examples/async_load_then_fill.json"), functional=False).trace
    >>> t = timeline(trace)
    >>> [row["name"] for row in t["rows"]][:5], len(t["bars"]), len(t["arrows"])
    (['pe', 'act', 'dve', 'pool', 'sp'], 5, 2)
    """
    span = span or trace.makespan or 1.0  # a given span puts two timelines on one time axis (compare)
    rows = {name: k for k, name in enumerate(trace.components)}
    ops = sorted({r.op for r in trace.records})
    color = {op: op_color(op) for op in ops}

    def x(t: float) -> float:
        return round(_LABEL + t / span * _WIDTH, 2)

    def bar(r, row: str, start: float, end: float, thin: bool, what: str) -> dict:
        top = rows[row] * _ROW + (11 if thin else 4)
        return {"x": x(start), "y": top, "w": max(1.0, round(x(end) - x(start), 2)), "h": 8 if thin else _ROW - 8,
                "fill": DMA_TRIGGER if thin else color[r.op], "trigger": thin, "id": r.id, "racy": r.id in racy,
                "title": f"{r.name} ({r.op}) {what} {start:,.1f}-{end:,.1f} ns"
                         + (f" @ {r.source}" if r.source else "")}

    drawn = trace.records[:limit]
    bars, arrows = [], []
    for r in drawn:
        if r.is_dma:
            bars.append(bar(r, r.engine, r.trigger, r.issued, True, f"trigger for {r.queue}"))
            bars.append(bar(r, r.queue, r.start, r.end, False, f"transfer of {r.bytes:,} bytes"))
        else:
            bars.append(bar(r, r.engine, r.start, r.end, False, "on " + r.engine))
        for w in r.waits_met:
            producer = trace.records[w.producer]
            x1, y1 = x(producer.end), rows[producer.component] * _ROW + _ROW / 2
            x2, y2 = x(r.trigger), rows[r.engine] * _ROW + _ROW / 2
            bend = min(y1, y2) - (_ROW / 2 if y1 == y2 else 0)  # a same-row wait arcs over its row
            arrows.append({"d": f"M{x1},{y1} Q{round((x1 + x2) / 2, 2)},{bend} {x2},{y2}",
                           "title": f"{r.name} waits for {producer.name} ({w.semaphore} >= {w.value})"})
    ticks = [{"x": x(t), "label": _tick_label(t)} for t in nice_ticks(span)]
    return {"width": _LABEL + _WIDTH + 20, "height": len(rows) * _ROW + 24, "row_height": _ROW,
            "rows": [{"name": name, "y": k * _ROW, "busy": bool(trace.stream(name))} for name, k in rows.items()],
            "bars": bars, "arrows": arrows, "ticks": ticks, "axis_y": len(rows) * _ROW,
            "legend": [{"op": op, "fill": color[op]} for op in ops]
            + ([{"op": "DMA trigger (on its sequencer)", "fill": DMA_TRIGGER}] if any(r.is_dma for r in drawn) else []),
            "drawn": len(drawn), "total": len(trace.records)}


def footprint_chart(report: SyncReport) -> dict:
    """SVG geometry of the stacked bars: waits by kind per stage, then the minimum.

    >>> from neuronsim.machine.formats.program_json import load_program
    >>> from neuronsim.verify.sync_counts import sync_report
    >>> chart = footprint_chart(sync_report([("given", load_program("examples/matmul_k_loop.json"))]))
    >>> [(b["label"], b["total"]) for b in chart["bars"]]
    [('given', 20), ('minimum', 16)]
    """
    columns = [(s.stage, s.figures) for s in report.stages]
    last = report.stages[-1].minimum if report.stages else None
    if last is not None:
        columns.append(("minimum", last.figures))
    height, top, step, bar_width = 220, 20, 110, 56
    peak = max((f.waits for _, f in columns), default=0) or 1
    bars = []
    for k, (label, figures) in enumerate(columns):
        x0, base, parts = 50 + k * step, top + height, []
        for kind in KINDS:
            h = figures.kind(kind) / peak * height
            if figures.kind(kind):
                parts.append({"kind": kind, "count": figures.kind(kind), "y": round(base - h, 2), "h": round(h, 2),
                              "fill": KIND_COLORS[kind]})
            base -= h
        bars.append({"label": label, "x": x0, "w": bar_width, "total": figures.waits, "top": round(base, 2),
                     "parts": parts, "minimum": label == "minimum"})
    return {"width": 70 + len(columns) * step + 120, "height": height + top + 40, "base": top + height,
            "bars": bars, "legend": [{"kind": k, "fill": KIND_COLORS[k]} for k in KINDS]}


def _footprint(program: Program, spec: str | None) -> SyncReport:
    """Sync counts of the program as given and after each pass of ``spec`` (the footprint
    command's default: ``dep-reduction`` when the program has deps, else the compile pipeline
    then ``dep-reduction``)."""
    if spec is None:
        has_deps = any(instr.deps for instr, _ in program.instructions())
        spec = "dep-reduction" if has_deps else DEFAULT_PIPELINE
    stages = [("given", program)]
    ctx = PassContext()
    run_pipeline(program, parse_pipeline(spec), ctx,
                 after_pass=lambda p, out, _ctx: stages.append((p.spec_string(), out)))
    return sync_report(stages, simulate=False, passes=[(r.spec, dict(r.stats)) for r in ctx.records])


def build_report(program: Program, name: str, *, passes: str | None = None, findings=()) -> Report:
    """Everything the page shows about a placed ``program`` (virtual tensors are an error);
    ``findings``: the NKI findings of the traced program it was compiled from, as JSON views,
    one per kind on a pair of kernel lines (the caller groups them: the findings are
    ``verify.nki``'s, a room above this one)."""
    shown = list(findings)
    unrolled = unroll(program)
    waits = [tuple(t for _, t in ws) for ws in unrolled.resolve_waits()]
    races = check_waits(program, waits, unrolled, max_races=MAX_RACES)
    trace = simulate(program, functional=False, validate=False).trace
    accuracy = load_accuracy()
    racy = frozenset(i for r in races.races for i in (r.first_id, r.second_id))
    summary = summarize(trace).to_json()
    engines = tuple(e for e in summary["engines"] if e["instances"])
    footprint = _footprint(program, passes)
    return Report(name, trace.machine, sum(1 for _ in program.instructions()), len(unrolled), trace.makespan,
                  races.total_races, _race_views(races, unrolled), timeline(trace, racy), footprint,
                  footprint_chart(footprint), engines, summary["dma_bytes"], summary["dma_gb_per_s"],
                  makespan_kind=makespan_kind(program), model_accuracy=accuracy.text() if accuracy else "",
                  findings=tuple(shown))


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("neuronsim.verify.app", "templates"),
                             autoescape=jinja2.select_autoescape(default=True), undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    env.policies["json.dumps_function"] = dumps_strict  # a template's |tojson writes strict JSON too
    return env


def render_html(report: Report) -> str:
    """The page as one HTML document."""
    return _environment().get_template("report.html.j2").render(r=report, kinds=KINDS, palette_css=css_variables(),
                                                                 minimum_line=MINIMUM_LINE, racy_outline=RACY_OUTLINE)


def write_report(program: Program, path: str, name: str, *, passes: str | None = None, findings=()) -> Report:
    """Build, render and write the page of ``program`` to ``path``; the report it shows."""
    report = build_report(program, name, passes=passes, findings=findings)
    write_text(path, render_html(report))  # the one atomic writer: mode, links and FIFOs kept
    return report
