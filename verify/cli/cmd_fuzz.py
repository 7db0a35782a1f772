"""``neuronsim fuzz``: fuzz the pipeline, or your own pass, with generated programs.

The examples are cut into chunks of :data:`CHUNK` with seeds derived from ``--seed`` and the
chunk's index, so a run's results depend on ``--seed`` and ``--examples`` only, not on how
many workers share the chunks.  Chunks run in a local process pool (``--workers``), or on a
Dask cluster when ``--scheduler ADDRESS`` names one (the same chunk function, through
``dask.distributed``).  Each chunk is :func:`neuronsim.verify.fuzz.check_pass`: races, ordering and
simulated outputs on every example, a failure shrunk to a minimal program.

Failures are grouped by what failed (:func:`failure_signature`: the check and its message
with names' numbers and instance indices blanked), and ``--out`` gets one report per distinct
failure (``failure-CHECK-seedS.json`` with its ``.report.json`` and ``.compiled.json``, each
written atomically), not one per chunk that met it.  ``--fail-fast`` stops at the first
failing chunk.  ``--pass MODULE:FUNCTION`` imports from the current folder as well as from
the installed packages.  ``--tasks`` fuzzes the task pipeline instead, on generated task
programs (:mod:`neuronsim.verify.tasks.task_fuzz`); a ``--replace`` naming a task pass or a ``--pass``
deriving from one implies it.  ``--no-shrink`` reports failures as found (faster).

With ``--pass``, the summary says in how many examples your pass changed its input and how
many deps it dropped and added; a pass that changed nothing in any example is *vacuous*: the
run tested nothing, and it exits 1 as a failure does.

Exit 0 when no example fails, 1 when one does (or the pass is vacuous), 2 on unusable input,
130 when interrupted.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import click
from rich.table import Table

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.formats.files import link_to_nowhere

from neuronsim.verify.cli import signals
from neuronsim.verify.fuzz import CHUNK, chunk_seed, crash_text
from neuronsim.verify.cli.common import FiniteFloat, UsageFailure, emit_json, json_option, run_command
from neuronsim.verify.fuzz import FuzzFailure
from neuronsim.verify.app.progress import Progress
from neuronsim.verify.app.console import people_console

__all__ = ["fuzz", "Chunk", "run_chunk", "plan_chunks", "CHUNK", "failure_signature"]

#: Examples per chunk: the unit of work handed to a worker.
CHECKS = ("error", "structure", "flow", "labels", "races", "outputs", "trace")


@dataclass(frozen=True, slots=True)
class Chunk:
    index: int
    seed: int
    examples: int
    user_pass: str | None
    replace: str | None
    import_dir: str | None = None
    """Folder put first on ``sys.path`` before ``user_pass`` is imported (the user's cwd)."""
    tasks: bool = False
    """Fuzz the task pipeline on task programs (:func:`neuronsim.verify.tasks.task_fuzz.check_task_pass`)."""
    shrink: bool = True
    max_idle: float | None = None
    """Seconds the user's pass may run on one program (``--max-idle``; None: no limit)."""


@dataclass(frozen=True, slots=True)
class ChunkResult:
    index: int
    seed: int
    examples: int
    failure: FuzzFailure | None
    changed: int | None = None
    """Examples in which the user's pass changed its input (None: no pass of the user's)."""
    dropped: int = 0
    added: int = 0

    @property
    def check(self) -> str | None:
        return self.failure.check if self.failure else None

    @property
    def message(self) -> str | None:
        return self.failure.message if self.failure else None


def plan_chunks(examples: int, seed: int, user_pass: str | None, replace: str | None,
                import_dir: str | None = None, *, tasks: bool = False, shrink: bool = True,
                max_idle: float | None = None) -> Sequence[Chunk]:
    """The chunks of a run (deterministic in ``seed`` and ``examples``), each made when asked for:
    ``--examples 1000000000`` is 40 million chunks, which as a list grew by 90 MB a second
    before the first example ran.

    >>> [(c.index, c.examples) for c in plan_chunks(60, 5, None, None)]
    [(0, 25), (1, 25), (2, 10)]
    >>> len(plan_chunks(10**9, 5, None, None))
    40000000
    """
    def chunk(index: int) -> Chunk:
        return Chunk(index, chunk_seed(seed, index), min(CHUNK, examples - index * CHUNK), user_pass, replace,
                     import_dir, tasks, shrink, max_idle)

    return _Plan(-(-examples // CHUNK), chunk)


class _Plan(Sequence):
    """``count`` chunks, the ``k``-th made by ``make(k)`` when asked for."""

    def __init__(self, count: int, make: Callable[[int], Chunk]) -> None:
        self.count, self.make = count, make

    def __len__(self) -> int:
        return self.count

    def __eq__(self, other: object) -> bool:  # two plans alike chunk by chunk (the run is deterministic)
        return isinstance(other, Sequence) and len(other) == self.count and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __getitem__(self, k):  # (an int: the Sequence protocol iterates by index until IndexError)
        if isinstance(k, slice):
            return [self.make(i) for i in range(*k.indices(self.count))]
        if not -self.count <= k < self.count:
            raise IndexError(k)
        return self.make(k % self.count)


def _importable(folder: str | None) -> None:
    if folder and folder not in sys.path:
        sys.path.insert(0, folder)


def run_chunk(chunk: Chunk) -> ChunkResult:
    """Run one chunk (in whatever process or Dask worker it lands); nothing is written here."""
    from neuronsim.passes.runner import USER_PASS_SECONDS
    from neuronsim.verify.fuzz import check_pass, load_pass

    USER_PASS_SECONDS.set(chunk.max_idle)  # (a worker runs chunks of one run alone)
    try:
        _importable(chunk.import_dir)
        user = load_pass(chunk.user_pass) if chunk.user_pass else None
        if chunk.tasks:
            from neuronsim.verify.tasks.task_fuzz import check_task_pass

            result = check_task_pass(user, examples=chunk.examples, seed=chunk.seed, replace=chunk.replace,
                                     shrink=chunk.shrink)
        else:  # found as drawn: the parent shrinks each distinct failure once (neuronsim.verify.shrink), with progress
            result = check_pass(user, examples=chunk.examples, seed=chunk.seed, replace=chunk.replace, shrink=False,
                                chunk=chunk.index)
    except KeyboardInterrupt:
        # a worker ignores SIGINT (the parent takes Ctrl-C): there one is the user's pass's own
        # raise, which killed the worker and left the pool waiting for ever (a probe)
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            raise
        crash = FuzzFailure("error", "KeyboardInterrupt raised by the pass, not by a signal", "", None, None)
        return ChunkResult(chunk.index, chunk.seed, 0, crash)
    except BaseException as err:  # noqa: BLE001 - a crash in a worker is a finding, not a traceback
        if not isinstance(err, (Exception, SystemExit)) and type(err).__module__.startswith("neuronsim."):
            raise
        # a user's BaseException of its own (or sys.exit) left a pool worker dead, and the pool
        # waited for ever for its result (a probe: class Stop(BaseException) raised at import)
        crash = FuzzFailure("error", crash_text(err), "", None, None)
        return ChunkResult(chunk.index, chunk.seed, 0, crash)
    return ChunkResult(chunk.index, chunk.seed, result.examples, result.failure, result.changed,
                       result.dropped or 0, result.added or 0)


def failure_signature(check: str, message: str) -> str:
    """What makes two failures the same: the check and the message with instance indices and
    the numbers of generated names blanked.

    >>> failure_signature("races", "2 race(s), first RAW matmul2[1,0] / tensor_copy3")
    'races: # race(s), first RAW matmul# / tensor_copy#'
    """
    text = re.sub(r"\[[0-9, ]*\]", "", message)
    return f"{check}: {re.sub(r'[0-9]+', '#', text)}"


def _execute(chunks: list[Chunk], workers: int, scheduler: str | None, progress, fail_fast: bool) -> list[ChunkResult]:
    results: list[ChunkResult] = []

    def take(result: ChunkResult) -> bool:
        results.append(result)
        progress(result)
        return fail_fast and result.failure is not None

    if scheduler is not None:
        return _execute_dask(chunks, scheduler, take)
    if workers <= 1:
        for chunk in chunks:
            if take(run_chunk(chunk)):
                break
        return results
    pool = multiprocessing.get_context().Pool(min(workers, len(chunks)), initializer=signals.as_worker)
    try:
        for result in pool.imap_unordered(run_chunk, chunks):
            if take(result):
                break
        else:
            pool.close()
    finally:
        pool.terminate()  # --fail-fast or Ctrl-C: the chunks still running are not waited for
        pool.join()
    return results


def _execute_dask(chunks: list[Chunk], scheduler: str, take) -> list[ChunkResult]:
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
    except ImportError as err:  # pragma: no cover - distributed is a dependency
        raise UsageFailure(f"dask.distributed is not installed: {err}", "--scheduler") from None
    try:
        client = Client(scheduler, timeout="10s")
    except (OSError, TimeoutError, ValueError) as err:
        raise UsageFailure(f"cannot reach the Dask scheduler {scheduler}: {err}", "--scheduler") from None
    except MemoryError:  # a service that is no Dask scheduler: its reply read as a frame of exabytes
        raise UsageFailure(f"{scheduler} answers, but not as a Dask scheduler (its reply does not parse)",
                           "--scheduler") from None
    except Exception as err:  # noqa: BLE001  (tls:// without a security context, ucx:// without UCX: the address's)
        raise UsageFailure(f"cannot connect to the Dask scheduler {scheduler}: {type(err).__name__}: {err} "
                           "(tcp://HOST:PORT is the address a plain scheduler listens on)", "--scheduler") from None
    results: list[ChunkResult] = []
    with client:
        futures = client.map(run_chunk, chunks, pure=False)
        try:
            for future in dask_completed(futures):
                result = future.result()
                results.append(result)
                if take(result):
                    break
        finally:
            client.cancel(futures)
    return results


def _shrink(failure: FuzzFailure, user_pass: str | None, replace: str | None, progress) -> FuzzFailure:
    """``failure`` shrunk in this process, the progress line saying so (instructions left)."""
    from neuronsim.verify.fuzz import load_pass, shrink_failure
    from neuronsim.verify.shrink import instruction_count

    from neuronsim.machine.formats.program_json import loads_program

    user = load_pass(user_pass) if user_pass else None
    size = instruction_count(loads_program(failure.program, validate=False))
    if not progress.live:  # off a terminal (CI, a log): say it, since no bar moves
        click.echo(f"fuzz: shrinking {_article(failure.check)} {failure.check} failure of {size} instruction(s) ...",
                   err=True)
    started = time.perf_counter()
    # size=-1: no summary line of the stage's own (the lines around it say more)
    with progress.stage(f"shrinking {_article(failure.check)} {failure.check} failure", size, unit="instruction",
                        size=-1) as update:
        update(0, f"{size} instructions")
        shrunk = shrink_failure(failure, user, replace=replace,
                                progress=lambda left: update(size - left, f"{left} instruction(s) left"))
    if not progress.live:
        left = instruction_count(loads_program(shrunk.program, validate=False))
        click.echo(f"fuzz: shrunk to {left} instruction(s) in {time.perf_counter() - started:.1f} s", err=True)
    return shrunk


def _save_distinct(failures: list[ChunkResult], out_dir: str, shrink=None) -> tuple[list[dict], dict[int, str | None]]:
    """One saved report per distinct failure (shrunk first by ``shrink(failure)`` when given);
    the groups and each failing chunk's saved path."""
    from neuronsim.verify.fuzz import save_failure

    groups: dict[str, list[ChunkResult]] = {}
    for r in failures:
        groups.setdefault(failure_signature(r.check, r.message or ""), []).append(r)
    distinct, saved_by_chunk = [], {}
    for signature, members in groups.items():
        first = members[0]
        failure = first.failure
        saved = None
        if failure.program:  # an "error" of the pass loader has no program to save
            if shrink is not None:
                failure = shrink(failure)
            saved = save_failure(failure, out_dir, f"failure-{first.check}-seed{first.seed}").saved
        distinct.append({"signature": signature, "check": first.check, "message": failure.message, "saved": saved,
                         "fix": failure.fix, "chunks": [r.index for r in members]})
        for r in members:
            saved_by_chunk[r.index] = saved
    return distinct, saved_by_chunk


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _check_out_dir(out_dir: str) -> None:
    if not out_dir:
        raise UsageFailure("an empty folder name; name a folder (. for this one)", "--out")
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise UsageFailure("cannot write: it is a file, not a folder", out_dir)
    broken = link_to_nowhere(out_dir)  # (found only when a failure was written: a probe)
    if broken:
        raise UsageFailure(f"cannot write: {broken}", out_dir)
    if os.path.isdir(out_dir) and not os.access(out_dir, os.W_OK | os.X_OK):  # before the run, not after it
        raise UsageFailure("cannot write: the folder is not writable", out_dir)
    parent = os.path.dirname(os.path.abspath(out_dir))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise UsageFailure(f"cannot write: {parent} is a file, not a folder", out_dir)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageFailure(f"cannot write: the folder {parent} is not writable", out_dir)
    if not os.path.isdir(out_dir):  # made only when a failure is saved: try it now (/proc passes access())
        try:
            os.rmdir(tempfile.mkdtemp(prefix=".neuronsim-", dir=parent))
        except OSError as err:
            raise UsageFailure(f"cannot create the folder: {err.strerror or err}", out_dir) from None


def _known_slot(replace: str, tasks: bool) -> None:
    """Refuse, before any example, a ``--replace`` that names no pass of the fuzzed pipeline
    (each example would fail the same way, counted as a finding)."""
    from neuronsim.passes import DEFAULT_PIPELINE, parse_pipeline
    from neuronsim.passes.tasks import DEFAULT_TASK_PIPELINE, parse_task_pipeline

    pipeline = parse_task_pipeline(DEFAULT_TASK_PIPELINE) if tasks else parse_pipeline(DEFAULT_PIPELINE)
    names = [p.name for p in pipeline]
    if replace not in names:
        task_names = [p.name for p in parse_task_pipeline(DEFAULT_TASK_PIPELINE)]
        raise UsageFailure(f"no pass {replace!r} to replace; the pipeline's passes are {', '.join(names)}"
                           + ("" if tasks else f" (task pipeline, --tasks: {', '.join(task_names)})"), "--replace")


@click.command("fuzz")
@click.option("--examples", type=click.IntRange(min=1, max=10**9), default=500, show_default=True,
              help="Programs to generate (at most 10**9: a larger count is refused before any work).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the whole run.")
@click.option("--pass", "user_pass", metavar="MODULE:FUNCTION",
              help="Your pass: a pass object or class, or fn(program) -> program; appended to the pipeline. "
                   "MODULE is imported from the current folder or the installed packages.")
@click.option("--replace", metavar="PASS", help="Put --pass in place of this pipeline pass instead of appending it.")
@click.option("--workers", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default=True,
              help="Local worker processes.")
@click.option("--scheduler", metavar="ADDRESS", help="Run on a Dask cluster (tcp://host:port) instead.")
@click.option("--out", "out_dir", default="fuzz-failures", show_default=True, metavar="DIR",
              help="Folder for the failures: one minimal program, race report and compiled program per distinct "
                   "failure.")
@click.option("--fail-fast", is_flag=True, help="Stop at the first failing chunk.")
@click.option("--tasks", is_flag=True, help="Fuzz the task pipeline on generated task programs (implied by a task "
                                            "pass in --replace or --pass).")
@click.option("--no-shrink", is_flag=True, help="Report failures as found, without shrinking them.")
@click.option("--max-idle", type=FiniteFloat(min=0), default=60.0, show_default=True, metavar="SECONDS",
              help="Stop the user's pass when it runs this long on one program (a loop that never ends) and report "
                   "it as a failure; 0: never.")
@json_option
@run_command
def fuzz(examples: int, seed: int, user_pass: str | None, replace: str | None, workers: int,
         scheduler: str | None, out_dir: str, fail_fast: bool, tasks: bool, no_shrink: bool, max_idle: float,
         as_json: bool) -> int:
    """Fuzz the pass pipeline (with --pass, your pass) on generated programs."""
    from neuronsim.passes.runner import USER_PASS_SECONDS

    USER_PASS_SECONDS.set(max_idle or None)  # for the chunks run here and the shrinking
    if replace and not user_pass:
        raise UsageFailure("--replace needs --pass", "--replace")
    _check_out_dir(out_dir)
    import_dir = os.getcwd()
    from neuronsim.passes.tasks import TASK_PASSES

    tasks = tasks or replace in TASK_PASSES
    if user_pass:
        from neuronsim.verify.fuzz import load_pass
        from neuronsim.verify.tasks.task_fuzz import is_task_pass

        _importable(import_dir)
        try:
            tasks = is_task_pass(load_pass(user_pass)) or tasks  # fail fast, with exit 2, before any worker starts
        except ProgramError:
            raise
        except Exception as err:  # noqa: BLE001 - the user's module failed to import: their input
            raise UsageFailure(f"cannot load {user_pass!r}: {type(err).__name__}: {err}", "--pass") from None
    if replace is not None:
        _known_slot(replace, tasks)
    chunks = plan_chunks(examples, seed, user_pass, replace, import_dir, tasks=tasks, shrink=not no_shrink,
                         max_idle=max_idle or None)
    with Progress(summary_min=0) as progress:
        with progress.stage("fuzz", examples, unit="example") as update:
            ran = [0]

            def advance(result: ChunkResult) -> None:
                ran[0] += result.examples
                update(ran[0])

            results = _execute(chunks, workers, scheduler, advance, fail_fast)
        results.sort(key=lambda r: r.index)
        failures = [r for r in results if r.failure is not None]
        shrink = None if no_shrink or tasks else (lambda f: _shrink(f, user_pass, replace, progress))
        distinct, saved = _save_distinct(failures, out_dir, shrink) if failures else ([], {})
    ran = sum(r.examples for r in results)
    stopped = fail_fast and bool(failures) and len(results) < len(chunks)
    effect = _effect(results, ran, replace)
    if as_json:
        emit_json({"format": "neuronsim.fuzz/1", "examples": ran, "seed": seed, "pass": user_pass, "tasks": tasks,
                   "stopped_early": stopped, "distinct": distinct,
                   "pass_effect": None if effect is None else {"changed": effect.changed, "dropped": effect.dropped,
                                                               "added": effect.added, "vacuous": effect.vacuous},
                   "failures": [{"chunk": r.index, "seed": r.seed, "check": r.check, "message": r.message,
                                 "saved": saved.get(r.index)} for r in failures]})
    else:
        _print(ran, examples, seed, len(chunks), failures, distinct, stopped, tasks)
        if effect is not None:
            click.echo(effect.effect_text(replace))
    return 1 if failures or (effect is not None and effect.vacuous) else 0


def _effect(results: list[ChunkResult], ran: int, replace: str | None):
    """What the user's pass did over the whole run (None: no pass of the user's counted)."""
    from neuronsim.verify.fuzz import FuzzResult

    counted = [r for r in results if r.changed is not None]
    if not counted:
        return None
    failure = next((r.failure for r in results if r.failure is not None), None)  # (then not vacuous)
    return FuzzResult(ran, failure, changed=sum(r.changed for r in counted), dropped=sum(r.dropped for r in counted),
                      added=sum(r.added for r in counted))


def _print(ran: int, asked: int, seed: int, chunks: int, failures: list[ChunkResult], distinct: list[dict],
           stopped: bool, tasks: bool = False) -> None:
    from neuronsim.verify.tasks.task_fuzz import TASK_CHECKS

    out = people_console()
    what = "task programs" if tasks else "examples"
    count = f"{ran} {what}" if ran == asked else f"{ran} of {asked} {what} (a chunk stops at its first failure)"
    table = Table(title=f"fuzz: {count}, seed {seed}, {chunks} chunks")
    for column in ("check", "failing chunks", "first failure"):
        table.add_column(column)
    for check in TASK_CHECKS if tasks else CHECKS:
        hit = [r for r in failures if r.check == check]
        table.add_row(check, str(len(hit)), (hit[0].message or "")[:70] if hit else "-")
    out.print(table)
    for group in distinct:
        chunks_text = ", ".join(map(str, group["chunks"]))
        out.print(f"{group['check']}: {group['message']}\n"
                  f"  in chunk(s) {chunks_text}; minimal program: {group['saved']}")
        if group.get("fix"):
            out.print(f"  fix: {group['fix']}")
    if stopped:
        out.print("stopped at the first failure (--fail-fast)")
    if not failures:
        out.print(f"no failure in {ran} examples")
