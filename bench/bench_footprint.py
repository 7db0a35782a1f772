"""``neuronsim footprint --no-simulate`` on a loop kernel of about 1e5 instances: time and memory.

Issue #12 asks for the footprint of a 1e5-instance loop program in under 30 s and 1 GiB.

Workload: :func:`tiled_matmul`, a tiled matmul written as hand-allocated NKI kernels write it
(docs/kernel-patterns.md 2.2, 1.4): ``result[M, N] = lhsT[K, M]^T @ rhs[K, N]`` in bf16, loops ``m`` (128-row
output tiles) -> ``n`` (512-column output tiles), and per output tile the K tiles of 128 rows:
K tile 0 peeled (its loads into their own buffers, the group-start matmul that overwrites the
bank), then a loop ``k`` over the other K tiles whose loads rotate over two slots each
(``x-rotate`` over ``k``: load k+2 reuses the slot of k) and whose matmuls accumulate.  SP loads
``lhsT`` on ``dma0``, ACT loads ``rhs`` on ``dma1``; the PSUM accumulator rotates over two
banks and the output tile over two SBUF slots (``x-rotate`` over ``n``), so the next tile's
matmuls overlap this tile's eviction (DVE) and store (triggered by DVE on ``dma2``).  Every
tile is placed (:class:`neuronsim.machine.build.arena.SbufArena`): ``alloc`` has nothing to place.
With the default 62 x 62 output tiles and K = 8: 3 * 8 + 2 = 26 instances per tile,
99,944 in all.

Two runs, each ``neuronsim footprint PROGRAM --no-simulate --json`` in a child process (the
command exactly as a user runs it, loading the program file included):

``deps none``
    the kernel as built, without deps: the command runs the default pipeline (dependence
    construction, then ``dep-reduction``) and measures three stages, the minimum computed once
    per placement;
``deps given``
    the same kernel after ``neuronsim compile`` (its deps written out): the command checks
    the program's own deps for races (the warning of the ``own_races`` key), runs
    ``dep-reduction`` and measures two stages;
``deps racy``
    the compiled kernel with the waits of the rotating ``lhsT`` load dropped (a forgotten
    WAR in a pipelined loop: SP then runs ahead of PE, and nearly every load races with the
    matmuls of earlier tiles): the warning's path, whose check stops at its race count.

Printed per run: wall and CPU seconds (the child's user + system time, from ``wait4``), the
child's peak RSS, the stages, the waits / minimum of the last stage (a check that the run
measured what it should), the races of the program's own deps (``+``: a lower bound, the check
stopped), and the goal (< 30 s and < 1 GiB): met / NOT met.

``--phases`` then runs each step of the command in a child per run (loading, the race check
of the program as given, each pass, the minimum) and prints its seconds and the peak RSS so
far: where the time and memory go.

Usage: ``python bench/bench_footprint.py [--tiles M N] [--k K] [--phases]`` (default 62 62 8);
``--save PROGRAM`` writes the kernel as built and runs nothing (to run it yourself).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace

from neuronsim.machine.formats.program_json import load_program, save_program
from neuronsim.machine.ir.program import Program
from neuronsim.machine.build.arena import SbufArena
from neuronsim.machine.build.builder import KernelBuilder

TILE, TILE_N = 128, 512
GOAL_SECONDS, GOAL_BYTES = 30.0, 1 << 30


def tiled_matmul(m_tiles: int, n_tiles: int, k_tiles: int) -> Program:
    """The benchmark's kernel (module doc): ``m_tiles * n_tiles * (3 * k_tiles + 2)`` instances.

    >>> from neuronsim.machine.order.stream import stream_of
    >>> program = tiled_matmul(2, 2, 3)
    >>> sum(1 for _ in program.instructions()), len(stream_of(program)), program.tensors["r_buf"].rotate
    (8, 44, Rotation(loop='k', slots=2, stride=1024))
    """
    if k_tiles < 2:
        raise ValueError("k_tiles >= 2: K tile 0 is peeled, the loop runs over the others")
    kb = KernelBuilder("bench_tiled_matmul")
    lhs_t = kb.dram_input("lhsT", (k_tiles * TILE, m_tiles * TILE), "bfloat16")
    rhs = kb.dram_input("rhs", (k_tiles * TILE, n_tiles * TILE_N), "bfloat16")
    result = kb.dram_output("result", (m_tiles * TILE, n_tiles * TILE_N), "bfloat16")
    arena = SbufArena(kb)
    l_first = arena.sbuf("l_first", (TILE, TILE), "bfloat16")
    r_first = arena.sbuf("r_first", (TILE, TILE_N), "bfloat16")
    l_buf = arena.sbuf("l_buf", (TILE, TILE), "bfloat16", slots=2, loop="k")
    r_buf = arena.sbuf("r_buf", (TILE, TILE_N), "bfloat16", slots=2, loop="k")
    o_buf = arena.sbuf("o_buf", (TILE, TILE_N), "bfloat16", slots=2, loop="n")
    ps = kb.psum("ps", (TILE, TILE_N), "float32", partition=0, bank=0, slots=2, loop="n")
    with kb.loop("m", m_tiles) as m, kb.loop("n", n_tiles) as n:
        cols_m, cols_n = slice(m * TILE, (m + 1) * TILE), slice(n * TILE_N, (n + 1) * TILE_N)
        kb.dma_copy(l_first, lhs_t[0:TILE, cols_m], engine="sp", queue="dma0", name="load_l_first")
        kb.dma_copy(r_first, rhs[0:TILE, cols_n], engine="act", queue="dma1", name="load_r_first")
        kb.matmul(ps, l_first, r_first, accumulate=False, name="mm_start")
        with kb.loop("k", k_tiles - 1) as k:
            rows = slice((k + 1) * TILE, (k + 2) * TILE)
            kb.dma_copy(l_buf, lhs_t[rows, cols_m], engine="sp", queue="dma0", name="load_l")
            kb.dma_copy(r_buf, rhs[rows, cols_n], engine="act", queue="dma1", name="load_r")
            kb.matmul(ps, l_buf, r_buf, accumulate=True, name="mm_acc")
        kb.tensor_copy(o_buf, ps, engine="dve", name="evict")
        kb.dma_copy(result[cols_m, cols_n], o_buf, engine="dve", queue="dma2", name="store")
    return kb.program()


def without_waits_of(program: Program, name: str) -> Program:
    """``program`` with the deps of instruction ``name`` dropped (a forgotten wait)."""
    return program.map_instructions(lambda instr: replace(instr, deps=()) if instr.name == name else instr)


def run_child(args: list[str]) -> tuple[float, float, int, str, int]:
    """``(wall s, CPU s, peak RSS bytes, stdout, exit status)`` of one child process."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        child = subprocess.Popen(args, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(child.pid, 0)  # this child's rusage, not the max over all children
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        out.seek(0)
        err.seek(0)
        if child.returncode:
            sys.stderr.write(err.read())
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024, out.read(), child.returncode


def phases(path: str) -> None:
    """Where the time and memory of ``footprint`` go: each step of the command on the program
    at ``path`` (in this process: run it in a child), with its seconds and the peak RSS so far."""
    import resource

    from neuronsim.machine.formats.program_json import load_program
    from neuronsim.passes import ALL_PASSES, DEFAULT_PIPELINE, PassContext, parse_pipeline, run_pipeline
    from neuronsim.verify.own_races import own_races
    from neuronsim.verify.sync_counts import minimum_sync

    def step(name: str, fn):
        start = time.perf_counter()
        value = fn()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"  {name:<28} {time.perf_counter() - start:6.2f} s   peak RSS so far {peak:6.0f} MiB", flush=True)
        return value

    program = step("load", lambda: load_program(path))
    step("own races (given)", lambda: own_races(program))
    has_deps = any(instr.deps for instr, _ in program.instructions())
    ctx = PassContext()
    for p in parse_pipeline("dep-reduction" if has_deps else DEFAULT_PIPELINE, ALL_PASSES):
        program = step(f"pass {p.spec_string()}", lambda p=p, program=program: run_pipeline(program, [p], ctx))
    step("minimum", lambda: minimum_sync(program))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tiles", nargs=2, type=int, default=(62, 62), metavar=("M", "N"))
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--phases", action="store_true",
                        help="also time each step of the command (in a child process per run)")
    parser.add_argument("--phases-of", metavar="PROGRAM", help=argparse.SUPPRESS)  # the child's side
    parser.add_argument("--save", metavar="PROGRAM", help="write the kernel as built (no deps) here, run nothing")
    opts = parser.parse_args()
    if opts.phases_of:
        phases(opts.phases_of)
        return
    program = tiled_matmul(*opts.tiles, opts.k)
    if opts.save:
        save_program(program, opts.save)
        return
    cli = [sys.executable, "-c", "from neuronsim.verify.cli import main; main()"]
    with tempfile.TemporaryDirectory() as tmp:
        bare, compiled = os.path.join(tmp, "bare.json"), os.path.join(tmp, "compiled.json")
        save_program(program, bare)
        made = subprocess.run([*cli, "compile", bare, "-o", compiled], capture_output=True, text=True)
        if made.returncode:
            sys.exit(f"neuronsim compile failed: {made.stderr}")
        racy = os.path.join(tmp, "racy.json")
        save_program(without_waits_of(load_program(compiled), "load_l"), racy)
        print(f"tiled matmul, {opts.tiles[0]} x {opts.tiles[1]} output tiles, K = {opts.k} tiles: "
              f"{opts.tiles[0] * opts.tiles[1] * (3 * opts.k + 2):,} instances")
        print(f"{'run':<11} {'wall s':>7} {'CPU s':>7} {'peak RSS':>10}  {'stages':>6} {'waits':>7} "
              f"{'minimum':>7}  own races  goal (< {GOAL_SECONDS:.0f} s and < 1 GiB)")
        runs = (("deps none", bare), ("deps given", compiled), ("deps racy", racy))
        for label, path in runs:
            wall, cpu, rss, out, status = run_child([*cli, "footprint", path, "--no-simulate", "--json"])
            if status:
                sys.exit(f"{label}: neuronsim footprint exited {status}")
            doc = json.loads(out)
            last = doc["stages"][-1]
            own = doc["own_races"]
            races = (f"{own['total_races']:,}{'' if own.get('complete', True) else '+'}" if own["checked"] else "-")
            met = "met" if wall < GOAL_SECONDS and rss < GOAL_BYTES else "NOT met"
            print(f"{label:<11} {wall:>7.2f} {cpu:>7.2f} {rss / 2**20:>7.0f} MiB  {len(doc['stages']):>6} "
                  f"{last['waits']:>7,} {last['minimum']['waits']:>7,}  {races!s:>9}  {met}")
        for label, path in runs if opts.phases else ():
            print(f"{label}, step by step:", flush=True)
            subprocess.run([sys.executable, os.path.abspath(__file__), "--phases-of", path], check=True)


if __name__ == "__main__":
    main()
