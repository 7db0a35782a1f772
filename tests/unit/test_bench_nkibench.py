"""``bench/bench_nkibench.py`` on a checkout shaped like AccelOpt's (kernels, numpy references,
the profiler's CSV), made here from a kernel of our own: every row the script prints comes from
``neuronsim run``'s JSON, a kernel neuronsim refuses is a row saying why, and the ratio is the
simulated latency over the CSV's.  (The real benchmark is third-party and not in the repository.)"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from neuronsim_tests.bench_runs import run_bench

KERNEL = '''\
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def kernel(v1, scale):
    v2 = nl.ndarray((256, 64), dtype=np.float32, buffer=nl.shared_hbm)
    v3 = nl.ndarray((2, nl.par_dim(128), 64), dtype=np.float32, buffer=nl.sbuf)
    for i0 in nl.affine_range(2):
        v3[i0, nl.arange(128)[:, None], nl.arange(64)[None, :]] = nl.load(
            v1[128 * i0 + nl.arange(128)[:, None], nl.arange(64)[None, :]])
        nl.store(v2[128 * i0 + nl.arange(128)[:, None], nl.arange(64)[None, :]],
                 value=nl.multiply(v3[i0, nl.arange(128)[:, None], nl.arange(64)[None, :]], scale))
    return v2
'''
REFUSED = KERNEL.replace("nl.load(", "nl.no_such_call(")
#: An "optimized" kernel as AccelOpt's samples keep theirs: no imports (its profiling script
#: writes them first), the same scaling without the block array.
OPTIMIZED = '''\
@nki.jit
def kernel(v1, scale):
    v2 = nl.ndarray((256, 64), dtype=np.float32, buffer=nl.shared_hbm)
    for i0 in nl.affine_range(2):
        t = nl.load(v1[128 * i0 + nl.arange(128)[:, None], nl.arange(64)[None, :]])
        nl.store(v2[128 * i0 + nl.arange(128)[:, None], nl.arange(64)[None, :]], value=nl.multiply(t, scale))
    return v2
'''
REFERENCE = '''\
import numpy as np


def get_inputs():
    return [np.random.normal(size=(256, 64)).astype(np.float32), 2.0]


def forward(x, scale):
    return x * scale


def transform_to_nki_inputs(inputs):
    return inputs
'''


def _checkout(root: Path) -> Path:
    for folder in ("NKIBench/kernels", "NKIBench/reference", "experiments/full_complete_local"):
        (root / folder).mkdir(parents=True)
    rows = []
    for name, source, latency in (("scale_M256", KERNEL, 0.004), ("broken_M256", REFUSED, 0.002)):
        (root / "NKIBench/kernels" / f"{name}_0.py").write_text(source)
        (root / "NKIBench/reference" / f"{name}_numpy_1.py").write_text(REFERENCE)
        profile = {"latency": latency, "hbm_read_bytes": 65536, "hbm_write_bytes": 65536,
                   "scalar_engine_active_time_percent": 0.1, "vector_engine_active_time_percent": 0.5}
        rows.append({"problem": name, "task": f"/home/x/NKIBench/./reference/{name}_numpy_1.py",
                     "kernel": f"/home/x/NKIBench/./kernels/{name}_0.py", "profile": json.dumps(profile)})
    with open(root / "experiments/full_complete_local/profile_results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["problem", "task", "kernel", "profile"])
        writer.writeheader()
        writer.writerows(rows)
    return root


def _with_optimized(root: Path, measured_ms: float) -> Path:
    """A sample ``scale_optimized.py`` for ``scale_M256`` and the best-plan table measuring it
    (its case named with the words in another order, as AccelOpt's table names them)."""
    (root / "samples/nki").mkdir(parents=True)
    (root / "samples/nki/scale_optimized.py").write_text(OPTIMIZED)
    (root / "experiments/full_complete_local/results").mkdir()
    with open(root / "experiments/full_complete_local/results/1_best_plan_id.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["case_name", "kernel_metadata"])
        writer.writeheader()
        profile = {"latency": measured_ms, "scalar_engine_active_time_percent": 0.1,
                   "vector_engine_active_time_percent": 0.5}
        writer.writerow({"case_name": "M256_scale", "kernel_metadata": json.dumps(profile)})
    return root


def test_the_table_compares_the_simulated_run_with_the_profile(tmp_path):
    out = run_bench("bench_nkibench.py", "--accelopt", str(_checkout(tmp_path)), timeout=600).stdout
    lines = {line.split()[0]: line for line in out.splitlines() if line.split()}
    scale = lines["scale_M256"].split()
    simulated_ms, measured_ms, ratio = float(scale[1]), float(scale[2]), float(scale[3])
    assert measured_ms == 0.004 and simulated_ms > 0
    assert abs(ratio * measured_ms - simulated_ms) <= 0.0006  # the table's milliseconds have 3 decimals
    assert float(scale[4]) == 0.1  # DMA MB: a 64 KiB load and a 64 KiB store
    assert "refused" in lines["broken_M256"] and "no_such_call" in lines["broken_M256"]
    assert "simulated: 1 of 2" in out
    act, dve = (float(share.split("/")[0]) for share in scale[6:8])  # the simulated ACT / DVE active %
    close = abs(act - 10) <= 10 and abs(dve - 50) <= 10  # the profile's 10 % and 50 %
    assert f"ACT and DVE active shares both within 10 points of the measured ones: {int(close)} of 1" in out


def test_no_checkout_is_one_clear_line(tmp_path):
    done = run_bench("bench_nkibench.py", "--accelopt", str(tmp_path), check=False)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "profile_results.csv" in done.stderr


def test_an_optimized_sample_is_a_row_and_its_pair_is_ranked(tmp_path):
    out = run_bench("bench_nkibench.py", "--accelopt", str(_with_optimized(_checkout(tmp_path), 0.001)),
                    "--only", "scale", timeout=600).stdout
    rows = {}
    for line in out.splitlines():  # the table's rows (a pair's line starts with the same name)
        if line.split():
            rows.setdefault(line.split()[0], line.split())
    assert float(rows["scale_optimized"][2]) == 0.001 and rows["scale_optimized"][1] != "-"
    base, opt = (float(rows[name][3]) * float(rows[name][2]) for name in ("scale_M256", "scale_optimized"))
    pair = next(line for line in out.splitlines() if line.strip().startswith("scale_optimized") and "measured" in line)
    measured, simulated = (float(word.rstrip("x")) for word in pair.split() if word.endswith("x"))
    assert measured == 4.0 and abs(simulated - base / opt) <= 0.05 * simulated
    assert ("same order" in pair) == (simulated > 1) and "pairs in the measured order:" in out
