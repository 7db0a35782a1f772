"""Negative strides (a reversed read, ``t[i_p, n - 1 - i_f]``): the footprint walks down from
the offset, so the reversed read depends on the load that filled the tile.  It used to be the
offset's element alone: no dependence, the scheduler moved the read before the load, and the
outputs were zeros with no race reported (the Mamba2 example's conv1d gradient in
neuronx-distributed).  The traced program is a valid program file too."""

from __future__ import annotations

import numpy as np

from neuronsim.machine.formats.program_json import dumps_program, loads_program
from neuronsim.machine.model.geometry import element_runs
from neuronsim.verify.nki.placement import identity_placement
from neuronsim.verify.nki.run import run_kernel
from neuronsim.verify.racecheck import check_program
from neuronsim_tests.nki_kit import GROUP_KERNELS, kernel_module, trace_file

KERNELS = GROUP_KERNELS / "reversed_reads.py"


def test_a_reversed_read_after_a_partial_load_runs_equal() -> None:
    module = kernel_module(KERNELS)
    arrays = module.inputs(0)
    outputs, report = run_kernel(f"{KERNELS}::reversed_after_partial_load", *arrays.values(),
                                 reference=module.reference, seeds=(None,))
    assert not report.problems(), report.problems()
    want = module.reference(**arrays)
    np.testing.assert_array_equal(outputs[0], want["return0"])
    np.testing.assert_array_equal(outputs[1], want["return1"])


def test_the_reversed_read_conflicts_with_the_load_in_the_program_file() -> None:
    module = kernel_module(KERNELS)
    traced = trace_file(KERNELS, "reversed_after_partial_load", module.inputs(0))
    program = loads_program(dumps_program(traced.program))  # a negative stride is valid JSON input
    reads = [a for inst, _ in program.instructions() for a in inst.reads if a.pattern and a.pattern[-1][0] < 0]
    assert reads, "the trace has no reversed read"
    # no deps at all: the reversed copy races with the load it reads from
    report = check_program(identity_placement(program))  # each tile on bytes of its own
    assert any({"dma_copy0", "tensor_copy0"} <= {race.first, race.second} for race in report.races), report.races


def test_element_runs_walk_down_from_the_offset() -> None:
    assert element_runs(((-1, 67),)) == ((-66, 1),)
    assert element_runs(((-2, 3),)) == ((-4, -3), (-2, -1), (0, 1))
