"""The size guard: how fast it refuses a huge program, and the per-instance memory it assumes.

1. A valid loop of 1e9 iterations (three instructions: 3e9 instances) is refused by
   ``neuronsim check`` before any work.  Printed: the time of loading the program and
   estimating its size in process, and the wall time of the whole command (interpreter start
   and imports included; the goal is under 2 s), median of REPEATS runs.
2. Peak memory per instance of ``check`` and of ``simulate`` (one and four runs) on a loop of
   N iterations, each command in its own process (``ru_maxrss`` of the child), less the
   peak of ``show`` on the same program (the interpreter, imports and the loaded program).
   These are the figures the constants of :mod:`neuronsim.machine.order.work_estimate` round up.
3. Peak memory of compiling a loop flat (``alloc``, ``schedule``, ``dma-place``, ``dep-opt``, in a
   process of its own that loads the program and runs them) per instance, its DRAM accesses
   whole rows (a run each), and per byte run more when each access is a column block instead
   (a run a row, moving with the loop), each less the peak of the same process loading it:
   the figures ``FLAT_BYTES_PER_INSTANCE`` and ``FLAT_BYTES_PER_RUN`` of
   :mod:`neuronsim.passes.schedule` round up; and the dependence construction of the column
   blocks, loops kept, per byte run of an access instance beyond its first
   (``BYTES_PER_INSTANCE_RUN`` of the work estimate).

Usage: ``.venv/bin/python bench/bench_guard.py [N] [REPEATS]`` (defaults 50000, 3).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from neuronsim.machine.formats.program_json import load_program  # noqa: E402
from neuronsim.passes.runner import CONSTRUCTION_PIPELINE  # noqa: E402
from neuronsim.passes.schedule import FLAT_BYTES_PER_INSTANCE, FLAT_BYTES_PER_RUN  # noqa: E402
from neuronsim.machine.order.work_estimate import (  # noqa: E402
    BYTES_PER_INSTANCE,
    BYTES_PER_INSTANCE_RUN,
    BYTES_PER_PLANNED_INSTANCE,
    BYTES_PER_RUN_INSTANCE,
    estimate_size,
)

SCRIPT = shutil.which("neuronsim", path=os.path.dirname(sys.executable)) or "neuronsim"


def loop_program(trips: int) -> dict:
    """A race-free double-buffered copy through SBUF in one loop of ``trips`` iterations."""
    return {
        "format": "neuronsim.program/1", "machine": "trn1",
        "tensors": {"x": {"memory": "dram", "dtype": "float32", "shape": [128, 16], "address": 0, "role": "input"},
                    "y": {"memory": "dram", "dtype": "float32", "shape": [128, 16], "address": 8192, "role": "output"},
                    "xs": {"memory": "sbuf", "dtype": "float32", "shape": [128, 16], "partition": 0, "offset": 0}},
        "body": [{"loop": "k", "trip_count": trips, "body": [
            {"name": "load", "engine": "sp", "op": "dma_copy", "queue": "dma0", "reads": [{"tensor": "x"}],
             "writes": [{"tensor": "xs"}], "deps": [{"on": "store", "kind": "anti", "loop_carried": True}]},
            {"name": "scale", "engine": "act", "op": "activation", "reads": [{"tensor": "xs"}],
             "writes": [{"tensor": "xs"}],
             "attrs": {"func": "exp"}, "deps": [{"on": "load", "kind": "flow"}]},
            {"name": "store", "engine": "sp", "op": "dma_copy", "queue": "dma1", "reads": [{"tensor": "xs"}],
             "writes": [{"tensor": "y"}], "deps": [{"on": "scale", "kind": "flow"}]}]}],
    }


#: The pipeline of part 3: a traced kernel's, the schedule flat whatever its size.
FLAT_PIPELINE = "alloc,schedule{max_instances=100000000,max_flat_memory=1000000000000},dma-place,dep-opt{memsets=false}"
#: The process of part 3: load the program (argv[1]) and run the pipeline (argv[2]) on it, if any.
PASSES_ONLY = ("import sys\nfrom neuronsim.machine.formats.program_json import load_program\n"
               "from neuronsim.passes.runner import run_pipeline\nprogram = load_program(sys.argv[1])\n"
               "if sys.argv[2]:\n    run_pipeline(program, sys.argv[2])\n")


def streaming_program(trips: int, rows: int) -> dict:
    """A loop of ``trips`` iterations loading a ``[rows, 8]`` fp32 block of ``x``, applying exp
    and storing it to ``y``: whole rows of an ``[rows * trips, 8]`` tensor (one byte run an
    access) when ``rows`` is 128 and the partitions move, or the columns ``8 i .. 8 i + 8`` of a
    ``[128, 8 * trips]`` tensor (a run a row) when ``rows`` is 0."""
    if rows:
        shape, block = [rows * trips, 8], {"pattern": [[8, rows], [1, 8]], "per_iteration": {"k": rows * 8}}
    else:
        shape, block = [128, 8 * trips], {"pattern": [[8 * trips, 128], [1, 8]], "per_iteration": {"k": 8}}
    return {
        "format": "neuronsim.program/1", "machine": "trn1",
        "tensors": {"x": {"memory": "dram", "dtype": "float32", "shape": shape, "role": "input"},
                    "y": {"memory": "dram", "dtype": "float32", "shape": shape, "role": "output"},
                    "xs": {"memory": "sbuf", "dtype": "float32", "shape": [128, 8]}},
        "body": [{"loop": "k", "trip_count": trips, "body": [
            {"name": "load", "engine": "sp", "op": "dma_copy", "reads": [{"tensor": "x", **block}],
             "writes": [{"tensor": "xs"}]},
            {"name": "scale", "engine": "act", "op": "activation", "reads": [{"tensor": "xs"}],
             "writes": [{"tensor": "xs"}], "attrs": {"func": "exp"}},
            {"name": "store", "engine": "sp", "op": "dma_copy", "reads": [{"tensor": "xs"}],
             "writes": [{"tensor": "y", **block}]}]}],
    }


def peak_rss(args: list[str], program: str = SCRIPT) -> tuple[int, float]:
    """Peak resident bytes and wall seconds of one command (of ``program``) in a fresh process."""
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child measures only itself: exec the command, its output discarded
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.execv(program, [program, *args])
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{' '.join(args)} failed")
    return usage.ru_maxrss * 1024, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trips", nargs="?", type=int, default=50_000, help="the loop's trips (default 50000)")
    parser.add_argument("repeats", nargs="?", type=int, default=3, help="runs of each (default 3)")
    args = parser.parse_args()
    trips, repeats = args.trips, args.repeats
    folder = Path(tempfile.mkdtemp())
    huge = folder / "loop1e9.json"
    huge.write_text(json.dumps(loop_program(10**9)))
    in_process = []
    for _ in range(repeats):
        started = time.perf_counter()
        size = estimate_size(load_program(str(huge)))
        in_process.append(time.perf_counter() - started)
    whole = []
    for _ in range(repeats):
        started = time.perf_counter()
        run = subprocess.run([SCRIPT, "check", str(huge)], capture_output=True, text=True)
        whole.append(time.perf_counter() - started)
        assert run.returncode == 2 and "--max-instances" in run.stderr, run.stderr
    print(f"loop of 1e9 iterations ({size.instances:,} instances): load + estimate "
          f"{statistics.median(in_process) * 1000:.2f} ms in process; `neuronsim check` exits 2 in "
          f"{statistics.median(whole):.2f} s (median of {repeats}; goal under 2 s)")

    program = folder / "loop.json"
    program.write_text(json.dumps(loop_program(trips)))
    instances = 3 * trips
    base, _ = peak_rss(["show", str(program)])
    print(f"loop of {trips:,} iterations ({instances:,} instances); baseline (show) peak RSS {base / 2**20:.0f} MiB")
    for label, args, runs in (("check", ["check"], 0), ("simulate, 1 run", ["simulate"], 1),
                              ("simulate, 4 runs", ["simulate", "--seeds", "3"], 4)):
        peak, seconds = peak_rss([args[0], str(program), *args[1:]])
        per = (peak - base) / instances
        assumed = BYTES_PER_INSTANCE + (BYTES_PER_PLANNED_INSTANCE + BYTES_PER_RUN_INSTANCE * runs if runs else 0)
        print(f"  {label:<17} peak {peak / 2**20:6.0f} MiB in {seconds:5.1f} s: {per:6.0f} B per instance "
              f"(the guard assumes {assumed})")

    flat = {}
    for label, rows in (("rows", 128), ("columns", 0)):
        path = folder / f"stream_{label}.json"
        path.write_text(json.dumps(streaming_program(trips, rows)))
        base, _ = peak_rss(["-c", PASSES_ONLY, str(path), ""], sys.executable)
        peak, seconds = peak_rss(["-c", PASSES_ONLY, str(path), FLAT_PIPELINE], sys.executable)
        flat[label] = peak - base
        print(f"  passes flat, {label:<7} peak {peak / 2**20:6.0f} MiB in {seconds:5.1f} s")
    runs = 2 * trips * (128 - 1)  # the column blocks' runs beyond the row blocks' one an access
    columns = folder / "stream_columns.json"
    base, _ = peak_rss(["-c", PASSES_ONLY, str(columns), ""], sys.executable)
    peak, seconds = peak_rss(["-c", PASSES_ONLY, str(columns), CONSTRUCTION_PIPELINE], sys.executable)
    size = estimate_size(load_program(str(columns)))
    per_event = (peak - base - size.instances * BYTES_PER_INSTANCE) / size.instance_runs
    print(f"  deps, columns    peak {peak / 2**20:6.0f} MiB in {seconds:5.1f} s: {per_event:6.0f} B per byte run of an "
          f"access instance beyond its first, over {BYTES_PER_INSTANCE} an instance (the guard assumes "
          f"{BYTES_PER_INSTANCE_RUN})")
    per_instance, per_run = flat["rows"] / instances, (flat["columns"] - flat["rows"]) / runs
    print(f"  flat schedule: {per_instance:6.0f} B per instance (schedule assumes {FLAT_BYTES_PER_INSTANCE}), "
          f"{per_run:6.0f} B per moving byte run (assumes {FLAT_BYTES_PER_RUN})")


if __name__ == "__main__":
    main()
