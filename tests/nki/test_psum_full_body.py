"""A loop body whose PSUM tiles fill the banks (tests/nki/kernels/psum_full_body.py, the shape
of the fused-attention tutorial's ``qk_res_buf`` at seqlen 4096): eight one-bank tiles in an
affine loop.  It was refused, "no PSUM bank has room", because the first four tiles took rings
of two buffers; ``alloc`` now gives every tile of the body one placement when rings do not fit,
the iterations taking turns (passes/alloc_place.py, place_psum)."""

from __future__ import annotations

import numpy as np

from neuronsim.machine.ir.program import MemoryKind
from neuronsim.machine.nki import trace
from neuronsim.passes import TRACED_PIPELINE, compile_program
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_eight_one_bank_tiles_in_a_loop_take_the_eight_banks_in_turn():
    q, k = f32(128, 256), f32(128, 4096, seed=1)
    compiled, _ = compile_program(trace(kernel("psum_full_body.py::row_max_of_products"), q, k).program,
                                  TRACED_PIPELINE)
    banks = sorted(t.bank for t in compiled.tensors.values() if t.memory == MemoryKind.PSUM)
    assert banks == list(range(8))
    assert all(t.rotate is None for t in compiled.tensors.values() if t.memory == MemoryKind.PSUM)


def test_the_iterations_in_turn_compute_every_row_maximum():
    q, k = f32(128, 256), f32(128, 4096, seed=1)
    out = run(kernel("psum_full_body.py::row_max_of_products"), q, k)["return0"]
    expected = (q.T.astype(np.float64) @ k).max(axis=1, keepdims=True)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
