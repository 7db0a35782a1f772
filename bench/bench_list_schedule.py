"""``list-schedule`` on a flattened traced kernel: the seconds the scheduler takes.

Workload: the fused-Mamba v3 tutorial kernel of ``scenarios/nki/published/mamba.py`` at 4096
channels, 16 states and a sequence of ``--seq`` columns, traced with the NKI frontend and
flattened with ``expand-scheduling-units`` (every loop unrolled: one block of every
instruction, the case where comparing every pair of nodes for conflicts would be quadratic).
``list-schedule`` is then timed alone, on the virtual tiles the frontend declares (before
allocation, as a compiler schedules).  The script uses only the public pass API, so the same
command times any version of the pass.

Printed: instructions in the block, the
scheduler's wall and CPU seconds (median of ``--repeat`` runs), and how many instructions
changed place.

Usage::

    .venv/bin/python bench/bench_list_schedule.py               # seq 2048: 23,681 instructions
    .venv/bin/python bench/bench_list_schedule.py --seq 512     # a quarter
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

from neuronsim.machine.nki import load_kernel, trace  # noqa: E402
from neuronsim.passes import PassContext, compile_program  # noqa: E402
from neuronsim.passes.list_schedule import ListSchedule  # noqa: E402

KERNEL = ROOT / "scenarios" / "nki" / "published" / "mamba.py"


def flattened(seq: int, channels: int = 4096, states: int = 16):
    """The traced and flattened Mamba v3 program (timing inputs: zeros)."""
    shapes = ((1, channels, seq), (1, channels, seq), (channels, states), (1, states, seq), (1, states, seq))
    traced = trace(load_kernel(f"{KERNEL}::mamba_v3"), *(np.zeros(s, np.float32) for s in shapes), machine="trn1")
    program, _ = compile_program(traced.program, "expand-scheduling-units")
    return program


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seq", type=int, default=2048, help="sequence length, a multiple of 512")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    program = flattened(args.seq)
    walls, cpus, moved = [], [], 0
    for _ in range(args.repeat):
        ctx = PassContext()
        wall, cpu = time.perf_counter(), time.process_time()
        ListSchedule().apply(program, ctx)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        moved = ctx.stats[ListSchedule.name].get("moved", 0)
    print(f"mamba v3, seq {args.seq}: {len(program.body):,} instructions in one block")
    print(f"list-schedule: {statistics.median(walls):.2f} s wall, {statistics.median(cpus):.2f} s CPU "
          f"(median of {args.repeat}); {moved:,} instructions changed place")
    return 0


if __name__ == "__main__":
    sys.exit(main())
