"""HBM tensors a kernel declares, shared by its instances or each one's own
(machine/nki/hbm.py): ``nl.private_hbm`` and ``nl.hbm`` ("alias of private_hbm") are each grid
program's and each core's own, ``nl.shared_hbm`` one tensor for all; a private output the kernel
returns is the one output every instance writes.  Kernels: tests/nki/kernels/hbm_buffers.py."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.verify.nki.findings import nki_findings
from neuronsim.verify.nki.simulate import sequential_outputs
from neuronsim_tests.nki_kit import GROUP_KERNELS, kernel_module, trace_file

KERNELS = GROUP_KERNELS / "hbm_buffers.py"
X = kernel_module(KERNELS).inputs(0)["x"]


def _run(func: str, machine: str = "trn1"):
    traced = trace_file(KERNELS, func, {"x": X}, grid=(2,), machine=machine)
    kinds = {f.kind for f in nki_findings(traced.program, traced.run_inputs)}
    return traced, kinds, sequential_outputs(traced.program, traced.run_inputs)


def _dram(traced) -> set[str]:
    return {n for n, t in traced.program.tensors.items() if t.memory.name == "DRAM" and t.role == "internal"}


@pytest.mark.parametrize("func", ["private_scratch", "hbm_scratch"])
def test_each_program_bounces_through_a_scratch_of_its_own(func: str) -> None:
    traced, kinds, outputs = _run(func)
    assert len(_dram(traced)) == 2  # one scratch a program
    assert "programs" not in kinds
    np.testing.assert_array_equal(outputs["return0"], 3.0 * X)


def test_a_shared_scratch_is_one_tensor_that_the_programs_race_on() -> None:
    """Each program alone reads back its own rows whichever runs first; interleaved, one reads the
    other's (it was a warning that "the programs in reverse order gives the same outputs": a probe)."""
    traced, kinds, _ = _run("shared_scratch")
    assert len(_dram(traced)) == 1 and "programs" in kinds
    found = [f for f in nki_findings(traced.program, traced.run_inputs) if f.kind == "programs"]
    assert {f.severity for f in found} == {"error"}
    assert "changes return0 (the programs' instructions interleaved)" in found[0].describe()


def test_an_hbm_scratch_is_each_cores_own_across_a_barrier() -> None:
    traced, kinds, outputs = _run("hbm_scratch_on_cores", machine="trn2")
    assert "cores" not in kinds and len(_dram(traced)) == 2
    np.testing.assert_array_equal(outputs["return0"], 3.0 * X)
    traced, kinds, outputs = _run("shared_scratch_on_cores", machine="trn2")
    assert "cores" in kinds  # each core reads back rows the other may have written


def test_a_returned_hbm_output_is_the_one_every_program_writes() -> None:
    traced, kinds, outputs = _run("hbm_output")
    assert _dram(traced) == set() and "programs" not in kinds
    np.testing.assert_array_equal(outputs["return0"], 3.0 * X)
