"""``neuronsim run SCENARIO``: one shipped kernel end to end.

Builds the scenario, runs the pass pipeline (allocation, dependence construction, reduction),
race-checks the result, simulates it under several interleavings, compares the outputs with
the scenario's numpy reference, and writes the Perfetto trace, the sync footprint and
(optionally) a timeline picture.  SCENARIO is a scenario name (``neuronsim run --list``) or
the path of a scenario module.

Exit 0 when everything holds, 1 when a check fails (races, outputs off the reference,
interleavings that disagree), 2 on unusable input.
"""

from __future__ import annotations

import functools
import os
import time

import click

from neuronsim.machine.ir.collector import collector_paused
from neuronsim.machine.ir.errors import ProgramError
from rich.table import Table

from neuronsim.machine.sim.export import write_chrome_trace
from neuronsim.passes.schedule import TRACED_PIPELINE, scheduled_flat_memory
from neuronsim.passes.spec import parse_pipeline
from neuronsim.verify.app.drawings import plot_timeline
from neuronsim.machine.formats.validate import validate_program
from neuronsim.machine.formats.files import link_to_nowhere, make_folders
from neuronsim.machine.sim.tolerance import plain_number
from neuronsim.machine.sim.trace import summarize, summary_table

from neuronsim.verify.cli.cmd_nki import RANKS_KEY, TARGET_KEY, is_kernel_spec, kernel_options, run_kernel_command
from neuronsim.verify.cli.sim_options import blas_option, timing_only_option, tolerance_options
from neuronsim.verify.app.progress import Progress, stage_line
from neuronsim.verify.app.console import people_console
from neuronsim.verify.cli.common import (UsageFailure, check_plot, distinct_outputs, emit_json, guard_size,
                                         json_option, plot_format_or_fail, run_command, run_output_paths,
                                         size_options, text_aside, write_run_outputs)

__all__ = ["run"]


def _out_folder(out_dir: str) -> None:
    """Create ``--out`` (and its parents) up front; a file in its place is exit 2."""
    if not out_dir:
        raise UsageFailure("an empty folder name; name a folder (. for this one)", "--out")
    if os.path.isdir(out_dir):
        return
    if os.path.exists(out_dir):
        raise UsageFailure("cannot write: it is a file, not a folder", out_dir)
    broken = link_to_nowhere(out_dir)  # (makedirs said only "File exists")
    if broken:
        raise UsageFailure(f"cannot create the folder: {broken}", out_dir)
    try:
        make_folders(out_dir)
    except OSError as err:
        raise UsageFailure(f"cannot create the folder: {err.strerror or err}", out_dir) from None


def _names_a_task_scenario(scenario: str) -> bool:
    """Whether ``scenario`` is a shipped task scenario's name (a file is told apart when loaded)."""
    from neuronsim.verify.tasks.scenarios import all_task_scenarios, task_scenario_name

    return any(task_scenario_name(m) == scenario for m in all_task_scenarios())


#: Instances from which ``run`` says what each stage does as it starts (off a terminal); its
#: stages are long well below the other commands' summary threshold (tracing, functional runs).
RUN_PROGRESS_MIN = 5_000


def comparisons(result) -> dict:
    """The JSON of what ``run`` compared: tolerances and the largest error of each comparison."""
    if result.timing_only:
        return {"timing_only": True}
    return {"timing_only": False, "tolerance": {"rtol": result.rtol, "atol": result.atol},
            "largest_error": {"reference": result.reference_errors().to_json(),
                              "interleavings": result.simulation.errors.to_json()}}


def _verdict(result, *, findings=(), user_reference: bool = True) -> dict:
    """``run --json``'s fields beyond the summary: the comparisons and the verdict of
    ``neuronsim.run/1`` (:mod:`neuronsim.nki.verdict`, docs/schema/run.schema.json), with a
    kernel's NKI findings (its run's: ``uninitialised`` is found by running it)."""
    from neuronsim.nki.verdict import verdict_fields

    return {**comparisons(result), **verdict_fields(result, findings, user_reference=user_reference)}


def _print(result, paths: dict[str, str], reference: str | None = "numpy reference") -> None:
    from neuronsim.verify.app.scenario_runs import unlike_outputs

    console = people_console()
    summary = result.summary()
    trace = result.simulation.runs[0].trace
    what = "scenario" if reference == "numpy reference" else "kernel"
    console.print(f"{what} {result.name}: {len(trace)} instances on {trace.machine}, pipeline {result.final_pipeline}")
    table = Table(title="", show_header=True)
    for column in ("check", "result"):
        table.add_column(column, overflow="fold")
    waits = summary["waits"]
    table.add_row("races (compiled / reduced)", f"{summary['races']['compiled']} / {summary['races']['final']}")
    table.add_row("waits before / after / minimum", f"{waits['before']} / {waits['after']} / {waits['minimum']}")
    from neuronsim.machine.sim.accuracy import load_accuracy, makespan_label

    table.add_row(makespan_label(result.final), f"{summary['makespan_ns']:,.1f} ns")
    accuracy = load_accuracy()  # the timing model's measured accuracy (bench/bench_published.py)
    if accuracy is not None:
        table.add_row("timing model", accuracy.text())
    if result.timing_only:
        table.add_row("values", "not computed (--timing-only)")
    else:
        if reference:  # a kernel run without --reference is judged against the sequential run alone
            verdict = "equal" if summary["outputs_match"] else "DIFFER"
            unlike = unlike_outputs(result.outputs, result.reference)
            compared = len(set(result.outputs) | set(result.reference)) > len(unlike)
            errors = result.reference_errors().text() if compared else "no output compared element by element"
            table.add_row(f"outputs vs {reference}",
                          f"{verdict}: {''.join(f'{problem}; ' for problem in unlike)}{errors}; rtol "
                          f"{plain_number(result.rtol)}, atol {plain_number(result.atol)}")
        if not result.simulation.timed_values:  # race-free by the check: every order computes the same bytes
            table.add_row(f"{len(result.seeds)} interleavings vs sequential",
                          "agree: race-free by the check (one order simulated)")
        else:
            verdict = "agree" if summary["interleavings_agree"] else "DISAGREE"
            table.add_row(f"{len(result.seeds)} interleavings vs sequential",
                          f"{verdict}: {result.simulation.errors.text()}; exact")
    console.print(table)
    console.print(summary_table(summarize(trace), title=""))
    for problem in result.problems():
        console.print(f"problem: {problem}")
    for what, path in paths.items():
        console.print(f"{what}: {path}")


@click.command("run")
@click.argument("scenario", metavar="SCENARIO", required=False)
@click.option("--list", "list_only", is_flag=True, help="List the shipped scenarios.")
@click.option("--out", "out_dir", default="out", show_default=True, metavar="DIR",
              help="Folder for the trace (NAME.trace.json) and footprint (NAME.footprint.json).")
@click.option("--plot", "plot_path", metavar="FILE.png", help="Also draw the nominal run's timeline.")
@click.option("--report", "report_path", metavar="FILE.html",
              help="KERNEL.py::FUNC only: also write the run's HTML page (neuronsim report's), findings included.")
@kernel_options
@click.option("--passes", "passes_spec", default=None, metavar="SPEC",
              help="Compile with this pipeline [default: a kernel's TRACED_PIPELINE (load-elim, alloc, schedule, "
                   "dma-place, dep-opt), a scenario's construction pipeline]; dep-reduction follows unless in it.")
@click.option("--reference", "reference", metavar="MODULE:FN",
              help="KERNEL.py::FUNC only: a numpy function of the inputs (by parameter name) to compare the outputs "
                   "with (FILE.py:FN or FILE.py::FN also name one).")
@tolerance_options(
    rtol_help="Relative tolerance of the outputs against the reference: beyond atol + rtol*|reference| differs "
              "[default: the scenario's own rtol (0 when it sets none); a kernel's --reference: 0.01].",
    atol_help="Absolute tolerance of that comparison [default: the scenario's own atol (0 when it sets none); "
              "a kernel's --reference: 0.01].")
@timing_only_option
@blas_option
@json_option
@size_options
@run_command
@collector_paused()  # one run's records, tables and files, no cycles (performance notes, section 0)
def run(scenario: str | None, list_only: bool, out_dir: str, plot_path: str | None, report_path: str | None,
        inputs_path: str | None,
        args: tuple[str, ...], grid: str | None, dtypes: tuple[str, ...], passes_spec: str | None,
        reference: str | None, rtol: float | None, atol: float | None, timing_only: bool, as_json: bool,
        max_instances: int, max_memory: int | None) -> int:
    """Run SCENARIO end to end: compile, check, simulate, compare with numpy.

    SCENARIO may be an NKI kernel, KERNEL.py::FUNC (with --inputs IN.npz, --arg, --grid,
    --dtype, --reference MODULE:FN): traced, checked for NKI-specific findings (values
    carried across affine loops, += into SBUF there, races between directly allocated
    tiles), then run as a scenario.  Every comparison prints its largest error, absolute and
    relative; the interleavings are compared with the sequential run exactly (a race
    witness).  Stages print progress on standard error (a bar on a terminal, a line per
    stage of 5,000 instances or more elsewhere)."""
    # The scenarios sit on top of every package (they use the passes and the checker), so
    # they are imported here, when the command runs, not when the CLI starts.
    from neuronsim.verify.app.scenario_runs import (DEFAULT_SEEDS, all_scenarios, load_scenario, run_scenario,
                                                     scenario_name)

    started = time.perf_counter()  # the stage line's total (issue 31: say what each stage cost)
    if list_only:
        if scenario is not None:  # (`run k.py::f --list` listed the scenarios and ran nothing: a probe)
            raise UsageFailure(f"--list lists the shipped scenarios and runs none: give {scenario} without it, or "
                               "--list alone", "--list")
        from neuronsim.verify.tasks.scenarios import all_task_scenarios, task_scenario_name

        names = [scenario_name(m) for m in all_scenarios()] + [task_scenario_name(m) for m in all_task_scenarios()]
        if as_json:
            emit_json({"scenarios": names})
        else:
            click.echo("\n".join(names))
        return 0
    if scenario is None:
        raise UsageFailure("missing SCENARIO (see neuronsim run --list)", "SCENARIO")
    parsed = None
    if passes_spec is not None and not _names_a_task_scenario(scenario):  # (those refuse --passes below)
        parsed = parse_pipeline(passes_spec)  # a bad spec is the command line's error, before any work
    ranks = click.get_current_context().meta.get(RANKS_KEY, 1)
    target = click.get_current_context().meta.get(TARGET_KEY)  # (a scenario ran on trn1 without a word: a probe)
    kernel_flags = [flag for flag, given in (("--inputs", inputs_path), ("--arg", args), ("--grid", grid),
                                             ("--dtype", dtypes), ("--reference", reference),
                                             ("--report", report_path is not None), ("--ranks", ranks != 1),
                                             ("--target", target)) if given]
    if timing_only and reference:  # (a kernel's reference was dropped without a word)
        raise UsageFailure("--timing-only computes no value to compare with --reference", "--timing-only")
    if timing_only and (rtol is not None or atol is not None):  # (ignored without a word: a probe)
        flag = "--rtol" if rtol is not None else "--atol"
        raise UsageFailure(f"{flag} is about values; --timing-only computes none", flag)
    if is_kernel_spec(scenario):  # an NKI kernel: traced, then run as a scenario (--plot checked once --out is made)

        def guard(program) -> None:
            validate_program(program)
            pipeline = parsed if parsed is not None else parse_pipeline(f"{TRACED_PIPELINE},dep-reduction")
            guard_size(program, max_instances=max_instances, max_memory=max_memory,
                       simulated_runs=len(DEFAULT_SEEDS), scheduled=scheduled_flat_memory(program, pipeline))

        with Progress(summary_min=RUN_PROGRESS_MIN, announce=True) as progress:
            status = run_kernel_command(scenario, inputs_path=inputs_path, args=args, grid=grid, dtypes=dtypes,
                                      reference=reference, out_dir=out_dir, plot_path=plot_path, as_json=as_json,
                                      before_work=guard, make_folder=_out_folder, printer=_print, rtol=rtol,
                                      atol=atol, progress=progress, functional=not timing_only, report_path=report_path,
                                      pipeline=passes_spec,
                                      extra_json=lambda report: _verdict(report.run, findings=report.findings,
                                                                         user_reference=bool(reference)))
        if not as_json:
            with text_aside(report_path):  # (`--report -`: the page alone on standard output; probe_az)
                click.echo(stage_line(progress.seconds, time.perf_counter() - started, progress.beside))
        return status
    if kernel_flags:
        file = scenario.split("::")[0].partition(":")[0]
        if file.endswith(".py"):  # (`run k.py --inputs x.npz`: the '::FUNC' forgotten, not the flag misplaced)
            raise UsageFailure(f"{scenario} names no kernel: run one of the file's kernels as {file}::FUNCTION",
                               "SCENARIO")
        raise UsageFailure(f"{kernel_flags[0]} is for kernels (KERNEL.py::FUNC), not scenarios", kernel_flags[0])
    # the task runtime's scenarios only now: a kernel run never loads them
    from neuronsim.verify.tasks.scenarios import all_task_scenarios, find_task_scenario, task_scenario_name

    from neuronsim.machine.nki.watch import stopped_when_idle
    from neuronsim.verify.cli.common import max_idle_seconds

    with stopped_when_idle("the scenario file", max_idle_seconds()):  # it runs as it loads
        task_scenario = find_task_scenario(scenario)
    if task_scenario is not None:  # an orchestration program (scenarios/tasks): the task runtime
        from neuronsim.verify.cli.task_programs import run_task_scenario_command

        if rtol is not None or atol is not None or timing_only or passes_spec is not None:
            flag = ("--timing-only" if timing_only else "--rtol" if rtol is not None else "--atol" if atol is not None
                    else "--passes")
            raise UsageFailure(f"{flag} is for kernels and instruction scenarios, not task scenarios", flag)
        return run_task_scenario_command(task_scenario, out_dir=out_dir, plot_path=plot_path, as_json=as_json,
                                         make_folder=_out_folder, max_instances=max_instances)
    try:
        with stopped_when_idle("the scenario file", max_idle_seconds()):
            module = load_scenario(scenario)
    except ProgramError as err:  # the list names every scenario --list shows, task scenarios too
        tasks = ", ".join(task_scenario_name(m) for m in all_task_scenarios())
        raise ProgramError(err.path, f"{err.message}; the task scenarios are: {tasks}" if "the scenarios are" in
                           err.message else err.message) from None
    name = scenario_name(module)
    if plot_path is not None:  # (its folder is made below: the extension first, an empty path too)
        plot_format_or_fail(plot_path)
    _out_folder(out_dir)
    if plot_path:
        _out_folder(os.path.dirname(plot_path) or ".")
    paths = run_output_paths(out_dir, name)
    check_plot(plot_path)
    distinct_outputs({"--out": paths["trace"], "--out ": paths["footprint"], "--plot": plot_path})

    def before_work(program) -> None:
        validate_program(program)
        guard_size(program, max_instances=max_instances, max_memory=max_memory, simulated_runs=len(DEFAULT_SEEDS))

    with Progress(summary_min=RUN_PROGRESS_MIN, announce=True) as progress:
        result = run_scenario(module, before_work=before_work, rtol=rtol, atol=atol, progress=progress,
                              functional=not timing_only, max_idle=max_idle_seconds(),
                              **({"pipeline": passes_spec} if passes_spec else {}))
    write_run_outputs(paths, result.simulation.runs[0].trace, result.sync.to_json(), write_trace=write_chrome_trace,
                      plot=functools.partial(plot_timeline, program=name), plot_path=plot_path)
    problems = result.problems()
    if as_json:
        emit_json({"format": "neuronsim.run/1", "scenario": name, "summary": result.summary(),
                   "problems": problems, "files": paths, **_verdict(result)})
    else:
        _print(result, paths)
        click.echo(stage_line(progress.seconds, time.perf_counter() - started, progress.beside))
    return 1 if problems else 0
