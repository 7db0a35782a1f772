"""``neuronsim run`` of a tiled matmul kernel with the BLAS library's default threads and with one.

Workload: the shipped legacy-API kernel ``scenarios/nki/matmul_tiled.py`` (PSUM accumulation
over K, 128x128xN tile products on PE) on ``lhsT[K, M]`` and ``rhs[K, N]`` in bf16, run end to
end by the installed console script (trace, findings, compile, race check, four simulated
interleavings with values, the comparison with the kernel's numpy reference), each in a fresh
process, three ways: with the machine's settings as they are (``NEURONSIM_BLAS_THREADS``
unset: neuronsim holds BLAS at one thread while it simulates), with
``NEURONSIM_BLAS_THREADS=1`` said outright, and with ``NEURONSIM_BLAS_THREADS=default``
(OpenBLAS left to its own threads, one per core: what the pinning saves).

Printed: the wall and CPU seconds of each run and two ratios to the one-thread run.  Issue
31's goal: the machine's default settings no more than 10 % slower than one thread (a ratio
of at most 1.10).

Usage::

    .venv/bin/python bench/bench_blas.py                     # K = M = 1024, N = 512
    .venv/bin/python bench/bench_blas.py --k 4096 --m 4096    # bigger: minutes
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

#: Issue 31: default BLAS settings at most this much slower than one thread.
GOAL_RATIO = 1.10


def _kernel() -> Path:
    import neuronsim.scenarios

    return Path(neuronsim.scenarios.__file__).resolve().parent / "nki" / "matmul_tiled.py"


def _inputs(folder: Path, k: int, m: int, n: int) -> Path:
    import ml_dtypes

    rng = np.random.default_rng(0)
    path = folder / "in.npz"
    np.savez(path, lhsT=rng.standard_normal((k, m)).astype(ml_dtypes.bfloat16),
             rhs=rng.standard_normal((k, n)).astype(ml_dtypes.bfloat16),
             result=np.zeros((m, n), ml_dtypes.bfloat16))
    return path


def _run(threads: str, kernel: Path, inputs: Path, folder: Path) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (the child's) and exit status of one ``neuronsim run``."""
    env = {k: v for k, v in os.environ.items() if k != "NEURONSIM_BLAS_THREADS"}
    if threads != "unset":
        env["NEURONSIM_BLAS_THREADS"] = threads
    command = [shutil.which("neuronsim") or str(Path(sys.executable).with_name("neuronsim")), "run",
               f"{kernel}::matmul_tiled", "--inputs", str(inputs), "--reference", f"{kernel}:reference",
               "--out", str(folder / f"out-{threads}")]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=folder, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"neuronsim run failed ({done.returncode}): {done.stdout[-2000:]}{done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--k", type=int, default=1024, help="contraction size (a multiple of 256)")
    parser.add_argument("--m", type=int, default=1024, help="output rows (a multiple of 128)")
    parser.add_argument("--n", type=int, default=512, help="output columns (at most 512)")
    args = parser.parse_args(argv)
    if args.k % 256 or args.m % 128 or not 0 < args.n <= 512:
        parser.error("--k must be a multiple of 256, --m of 128, --n in 1..512")
    kernel = _kernel()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        inputs = _inputs(folder, args.k, args.m, args.n)
        products = (args.m // 128) * (args.k // 128)
        print(f"neuronsim run {kernel.name}::matmul_tiled, {args.k}x{args.m}x{args.n} bf16: {products} tile "
              f"products of 128x128x{args.n}; machine: {os.cpu_count()} cores")
        figures = {}
        for threads in ("unset", "1", "default"):
            wall, cpu, _ = _run(threads, kernel, inputs, folder)
            figures[threads] = wall
            print(f"  NEURONSIM_BLAS_THREADS={threads:<8} {wall:8.2f} s wall, {cpu:8.2f} s CPU")
    ratio = figures["unset"] / figures["1"]
    verdict = "met" if ratio <= GOAL_RATIO else "NOT met"
    print(f"machine's defaults / one thread: {ratio:.2f}x (goal <= {GOAL_RATIO:.2f}x: {verdict})")
    print(f"BLAS's own threads / one thread: {figures['default'] / figures['1']:.2f}x (what the pinning saves)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
