"""Task-level throughput: the passes, the race checker and the simulated runtime on 1e5 tasks,
and the ratio to the instruction-level pipeline on a program of as many accesses.

Two programs of about ``TASKS`` task instances (default 100,000):

* **loop-shaped**: the paged-attention decode of ``scenarios/tasks/paged_attention.py`` with
  64 sequences and as many KV blocks per sequence as make ``TASKS`` (3 tasks per block).
  Orchestration code is loops, so the dependence pass analyses a few statements whatever the
  trip counts (its time is printed per statement); everything after it works per instance;
* **straight-line**: a split-K GEMM written without loops (``TASKS / 5`` output tiles, each a
  fresh workspace, 4 ``matmul`` tasks writing its slices and one ``reduce`` into a tile of
  ``C``): every call is a statement the pass analyses, so this is the analysis at 1e5 tasks.

Stages, printed as seconds and task instances per second of one run:

* ``passes``: the task pipeline (derive-call-directions, auto-derive-task-dependencies,
  materialize-runtime-scopes, with the verifier after each; ``passes alone`` without it);
* ``static check``: the orchestrator's walk, the TensorMap edges and the race checker over the
  unrolled task graph of the compiled program (``neuronsim.verify.tasks.check.check_task_program``);
* ``simulate``: one seeded run on the simulated runtime (simpy: orchestrator and workers);
* ``trace check``: the race checker over that run's recorded edges.

Ratio: the instruction-level pipeline on a synthetic straight-line program
(``bench_racecheck.synthetic``, deps stripped) sized to as many accesses as the straight-line
task program: ``passes.compile_program`` against the task passes, ``check_program`` against the
static check, a timing-only ``simulate`` against the runtime simulation.  A ratio above 1
means the task level is the faster per access.

Worst case: a straight-line chain of calls updating one accumulator.  The seed keeps no last
writer (every earlier writer of an overlapping region becomes a dep), so call ``i`` gets ``i``
deps and the output alone is quadratic: the last table shows it.

Usage: ``python bench/bench_tasks.py [TASKS]`` (default 100000).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import time

from bench_racecheck import synthetic

from neuronsim.machine.sim.runtime import simulate_tasks
from neuronsim.machine.sim.simulator import simulate
from neuronsim.machine.tasks.task_builder import In, InOut, Out, TaskBuilder
from neuronsim.machine.tasks.ir import TaskProgram
from neuronsim.passes import compile_program
from neuronsim.passes.tasks import compile_tasks
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.strategies import strip_deps
from neuronsim.verify.tasks.check import check_task_program, check_task_trace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEQUENCES, SPLIT, TILE = 64, 4, 16


def _scenario():
    path = os.path.join(ROOT, "scenarios", "tasks", "paged_attention.py")
    spec = importlib.util.spec_from_file_location("paged_attention_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _timed(fn):
    gc.collect()
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def straight_line_gemm(tiles: int, split: int = SPLIT, t: int = TILE) -> TaskProgram:
    """``C = A @ B`` in ``tiles`` row tiles, split-K, unrolled: ``tiles * (split + 1)`` calls."""
    tb = TaskBuilder("gemm_straight_line", cores=8)
    mm = tb.kernel("matmul", In("a"), In("b"), Out("part"), returns="part", cost=6000)
    red = tb.kernel("reduce", In("parts"), Out("c"), returns="c", cost=900)
    a = tb.param("a", (tiles * t, split * t), "bfloat16")
    b = tb.param("b", (split * t, t), "bfloat16")
    c = tb.param("c", (tiles * t, t), "float32", direction="out")
    for i in range(tiles):
        parts = tb.create((split * t, t), "float32", name=f"parts{i}")
        for s in range(split):
            tb.submit(mm, [a[i * t:(i + 1) * t, s * t:(s + 1) * t], b[s * t:(s + 1) * t, :],
                           parts[s * t:(s + 1) * t, :]], name=f"mm{i}_{s}")
        tb.submit(red, [parts, c[i * t:(i + 1) * t, :]], name=f"reduce{i}")
    return tb.program()


def accumulator_chain(calls: int) -> TaskProgram:
    """The worst case: ``calls`` updates of one accumulator, each reading a row of ``x``."""
    tb = TaskBuilder("chain")
    add = tb.kernel("add", In("x"), InOut("acc"), returns="acc", cost=100)
    x, acc = tb.param("x", (calls, 8)), tb.param("acc", (1, 8), direction="inout")
    for i in range(calls):
        tb.submit(add, [x[i:i + 1, :], acc], name=f"add{i}")
    return tb.program()


def _stages(program: TaskProgram) -> tuple[dict[str, float], int, int, int]:
    """Seconds per stage, and the run's instances, accesses and edges (race-free, checked)."""
    compiled, t_passes = _timed(lambda: compile_tasks(program)[0])
    report, t_static = _timed(lambda: check_task_program(compiled, max_races=0))
    trace, t_sim = _timed(lambda: simulate_tasks(compiled, seed=0))
    traced, t_trace = _timed(lambda: check_task_trace(trace, max_races=0))
    if not (report.race_free and traced.race_free):
        raise SystemExit(f"{program.name}: races after the passes "
                         f"({report.total_races} static, {traced.total_races} traced)")
    accesses = sum(len(r.accesses) for r in trace.records)
    times = {"passes": t_passes, "static check": t_static, "simulate": t_sim, "trace check": t_trace}
    return times, report.tasks, accesses, report.edges


def _print_stages(times: dict[str, float], tasks: int, statements: int) -> None:
    for what, seconds in times.items():
        note = f"   ({statements:,} statements analysed)" if what == "passes" else ""
        print(f"  {what:<13} {seconds:8.3f} s  {tasks / seconds:12,.0f} tasks/s{note}")


def _statements(program: TaskProgram) -> int:
    return sum(1 for _ in program.calls())


def _instruction_program(accesses: int):
    """The synthetic instruction program with about ``accesses`` accesses (2.375 per instruction)."""
    n = max(1, round(accesses / 2.375))
    program = strip_deps(synthetic(n))
    have = sum(len(i.reads) + len(i.writes) for i, _ in program.instructions())
    n = max(1, round(n * accesses / have))
    return strip_deps(synthetic(n))


def main(tasks: int = 100_000) -> None:
    blocks = max(1, round((tasks / SEQUENCES - 1) / 3))
    loop_program = _scenario().build_tasks(batch=SEQUENCES, blocks_per_seq=blocks)
    times, n, accesses, edges = _stages(loop_program)
    print(f"loop-shaped: paged-attention decode, {SEQUENCES} sequences x {blocks} blocks = {n:,} task instances, "
          f"{accesses:,} accesses, {edges:,} edges")
    _print_stages(times, n, _statements(loop_program))

    tiles = max(1, tasks // (SPLIT + 1))
    program, t_build = _timed(lambda: straight_line_gemm(tiles))
    times, n, accesses, edges = _stages(program)
    _, t_unverified = _timed(lambda: compile_tasks(program, verify=False))
    print(f"straight-line: split-K GEMM, {tiles:,} tiles x ({SPLIT} matmul + 1 reduce) = {n:,} task instances, "
          f"{accesses:,} accesses, {edges:,} edges (built in {t_build:.2f} s)")
    _print_stages(times, n, _statements(program))
    print(f"  {'passes alone':<13} {t_unverified:8.3f} s  {n / t_unverified:12,.0f} tasks/s   "
          "(no validation between passes)")

    instr = _instruction_program(accesses)
    n_instr = sum(1 for _ in instr.instructions())
    n_access = sum(len(i.reads) + len(i.writes) for i, _ in instr.instructions())
    compiled, t_compile = _timed(lambda: compile_program(instr)[0])
    _, t_check = _timed(lambda: check_program(compiled))
    _, t_isim = _timed(lambda: simulate(compiled, seed=0, functional=False, validate=False))
    print(f"instruction level: synthetic straight-line program, {n_instr:,} instructions, {n_access:,} accesses")
    print(f"  {'stage':<28} {'instruction':>11} {'task':>9} {'ratio':>7}")
    for what, mine, theirs in (("passes / compile_program", times["passes"], t_compile),
                               ("static check / check_program", times["static check"], t_check),
                               ("simulate / simulate", times["simulate"], t_isim)):
        print(f"  {what:<28} {theirs:9.2f} s {mine:7.2f} s {theirs / mine:6.2f}x")
    total_task = times["passes"] + times["static check"] + times["simulate"]
    total_instr = t_compile + t_check + t_isim
    print(f"  {'all three':<28} {total_instr:9.2f} s {total_task:7.2f} s {total_instr / total_task:6.2f}x"
          "   (instruction seconds / task seconds, same accesses)")

    print("worst case: a straight-line chain updating one accumulator (call i gets i deps)")
    for calls in (250, 500, 1000, 2000):
        compiled, seconds = _timed(lambda calls=calls: compile_tasks(accumulator_chain(calls))[0])
        deps = sum(len(c.compiler_deps) for c, _ in compiled.calls())
        print(f"  {calls:>5} calls  {deps:>9,} deps  {seconds:7.3f} s  {calls / seconds:9,.0f} calls/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", nargs="?", type=lambda a: int(float(a)), default=100_000,
                        help="tasks (default 1e5)")
    main(parser.parse_args().tasks)
