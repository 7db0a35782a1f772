"""A direct-allocation kernel whose two PSUM tensors share banks by design
(``tests/nki/kernels/shared_banks.py``): with one score slot, the scores of tile ``g + 1``
take the bank the transpose of tile ``g`` just left.

The NKI compiler builds its deps after allocation, on addresses (``docs/nki-checks.md``,
``allocation``): the bank's reuse by the other tensor waits for the transpose's eviction, as
the attention tutorial's ``attn_fwd_v9`` relies on.  So neither slot count is a finding, and the
program neuronsim compiles is race free with the right outputs either way.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from neuronsim.machine.ir.program import MemoryKind
from neuronsim_tests.nki_kit import GROUP_KERNELS, ROOT, kernel_module, run_program, trace_file

KERNEL = GROUP_KERNELS / "shared_banks.py"


def _traced(slots: int):
    module = kernel_module(KERNEL)
    return module, trace_file(KERNEL, "shared_banks", module.inputs(0), score_slots=slots)


def _findings(slots: int):
    from neuronsim.verify.nki.findings import nki_findings

    return nki_findings(_traced(slots)[1].program)


def _banks(program, prefix: str) -> set[int]:
    banks = set()
    for name, t in program.tensors.items():
        if t.memory == MemoryKind.PSUM and name.startswith(prefix):
            banks |= {t.bank + k for k in range(t.rotate.slots)} if t.rotate else {t.bank}
    return banks


@pytest.mark.parametrize("slots", [2, 1])
def test_no_finding_with_either_slot_count(slots):
    program = _traced(slots)[1].program
    assert _banks(program, "score_ps") & _banks(program, "tp_ps") == set(range(slots))  # banks shared
    assert [f.describe() for f in _findings(slots)] == []


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


def test_run_command_passes_both(tmp_path):
    module = kernel_module(KERNEL)
    np.savez(tmp_path / "in.npz", **module.inputs(0))
    cli = [sys.executable, "-c", "from neuronsim.verify.cli import main; main()"]
    args = ["run", f"{KERNEL.relative_to(ROOT)}::shared_banks", "--inputs", str(tmp_path / "in.npz"),
            "--out", str(tmp_path / "out")]
    for extra in ([], ["--arg", "score_slots=1"]):
        result = subprocess.run([*cli, *args, *extra], capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        assert "finding:" not in result.stdout
