"""``neuronsim fuzz``: fuzz the pipeline, or your own pass, with generated programs.

The examples are cut into chunks of :data:`CHUNK` with seeds derived from ``--seed`` and the
chunk's index, so a run's results depend on ``--seed`` and ``--examples`` only, not on how
many workers share the chunks.  Chunks run in a local process pool (``--workers``), or on a
Dask cluster when ``--scheduler ADDRESS`` names one (the same chunk function, through
``dask.distributed``).  Each chunk is :func:`verify.fuzz.check_pass`: races, ordering and
simulated outputs on every example, failures shrunk to a minimal program saved in ``--out``.

Exit 0 when no example fails, 1 when one does, 2 on unusable input.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from verify.cliutil import UsageFailure, emit_json, json_option, run_command

__all__ = ["fuzz", "Chunk", "run_chunk", "plan_chunks", "CHUNK"]

#: Examples per chunk: the unit of work handed to a worker.
CHUNK = 25


@dataclass(frozen=True, slots=True)
class Chunk:
    index: int
    seed: int
    examples: int
    user_pass: str | None
    replace: str | None
    out_dir: str | None


@dataclass(frozen=True, slots=True)
class ChunkResult:
    index: int
    seed: int
    examples: int
    check: str | None
    message: str | None
    saved: str | None


def plan_chunks(examples: int, seed: int, user_pass: str | None, replace: str | None, out_dir: str | None) -> list[Chunk]:
    """The chunks of a run (deterministic in ``seed`` and ``examples``).

    >>> [(c.index, c.examples) for c in plan_chunks(60, 5, None, None, None)]
    [(0, 25), (1, 25), (2, 10)]
    """
    chunks = []
    for index, start in enumerate(range(0, examples, CHUNK)):
        chunks.append(Chunk(index, seed * 100_003 + index, min(CHUNK, examples - start), user_pass, replace, out_dir))
    return chunks


def run_chunk(chunk: Chunk) -> ChunkResult:
    """Run one chunk (in whatever process or Dask worker it lands)."""
    from verify.fuzz import check_pass, load_pass

    try:
        user = load_pass(chunk.user_pass) if chunk.user_pass else None
        result = check_pass(user, examples=chunk.examples, seed=chunk.seed, replace=chunk.replace, folder=chunk.out_dir)
    except Exception as err:  # noqa: BLE001 - a crash in a worker is a finding, not a traceback
        return ChunkResult(chunk.index, chunk.seed, 0, "error", f"{type(err).__name__}: {err}", None)
    failure = result.failure
    return ChunkResult(chunk.index, chunk.seed, result.examples, failure and failure.check,
                       failure and failure.message, failure and failure.saved)


def _execute(chunks: list[Chunk], workers: int, scheduler: str | None, progress) -> list[ChunkResult]:
    results = []
    if scheduler is not None:
        try:
            from distributed import Client, as_completed as dask_completed
        except ImportError as err:  # pragma: no cover - distributed is a dependency
            raise UsageFailure(f"dask.distributed is not installed: {err}", "--scheduler") from None
        try:
            client = Client(scheduler, timeout="10s")
        except (OSError, TimeoutError) as err:
            raise UsageFailure(f"cannot reach the Dask scheduler {scheduler}: {err}", "--scheduler") from None
        with client:
            futures = client.map(run_chunk, chunks, pure=False)
            for future in dask_completed(futures):
                results.append(future.result())
                progress(results[-1])
        return results
    if workers <= 1:
        for chunk in chunks:
            results.append(run_chunk(chunk))
            progress(results[-1])
        return results
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for future in as_completed([pool.submit(run_chunk, c) for c in chunks]):
            results.append(future.result())
            progress(results[-1])
    return results


@click.command("fuzz")
@click.option("--examples", type=click.IntRange(min=1), default=500, show_default=True, help="Programs to generate.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the whole run.")
@click.option("--pass", "user_pass", metavar="MODULE:FUNCTION",
              help="Your pass: a pass object or class, or fn(program) -> program; appended to the pipeline.")
@click.option("--replace", metavar="PASS", help="Put --pass in place of this pipeline pass instead of appending it.")
@click.option("--workers", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default=True,
              help="Local worker processes.")
@click.option("--scheduler", metavar="ADDRESS", help="Run on a Dask cluster (tcp://host:port) instead.")
@click.option("--out", "out_dir", default="fuzz-failures", show_default=True, metavar="DIR",
              help="Folder for failing programs (minimal JSON, race report, compiled program).")
@json_option
@run_command
def fuzz(examples: int, seed: int, user_pass: str | None, replace: str | None, workers: int,
         scheduler: str | None, out_dir: str, as_json: bool) -> int:
    """Fuzz the pass pipeline (with --pass, your pass) on generated programs."""
    if replace and not user_pass:
        raise UsageFailure("--replace needs --pass", "--replace")
    if user_pass:
        from verify.fuzz import load_pass

        load_pass(user_pass)  # fail fast, with exit 2, before any worker starts
    chunks = plan_chunks(examples, seed, user_pass, replace, out_dir)
    console = Console(stderr=True, highlight=False)
    with Progress(TextColumn("fuzz"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, disable=as_json or not console.is_terminal) as bar:
        task = bar.add_task("examples", total=examples)
        results = _execute(chunks, workers, scheduler, lambda r: bar.advance(task, r.examples))
    results.sort(key=lambda r: r.index)
    failures = [r for r in results if r.check is not None]
    ran = sum(r.examples for r in results)
    if as_json:
        emit_json({"format": "neuronsim.fuzz/1", "examples": ran, "seed": seed, "pass": user_pass,
                   "failures": [{"chunk": r.index, "seed": r.seed, "check": r.check, "message": r.message,
                                 "saved": r.saved} for r in failures]})
    else:
        out = Console(highlight=False, soft_wrap=True)
        table = Table(title=f"fuzz: {ran} examples, seed {seed}, {len(chunks)} chunks")
        for column in ("check", "failing chunks", "first failure"):
            table.add_column(column)
        for check in ("error", "structure", "flow", "labels", "races", "outputs", "trace"):
            hit = [r for r in failures if r.check == check]
            table.add_row(check, str(len(hit)), (hit[0].message or "")[:70] if hit else "-")
        out.print(table)
        for r in failures:
            out.print(f"chunk {r.index} (seed {r.seed}): {r.check}: {r.message}\n  minimal program: {r.saved}")
        if not failures:
            out.print(f"no failure in {ran} examples")
    return 1 if failures else 0
