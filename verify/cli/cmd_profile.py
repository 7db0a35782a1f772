"""``neuronsim profile KERNEL.py::FUNC --inputs IN.npz``: the kernel's source, line by line,
with what each line's instructions did in the simulated run (:mod:`neuronsim.nki.line_profile`):
instructions issued, busy time per engine, time waited and on what, DMA bytes, and the share
of the makespan the line holds on the critical path.  ``--html`` writes the page with the
timeline beside the listing; ``--json`` one ``neuronsim.profile/1`` document.

Exit 0 (a profile, findings or not: they are printed), 2 unusable input.
"""

from __future__ import annotations

from typing import Any

import ast
import os

import click

from neuronsim.verify.cli.common import (check_output, emit_json, guard_size, json_option, max_idle_seconds,
                                         run_command, size_options, stdout_for_json, text_aside,
                                         check_not_imported)
from neuronsim.verify.cli.cmd_nki import kernel_options, trace_from_options

__all__ = ["profile", "run_spec", "kernel_source"]


def kernel_source(spec: str) -> tuple[str, list[str], tuple[int, int]] | None:
    """``(file as x-source names it, its lines, (first, last) line of FUNC)`` for
    ``PATH.py::FUNC``, or None when the file has no such top-level function."""
    from neuronsim.machine.ir.source import shown_path

    path, _, func = spec.rpartition("::")
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        tree = ast.parse(text)
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            return shown_path(os.path.abspath(path)), text.splitlines(), (first, node.end_lineno or node.lineno)
    return None


def run_spec(spec: str, *, inputs_path, args, grid, dtypes, max_instances, max_memory, functional: bool,
             seeds=(None,), reference=None):
    """Trace ``spec`` as the options say and run it end to end (guarded as ``run`` guards, the
    ``reference`` too: ``--max-idle`` past the rest of the run); the
    :class:`~neuronsim.verify.nki.run.KernelReport`."""
    from neuronsim.machine.formats.validate import validate_program
    from neuronsim.verify.nki.run import run_traced

    def guard(program) -> None:
        validate_program(program)
        guard_size(program, max_instances=max_instances, max_memory=max_memory, simulated_runs=len(seeds),
                   functional=functional)

    traced, kwargs = trace_from_options(spec, inputs_path, args, grid, dtypes)
    return run_traced(traced, spec.rsplit("::", 1)[1], kwargs=kwargs, seeds=seeds, before_work=guard,
                      functional=functional, reference=reference, max_idle=max_idle_seconds())


@click.command("profile")
@click.argument("kernel", metavar="KERNEL.py::FUNC")
@kernel_options
@click.option("--html", "html_path", metavar="FILE.html", help="Also write the profile page (timeline and listing).")
@click.option("--top", default=5, show_default=True, metavar="N", type=click.IntRange(min=0),
              help="Lines named as holding the critical path.")
@json_option
@size_options
@run_command
def profile(kernel: str, inputs_path, args, grid, dtypes, html_path: str | None, top: int, as_json: bool,
            max_instances: int, max_memory: int | None) -> int:
    """Profile the NKI kernel FUNC of KERNEL.py line by line (simulated, nominal timing)."""
    from neuronsim.nki.line_profile import line_profile

    check_output(html_path, "--html", (kernel, inputs_path))
    stdout_for_json(as_json, {"--html": html_path})
    report = run_spec(kernel, inputs_path=inputs_path, args=args, grid=grid, dtypes=dtypes,
                      max_instances=max_instances, max_memory=max_memory, functional=False)
    result = line_profile(report.run.simulation.runs[0].trace, report.name)
    source = kernel_source(kernel)
    if html_path:
        from neuronsim.nki.pages import write_profile_page

        check_not_imported(html_path, "--html")
        write_profile_page(html_path, result, source, report)
    held = result.critical_lines()[:top]
    if as_json:
        emit_json({**result.to_json(), "findings": [f.to_json() for f in report.findings],
                   "problems": report.problems(), "critical_lines": [f.where for f in held],
                   **({"files": {"html": html_path}} if html_path else {})})
        return 0
    with text_aside(html_path):
        _print_profile(report, result, held, source, html_path)
    return 0


def _print_profile(report: Any, result: Any, held: list, source: Any, html_path: str | None) -> None:
    from neuronsim.nki.render import profile_text

    span = result.makespan_ns or 1.0
    click.echo(f"kernel {report.name}: {len(result.trace)} instances, makespan {result.makespan_ns:,.1f} ns (nominal)")
    click.echo("critical path: " + ", ".join(f"{f.where} {100 * f.critical_ns / span:.1f} %" for f in held))
    for line in report.finding_lines() + [p for p in report.run.problems()]:
        click.echo(line)
    file, lines, func_span = source if source else (None, None, None)
    click.echo(profile_text(result, func_span, file, lines))
    click.echo("busy ns per engine: " + ", ".join(f"{c} {ns:,.1f}" for c, ns in result.busy_ns.items()))
    if html_path:
        click.echo(f"html: {html_path}")
