"""Task programs through ``neuronsim check`` / ``simulate`` / ``footprint``: detection and the task forms.

A command reads its PROGRAM with :func:`sniff_task_program`: a ``neuronsim.tasks/1`` document
(told by its ``format``) comes back as a :class:`~neuronsim.machine.tasks.ir.TaskProgram` and the command
hands it to :func:`check_tasks`, :func:`simulate_tasks_command` or :func:`footprint_tasks`;
anything else comes back as what ``neuronsim.machine.formats.program_json.load_program`` should read (the path, or
the bytes already taken from standard input), so instruction programs see no change.

A task program whose calls carry no directions yet is given them first
(``derive-call-directions``: the runtime cannot run without them, and PyPTO always runs that
pass); that is the *all-AUTO* program, and the reports say so.
"""

from __future__ import annotations

import functools
import io
from typing import Any, BinaryIO

import click
from neuronsim.verify.app.console import people_console
from rich.table import Table

from neuronsim.machine.formats.inputs import read_input
from neuronsim.machine.formats.jsonio import decode_strict
from neuronsim.machine.sim.runtime import simulate_tasks
from neuronsim.machine.sim.task_trace import write_task_trace
from neuronsim.verify.app.drawings import plot_task_timeline
from neuronsim.machine.tasks.format import FORMAT, is_task_document, parse_tasks
from neuronsim.machine.tasks.ir import TaskProgram
from neuronsim.machine.tasks.size import TaskWork, estimate_task_work
from neuronsim.machine.tasks.orchestrator import DEFAULT_MAX_ITERATIONS
from neuronsim.passes.pipeline import PassContext
from neuronsim.passes.tasks import DEFAULT_TASK_PIPELINE, derive_directions, parse_task_pipeline, run_task_pipeline

from neuronsim.verify.cli.common import UsageFailure, check_plot, emit_json, run_output_paths, write_run_outputs
from neuronsim.verify.tasks.counts import TaskFootprint, task_footprint
from neuronsim.verify.tasks.check import TaskRaceReport, check_task_program, check_task_trace, trace_violations

__all__ = ["sniff_task_program", "with_directions", "check_tasks", "simulate_tasks_command", "footprint_tasks",
           "render_task_races", "guard_task_work", "guard_task_passes", "DEFAULT_MAX_PAIRS"]

#: Pairs of calls the task passes compare at most unless ``--max-pairs`` says otherwise: the
#: dependence analysis compares every call with every earlier one of its region (500 straight
#: calls, 124,750 pairs, took 40 s on a shared machine; 50,000 would take days).
DEFAULT_MAX_PAIRS = 100_000

_MARK = FORMAT.encode()


def sniff_task_program(source: str) -> TaskProgram | str | BinaryIO:
    """The task program at ``source`` (a path or ``-``), or what to load as an instruction
    program (the bytes already read, as a stream).  Both are read once, by
    :func:`neuronsim.machine.formats.inputs.read_input` (bounded; a closed standard input is a located error)."""
    data = read_input(source)
    if _MARK in data:
        doc = decode_strict(data)
        if is_task_document(doc):
            return parse_tasks(doc)
    return io.BytesIO(data)


def with_directions(program: TaskProgram) -> tuple[TaskProgram, bool]:
    """``program`` with every call's directions (derived when some are missing), and whether they were."""
    if all(c.directions is not None for c, _ in program.calls()):
        return program, False
    return derive_directions(program), True


# -- size guards --------------------------------------------------------------------------------
def guard_task_work(program: TaskProgram, *, max_instances: int | None, runs: int = 1) -> TaskWork:
    """Refuse, before the walk, a run past ``max_instances`` task instances (times ``runs``
    simulated runs) or past the walk's loop iterations (figures of
    :func:`~neuronsim.machine.tasks.size.estimate_task_work`, lower bounds)."""
    work = estimate_task_work(program)
    if max_instances is not None and work.instances * max(runs, 1) > max_instances:
        times = f" x {runs:,} runs" if runs > 1 else ""
        raise UsageFailure(f"the program submits {work.instances:,} task instances{times}; the limit is "
                           f"{max_instances:,}: raise it with --max-instances N", "--max-instances")
    if work.iterations > DEFAULT_MAX_ITERATIONS:
        raise UsageFailure(f"the program runs {work.iterations:,} loop iterations; the orchestrator runs at most "
                           f"{DEFAULT_MAX_ITERATIONS:,}", "function.body")
    if max_instances is not None and work.dep_slots > max_instances:  # each slot read is a step of the walk
        raise UsageFailure(f"the program's deps read {work.dep_slots:,} TaskId array slots (whole arrays as deps, "
                           f"every slot at every execution); the limit is {max_instances:,}: raise it with "
                           f"--max-instances N", "--max-instances")
    return work


def guard_task_passes(program: TaskProgram, max_pairs: int, *, option: bool = True) -> None:
    """Refuse, before any pass, a program whose calls make more than ``max_pairs`` pairs
    (``option``: the command has ``--max-pairs``; else ``neuronsim tasks`` is named)."""
    calls = estimate_task_work(program).calls
    pairs = calls * (calls - 1) // 2
    if pairs > max_pairs:
        hint = "raise it with --max-pairs N" if option else "neuronsim tasks --max-pairs N runs the passes past it"
        raise UsageFailure(f"the program has {calls:,} calls, {pairs:,} pairs for the dependence analysis to compare; "
                           f"the limit is {max_pairs:,}: {hint}", "--max-pairs" if option else "")


# -- check --------------------------------------------------------------------------------------
def render_task_races(report: TaskRaceReport, program: TaskProgram, derived: bool) -> str:
    """Races grouped per (earlier call, later call), each group with its fix and a first example."""
    lines = [f"task program {program.function.name}: {report.tasks} task instances, {report.edges} runtime edges"
             + (" (directions derived: the all-AUTO program)" if derived else "")]
    if report.race_free:
        lines.append("no races")
        return "\n".join(lines)
    groups: dict[tuple[str, str, str], list] = {}
    for r in report.races:
        groups.setdefault((r.fix.on, r.fix.call, r.fix.text()), []).append(r)
    listed = len(report.races)
    lines.append(f"{report.total_races} races" + (f" ({listed} listed)" if listed < report.total_races else "")
                 + f" between {len(groups)} pairs of calls:")
    for (first, second, fix), races in groups.items():
        kinds = "/".join(k for k in ("RAW", "WAR", "WAW") if any(r.kind == k for r in races))
        lines.append(f"  {kinds} {first} -> {second}: {len(races)} instance pair(s); fix: {fix}")
        lines.append(f"    e.g. {races[0].describe()}")
    return "\n".join(lines)


def check_tasks(program: TaskProgram, *, as_json: bool, max_races: int, max_instances: int) -> int:
    """``neuronsim check`` on a task program: exit 0 race-free, 1 races."""
    guard_task_work(program, max_instances=max_instances)
    program, derived = with_directions(program)
    report = check_task_program(program, max_races=max_races, max_instances=max_instances)
    if as_json:
        emit_json({**report.to_json(), "directions_derived": derived})
    else:
        click.echo(render_task_races(report, program, derived))
    return 0 if report.race_free else 1


# -- simulate -----------------------------------------------------------------------------------
def simulate_tasks_command(program: TaskProgram, *, seeds: list[int | None], trace_path: str | None,
                           plot_path: str | None, as_json: bool, max_instances: int, inputs_path: str | None) -> int:
    """``neuronsim simulate`` on a task program: runs on the simulated runtime, each race-checked
    over its trace; exit 1 when a run races or breaks an edge."""
    if inputs_path is not None:
        raise UsageFailure("task programs are simulated without tensor values; --inputs is for instruction programs",
                           "--inputs")
    guard_task_work(program, max_instances=max_instances, runs=len(seeds))
    program, derived = with_directions(program)
    check_task_program(program, max_races=0, max_instances=max_instances)  # the walk's own guard, before any run
    runs = []
    for seed in seeds:
        trace = simulate_tasks(program, seed=seed)
        runs.append((trace, check_task_trace(trace), trace_violations(trace)))
    shown = next((r for r in runs if any(x.witnessed for x in r[1].races) or r[2]), runs[0])
    trace, report, violations = shown
    if trace_path:
        write_task_trace(trace, trace_path)
    if plot_path:
        plot_task_timeline(trace, plot_path, program=program.function.name)
    failed = any(r[1].total_races or r[2] for r in runs)
    if as_json:
        emit_json({"format": "neuronsim.task-simulation/1", "program": program.function.name,
                   "directions_derived": derived, "reported_seed": trace.seed, "summary": trace.summary(),
                   "runs": [{"seed": t.seed, "makespan_ns": round(t.makespan, 3),
                             "orchestration_ns": round(t.orchestration_ns, 3), "races": rep.total_races,
                             "witnessed": sum(bool(x.witnessed) for x in rep.races), "violations": v}
                            for t, rep, v in runs],
                   "races": report.to_json()})
        return 1 if failed else 0
    s = trace.summary()
    seed_text = "nominal durations" if trace.seed is None else f"seed {trace.seed}"
    click.echo(f"simulated {program.function.name} on {s['cores']} worker cores: {s['tasks']} tasks; makespan "
               f"{s['makespan_ns']:,.1f} ns ({seed_text}); orchestrator busy {s['orchestration_ns']:,.1f} ns; "
               f"utilisation {s['utilisation']:.0%}"
               + (" (directions derived: the all-AUTO program)" if derived else ""))
    click.echo(f"tracking: {s['lookups']} lookups, {s['inserts']} inserts, {s['creator']} creator edges, "
               f"{s['explicit']} explicit deps; {s['manual_tasks']} tasks in MANUAL scopes")
    for t, rep, v in runs:
        witnessed = sum(bool(x.witnessed) for x in rep.races)
        text = "no races" if rep.race_free else f"{rep.total_races} races ({witnessed} witnessed)"
        click.echo(f"  {'nominal' if t.seed is None else f'seed {t.seed}'}: makespan {t.makespan:,.1f} ns, {text}"
                   + (f", {len(v)} broken edges: {v[0]}" if v else ""))
    if report.races:
        click.echo(render_task_races(report, program, derived).split("\n", 1)[1])
    return 1 if failed else 0


# -- footprint ----------------------------------------------------------------------------------
def _table(report: TaskFootprint) -> Table:
    table = Table(title="runtime tracking per stage (one run with the program's scalars)")
    columns = ("stage", "tasks", "lookups", "inserts", "creator", "explicit", "manual tasks", "no_dep slots",
               "out-existing slots", "MANUAL scopes", "races", "makespan µs", "orchestrator µs")
    for column in columns:
        table.add_column(column, justify="left" if column == "stage" else "right", no_wrap=column == "stage")
    for s in report.stages:
        r = s.run or {}

        def cell(v: Any) -> str:
            return "-" if v is None else str(v)

        table.add_row(s.stage, cell(r.get("tasks")), cell(r.get("lookups")), cell(r.get("inserts")),
                      cell(r.get("creator")), cell(r.get("explicit")), cell(r.get("manual_tasks")),
                      str(s.static["no_dep_slots"]), str(s.static["output_existing_slots"]),
                      str(s.static["manual_scopes"]), cell(s.races),
                      "-" if s.makespan_ns is None else f"{s.makespan_ns / 1000:.2f}",
                      "-" if s.orchestration_ns is None else f"{s.orchestration_ns / 1000:.2f}")
    return table


def _plot(report: TaskFootprint, path: str) -> None:
    from neuronsim.verify.app.drawings import save_figure
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stages = [s for s in report.stages if s.run]
    x = list(range(len(stages)))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.8 * len(stages) + 2.0), 4.5))
    width = 0.2
    for k, (key, label) in enumerate((("lookups", "TensorMap lookups"), ("inserts", "TensorMap inserts"),
                                      ("explicit", "explicit deps"), ("manual_tasks", "tasks in MANUAL scopes"))):
        ax.bar([p + (k - 1.5) * width for p in x], [s.run[key] for s in stages], width, label=label)  # type: ignore[index]
    ax.set_xticks(x, [s.stage for s in stages])
    ax.set_ylabel("per run")
    ax.set_title("runtime tracking per stage")
    ax.tick_params(axis="x", labelrotation=15)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    save_figure(fig, path)


def footprint_tasks(program: TaskProgram, *, spec: str | None, as_json: bool, plot: str | None, no_simulate: bool,
                    max_instances: int) -> int:
    """``neuronsim footprint`` on a task program: tracking before and after each pass."""
    passes = parse_task_pipeline(spec or DEFAULT_TASK_PIPELINE)
    guard_task_work(program, max_instances=max_instances, runs=len(passes) + 1)
    guard_task_passes(program, DEFAULT_MAX_PAIRS, option=False)
    ctx = PassContext()
    stages = [("given", program)]
    for p in passes:
        program = run_task_pipeline(program, [p], ctx)
        stages.append((p.name, program))
    records = [(r.spec, dict(r.stats)) for r in ctx.records]
    report = task_footprint(stages, simulate=not no_simulate, races=True, max_instances=max_instances, passes=records)
    if plot:
        _plot(report, plot)
    if as_json:
        emit_json(report.to_json())
        return 0
    people_console().print(_table(report))
    saved = report.saved()
    if saved is not None:
        click.echo(f"saved per run: {saved['lookups']} lookups, {saved['inserts']} inserts, {saved['creator']} creator "
                   f"edges, at the price of {-saved['explicit']} more explicit deps; {saved['manual_tasks']} more "
                   f"tasks in MANUAL scopes ({saved['manual_scopes']} scope(s)), {saved['demoted_slots']} slots "
                   "demoted")
    if report.stages[0].run is None:
        click.echo("given: the calls carry no directions yet (derive-call-directions gives them): not runnable")
    return 0


# -- run ----------------------------------------------------------------------------------------
def run_task_scenario_command(module, *, out_dir: str, plot_path: str | None, as_json: bool, make_folder,
                              max_instances: int | None = None) -> int:
    """``neuronsim run`` on a task scenario: tracking saved, races, the nominal run's trace."""
    from neuronsim.verify.tasks.scenarios import DEFAULT_TASK_SEEDS, run_task_scenario, task_scenario_name

    name = task_scenario_name(module)
    make_folder(out_dir)
    paths = run_output_paths(out_dir, name)
    check_plot(plot_path)
    from neuronsim.verify.cli.common import max_idle_seconds

    # (each simulated run and the two footprint stages walk the program)
    result = run_task_scenario(module, max_idle=max_idle_seconds(),
                               before_work=lambda program: guard_task_work(program, max_instances=max_instances,
                                                                           runs=len(DEFAULT_TASK_SEEDS) + 2))
    write_run_outputs(paths, result.traces[0], result.footprint.to_json(), write_trace=write_task_trace,
                      plot=functools.partial(plot_task_timeline, program=name), plot_path=plot_path)
    problems = result.problems()
    if as_json:
        emit_json({"format": "neuronsim.run/1", "scenario": name, "kind": "tasks", "summary": result.summary(),
                   "problems": problems, "files": paths})
        return 1 if problems else 0
    people_console().print(_table(result.footprint))
    s = result.summary()
    saved = s["saved"]
    click.echo(f"task scenario {name}: {s['tasks']} tasks; the passes saved {saved['lookups']} TensorMap lookups and "
               f"{saved['inserts']} inserts per run for {-saved['explicit']} explicit deps ({saved['manual_tasks']} "
               f"tasks in {saved['manual_scopes']} MANUAL scope(s), {saved['demoted_slots']} slots demoted)")
    races = s["races"]
    click.echo(f"races: all-AUTO {races['all_auto']}, compiled {races['compiled']}; simulated runs "
               f"({len(races['runs'])}): {sum(races['runs'])}")
    for problem in problems:
        click.echo(f"problem: {problem}")
    for what, path in paths.items():
        click.echo(f"{what}: {path}")
    return 1 if problems else 0
