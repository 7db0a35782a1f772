"""A direct-allocation kernel with one slot count lowered by one has a race, reported at the
two NKI source lines (``tests/nki/kernels/shared_banks.py``).

Two PSUM tiles share banks by design; with two score slots the kernel's own data flow orders
every pair of tiles on common bytes, with one it does not.  The race is the one the NKI
compiler would leave (it orders tiles by identity, not by the bytes a direct allocation gives
them): neuronsim's ``allocation`` finding race-checks the placed program under those deps
with :func:`neuronsim.verify.racecheck.check_program` and names both instructions by ``x-source``;
``neuronsim run`` prints it and exits 1.  The program neuronsim itself compiles is race free
either way (its deps follow bytes) and computes the right values.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from neuronsim.machine.ir.program import MemoryKind
from neuronsim_tests.nki_kit import GROUP_KERNELS, ROOT, kernel_module, line_of, run_program, trace_file

KERNEL = GROUP_KERNELS / "shared_banks.py"
MATMUL_LINE = line_of(KERNEL, "score_ps[g] = nisa.nc_matmul(")
EVICT_LINE = line_of(KERNEL, "o_sb = nisa.tensor_copy(tp_ps[g]")


def _traced(slots: int):
    module = kernel_module(KERNEL)
    return module, trace_file(KERNEL, "shared_banks", module.inputs(0), score_slots=slots)


def _findings(slots: int):
    from neuronsim.verify.nki.findings import nki_findings

    return nki_findings(_traced(slots)[1].program)


def test_two_score_slots_have_no_finding():
    assert [f.describe() for f in _findings(2)] == []


def test_one_score_slot_races_at_the_two_kernel_lines():
    found = _findings(1)
    assert len(found) == 1, [f.describe() for f in found]
    race = found[0]
    assert race.kind == "allocation" and race.dependence == "WAR"
    # the transpose's eviction of tile g, then the scores of tile g + 1 on the same bank
    assert race.first.startswith(f"nisa.tensor_copy at tests/nki/kernels/shared_banks.py:{EVICT_LINE} [g=0]")
    assert race.second.startswith(f"nisa.nc_matmul at tests/nki/kernels/shared_banks.py:{MATMUL_LINE} [g=1]")
    assert {t.rsplit("_", 2)[0] for t in race.tensors} == {"score_ps", "tp_ps"}


@pytest.mark.parametrize("slots", [2, 1])
def test_neuronsim_compiles_both_race_free_with_the_right_outputs(slots):
    module, traced = _traced(slots)
    inputs = {n: v for n, v in traced.inputs.items() if n != "out"}
    wanted = module.reference(inputs["x"])
    run = run_program(f"shared_banks_{slots}", traced.program, inputs, lambda _v: wanted, 1e-4, 1e-4)
    assert run.problems() == [], run.problems()[:3]
    banks = set()
    for name, t in traced.program.tensors.items():
        if t.memory == MemoryKind.PSUM and name.startswith("score_ps"):
            banks |= {t.bank + k for k in range(t.rotate.slots)} if t.rotate else {t.bank}
    assert banks == set(range(slots))


def test_run_command_reports_the_race_at_both_lines(tmp_path):
    module = kernel_module(KERNEL)
    np.savez(tmp_path / "in.npz", **module.inputs(0))
    cli = [sys.executable, "-c", "from neuronsim.verify.cli import main; main()"]
    args = ["run", f"{KERNEL.relative_to(ROOT)}::shared_banks", "--inputs", str(tmp_path / "in.npz"),
            "--out", str(tmp_path / "out")]
    clean = subprocess.run([*cli, *args], capture_output=True, text=True, cwd=ROOT, timeout=300)
    racy = subprocess.run([*cli, *args, "--arg", "score_slots=1"], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert clean.returncode == 0, clean.stdout[-2000:] + clean.stderr[-2000:]
    assert racy.returncode == 1, racy.stdout[-2000:] + racy.stderr[-2000:]
    finding = [line for line in racy.stdout.splitlines() if line.startswith("finding:")]
    assert len(finding) == 1, finding
    for line in (MATMUL_LINE, EVICT_LINE):
        assert f"shared_banks.py:{line}" in finding[0]
