"""``neuronsim footprint PROGRAM [--json] [--plot FILE.png] [--passes SPEC]``: sync footprint.

Stages: the program as given, then the program after each pass of ``--passes``.  The default
pipeline is ``dep-reduction`` when the program has deps, else the compile pipeline followed by
``dep-reduction`` (the deps have to be built before they can be reduced).  For every stage:
deps and instance-level waits by kind, same- and cross-engine waits, semaphore wait operations
after lowering, the spec's minimum and the ratio, and the simulated makespan (see
:mod:`neuronsim.verify.sync_counts`).  The program as given is race-checked under its own deps
(:mod:`neuronsim.verify.own_races`): races are a warning on standard error (how many, the first one
located, the dep that fixes it) and the ``own_races`` key of the JSON document, not an error.
Exit 0 (with or without that warning), or 2 on unusable input.
"""

from __future__ import annotations

import os

import click
from neuronsim.verify.app.console import people_console
from rich.table import Table

from neuronsim.machine.formats.program_json import load_program
from neuronsim.machine.tasks.ir import TaskProgram
from neuronsim.passes import ALL_PASSES, PassContext, parse_pipeline, run_pipeline

from neuronsim.verify.app.drawings import save_figure

from neuronsim.verify.cli.common import (check_plot, emit_json, guard_size, json_option, max_idle_option,
                                         program_argument, run_command, size_options)
from neuronsim.verify.app.progress import Progress, pass_progress
from neuronsim.verify.sync_counts import KINDS, SyncReport, sync_report
from neuronsim.verify.cli.task_programs import footprint_tasks, sniff_task_program
from neuronsim.verify.cli.traced import default_pipeline, prepare_traced

def _registry() -> dict[str, type]:
    return ALL_PASSES


def _table(report: SyncReport) -> Table:
    table = Table(title=f"sync footprint on {report.machine} (waits are per instance)")
    for column in ("stage", "deps", "waits", *KINDS, "same-eng", "cross-eng", "semaphore", "minimum", "ratio",
                   "makespan µs"):
        table.add_column(column, justify="left" if column == "stage" else "right")
    for s in report.stages:
        f = s.figures
        minimum = f"{s.minimum.figures.waits}" if s.minimum else "-"
        ratio = f"{s.ratio:.2f}" if s.ratio is not None else "-"
        span = f"{s.makespan_ns / 1000:.2f}" if s.makespan_ns is not None else "-"
        table.add_row(s.stage, str(s.deps), str(f.waits), *(str(f.kind(k)) for k in KINDS), str(f.same_engine),
                      str(f.cross_engine), str(f.semaphore_waits), minimum, ratio, span)
    return table


def _notes(report: SyncReport) -> list[str]:
    lines = []
    last = report.stages[-1]
    if last.minimum is not None:
        m = last.minimum
        lines.append(f"minimum (the spec's: a wait for every conflicting instance pair rules 1-3 leave unordered, "
                     f"transitively reduced): {m.figures.waits} waits "
                     f"({', '.join(f'{k} {m.figures.kind(k)}' for k in KINDS if m.figures.kind(k))}), "
                     f"{m.figures.semaphore_waits} semaphore waits")
    else:
        lines.append("minimum: not available while tensors are virtual (run the allocation passes)")
    for spec, stats in report.passes:
        stats = dict(stats)
        if spec.split("{")[0] == "alloc" and "placed" in stats:
            lines.append(f"{spec}: {stats['placed']} tensors placed, {stats.get('rotated', 0)} multi-buffered "
                         f"({stats.get('slots', 0)} rotating slots), {stats.get('bytes-used', 0)} bytes used, "
                         f"{stats.get('bytes-saved', 0)} saved by reuse"
                         + (f", {stats['fallbacks']} fallbacks to one placement" if stats.get("fallbacks") else "")
                         + (f", {stats['spills']} tiles spilled to DRAM ({stats.get('spill-transfers', 0)} transfers, "
                            f"{stats.get('spill-bytes', 0)} bytes)" if stats.get("spills") else ""))
        if stats.get("split"):
            lines.append(f"{spec}: {stats['split']} deps needed at some iterations only were restricted to them "
                         f"(x-iterations)")
        if stats.get("unsplit"):
            lines.append(f"{spec}: {stats['unsplit']} deps are needed at some instances only and kept whole "
                         f"(their instances are not a few iteration boxes): "
                         f"{stats.get('waits-kept', 0)} waits kept, {stats.get('waits-minimum', 0)} needed")
    return lines


def _plot(report: SyncReport, path: str, program: str = "program") -> None:
    """Waits by kind per stage (stacked, the greys of :mod:`neuronsim.machine.sim.palette`), semaphore waits
    and the minimum as lines above them, integer ticks, the title naming the program."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    from neuronsim.machine.sim.palette import KIND_COLORS, MINIMUM_LINE, SEMAPHORE_LINE, picture_title

    stages = [s.stage for s in report.stages]
    x = list(range(len(stages)))  # positions, not names: a pass may run twice
    fig, ax = plt.subplots(figsize=(max(6.0, 1.8 * len(stages) + 2.0), 4.5))
    bottom = [0] * len(stages)
    for kind in KINDS:
        heights = [s.figures.kind(kind) for s in report.stages]
        ax.bar(x, heights, bottom=bottom, label=kind, color=KIND_COLORS[kind], edgecolor="black", linewidth=0.4)
        bottom = [b + h for b, h in zip(bottom, heights)]
    semaphores = [s.figures.semaphore_waits for s in report.stages]
    ax.plot(x, semaphores, "o-", color=SEMAPHORE_LINE, label="semaphore waits", zorder=3)
    minimums = [s.minimum.figures.waits if s.minimum else float("nan") for s in report.stages]
    ax.plot(x, minimums, "--", color=MINIMUM_LINE, linewidth=2, label="minimum", zorder=4)
    peak = max([*bottom, *semaphores, *(m for m in minimums if m == m)], default=1) or 1
    ax.set_ylim(0, peak * 1.12 + 1)  # headroom: no line hides under the frame
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xticks(x, stages)
    ax.set_ylabel("instance-level waits")
    ax.set_title(picture_title(program, f"sync footprint on {report.machine}", run=False))
    ax.tick_params(axis="x", labelrotation=20)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    save_figure(fig, path)


@click.command("footprint")
@program_argument
@json_option
@click.option("--plot", "plot", metavar="FILE.png", default=None, help="Also draw the waits per stage to FILE.png.")
@click.option("--passes", "spec", metavar="SPEC", default=None,
              help="Pipeline to measure after (default: dep-reduction, or, when the program has no deps, "
                   "compile's default pipeline: for a traced NKI kernel what run compiles it with).")
@click.option("--no-simulate", is_flag=True, help="Skip the simulated makespan (faster on big programs).")
@size_options
@max_idle_option()
@run_command
def footprint(program: str, as_json: bool, plot: str | None, spec: str | None, no_simulate: bool,
              max_instances: int, max_memory: int | None) -> int:
    """Waits by kind, same/cross-engine, semaphore waits, the minimum and the makespan of PROGRAM;
    warns (exit 0) when its own deps leave races."""
    check_plot(plot)
    prog = sniff_task_program(program)
    if isinstance(prog, TaskProgram):  # neuronsim.tasks/1: TensorMap tracking per stage
        return footprint_tasks(prog, spec=spec, as_json=as_json, plot=plot, no_simulate=no_simulate,
                               max_instances=max_instances)
    prog, findings = prepare_traced(load_program(prog), compile_first=False)  # the pipeline below compiles it
    if spec is None:
        has_deps = any(instr.deps for instr, _ in prog.instructions())
        spec = "dep-reduction" if has_deps else default_pipeline(prog)  # (a traced kernel: as run compiles it)
    passes = parse_pipeline(spec, _registry())
    size = guard_size(prog, max_instances=max_instances, max_memory=max_memory,  # makespans: timing-only runs
                      simulated_runs=0 if no_simulate else len(passes) + 1, functional=False)
    ctx = PassContext()
    stages = [("given", prog)]
    with Progress() as progress:
        with progress.stage("pipeline", len(passes), unit="pass", size=size.instances) as update:
            hook = pass_progress(update, passes)
            for p in passes:
                prog = run_pipeline(prog, [p], ctx, after_pass=hook)
                stages.append((p.spec_string(), prog))
        records = [(r.spec, dict(r.stats)) for r in ctx.records]
        with progress.stage("footprint", None, size=size.instances * len(stages)):
            report = sync_report(stages, simulate=not no_simulate, passes=records, check_given=True)
    if plot:
        _plot(report, plot, "standard input" if program == "-" else os.path.basename(program))
    if as_json:
        emit_json({**report.to_json(), **({"nki_findings": [f.to_json() for f in findings]} if findings else {})})
    else:
        console = people_console()  # no number cut when piped (verify/app/console.py)
        console.print(_table(report))
        for line in _notes(report):
            click.echo(line)
    for line in report.own_races.warning():  # a warning, not a failure: the figures stand, exit 0
        click.echo(line, err=True)
    return 0
