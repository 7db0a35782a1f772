"""Running a pipeline: each pass on the state the previous one left, verified between passes.

:func:`run_passes` carries a :class:`~neuronsim.passes.state.PipelineState` from pass to pass;
:func:`run_pipeline` is the same on a whole program (the state made at the start, the program
written out of it at the end).  Verification between passes checks what each pass changed
(:mod:`neuronsim.passes.verification`) unless ``ctx.verify`` is off.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Sequence
from typing import Any

from neuronsim.machine.ir.program import Program

from neuronsim.passes.base import AfterPass, Pass, PassContext, PassRecord
from neuronsim.passes.spec import parse_pipeline
from neuronsim.passes.state import PipelineState
from neuronsim.passes.verification import verify_state

__all__ = ["run_pipeline", "run_passes", "DEFAULT_PIPELINE", "CONSTRUCTION_PIPELINE"]

#: The default pipeline of ``neuronsim compile``: allocation (a no-op when nothing is
#: virtual), dependence construction, then the exact transitive reduction.
CONSTRUCTION_PIPELINE = "alloc,build-fdeps,remove-redundancies,anti-deps"
DEFAULT_PIPELINE = CONSTRUCTION_PIPELINE + ",dep-reduction"


class _GcPaused:
    """The cyclic collector paused (the passes allocate millions of small tuples and no
    cycles: performance notes, section 0)."""

    def __enter__(self) -> None:
        self.was_enabled = gc.isenabled()
        gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.was_enabled:
            gc.enable()


def _timed(p: Pass, ctx: PassContext, step: Callable[[], Any], edges: Callable[[Any], int], after_pass: AfterPass | None,
           program_of: Callable[[Any], Program]) -> Any:
    started = time.perf_counter()
    before = {k: dict(v) for k, v in ctx.stats.items()}
    with _GcPaused():
        result, seconds = step(started)
    row = ctx.stats.get(p.name, {})
    delta = {k: v - before.get(p.name, {}).get(k, 0) for k, v in row.items()}
    ctx.records.append(PassRecord(p.spec_string(), seconds, edges(result), delta))
    if after_pass is not None:
        after_pass(p, program_of(result), ctx)
    return result


def run_passes(state: PipelineState, passes: Sequence[Pass] | str = DEFAULT_PIPELINE, ctx: PassContext | None = None,
               *, after_pass: AfterPass | None = None) -> PipelineState:
    """Run ``passes`` in order on ``state`` (see :func:`run_pipeline`); returns the last state."""
    ctx = ctx or PassContext(spec=state.spec)
    if ctx.spec is None:
        ctx.spec = state.spec
    if isinstance(passes, str):
        passes = parse_pipeline(passes)
    for p in passes:
        def step(started: float, p: Pass = p, given: PipelineState = state) -> tuple[PipelineState, float]:
            result = p.run(given, ctx)
            seconds = time.perf_counter() - started
            ctx.placed = ctx.placed or p.places
            if ctx.verify:
                verify_state(result, given, placed=ctx.placed, after=p.name)
            return result, seconds

        state = _timed(p, ctx, step, lambda s: s.dep_count, after_pass, lambda s: s.program)
    return state


def run_pipeline(program: Program, passes: Sequence[Pass] | str = DEFAULT_PIPELINE, ctx: PassContext | None = None,
                 *, after_pass: AfterPass | None = None,
                 verifier: Callable[[Any, Any, str], None] | None = None) -> Program:
    """Run ``passes`` in order, verifying between them when ``ctx.verify``.

    The input must be valid (:func:`neuronsim.machine.formats.program.load_program` checks what it loads;
    :func:`neuronsim.passes.verification.verify_program` checks a program built in memory).
    The cyclic garbage collector is paused while a pass and its verification run.
    ``after_pass`` is the pipeline's one hook: it sees each pass's verified result (the fuzzer
    checks stage contracts there, the CLI reports progress); an exception it raises stops the
    pipeline.  ``verifier(after, before, pass_name)`` replaces the instruction-program checks
    for other kinds of program (task programs: :func:`neuronsim.passes.tasks.verify_tasks`),
    which go from pass to pass as they are; their edge count is ``program.dep_count``.
    """
    ctx = ctx or PassContext()
    if isinstance(passes, str):
        passes = parse_pipeline(passes)
    if verifier is None:
        return run_passes(PipelineState.of(program, ctx.machine(program)), passes, ctx, after_pass=after_pass).program
    for p in passes:
        def step(started: float, p: Pass = p, given: Any = program) -> tuple[Any, float]:
            result = p.apply(given, ctx)
            seconds = time.perf_counter() - started
            ctx.placed = ctx.placed or p.places
            if ctx.verify:
                verifier(result, given, p.name)
            return result, seconds

        program = _timed(p, ctx, step, lambda q: q.dep_count, after_pass, lambda q: q)
    return program
