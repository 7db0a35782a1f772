"""``neuronsim compile PROGRAM -o OUT``: run the pass pipeline and write the program with its deps.

The output keeps the program's loops, names, tensors order and ``x-`` keys; allocation
places virtual tensors; deps are the computed ones (loop-carried ones marked), **replacing**
any deps the input carried (``build-fdeps`` rebuilds the graph; use
``--passes "build-fdeps{keep_given=true},..."`` to keep them as extra edges).  The file is
written atomically.  ``--explain A B`` says why A and B are (or are not) linked: the deps
between them, the rules that made them, and the conflicting instance pairs with their bytes.

Exit status: 0, or 2 for unusable input (including a bad ``--passes`` string).
"""

from __future__ import annotations

import gc
import time

import click

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.formats.program_json import load_program, save_program
from neuronsim.passes import DEFAULT_PIPELINE, PassContext, parse_pipeline, run_pipeline
from neuronsim.passes.analysis.explain import explain
from neuronsim.passes.spec import pass_addresses
from neuronsim.machine.ir.errors import message_of

from neuronsim.verify.cli.traced import default_pipeline
from neuronsim.verify.cli.common import (
    check_not_imported,
    text_aside,
    UsageFailure,
    check_output,
    emit_json,
    guard_size,
    json_option,
    max_idle_option,
    pass_sources,
    program_argument,
    run_command,
    size_options,
    stdout_for_json,
)
from neuronsim.verify.app.progress import Progress, pass_progress

__all__ = ["compile_command", "edge_summary"]


def edge_summary(program) -> dict[str, int]:
    """Counts of deps by kind, loop-carried ones and cross-engine ones."""
    engines = {inst.name: inst.engine for inst, _ in program.instructions()}
    out = {"deps": 0, "loop_carried": 0, "cross_engine": 0}
    for kind in (EdgeKind.FLOW, EdgeKind.OUTPUT, EdgeKind.ANTI, EdgeKind.ORDERED):
        out[kind.name.lower()] = 0
    for inst, _ in program.instructions():
        for dep in inst.deps:
            out["deps"] += 1
            out[dep.kind.name.lower()] += 1
            out["loop_carried"] += dep.loop_carried
            out["cross_engine"] += engines[dep.on] != inst.engine
    return out


@click.command("compile")
@program_argument
@click.option("-o", "--output", "output", required=True, metavar="OUT",
              help="Where to write the compiled program (- for standard output).")
@click.option("--passes", "passes_spec", default=None, metavar="SPEC",
              help="Pipeline: pass names in order, options in braces, e.g. 'alloc{buffers=3},build-fdeps,anti-deps' "
                   f"[default: {DEFAULT_PIPELINE}; for a traced NKI kernel, what run compiles it with: "
                   "load-elim,alloc,schedule,dma-place,dep-opt{memsets=false},dep-reduction].")
@click.option("--explain", "explain_pair", nargs=2, metavar="A B", default=None,
              help="Say why instructions A and B are linked.")
@click.option("--no-verify", is_flag=True, help="Skip the checks between passes.")
@json_option
@size_options
@max_idle_option()
@run_command
def compile_command(program: str, output: str, passes_spec: str | None, explain_pair, no_verify: bool, as_json: bool,
                    max_instances: int, max_memory: int | None) -> int:
    """Run the pass pipeline on PROGRAM and write it, with its computed deps, to OUT.

    Deps PROGRAM already has are replaced by the computed ones; loops, names and x- keys
    are kept; virtual tensors are placed.
    """
    stdout_for_json(as_json, {"-o": output})
    check_output(output, "-o", (program, *pass_sources(passes_spec)))
    passes = parse_pipeline(passes_spec) if passes_spec is not None else None  # (a bad spec before the program is read)
    prog = load_program(program)
    if passes is None:
        passes_spec = default_pipeline(prog)
        passes = parse_pipeline(passes_spec)
    size = guard_size(prog, max_instances=max_instances, max_memory=max_memory)
    gc.freeze()  # the loaded program lives to the end: keep the collector off it
    ctx = PassContext(verify=not no_verify, record=explain_pair is not None)
    started = time.perf_counter()
    try:
        with Progress() as progress, progress.stage("compile", len(passes), unit="pass",
                                                     size=size.instances) as update:
            compiled = run_pipeline(prog, passes, ctx, after_pass=pass_progress(update, passes))
        seconds = time.perf_counter() - started
        # explained before anything is written: an --explain naming no instruction leaves no -o file
        note = explain(compiled, *explain_pair, provenance=ctx.provenance) if explain_pair else None
        check_not_imported(output, "-o")  # (a module a --passes pass imported: probe_az)
        save_program(compiled, output)
        summary = edge_summary(compiled)
    except (TypeError, AttributeError, KeyError, ValueError, IndexError) as err:
        if not no_verify or not pass_addresses(passes_spec):
            raise
        # a user's pass's malformed program, which --no-verify let through unchecked (a probe: exit 3)
        raise UsageFailure(f"the program the passes made is malformed, and --no-verify skipped the checks that "
                           f"say where ({type(err).__name__}: {message_of(err)})", "--passes") from None
    if as_json:
        emit_json({
            "format": "neuronsim.compile/1",
            "output": output,
            "seconds": round(seconds, 6),
            "passes": [{"pass": r.spec, "seconds": round(r.seconds, 6), "deps_after": r.edges, "stats": dict(r.stats)}
                       for r in ctx.records],
            "deps": summary,
            **({"explain": note.to_json()} if note else {}),
        })
        return 0
    with text_aside(output):  # (the program on standard output: the text on standard error)
        for r in ctx.records:
            stats = ", ".join(f"{k}={v}" for k, v in r.stats.items())
            click.echo(f"{r.spec:<40} {r.seconds * 1000:9.1f} ms  deps={r.edges}" + (f"  {stats}" if stats else ""))
        click.echo("deps: " + ", ".join(f"{k}={v}" for k, v in summary.items())
                   + (f"  -> {output}" if output != "-" else ""))
        if note:
            click.echo(note.render())
    return 0
