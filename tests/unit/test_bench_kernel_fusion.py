"""``bench/bench_kernel_fusion.py`` on a checkout shaped like allenkchau/trainium-kernel-fusion's
(its three MLP kernels at their paths, a ``hw_design_summary_*.json``), made here from kernels of
our own: each roofline row is printed with the simulated latencies against the JSON's, the ratio
is simulated over measured, and the order of fused against baseline is judged.  (The real
repository is third-party and not in the repository.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neuronsim_tests.bench_runs import run_bench

HEADER = "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\n"
COPY = '''

@nki.jit
def {name}({params}):
    out = nl.ndarray(({rows}, 512), dtype={src}.dtype, buffer=nl.shared_hbm)
    for r in nl.affine_range({rows} // 128):
        nl.store(out[r * 128:(r + 1) * 128, :], value=nl.load({src}[r * 128:(r + 1) * 128, :]))
    return out
'''


def _checkout(root: Path, base_us: float, fused_us: float) -> Path:
    (root / "kernels" / "baseline").mkdir(parents=True)
    (root / "kernels" / "fused").mkdir(parents=True)
    (root / "profiling" / "reports").mkdir(parents=True)
    gemm = COPY.format(name="gemm_kernel", params="lhsT, rhs, bias", rows=256, src="rhs")
    gelu = COPY.format(name="gelu_kernel", params="y", rows=128, src="y")
    (root / "kernels" / "baseline" / "mlp_gemm.py").write_text(HEADER + gemm + gelu)
    fused = COPY.format(name="fused_mlp_pwl", params="lhsT, rhs, bias", rows=256, src="rhs")
    (root / "kernels" / "fused" / "mlp.py").write_text(HEADER + fused)
    row = {"dtype": "fp32", "M": 128, "K": 256, "N": 512, "baseline_us": base_us, "fused_us": fused_us}
    summary = {"hardware": {"target": "trn2"}, "roofline_fp32": [row], "roofline_bf16": []}
    (root / "profiling" / "reports" / "hw_design_summary_20260101T000000Z.json").write_text(json.dumps(summary))
    return root


@pytest.mark.parametrize("fused_faster", [True, False])
def test_each_row_is_simulated_over_measured_and_its_order_judged(tmp_path: Path, fused_faster: bool) -> None:
    # the fused kernel here is the GEMM alone, so it simulates faster than GEMM + GELU: the
    # measured order is kept when the JSON says fused is faster, and WRONG when it says not
    repo = _checkout(tmp_path, 10.0, 5.0 if fused_faster else 20.0)
    lines = run_bench("bench_kernel_fusion.py", "--repo", str(repo), timeout=300).stdout.splitlines()
    [row] = [line for line in lines if line.startswith("fp32 128x256x512")]
    _label, _shape, base, base_sim, base_ratio, fused, fused_sim, fused_ratio, order = row.split()
    assert (float(base), float(fused)) == (10.0, 5.0 if fused_faster else 20.0)
    assert float(base_ratio) == pytest.approx(float(base_sim) / float(base), abs=0.02)  # (both printed rounded)
    assert float(fused_ratio) == pytest.approx(float(fused_sim) / float(fused), abs=0.02)  # (both printed rounded)
    assert float(fused_sim) < float(base_sim)
    assert order == ("kept" if fused_faster else "WRONG")
    assert lines[-1].endswith(f"in the measured order: {int(fused_faster)} of 1")


def test_a_folder_without_the_study_is_refused(tmp_path: Path) -> None:
    done = run_bench("bench_kernel_fusion.py", "--repo", str(tmp_path), check=False)
    assert done.returncode == 2 and "hw_design_summary" in done.stderr
