"""``neuronsim loops`` against the number of loops: near-linear since the program index.

Each loop program has N empty sibling loops (trip count 2; issue 27 part 2 had 10,000 hang past
60 s, and 1,000 time out, while ``check`` of the same file was instant).  Printed per N: the
wall and CPU time of the whole command (interpreter start and imports included) in a child
process, median of REPEATS runs, the verdict lines it printed, and the CPU time per loop above
the smallest N's (what stays linear).  A dense loop (one loop of K instructions all on one
tensor: K * K access pairs) shows the ``--max-pairs`` guard refusing up front.

Usage: ``.venv/bin/python bench/bench_loops.py [N ...] [--repeats R]`` (defaults 1000 10000, 3).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = shutil.which("neuronsim", path=os.path.dirname(sys.executable)) or "neuronsim"


def empty_loops(n: int) -> dict:
    return {"format": "neuronsim.program/1", "machine": "trn1", "tensors": {},
            "body": [{"loop": f"L{i}", "trip_count": 2, "body": []} for i in range(n)]}


def dense_loop(k: int) -> dict:
    access = {"tensor": "t", "pattern": [[1, 16]], "per_iteration": {"L": 16}}
    body = [{"name": f"i{j}", "engine": "dve", "op": "tensor_copy", "reads": [access], "writes": [access]}
            for j in range(k)]
    return {"format": "neuronsim.program/1", "machine": "trn1",
            "tensors": {"t": {"memory": "sbuf", "dtype": "float32", "shape": [128, 64], "partition": 0, "offset": 0}},
            "body": [{"loop": "L", "trip_count": 4, "body": body}]}


def timed(args: list[str]) -> tuple[float, float, int, str]:
    """Wall seconds, CPU seconds of the child, exit status, standard output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([SCRIPT, *args], capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode, done.stdout + done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        rows = []
        for n in sorted(args.sizes):
            path = Path(folder) / f"loops{n}.json"
            path.write_text(json.dumps(empty_loops(n)))
            runs = [timed(["loops", str(path)]) for _ in range(args.repeats)]
            verdicts = sum(1 for line in runs[0][3].splitlines() if line.startswith("  L"))
            rows.append((n, statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), verdicts,
                         runs[0][2]))
        print(f"{'loops':>7} {'wall s':>8} {'cpu s':>8} {'verdicts':>9} exit  cpu ms per loop above {rows[0][0]:,}")
        for n, wall, cpu, verdicts, status in rows:
            slope = (cpu - rows[0][2]) / (n - rows[0][0]) * 1e3 if n > rows[0][0] else float("nan")
            print(f"{n:>7,} {wall:>8.2f} {cpu:>8.2f} {verdicts:>9,} {status:>4}  {slope:.3f}")
        dense = Path(folder) / "dense.json"
        dense.write_text(json.dumps(dense_loop(300)))
        wall, cpu, status, out = timed(["loops", str(dense)])
        print(f"one loop of 300 instructions on one tensor: exit {status} in {wall:.2f} s wall, {cpu:.2f} s cpu: "
              f"{out.strip().splitlines()[-1]}")


if __name__ == "__main__":
    main()
