"""A lazily initialized PSUM block first used inside kept loops is zeroed once, where its value
begins: its fill used to be traced in the body of those loops, zeroing it in every iteration.
An accumulation over an inner kept loop then kept its last matmul alone (a wrong output, no
finding), and a block reused across an affine loop hid the carried finding that the same
kernel without ``lazy_initialization`` draws (probe_at, on NKIBench's printed matmul)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import trace
from neuronsim.verify.nki.findings import nki_findings
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_an_accumulation_over_an_inner_loop_sums_every_iteration():
    a, b = f32(3, 128, 128), f32(3, 128, 512)
    program = trace(kernel("lazy_blocks_in_loops.py::sums_over_an_inner_loop"), a, b).program
    assert nki_findings(program) == []
    expected = sum(a[k].T @ b[k] for k in range(3))
    got = run(kernel("lazy_blocks_in_loops.py::sums_over_an_inner_loop"), a, b)["return0"]
    np.testing.assert_allclose(got, np.stack([expected, expected]), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("lazy", [False, True])
def test_a_block_reused_across_an_affine_loop_is_the_same_finding_either_way(lazy):
    a, b = f32(128, 128), f32(2, 128, 512)
    found = nki_findings(trace(kernel("lazy_blocks_in_loops.py::one_block_across_a_loop"), a, b, lazy=lazy).program)
    assert [f.loop for f in found] == ["n"], [f.describe() for f in found]
    assert "lazy_blocks_in_loops.py:33" in found[0].describe()
    first, second = a.T @ b[0], a.T @ b[1]  # the program's order: zeroed once, then summed on
    got = run(kernel("lazy_blocks_in_loops.py::one_block_across_a_loop"), a, b, lazy=lazy)["return0"]
    np.testing.assert_allclose(got, np.stack([first, first + second]), rtol=1e-4, atol=1e-3)
