"""A directly allocated tensor whose blocks rotate over too few slots across two kept affine
loops is the ``allocation`` clobber finding, naming the blocks (it passed with no finding and
half the outputs wrong: each loop indexing the tensor has a rotating tensor of its own, and the
check of two tensors' live ranges never saw the reading one written)."""

from __future__ import annotations

import numpy as np

from neuronsim.verify.nki.findings import nki_findings
from neuronsim.verify.nki.run import outputs_differ, run_kernel
from neuronsim_tests.nki_kit import GROUP_KERNELS, line_of, trace_file

KERNEL = GROUP_KERNELS / "rotating_blocks.py"
NAME = "tests/nki/kernels/rotating_blocks.py"


def _x() -> np.ndarray:
    return np.random.default_rng(0).uniform(-1, 1, (4, 128, 64)).astype(np.float32)


def test_blocks_written_over_before_their_read_are_a_clobber_at_both_lines():
    found = nki_findings(trace_file(KERNEL, "blocks_in_slots", {"x": _x()}, slots=2).program)
    assert [(f.kind, f.dependence) for f in found] == [("allocation", "clobber")] * 2, [f.describe() for f in found]
    write, read = line_of(KERNEL, "# block i, written"), line_of(KERNEL, "# block i, in slot")
    first = found[0]
    assert first.first.startswith(f"nl.load at {NAME}:{write} [i=2]")
    assert first.second.startswith(f"nl.store at {NAME}:{read} [i=0]")
    assert first.tensors[0].endswith("[2]") and first.tensors[1].endswith("[0]")


def test_enough_slots_or_one_iteration_per_block_is_no_finding_and_computes_right():
    x = _x()
    assert nki_findings(trace_file(KERNEL, "blocks_in_slots", {"x": x}, slots=4).program) == []
    assert nki_findings(trace_file(KERNEL, "double_buffered", {"x": x}).program) == []
    outputs, report = run_kernel(f"{KERNEL}::blocks_in_slots", x, slots=4, seeds=(None,))
    np.testing.assert_array_equal(outputs, x)
    _out, report = run_kernel(f"{KERNEL}::double_buffered", x, reference=lambda x: {"return0": 2.0 * x},
                              seeds=(None,))
    assert outputs_differ(report) == []
