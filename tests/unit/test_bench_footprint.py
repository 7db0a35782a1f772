"""``bench/bench_footprint.py``: its kernel is a real tiled matmul (the numpy product, the
rotating slots and banks ordered by the default pipeline at the minimum).  The script runs as
its user runs it (``--save`` writes the kernel it measures); timings are printed by the
script, never asserted here."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np

from neuronsim.machine.formats.program_json import load_program
from neuronsim.machine.ir.dtypes import numpy_dtype
from neuronsim.machine.sim.simulator import simulate
from neuronsim.passes import DEFAULT_PIPELINE, compile_program
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.sync_counts import sync_report
from neuronsim_tests import ROOT
from neuronsim_tests.bench_runs import run_bench


def test_doctests():
    done = subprocess.run([sys.executable, "-m", "doctest", "-v", "bench/bench_footprint.py"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    passed = re.search(r"(\d+) passed and 0 failed", done.stdout)
    assert passed and int(passed.group(1)) > 0, done.stdout[-500:]


def test_the_kernel_computes_the_product_and_compiles_to_the_minimum(tmp_path):
    path = tmp_path / "tiled_matmul.json"
    run_bench("bench_footprint.py", "--tiles", "2", "3", "--k", "3", "--save", str(path), timeout=120)
    program = load_program(str(path))
    compiled, _ = compile_program(program, DEFAULT_PIPELINE)
    assert check_program(compiled).race_free
    (stage,) = sync_report([("compiled", compiled)], simulate=False).stages
    assert stage.figures.waits == stage.minimum.figures.waits > 0
    bf16 = numpy_dtype("bfloat16")
    rng = np.random.default_rng(0)
    lhs_t = rng.uniform(-1, 1, program.tensors["lhsT"].shape).astype(bf16)
    rhs = rng.uniform(-1, 1, program.tensors["rhs"].shape).astype(bf16)
    run = simulate(compiled, seeds=[None, 1, 2], inputs={"lhsT": lhs_t, "rhs": rhs}).runs
    want = lhs_t.astype(np.float64).T @ rhs.astype(np.float64)
    for result in run:
        assert not result.differs
        assert np.allclose(result.outputs["result"].astype(np.float64), want, rtol=2e-2, atol=2e-2)
