"""How fast the NKI frontend traces: instructions per second of a current-API kernel whose
unrolled loop emits four instructions per iteration (load, exp, add, store).

The issue's goal is a 1e5-instruction kernel traced in under 10 s; ``bench/bench_nki.py``
(the frontend's full benchmark) prints it beside the compile time.  This one isolates the
tracer and also reports the share of the time spent validating the traced program.

Usage::

    .venv/bin/python bench/bench_nki_trace.py                 # 1e5 instructions
    .venv/bin/python bench/bench_nki_trace.py --tiles 2500    # 1e4
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import neuronsim.machine.build.builder as builder  # noqa: E402
from neuronsim.machine.nki import standins, trace  # noqa: E402


def kernel_source():
    """The benchmark kernel, written against the stand-in modules."""
    with standins():
        import nki.language as nl

        def exp_add(x):
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            for i in nl.affine_range(x.shape[0] // 128):
                tile = nl.load(x[i * 128:(i + 1) * 128, :])
                nl.store(out[i * 128:(i + 1) * 128, :], nl.add(nl.exp(tile), tile))
            return out

    return exp_add


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiles", type=int, default=25000, help="loop iterations (4 instructions each)")
    args = parser.parse_args()
    validating = []
    program = builder.KernelBuilder.program

    def timed_program(self):
        start = time.process_time()
        try:
            return program(self)
        finally:
            validating.append(time.process_time() - start)

    builder.KernelBuilder.program = timed_program
    x = np.zeros((128 * args.tiles, 8), np.float32)
    wall, cpu = time.perf_counter(), time.process_time()
    traced = trace(kernel_source(), x)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    count = sum(1 for _ in traced.program.instructions())
    print(f"instructions      {count}")
    print(f"trace wall        {wall:.2f} s")
    print(f"trace cpu         {cpu:.2f} s  ({count / cpu:.0f} instructions/s)")
    print(f"of which validate {validating[-1]:.2f} s cpu")


if __name__ == "__main__":
    main()
