"""``neuronsim simulate PROGRAM``: timed runs, checked against the sequential reference.

Without ``--seed`` / ``--seeds`` one run with nominal durations (the cost model's schedule).
``--seed S`` runs one seeded interleaving; ``--seeds N`` runs the nominal schedule and then
seeds ``S .. S+N-1`` (S from ``--seed``, default 0).  Every run starts from the same memory (``--data-seed``,
``--inputs``; a raw 2- / 1-byte array, as numpy saves bf16 / fp8 ``ml_dtypes`` arrays,
takes its tensor's dtype), so a run whose outputs differ from the sequential reference witnesses a race;
rerunning with ``--seed`` of that run reproduces it exactly.  The summary, ``--trace`` and
``--plot`` show the first run that differs, else the first run (the nominal one with
``--seeds``).

Exit 0 when every run's outputs equal the reference, 1 when some differ, 2 on unusable input
(including virtual tensors and waits that deadlock).  ``--outputs OUT.npz`` writes the output
tensors of the first run (the nominal one unless ``--seed``), by tensor name.  ``--compare all`` compares the final
contents of every tensor instead of the outputs only (a finer race witness).
"""

from __future__ import annotations

import os
import sys

import click
from click.core import ParameterSource
import numpy as np

from neuronsim.machine.formats.program_json import load_program
from neuronsim.machine.tasks.ir import TaskProgram
from neuronsim.machine.sim.export import write_chrome_trace
from neuronsim.verify.app.drawings import plot_timeline
from neuronsim.machine.sim.accuracy import accuracy_json
from neuronsim.machine.sim.simulator import RunResult, Simulation
from neuronsim.machine.sim.simulator import simulate as run_simulation
from neuronsim.machine.sim.tolerance import plain_number
from neuronsim.machine.sim.trace import summarize, summary_table
from neuronsim.machine.order.unroll import unroll

from neuronsim.verify.cli.common import (
    UsageFailure,
    text_aside,
    check_output,
    check_plot,
    distinct_outputs,
    stdout_for_json,
    emit_json,
    guard_size,
    json_option,
    placed,
    program_argument,
    run_command,
    size_options,
)
from neuronsim.verify.cli.npz_io import read_npz, write_npz
from neuronsim.verify.cli.sim_options import blas_option, timing_only_option, tolerance_options
from neuronsim.verify.app.progress import Progress
from neuronsim.verify.app.console import people_console
from neuronsim.verify.race_report import render_report
from neuronsim.verify.tracecheck import check_trace
from neuronsim.verify.cli.task_programs import simulate_tasks_command, sniff_task_program
from neuronsim.verify.cli.traced import prepare_traced

__all__ = ["simulate", "simulation_json"]


def _load_inputs(path: str | None, program) -> dict[str, np.ndarray] | None:
    """The ``--inputs`` arrays; a raw bf16 / fp8 array takes its tensor's dtype."""
    if path is None:
        return None
    return read_npz(path, "--inputs", tensor_dtypes={n: t.dtype for n, t in program.tensors.items()})


def _reported(sim: Simulation) -> RunResult:
    return sim.first_difference or sim.runs[0]


def _seed_text(seed: int | None) -> str:
    return "nominal durations" if seed is None else f"seed {seed}"


def simulation_json(sim: Simulation, program=None) -> dict:
    """The ``neuronsim.simulation/1`` document of a simulation (``makespan``: what it is,
    scheduled or in source order, and the timing model's measured accuracy, given the program)."""
    shown = _reported(sim)
    return {
        "format": "neuronsim.simulation/1",
        "machine": shown.trace.machine,
        "instances": len(shown.trace),
        "functional": sim.functional,
        "compared": list(sim.outputs),
        "outputs_equal": not sim.differs,
        "largest_error": sim.errors.to_json(),
        "reported_seed": shown.seed,
        "summary": summarize(shown.trace).to_json(),
        "makespan": accuracy_json(program) if program is not None else None,
        "runs": [{"seed": run.seed, "makespan_ns": run.makespan, "differs": run.differs,
                  "largest_error": run.errors.to_json(),
                  "diffs": [d.to_json() for d in run.diffs]} for run in sim.runs],
    }


def _print_people(sim: Simulation, program: str, tolerance: str = "exact") -> None:
    console = people_console()
    shown = _reported(sim)
    trace = shown.trace
    console.print(f"simulated {program} on {trace.machine}: {len(trace)} instances; "
                  f"makespan {trace.makespan:,.1f} ns ({_seed_text(shown.seed)})")
    console.print(summary_table(summarize(trace), title=""))
    runs = len(sim.runs)
    if not sim.functional:
        console.print("timing only: no values computed or compared, no trace race-checked")
        return
    if not sim.outputs:
        console.print("no output tensors to compare with the sequential reference (see --compare all)")
        return
    differing = [run for run in sim.runs if run.differs]
    if not differing:
        names = ", ".join(sim.outputs)
        console.print(f"compared tensors ({names}) equal the sequential reference in {runs} of {runs} runs "
                      f"({tolerance}); {sim.errors.text()}")
        return
    seeds = ", ".join(_seed_text(run.seed) for run in differing)
    console.print(f"compared tensors differ from the sequential reference in {len(differing)} of {runs} runs "
                  f"({seeds}; {tolerance}); {sim.errors.text()}; a race witness. {_seed_text(shown.seed)}:")
    for diff in shown.diffs:
        console.print(f"  {diff}")


@click.command("simulate")
@program_argument
@click.option("--trace", "trace_path", metavar="FILE", help="Write a Perfetto / Chrome trace JSON of the reported run.")
@click.option("--seeds", type=click.IntRange(min=1), metavar="N",
              help="Run the nominal schedule and N seeded interleavings (seeds S..S+N-1).")
@click.option("--seed", type=click.IntRange(min=0), metavar="S",
              help="Interleaving seed (the first one with --seeds; default 0).")
@click.option("--data-seed", type=click.IntRange(min=0), default=0, show_default=True, metavar="D",
              help="Seed of the initial memory and inputs.")
@click.option("--inputs", "inputs_path", metavar="FILE.npz", help="Values of input tensors, by tensor name.")
@click.option("--outputs", "outputs_path", metavar="OUT.npz",
              help="Write the output tensors of the first run (the nominal one unless --seed) by tensor name.")
@click.option("--plot", "plot_path", metavar="FILE.png", help="Draw the reported run's timeline.")
@click.option("--compare", type=click.Choice(["outputs", "all"]), default="outputs", show_default=True,
              help="Compare the output tensors (the spec's check) or the final contents of every tensor.")
@tolerance_options(
    rtol_help="Relative tolerance against the sequential reference: a value beyond atol + rtol*|reference| "
              "differs [default: 0, with --atol 0 any differing byte differs].",
    atol_help="Absolute tolerance against the sequential reference [default: 0].")
@timing_only_option
@blas_option
@json_option
@size_options
@run_command
def simulate_command(program: str, trace_path: str | None, seeds: int | None, seed: int | None, data_seed: int,
                     inputs_path: str | None, outputs_path: str | None, plot_path: str | None, compare: str,
                     rtol: float | None, atol: float | None, timing_only: bool, as_json: bool,
                     max_instances: int, max_memory: int | None) -> int:
    """Simulate PROGRAM under its deps; compare its outputs with the sequential reference.

    Exit 0 when outputs equal the reference in every run, 1 when some run differs, 2 on
    unusable input.
    """
    check_output(trace_path, "--trace", (program, inputs_path))
    check_output(outputs_path, "--outputs", (program, inputs_path))
    check_plot(plot_path)
    distinct_outputs({"--trace": trace_path, "--outputs": outputs_path, "--plot": plot_path})
    stdout_for_json(as_json, {"--trace": trace_path, "--outputs": outputs_path})
    if seeds is not None and seeds + 1 > max_instances:  # before the list of seeds is built (10**9 took 7 GB)
        raise UsageFailure(f"{seeds + 1:,} simulated runs (the nominal one and --seeds {seeds:,}) of one instance or "
                           f"more are past the limit of {max_instances:,} instance runs: simulate fewer runs or raise "
                           f"it with --max-instances N", "--seeds")
    # the options given on the command line, not left at their defaults (--compare all and --data-seed
    # were ignored where they mean nothing: a probe)
    chosen = {name: value for name, value in (("compare", compare), ("data_seed", data_seed))
              if click.get_current_context().get_parameter_source(name) == ParameterSource.COMMANDLINE}
    prog = sniff_task_program(program)
    run_seeds = [seed] if seeds is None else [None, *((seed or 0) + k for k in range(seeds))]
    if isinstance(prog, TaskProgram):  # neuronsim.tasks/1: the simulated task runtime
        for flag, given in (("--outputs", outputs_path), ("--rtol", rtol), ("--atol", atol),
                            ("--timing-only", timing_only or None), ("--compare", chosen.get("compare"))):
            if given is not None:
                raise UsageFailure(f"{flag} is for instruction programs (neuronsim.program/1)", flag)
        return simulate_tasks_command(prog, seeds=run_seeds, trace_path=trace_path, plot_path=plot_path,
                                      as_json=as_json, max_instances=max_instances, inputs_path=inputs_path)
    prog, findings = prepare_traced(load_program(prog))  # a traced NKI program: its findings, compiled first
    prog = placed(prog)
    _refuse_with_timing_only(timing_only, outputs_path=outputs_path, inputs_path=inputs_path, rtol=rtol, atol=atol,
                             compare=chosen.get("compare"), data_seed=chosen.get("data_seed"))
    inputs = _load_inputs(inputs_path, prog)
    size = guard_size(prog, max_instances=max_instances, max_memory=max_memory, simulated_runs=len(run_seeds))
    with Progress() as progress, progress.stage("simulate", len(run_seeds) + 1, unit="run",
                                                size=size.instances * len(run_seeds)) as update:
        sim = run_simulation(prog, seeds=run_seeds, data_seed=data_seed, inputs=inputs, compare=compare, validate=False,
                             progress=lambda done, _total: update(done), functional=not timing_only,
                             rtol=rtol or 0.0, atol=atol or 0.0)
    # every run's trace race-checked, as tasks do (not with --timing-only: the makespan alone)
    checks = [check_trace(prog, run.trace) for run in sim.runs] if not timing_only else []
    racy = [(run, found) for run, found in zip(sim.runs, checks) if not found.ok]
    shown = _reported(sim).trace
    if trace_path:
        write_chrome_trace(shown, trace_path)
    if plot_path:
        plot_timeline(shown, plot_path, program="standard input" if program == "-" else os.path.basename(program))
    if outputs_path:
        write_npz(outputs_path, sim.runs[0].outputs)
    if as_json:
        doc = simulation_json(sim, prog)
        for entry, found in zip(doc["runs"], checks):
            entry["total_races"] = found.report.total_races
            entry["races"] = [r.to_json() for r in found.report.races[:MAX_LISTED_RACES]]
            entry["violations"] = [v.message for v in found.violations]
        emit_json(doc)
    else:
        tolerance = "exact" if not (rtol or atol) else f"rtol {plain_number(rtol or 0)}, atol {plain_number(atol or 0)}"
        with text_aside(trace_path, outputs_path, plot_path):
            _print_people(sim, "-" if program == "-" else program, tolerance)
            if not timing_only:
                _print_races(prog, racy)
    if sim.differs and as_json:
        print(f"outputs differ from the sequential reference in {sum(r.differs for r in sim.runs)} run(s)",
              file=sys.stderr)
    if racy and as_json:
        print(f"races in the trace of {len(racy)} of {len(sim.runs)} run(s)", file=sys.stderr)
    return 1 if sim.differs or racy or any(f.is_error for f in findings) else 0


def _refuse_with_timing_only(timing_only: bool, **given) -> None:
    """Options about values make no sense without them: exit 2 naming the first given."""
    if timing_only:
        for name, value in given.items():
            if value is not None:
                flag = "--" + name.removesuffix("_path").replace("_", "-")
                raise UsageFailure(f"{flag} is about values; --timing-only computes none", flag)


#: Races listed per run (all are counted).
MAX_LISTED_RACES = 100


def _print_races(prog, racy: list) -> None:
    """The located races (and broken rules) of each run whose trace has some."""
    if not racy:
        click.echo("no races in the trace of any run")
        return
    unrolled = unroll(prog)
    same: dict[tuple, list] = {}  # runs whose traces race the same way are reported once
    for run, found in racy:
        same.setdefault((found.violations, found.report.races, found.report.total_races), []).append((run, found))
    for runs in same.values():
        run, found = runs[0]
        click.echo(f"races in the trace of the run(s) with {', '.join(_seed_text(r.seed) for r, _ in runs)}:")
        for violation in found.violations[:MAX_LISTED_RACES]:
            click.echo(f"  {violation.rule}: {violation.instance}: {violation.message}")
        if not found.report.race_free:
            click.echo("  " + render_report(found.report, unrolled).replace("\n", "\n  "))


simulate = simulate_command
