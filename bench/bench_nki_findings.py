"""The NKI findings' cost on a kernel of many instances: time and memory.

Workload: ``tests/nki/kernels/findings_scale.py::many_sums``, an ``affine_range`` loop of
``--outer`` iterations around a ``sequential_range`` loop of ``--inner`` ones, ``+=`` into one
SBUF tile (``outer * inner * 2 + 2`` instances; the defaults give 32,770, the size of a
student's kernel whose findings once outgrew 24 GB).  The kernel is traced, then
:func:`neuronsim.verify.nki.findings.nki_findings` runs under ``tracemalloc``.

Printed: instances, the findings' CPU seconds, the peak of memory allocated while they ran
(``tracemalloc``: Python objects and numpy arrays), the process's peak resident size
(``resource.getrusage``, the trace included) and the findings found.

Usage::

    .venv/bin/python bench/bench_nki_findings.py                   # 8 x 2048: 32,770 instances
    .venv/bin/python bench/bench_nki_findings.py --inner 8192      # four times as many
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNEL = ROOT / "tests" / "nki" / "kernels" / "findings_scale.py"


def measure(outer: int, inner: int) -> dict:
    """Trace the kernel and time its findings; the figures printed (module doc)."""
    import importlib.util

    from neuronsim.machine.nki import load_kernel, standins, trace
    from neuronsim.machine.order.stream import stream_of
    from neuronsim.verify.nki.findings import nki_findings

    spec = importlib.util.spec_from_file_location("findings_scale", KERNEL)
    module = importlib.util.module_from_spec(spec)
    with standins():
        spec.loader.exec_module(module)
    traced = trace(load_kernel(f"{KERNEL}::many_sums"), **module.inputs(outer, inner), outer=outer, inner=inner)
    instances = len(stream_of(traced.program))
    tracemalloc.start()
    start = time.process_time()
    found = nki_findings(traced.program)
    seconds = time.process_time() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux
    return {"instances": instances, "seconds": seconds, "peak_bytes": peak, "max_rss_bytes": rss,
            "findings": [f.kind for f in found]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outer", type=int, default=8, help="iterations of the affine loop")
    parser.add_argument("--inner", type=int, default=2048, help="iterations of the sequential loop inside it")
    args = parser.parse_args(argv)
    got = measure(args.outer, args.inner)
    print(f"instances {got['instances']:,}; findings {got['seconds']:.1f} s CPU (under tracemalloc), "
          f"peak allocated {got['peak_bytes'] / 2**20:.1f} MiB, process peak resident "
          f"{got['max_rss_bytes'] / 2**20:.0f} MiB; found {', '.join(got['findings']) or 'nothing'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
