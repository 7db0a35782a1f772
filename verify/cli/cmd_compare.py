"""``neuronsim compare A.py::FUNC B.py::FUNC --inputs IN.npz``: two variants of a kernel on the
same inputs (:mod:`neuronsim.nki.compare`): their outputs against each other (and against
``--reference``), makespan, busy time per engine, DMA bytes, waits before / after and findings
of each; B's makespan over A's, and the statements of B that moved it.  ``--html`` draws both
timelines on one time axis.

Exit 0 when both run clean and their outputs agree, 1 when either has a problem (a finding,
a race, outputs off the reference) or their outputs differ, 2 unusable input.
"""

from __future__ import annotations

import sys

import click
from rich.table import Table

from neuronsim.verify.cli.common import (check_not_imported, check_output, emit_json, FiniteFloat, json_option,
                                         run_command, size_options, stdout_for_json, UsageFailure)
from neuronsim.verify.cli.cmd_nki import kernel_options, load_reference, require_kernel_spec
from neuronsim.verify.cli.cmd_profile import run_spec
from neuronsim.verify.app.console import people_console

__all__ = ["compare"]


def _table(result) -> Table:
    a, b = result.a.to_json(), result.b.to_json()
    table = Table(show_header=True)
    for column in ("", f"A {result.a.label}", f"B {result.b.label}", "B / A"):
        table.add_column(column, overflow="fold", justify="left" if not column else "right")

    def ratio(x: float, y: float) -> str:
        return f"{y / x:.3f}" if x else ""

    table.add_row("makespan ns (nominal)", f"{a['makespan_ns']:,.1f}", f"{b['makespan_ns']:,.1f}",
                  ratio(a["makespan_ns"], b["makespan_ns"]))
    for engine in dict.fromkeys([*a["busy_ns"], *b["busy_ns"]]):
        x, y = a["busy_ns"].get(engine, 0.0), b["busy_ns"].get(engine, 0.0)
        table.add_row(f"busy ns {engine}", f"{x:,.1f}", f"{y:,.1f}", ratio(x, y))
    table.add_row("DMA bytes", f"{a['dma_bytes']:,}", f"{b['dma_bytes']:,}", ratio(a["dma_bytes"], b["dma_bytes"]))
    table.add_row("waits before / after", f"{a['waits']['before']} / {a['waits']['after']}",
                  f"{b['waits']['before']} / {b['waits']['after']}", "")
    table.add_row("findings / problems", f"{len(a['findings'])} / {len(a['problems'])}",
                  f"{len(b['findings'])} / {len(b['problems'])}", "")
    return table


def kernel_files(*specs: str) -> dict[str, str]:
    """The kernel files as ``x-source`` names them -> their paths."""
    import os

    from neuronsim.machine.ir.source import shown_path

    paths = [os.path.abspath(spec.rpartition("::")[0]) for spec in specs]
    return {shown_path(path): path for path in paths}


@click.command("compare")
@click.argument("kernel_a", metavar="A.py::FUNC")
@click.argument("kernel_b", metavar="B.py::FUNC")
@kernel_options
@click.option("--reference", "reference", metavar="MODULE:FN",
              help="A numpy function of the inputs both must match (FILE.py:FN or FILE.py::FN also name one).")
@click.option("--rtol", default=1e-2, show_default=True, type=FiniteFloat(min=0),
              help="Relative tolerance of the output comparisons.")
@click.option("--atol", default=1e-2, show_default=True, type=FiniteFloat(min=0),
              help="Absolute tolerance of the output comparisons.")
@click.option("--timing-only", is_flag=True, help="Simulate the schedules alone: no values, no output comparison.")
@click.option("--top", default=5, show_default=True, type=click.IntRange(min=0), metavar="N",
              help="Statements listed as moving the makespan.")
@click.option("--html", "html_path", metavar="FILE.html",
              help="Also write the page with both timelines on one time axis.")
@json_option
@size_options
@run_command
def compare(kernel_a: str, kernel_b: str, inputs_path, args, grid, dtypes, reference: str | None, rtol: float,
            atol: float, timing_only: bool, top: int, html_path: str | None, as_json: bool, max_instances: int,
            max_memory: int | None) -> int:
    """Compare two variants A and B of an NKI kernel on the same inputs (simulated, nominal timing)."""
    from neuronsim.nki.compare import compare_reports

    require_kernel_spec(kernel_a, "A")  # both before any work (B's was an exit 3 after A ran)
    require_kernel_spec(kernel_b, "B")
    if timing_only and reference:  # (the reference was dropped without a word, as run refuses)
        raise UsageFailure("--timing-only computes no value to compare with --reference", "--timing-only")
    check_output(html_path, "--html", (kernel_a, kernel_b, inputs_path, reference))
    stdout_for_json(as_json, {"--html": html_path})
    user_reference = load_reference(reference) if reference is not None else None
    runs = []
    for spec in (kernel_a, kernel_b):
        report = run_spec(spec, inputs_path=inputs_path, args=args, grid=grid, dtypes=dtypes,
                          max_instances=max_instances, max_memory=max_memory, functional=not timing_only,
                          reference=None if timing_only else user_reference)
        runs.append((spec.rsplit("::", 1)[1] if kernel_a.rsplit("::", 1)[1] != kernel_b.rsplit("::", 1)[1] else spec,
                     report))
    result = compare_reports(runs[0], runs[1], rtol=rtol, atol=atol, files=kernel_files(kernel_a, kernel_b))
    failed = bool(result.differences) or any(side.report.problems() for side in (result.a, result.b))
    if html_path:
        from neuronsim.nki.pages import write_compare_page

        check_not_imported(html_path, "--html")
        write_compare_page(html_path, result)
    if as_json:
        emit_json({**result.to_json(), "moves": [m.to_json() for m in result.moves[:top]],
                   **({"files": {"html": html_path}} if html_path else {})})
        return 1 if failed else 0
    console = people_console(sys.stderr if html_path == "-" else None)  # (the page on stdout: text aside)
    # a faster variant that computes something else, or has findings, is no faster kernel (a probe)
    caveats = [*(["the outputs differ"] if result.differences else []),
               *(f"{name} has problems (below)" for side, name in ((result.a, "A"), (result.b, "B"))
                 if side.report.problems())]
    console.print(f"A {kernel_a} / B {kernel_b}: B takes {result.ratio:.3f} of A's makespan "
                  f"({result.faster + ' is faster' if result.faster else 'the same makespan'}"
                  f"{'; but ' + ' and '.join(caveats) if caveats else ''})")
    if result.differences is None:
        console.print("outputs: not computed (--timing-only)")
    else:
        console.print("outputs of B vs A: " + ("equal" if not result.differences else "DIFFER")
                      + f" (rtol {rtol}, atol {atol})")
        for line in result.differences:
            console.print(f"  {line}", markup=False)
    console.print(_table(result))
    for side, name in ((result.a, "A"), (result.b, "B")):
        for line in side.report.finding_lines() + side.report.run.problems():
            console.print(f"{name}: {line}", markup=False)
    console.print("statements that moved the makespan (critical-path ns, A -> B):")
    for move in [m for m in result.moves if round(m.moved_ns, 1)][:top]:  # (+0.0 ns moved nothing)
        where = (f"{move.where_a} (A only)" if not move.where_b else f"{move.where_b} (B only)" if not move.where_a
                 else move.where_b if move.where_a == move.where_b else f"{move.where_a} -> {move.where_b}")
        console.print(f"  {move.moved_ns:+,.1f} ns  {where}: {move.statement}  "
                      f"({move.critical_a_ns:,.1f} -> {move.critical_b_ns:,.1f})", markup=False)
    if html_path:
        console.print(f"html: {html_path}")
    return 1 if failed else 0
