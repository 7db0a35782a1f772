"""``neuronsim run`` of element-strided DMAs: what a footprint of one byte run an element costs.

Production kernels move tiles with an element stride (NxD-Inference's Boltz-2 triangular
multiplication: ``.ap(pattern=[[N*D, 128], [D, 128]])``; a plane ``x[:, :, d]`` of an
``(N, N, D)`` tensor is the same thing).  Such an access is 16,384 byte runs for a 128 x 128
fp32 tile, and the race check, the dependence builders, the sync footprint's minimum and the
NKI findings keep per-run state (docs/performance-notes.md 2.13 and 2.14).

Workload: an ``(N, N, D)`` fp32 tensor, each of the ``(N/128)^2 * D`` planes' tiles loaded with
its element stride, exponentiated on ACT and stored back with the same stride, in
``nl.affine_range`` loops (legacy API: the carried-value check replays them).  Each ``--planes``
value is one ``neuronsim run`` through the console script with a numpy reference; printed: the
DMAs, their byte runs, CPU and wall seconds of the child, its peak resident size and its stage
line.

Usage::

    .venv/bin/python bench/bench_strided.py                  # N 256, D 4 and 16
    .venv/bin/python bench/bench_strided.py --planes 4 16 64
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

KERNEL = '''\
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def strided(x):
    n, _, planes = x.shape
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for d in nl.affine_range(planes):
        for i in nl.affine_range(n // 128):
            for j in nl.affine_range(n // 128):
                t = nl.load(x[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128, d])
                nl.store(out[i * 128:(i + 1) * 128, j * 128:(j + 1) * 128, d], value=nl.exp(t))
    return out


def reference(x):
    return {"return0": np.exp(x)}
'''


def run_once(folder: Path, size: int, planes: int) -> None:
    np.savez(folder / "in.npz", x=np.random.default_rng(0).uniform(-1, 1, (size, size, planes)).astype(np.float32))
    command = [shutil.which("neuronsim") or str(Path(sys.executable).with_name("neuronsim")), "run",
               f"{folder / 'strided.py'}::strided", "--inputs", str(folder / "in.npz"), "--reference",
               f"{folder / 'strided.py'}:reference", "--out", str(folder / "out")]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=folder, env=dict(os.environ))
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"neuronsim run failed ({done.returncode}):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    tiles = (size // 128) ** 2 * planes
    stages = next((line for line in done.stdout.splitlines() if line.startswith("stages:")), "")
    print(f"N {size} D {planes}: {2 * tiles} strided DMAs of 16,384 runs ({2 * tiles * 16384:,} runs): "
          f"{cpu:.2f} s CPU, {wall:.2f} s wall, peak {after.ru_maxrss / 1024:.0f} MB\n  {stages}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=256, help="N (a multiple of 128)")
    parser.add_argument("--planes", type=int, nargs="+", default=[4, 16], help="D values, one run each")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "strided.py").write_text(KERNEL)
        for planes in args.planes:
            run_once(folder, args.size, planes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
