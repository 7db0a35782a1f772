"""Does a kernel's cost grow with its size, or faster?  Three stages that were quadratic on public
kernels at production shapes, each timed at a size and at twice it, in one run.

1. **device reads**: ``tests/nki/kernels/current_control.py::running_reads``, a Python loop in
   which every step reads a value from a tile (``nisa.scalar_load``) after more instructions
   were traced; a read runs the program traced so far on the inputs.  Its trace validated the
   whole program at every read: nki-library's cross-entropy (3,840 instructions, 1,024 reads)
   traced in 19 s, 85 % of it that validation.
2. **findings over many tensors**: a tiled add whose tiles the kernel places itself (two SBUF
   tiles a row tile, on two slots in turn), whose NKI findings (``nki_findings``) sweep every
   such tile's live range; the sweep looked each tensor up in a list (nki-library's
   attention_cte at 45 k tensors: 9.9 of its 13.7 s).

3. **while_loop iterations**: ``current_control.py::count_down``, an ``nl.while_loop`` whose
   body loads its condition register from a tile each iteration (the page's own pattern): a
   device read per iteration.  Each read copied every name traced so far (the builder's
   trial) and compared every node run before: 12,000 iterations traced in 31 s, 70,000 did
   not finish in 300 s.
4. **a tile per step**: ``current_control.py::tile_per_step``, a Python loop whose every step
   reads an index on the device and copies a 16 KiB row of ``x`` into a tile declared in the
   step.  The reader gave every tile bytes of its own, so its memory grew with the steps, not
   with the few tiles the kernel holds at once (nki-library's find_nonzero_indices at 65,536
   rows: 9.1 GB).  Printed besides: the bytes of the reader's memory at N and 2N steps (1.0
   when bounded, 2.0 when every tile keeps its bytes).

Printed per workload: the seconds at N and at 2N (CPU time of this process) and their ratio;
linear growth is 2.0, quadratic 4.0.

Usage::

    .venv/bin/python bench/bench_trace_scaling.py          # 400 reads, 8,000 row tiles, 3,000 iterations, 200 steps
    .venv/bin/python bench/bench_trace_scaling.py --reads 800 --tiles 16000 --iterations 6000 --steps 400
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CONTROL = ROOT / "tests" / "nki" / "kernels" / "current_control.py"


def _cpu(fn) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def device_reads(reads: int) -> float:
    """CPU seconds to trace ``running_reads`` with ``reads`` reads."""
    import neuronsim.verify.nki  # noqa: F401  (registers the reader of device values)
    from neuronsim.machine.nki import load_kernel, trace

    kernel = load_kernel(f"{CONTROL}::running_reads")
    vals = np.arange(1, reads + 1, dtype=np.int32).reshape(1, reads)
    return _cpu(lambda: trace(kernel, vals, reads=reads))


def while_iterations(iterations: int) -> float:
    """CPU seconds to trace ``count_down`` looping ``iterations`` times."""
    import neuronsim.verify.nki  # noqa: F401  (registers the reader of device values)
    from neuronsim.machine.nki import load_kernel, trace

    kernel = load_kernel(f"{CONTROL}::count_down")
    val, count = np.ones((1, 1), np.float32), np.full((1, 1), iterations, np.int32)
    return _cpu(lambda: trace(kernel, val, count))


def tile_steps(steps: int) -> float:
    """CPU seconds to trace ``tile_per_step`` over ``steps`` steps (the reader's memory after it
    in :data:`READER_BYTES`)."""
    import neuronsim.verify.nki  # noqa: F401  (registers the reader of device values)
    from neuronsim.machine.nki import load_kernel, trace
    from neuronsim.verify.nki import probe

    kernel = load_kernel(f"{CONTROL}::tile_per_step")
    x = np.random.default_rng(0).standard_normal((8, 128, 4096)).astype(np.float32)
    which = (np.arange(steps, dtype=np.int32) % 8).reshape(steps, 1)
    seconds = _cpu(lambda: trace(kernel, x, which))
    READER_BYTES.append(sum(space.nbytes for space in probe._LAST[0].memory.spaces))
    return seconds


READER_BYTES: list[int] = []


#: A tiled add whose tiles the kernel places itself (``address=``), two slots taken in turn: the
#: clobber check sweeps the live range of every one of them.
PLACED_ADD = '''\
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def placed_add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in range(a.shape[0] // 128):
        ta = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf, address=(0, (i % 2) * 1024))
        tb = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf, address=(0, 4096 + (i % 2) * 1024))
        nisa.dma_copy(dst=ta, src=a[i * 128:(i + 1) * 128, :])
        nisa.dma_copy(dst=tb, src=b[i * 128:(i + 1) * 128, :])
        nisa.tensor_tensor(dst=ta, data1=ta, data2=tb, op=nl.add)
        nisa.dma_copy(dst=out[i * 128:(i + 1) * 128, :], src=ta)
    return out
'''


def findings_over_tiles(tiles: int) -> float:
    """CPU seconds of the NKI findings of :data:`PLACED_ADD` over ``tiles`` row tiles (traced first)."""
    from neuronsim.machine.nki import load_kernel, trace
    from neuronsim.verify.nki.findings import nki_findings

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "placed_add.py"
        path.write_text(PLACED_ADD)
        a = np.ones((128 * tiles, 2), np.float32)
        traced = trace(load_kernel(f"{path}::placed_add"), a, a)
    return _cpu(lambda: nki_findings(traced.program))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reads", type=int, default=400, help="device reads of the first workload (then twice)")
    parser.add_argument("--tiles", type=int, default=8000, help="row tiles of the second workload (then twice)")
    parser.add_argument("--iterations", type=int, default=3000, help="while_loop iterations (then twice)")
    parser.add_argument("--steps", type=int, default=200, help="steps of the tile-per-step workload (then twice)")
    args = parser.parse_args(argv)
    for name, fn, n in (("device reads", device_reads, args.reads),
                        ("findings over tiles", findings_over_tiles, args.tiles),
                        ("while_loop iterations", while_iterations, args.iterations),
                        ("a tile per step", tile_steps, args.steps)):
        small, large = fn(n), fn(2 * n)
        print(f"{name:21s} N={n:>6,}: {small:7.2f} s   2N: {large:7.2f} s   ratio {large / small:4.2f} "
              "(linear 2.0, quadratic 4.0)")
    small, large = READER_BYTES
    print(f"{'  reader memory':21s} N={args.steps:>6,}: {small / 2**20:7.1f} MiB 2N: {large / 2**20:7.1f} MiB ratio "
          f"{large / small:4.2f} (bounded 1.0, a tile's bytes each 2.0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
