"""A traced NKI program (written by ``neuronsim nki ... -o P.json``) in the commands that take a
program: ``check``, ``report``, ``simulate`` and ``footprint`` run its NKI findings
(:func:`neuronsim.verify.nki.findings.nki_findings`, on the program as traced) and, when it has
no deps yet, compile it first with the compiler model's pipeline (:func:`default_pipeline`:
what ``run`` compiles a kernel with, so the two give one makespan), saying so in one line: a
traced program's deps are empty until compiled, and checking or simulating it under none would
report races (or orders) of nobody's making.  ``compile`` takes the same default for it.

A traced program is recognised by its ``x-source`` extras (the frontend locates every
instruction at its kernel line).
"""

from __future__ import annotations

import click

from neuronsim.machine.ir.program import Program
from neuronsim.verify.nki.finding import NkiFinding

__all__ = ["is_traced", "prepare_traced", "default_pipeline"]


def is_traced(program: Program) -> bool:
    """True for a program the NKI frontend traced (its instructions carry ``x-source``)."""
    return any("x-source" in inst.extras for inst, _ in program.instructions())


def default_pipeline(program: Program) -> str:
    """The pipeline a program compiles with when none is given: a traced NKI kernel's is the
    compiler model's (``TRACED_PIPELINE`` then ``dep-reduction``, as ``run`` compiles it), any
    other program's the construction pipeline (``DEFAULT_PIPELINE``)."""
    from neuronsim.passes import DEFAULT_PIPELINE, TRACED_PIPELINE

    return f"{TRACED_PIPELINE},dep-reduction" if is_traced(program) else DEFAULT_PIPELINE


def prepare_traced(program: Program, *, compile_first: bool = True, echo: bool = True
                   ) -> tuple[Program, tuple[NkiFinding, ...]]:
    """``(program to work on, its NKI findings)``: a traced program's findings (printed on
    standard error unless ``echo`` is false, alike ones grouped), and the program compiled
    with the default pipeline when it has no deps and ``compile_first``; any other program
    as it is, with no findings."""
    if not is_traced(program):
        return program, ()
    from neuronsim.passes import parse_pipeline, run_pipeline
    from neuronsim.verify.nki.findings import grouped_findings, nki_findings

    findings = tuple(nki_findings(program))
    if echo:
        for line in grouped_findings(findings, NkiFinding.line):
            click.echo(line, err=True)
    if compile_first and not any(inst.deps for inst, _ in program.instructions()):
        pipeline = default_pipeline(program)
        click.echo(f"note: a traced NKI program without deps: compiled with {pipeline} first, as run compiles "
                   f"a kernel (neuronsim compile PROGRAM -o OUT writes it)", err=True)
        program = run_pipeline(program, parse_pipeline(pipeline))
    return program, findings
