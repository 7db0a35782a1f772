"""Running a pipeline: each pass on the state the previous one left, verified between passes.

:func:`run_passes` carries a :class:`~neuronsim.passes.state.PipelineState` from pass to pass;
:func:`run_pipeline` is the same on a whole program (the state made at the start, the program
written out of it at the end).  Verification between passes checks what each pass changed
(:mod:`neuronsim.passes.verification`) unless ``ctx.verify`` is off.
"""

from __future__ import annotations

import gc
import os
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any

from neuronsim.machine.formats.pyfile import exit_call, running_users_code
from neuronsim.machine.ir.errors import ProgramError, message_of
from neuronsim.machine.ir.program import Program
from neuronsim.machine.ir.source import shown_path

from neuronsim.passes.base import AfterPass, FunctionPass, Pass, PassContext, PassRecord, PassResultError
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


#: Seconds a user's pass may run on one program before it is stopped at its line (None: no
#: limit).  The fuzzer sets it (``fuzz --max-idle``): its programs are small, and a pass that runs
#: that long on one is stuck, where the run would otherwise wait for ever.
USER_PASS_SECONDS: ContextVar[float | None] = ContextVar("user_pass_seconds", default=None)


def _ours(p: Pass) -> bool:
    """A pass of neuronsim's own registry (not one a spec string imported by its address)."""
    return type(p).__module__.startswith("neuronsim.") and ":" not in p.name and not isinstance(p, FunctionPass)


class PassStalled(ProgramError):
    """A user's pass ran :data:`USER_PASS_SECONDS` on one program and was stopped."""


def _users_pass(p: Pass, advance: Callable[[Pass, Any], Any], value: Any) -> Any:
    """``advance(p, value)`` for a user's pass: its ``os._exit`` refused (its ``sys.exit`` is then
    its failure, :func:`_users_pass_failed`), stopped at its line after :data:`USER_PASS_SECONDS`."""
    from neuronsim.machine.nki.watch import TraceStalled, watched  # (the NKI package, loaded only here)

    try:
        with running_users_code(), watched(idle_seconds=USER_PASS_SECONDS.get(), say=None):
            return advance(p, value)
    except TraceStalled as stalled:
        raise PassStalled("--passes", f"the pass {p.name!r} ran {stalled.seconds:.0f} s on one program without "
                                       f"returning (a loop that never ends?) and was stopped at {stalled.where}; give "
                                       "it longer with --max-idle SECONDS") from None


def _users_pass_failed(p: Pass, err: BaseException) -> ProgramError:
    """A user's pass raised: one line naming the pass and the last line of the user's code."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the package's own files
    theirs = [f for f in traceback.extract_tb(err.__traceback__)
              if not os.path.abspath(f.filename).startswith(root + os.sep)]
    where = f" at {shown_path(theirs[-1].filename)}:{theirs[-1].lineno}" if theirs else ""
    if isinstance(err, SystemExit):
        return ProgramError("--passes", f"the pass {p.name!r} ends the process ({exit_call(err)}){where}: a pass "
                                        "returns a program")
    # (message_of: an exception whose own __str__ raises still makes the line; it was exit 3)
    said = message_of(err)  # (an empty message left "MemoryError:  at": a probe)
    raised = f"{type(err).__name__}{': ' + said if said else ''}"
    return ProgramError("--passes", f"the pass {p.name!r} raised {raised}{where}")


def _contents(program: Any) -> Any:
    """What ``program`` says, as its JSON document (None if it cannot be written): a user's pass
    that set a field of its input in place (``object.__setattr__`` on the IR's frozen objects)
    returned a program the check after it compared with that same, changed input and passed;
    ``compile`` then wrote a program ``check`` refused (a probe)."""
    from neuronsim.machine.formats.program_json import program_to_json
    from neuronsim.machine.tasks.serialize import tasks_to_json

    try:
        return program_to_json(program) if isinstance(program, Program) else tasks_to_json(program)
    except Exception:  # noqa: BLE001 - a program too broken to write differs from any that could be
        return None


def _program_fields(p: Pass, program: Program) -> None:
    """The fields of a user's pass's program that the checks between passes do not read: its
    machine and its extension keys (a machine of None was written out and refused by the next
    command; a set among the extras stopped the save on an internal error: a probe).  Always,
    ``--no-verify`` too: they cost nothing."""
    from neuronsim.machine.formats.jsonio import dumps_strict
    from neuronsim.machine.model.presets import resolve_machine

    if isinstance(program, Program):  # (a task program names no machine: every user pass was an exit 3, a probe)
        try:
            if not isinstance(program.machine, (str, Mapping)):  # (None resolves to the default, but is not written)
                raise TypeError("a machine is a preset's name or an object of overrides")
            resolve_machine(program.machine)
        except (ProgramError, TypeError, ValueError) as err:
            raise ProgramError("--passes", f"the pass {p.name!r} returned a program whose machine {program.machine!r} "
                                           f"is none neuronsim knows ({message_of(err)})") from None
    extras = program.extras if isinstance(program.extras, Mapping) else {"extras": program.extras}
    for key, extra in extras.items():
        try:
            if not (isinstance(key, str) and key.startswith("x-")):
                raise ValueError(f"{key!r} is no 'x-' extension key")
            dumps_strict(extra)
        except (TypeError, ValueError) as err:
            raise ProgramError("--passes", f"the pass {p.name!r} returned a program whose extras cannot be written "
                                           f"({message_of(err)})") from None


def _each_pass(value: Any, passes: Sequence[Pass], ctx: PassContext, *, advance: Callable[[Pass, Any], Any],
               check: Callable[[str, Any, Any], None], edges: Callable[[Any], int],
               program_of: Callable[[Any], Program], after_pass: AfterPass | None,
               merge: Callable[[Any, Any], Any] | None = None) -> Any:
    """The loop of both pipelines: ``advance`` runs a pass on ``value``, ``check(name, result,
    input)`` verifies its result against its input (when ``ctx.verify``); each pass timed and
    recorded.  ``merge(result, since)``, where given, is ``result`` saying what changed since
    ``since`` over several passes: then, without ``ctx.verify_each``, a run of built-in passes
    is checked once, after its last."""
    since, names = value, []
    for k, p in enumerate(passes):
        started = time.perf_counter()
        before = ctx.stats.get(p.name, {}).copy()
        given = _contents(program_of(value)) if ctx.verify and not _ours(p) else None
        with _GcPaused():
            try:
                result = advance(p, value) if _ours(p) else _users_pass(p, advance, value)
            except (PassStalled, PassResultError, KeyboardInterrupt):
                raise
            except BaseException as err:  # noqa: BLE001 - a user's pass failing is the user's input
                if _ours(p) or (not isinstance(err, (Exception, SystemExit))
                                and type(err).__module__.startswith("neuronsim.")):
                    raise  # neuronsim's own, or its own stop (a signal's, a watch's)
                # a user's pass raising any exception of its own, a BaseException too (class
                # Stop(BaseException), GeneratorExit): it was a traceback, exit 1
                raise _users_pass_failed(p, err) from None
            if given is not None and _contents(program_of(value)) != given:
                raise ProgramError("--passes", f"the pass {p.name!r} changed the program it was given in place: a "
                                               "pass leaves its input as it was and returns a new program "
                                               "(dataclasses.replace)")
            if result is None or type(result) is not type(value):
                raise ProgramError("--passes", f"the pass {p.name!r} returned {type(result).__name__}, not the "
                                               f"{type(value).__name__} it was given (a pass returns what it ran on, "
                                               "changed or not)")
            if not _ours(p):
                _program_fields(p, program_of(result))
            seconds = time.perf_counter() - started
            ctx.placed = ctx.placed or p.places
            if ctx.verify:
                names.append(p.name)
                grouped = merge is not None and not ctx.verify_each and _ours(p)
                if not grouped or k + 1 == len(passes) or not _ours(passes[k + 1]):
                    try:
                        check(", ".join(names), result if since is value else merge(result, since), since)
                    except (TypeError, AttributeError, KeyError, ValueError) as err:
                        if _ours(p) or isinstance(err, ProgramError):  # (a located mistake says where itself)
                            raise
                        # a user's program not made of the IR's objects (body None, deps a string):
                        # the checks that locate a mistake cannot even walk it
                        raise ProgramError("--passes", f"after pass {p.name!r}: the program it returned is not "
                                                       f"well formed ({type(err).__name__}: {message_of(err)})"
                                           ) from None
                    since, names = result, []
        delta = {k: v - before.get(k, 0) for k, v in ctx.stats.get(p.name, {}).items()}
        ctx.records.append(PassRecord(p.spec_string(), seconds, edges(result), delta))
        value = result
        if after_pass is not None:
            after_pass(p, program_of(value) if getattr(after_pass, "reads_program", True) else None, ctx)
    return value


def run_passes(state: PipelineState, passes: Sequence[Pass] | str = DEFAULT_PIPELINE, ctx: PassContext | None = None,
               *, after_pass: AfterPass | None = None) -> PipelineState:
    """Run ``passes`` in order on ``state`` (see :func:`run_pipeline`); returns the last state."""
    ctx = ctx or PassContext(spec=state.spec)
    if ctx.spec is None:
        ctx.spec = state.spec
    if isinstance(passes, str):
        passes = parse_pipeline(passes)
    return _each_pass(state, passes, ctx, advance=lambda p, s: p.run(s, ctx),
                      check=lambda name, new, old: verify_state(new, old, placed=ctx.placed, after=name),
                      edges=lambda s: s.dep_count, program_of=lambda s: s.program, after_pass=after_pass,
                      merge=lambda s, since: s.changed_together(since))


def run_pipeline(program: Program, passes: Sequence[Pass] | str = DEFAULT_PIPELINE, ctx: PassContext | None = None,
                 *, after_pass: AfterPass | None = None,
                 verifier: Callable[[Any, Any, str], None] | None = None) -> Program:
    """Run ``passes`` in order, verifying between them when ``ctx.verify``.

    The input must be valid (:func:`neuronsim.machine.formats.program_json.load_program` checks what it loads;
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
    return _each_pass(program, passes, ctx, advance=lambda p, q: p.apply(q, ctx),
                      check=lambda name, new, old: verifier(new, old, name), edges=lambda q: q.dep_count,
                      program_of=lambda q: q, after_pass=after_pass)

