"""``neuronsim compile`` of one loop of three instructions against its trip count: linear.

A third probe of bad input found a 3-instruction program with a loop of 1e6 iterations (within
the default limits) compiling for 336 s: ``anti-deps`` grew faster than linearly.  Two causes,
both fixed: ``conflicts.needed_boxes`` compared the whole column of loop indices once per
distinct index (quadratic), and the happens-before walks' ``forget`` counted sequencers that
issue nothing in the horizon, so nothing was forgotten and every call walked every kept clock.

Each trip count is one ``neuronsim compile`` of the program in a child process; printed: CPU
seconds, peak resident size, and the CPU ratio to the previous trip count (2.0 is linear when the
counts double).

Usage: ``.venv/bin/python bench/bench_trip_count.py [TRIPS ...]`` (default 100000 200000 400000).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = shutil.which("neuronsim", path=os.path.dirname(sys.executable)) or "neuronsim"


def loop_program(trips: int) -> dict:
    """Load, exponentiate, store, ``trips`` times over one SBUF tile (the probe's program)."""
    def access(tensor: str) -> dict:
        return {"tensor": tensor}

    body = [
        {"name": "load", "engine": "sp", "op": "dma_copy", "queue": "dma0", "reads": [access("x")],
         "writes": [access("xs")]},
        {"name": "scale", "engine": "act", "op": "activation", "reads": [access("xs")], "writes": [access("xs")],
         "attrs": {"func": "exp", "scale": 0.5}},
        {"name": "store", "engine": "sp", "op": "dma_copy", "queue": "dma1", "reads": [access("xs")],
         "writes": [access("y")]},
    ]
    tensors = {"x": {"memory": "dram", "dtype": "float32", "shape": [128, 16], "address": 0, "role": "input"},
               "y": {"memory": "dram", "dtype": "float32", "shape": [128, 16], "address": 8192, "role": "output"},
               "xs": {"memory": "sbuf", "dtype": "float32", "shape": [128, 16], "partition": 0, "offset": 0}}
    return {"format": "neuronsim.program/1", "machine": "trn1", "tensors": tensors,
            "body": [{"loop": "k", "trip_count": trips, "body": body}]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trips", nargs="*", type=lambda a: int(float(a)), metavar="N",
                        help="trip counts (default 1e5 2e5 4e5)")
    trips = parser.parse_args(argv).trips or [100_000, 200_000, 400_000]
    previous = None
    with tempfile.TemporaryDirectory() as tmp:
        for n in trips:
            program = Path(tmp) / f"loop{n}.json"
            program.write_text(json.dumps(loop_program(n)))
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            done = subprocess.run([SCRIPT, "compile", str(program), "-o", str(Path(tmp) / "out.json")],
                                  capture_output=True, text=True, env=dict(os.environ))
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if done.returncode != 0:
                sys.exit(f"compile failed ({done.returncode}): {done.stderr[-2000:]}")
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            ratio = f", {cpu / previous:.2f}x the previous" if previous else ""
            print(f"trip count {n:,} ({3 * n:,} instances): {cpu:.2f} s CPU, peak {after.ru_maxrss / 1024:.0f} MB"
                  f"{ratio}")
            previous = cpu
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
