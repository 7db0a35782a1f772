"""PSUM tensors over several banks (NKI 0.4 on: ``tile_size.psum_bank_fmax`` is per bank and
``psum_fmax`` deprecated "despite the name"): traced, placed on whole banks side by side while
live, checked by the format's bank rule, and computed as numpy does; the legacy API's tile
stays one bank (tests/nki/test_large_working_set.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from neuronsim.machine.build.builder import KernelBuilder
from neuronsim.machine.formats.validate import validate_program
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import MemoryKind
from neuronsim.machine.nki import trace
from neuronsim.machine.nki.errors import NkiError
from neuronsim.passes import DEFAULT_PIPELINE
from neuronsim.passes.pipeline import PassContext, run_pipeline
from neuronsim_tests.nki_kernels import KERNELS, f32, kernel, run


def test_a_psum_tensor_over_four_banks_computes_what_numpy_does():
    a, b = f32(128, 128), f32(128, 2048, seed=1)
    np.testing.assert_allclose(run(kernel("psum_banks.py::banks_matmul"), a, b, seeds=(None, 1))["return0"], a.T @ b,
                               rtol=1e-5, atol=1e-4)


def test_the_allocator_places_it_on_whole_banks_side_by_side_beside_a_live_tile():
    kb = KernelBuilder("k")
    x = kb.dram_input("x", (128, 512), "float32")
    y = kb.dram_output("y", (128, 512), "float32")
    s = kb.sbuf("s", (128, 512), "float32")
    fixed = kb.psum("fixed", (128, 512), partition=0, bank=1)  # the kernel's own, for the whole kernel
    one = kb.psum("one", (128, 512))  # a bank, live across the wide tile's life
    wide = kb.psum("wide", (128, 3, 512))
    kb.dma_copy(s, x)
    kb.tensor_copy(fixed, s)
    kb.tensor_copy(one, s)
    kb.tensor_copy(wide[:, 0, :], s)
    kb.tensor_copy(s, wide[:, 0, :])
    kb.tensor_copy(s, one)
    kb.tensor_copy(s, fixed)
    kb.dma_copy(y, s)
    placed = run_pipeline(kb.program(), DEFAULT_PIPELINE, PassContext()).tensors
    banks = {name: set(range(t.bank, t.bank + -(-t.bytes_per_partition // 2048))) for name, t in placed.items()
             if t.memory == MemoryKind.PSUM}
    assert placed["wide"].offset == 0 and len(banks["wide"]) == 3
    assert not banks["wide"] & (banks["one"] | banks["fixed"]) and not banks["one"] & banks["fixed"]


@pytest.mark.parametrize("bank, offset, ok", [(0, 0, True), (5, 0, True), (6, 0, False), (0, 64, False)])
def test_the_format_takes_whole_banks_from_a_bank_s_first_byte_inside_psum(bank, offset, ok):
    kb = KernelBuilder("k")
    x = kb.dram_input("x", (128, 512), "float32")
    wide = kb.psum("wide", (128, 3, 512), partition=0, bank=bank, offset=offset)
    kb.dma_copy(x, x)  # (a program needs an instruction; the tensor's placement is what is checked)
    if ok:
        validate_program(kb.program(validate=False))
    else:
        with pytest.raises(ProgramError, match="starts at a bank's first byte and ends inside PSUM"):
            validate_program(kb.program(validate=False))
    assert wide is not None


def test_more_than_psum_holds_is_refused_at_its_line():
    with pytest.raises(NkiError) as caught:
        trace(kernel("psum_banks.py::past_psum"), f32(128, 4))
    line = next(n for n, text in enumerate(Path(KERNELS, "psum_banks.py").read_text().splitlines(), 1)
                if "nine banks" in text)
    assert caught.value.path.endswith(f"psum_banks.py:{line}")
    assert "more than the 16384 of the 8 PSUM banks" in caught.value.message


def test_a_matmul_writing_across_a_bank_boundary_is_refused():
    with pytest.raises(NkiError) as caught:
        trace(kernel("psum_banks.py::across_banks"), f32(128, 128), f32(128, 512, seed=1))
    line = next(n for n, text in enumerate(Path(KERNELS, "psum_banks.py").read_text().splitlines(), 1)
                if "half in each bank" in text)
    assert caught.value.path.endswith(f"psum_banks.py:{line}")
    assert "PE writes bytes [1024, 3072)" in caught.value.message and "within one bank" in caught.value.message
