"""A third party's trn2 latencies against the model: allenkchau/trainium-kernel-fusion's MLP study.

That repository (a course project: a tiled GEMM + bias, GELU and their fusion in NKI, legacy
API) publishes ``nki.benchmark`` p50 latencies measured on trn2 in
``profiling/reports/hw_design_summary_*.json``: per shape and dtype, ``baseline_us`` (the GEMM
kernel and the GELU kernel, two launches) and ``fused_us`` (``fused_mlp_pwl``, one).  This
script traces the repository's own kernels at each ``roofline_*`` shape, compiles them with the
pipeline of traced kernels, simulates each once on ``trn2`` (nominal, timing only) and prints
the simulated latencies beside the measured ones: baseline as the sum of the two kernels'
makespans (no launch cost is modelled), the ratios, how many land within 15 %, the median
|ln(simulated / measured)|, and whether the fused kernel comes out faster than the baseline
where the measurement says so.

None of these figures set a model constant.  docs/timing.md ("Where descriptors are made")
quotes them as the check of trn2's DMA pacing, which two tutorial profiles decided.  The
repository is third-party code: give its checkout, it is not copied here.

Usage::

    .venv/bin/python bench/bench_kernel_fusion.py --repo DIR              # every roofline shape
    .venv/bin/python bench/bench_kernel_fusion.py --repo DIR --only bf16  # rows whose label holds TEXT
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

import ml_dtypes
import numpy as np

from neuronsim.machine.nki import load_kernel, trace
from neuronsim.machine.sim.simulator import simulate
from neuronsim.passes import compile_program
from neuronsim.passes.schedule import TRACED_PIPELINE

TOLERANCE = 0.15
KERNELS = {"gemm": "kernels/baseline/mlp_gemm.py::gemm_kernel", "gelu": "kernels/baseline/mlp_gemm.py::gelu_kernel",
           "fused": "kernels/fused/mlp.py::fused_mlp_pwl"}


def makespan_us(repo: Path, which: str, arrays: list[np.ndarray]) -> float:
    """One kernel of the study traced, compiled and simulated once on trn2."""
    traced = trace(load_kernel(str(repo / KERNELS[which])), *arrays, machine="trn2")
    compiled = compile_program(traced.program, f"{TRACED_PIPELINE},dep-reduction")[0]
    return simulate(compiled, functional=False).runs[0].trace.makespan / 1e3


def rows(summary: dict) -> list[tuple[str, int, int, int, float, float]]:
    """``(dtype, M, K, N, baseline_us, fused_us)`` of every roofline row."""
    return [(r["dtype"], r["M"], r["K"], r["N"], float(r["baseline_us"]), float(r["fused_us"]))
            for key in ("roofline_fp32", "roofline_bf16") for r in summary.get(key, [])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", required=True, help="a checkout of allenkchau/trainium-kernel-fusion")
    parser.add_argument("--only", default="", metavar="TEXT", help="rows whose label (e.g. 'bf16 2048') holds TEXT")
    args = parser.parse_args(argv)
    repo = Path(args.repo)
    reports = sorted((repo / "profiling" / "reports").glob("hw_design_summary_*.json"))
    if not reports or not all((repo / k.split("::")[0]).is_file() for k in KERNELS.values()):
        print(f"--repo: {repo} holds no profiling/reports/hw_design_summary_*.json or not the MLP kernels",
              file=sys.stderr)
        return 2
    summary = json.loads(reports[-1].read_text())
    print(f"measured: {reports[-1].name} ({summary.get('hardware', {}).get('target', '?')}); simulated: trn2, "
          f"{TRACED_PIPELINE},dep-reduction, nominal, timing only")
    print(f"{'shape':22} {'base meas':>10} {'base sim':>10} {'ratio':>6} {'fused meas':>11} {'fused sim':>10} "
          f"{'ratio':>6}  order")
    ratios, kept, pairs = [], 0, 0
    for dtype, m, k, n, base_us, fused_us in rows(summary):
        label = f"{dtype} {m}x{k}x{n}"
        if args.only not in label:
            continue
        cast = ml_dtypes.bfloat16 if dtype == "bf16" else np.float32
        lhsT, rhs, bias = (np.zeros(s, cast) for s in ((k, m), (k, n), (1, n)))
        gemm = makespan_us(repo, "gemm", [lhsT, rhs, bias])
        gelu = makespan_us(repo, "gelu", [np.zeros((m, n), cast)])
        fused = makespan_us(repo, "fused", [lhsT, rhs, bias])
        base_ratio, fused_ratio = (gemm + gelu) / base_us, fused / fused_us
        ratios += [base_ratio, fused_ratio]
        same = (fused < gemm + gelu) == (fused_us < base_us)
        kept, pairs = kept + same, pairs + 1
        print(f"{label:22} {base_us:10,.0f} {gemm + gelu:10,.1f} {base_ratio:6.2f} {fused_us:11,.0f} {fused:10,.1f} "
              f"{fused_ratio:6.2f}  {'kept' if same else 'WRONG'}", flush=True)
    if not ratios:
        print("no row matched --only", file=sys.stderr)
        return 2
    within = sum(abs(r - 1.0) <= TOLERANCE for r in ratios)
    median = statistics.median(abs(math.log(r)) for r in ratios)
    print(f"\n{within} of {len(ratios)} latencies within 15 %; median |ln(sim/measured)| {median:.3f}; "
          f"fused against baseline in the measured order: {kept} of {pairs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
