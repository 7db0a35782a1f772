"""``nl.zeros(..., buffer=nl.psum)`` then ``+=`` of matmuls: the first matmul opens the group and
no memset is emitted when the zeros are only ever accumulated into by matmuls; otherwise the
memset stays (:mod:`neuronsim.machine.nki.groups`, kernels in ``tests/nki/kernels/psum_groups.py``).
Every spelling computes the numpy product."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.ir.source import source_text
from neuronsim.machine.nki import load_kernel
from neuronsim.verify.nki.simulate import simulate_kernel
from neuronsim_tests.nki_kit import GROUP_KERNELS, kernel_module, trace_file

KERNELS = GROUP_KERNELS / "psum_groups.py"
RNG = np.random.default_rng(11)
ARRAYS = {"lhsT": RNG.uniform(-1, 1, (384, 128)).astype(np.float32),
          "rhs": RNG.uniform(-1, 1, (384, 512)).astype(np.float32)}


def _program(func: str):
    return trace_file(KERNELS, func, {**ARRAYS, "out": np.zeros((128, 512), np.float32)}).program


def _psum_ops(program) -> list[tuple[str, bool | None, str | None]]:
    """(op, accumulate, innermost loop) of every instruction writing PSUM, in program order."""
    return [(inst.op, inst.attrs.get("accumulate"), loops[-1].name if loops else None)
            for inst, loops in program.instructions()
            if any(program.tensors[w.tensor].memory.name == "PSUM" for w in inst.writes)]


def test_a_kept_loop_is_peeled_so_its_first_matmul_opens_the_group() -> None:
    program = _program("kept_loop")
    assert _psum_ops(program) == [("matmul", False, None), ("matmul", True, "k")]
    loop = next(node for node, _ in program.walk() if getattr(node, "name", "") == "k")
    assert loop.trip_count == 2  # K = 3 tiles: one peeled, two kept
    # the kept loop runs k = 1, 2: its instances are named by the kernel's own index
    adding = next(inst for inst, loops in program.instructions() if inst.op == "matmul" and loops)
    line = KERNELS.read_text().splitlines().index("        acc += nl.matmul(a, b, transpose_x=True)") + 1
    assert source_text(adding, {"k": 0}).endswith(f"psum_groups.py:{line} [k=1]")
    peeled = {inst.name: inst for inst, loops in program.instructions() if not loops}
    loads = [inst for inst in peeled.values() if inst.op == "dma_copy" and "~first" in inst.writes[0].tensor]
    assert len(loads) == 2  # the peeled iteration's tiles are its own, as an unrolled one's are


def test_an_unrolled_loop_opens_the_group_with_its_first_matmul() -> None:
    assert _psum_ops(_program("unrolled_loop")) == [("matmul", False, None)] + [("matmul", True, None)] * 2


def test_zeros_partly_accumulated_into_stay() -> None:
    assert _psum_ops(_program("half_the_tile")) == [("memset", None, None), ("matmul", True, "k")]


def test_zeros_read_first_stay_and_the_group_after_the_read_opens_with_a_matmul() -> None:
    # the read closes the zeros' group; the += after it opens a new one (the tracer's zeroing
    # before the kept loop, then dropped: its zeros are only accumulated into)
    assert _psum_ops(_program("zeros_read_first")) == [("memset", None, None), ("matmul", False, None),
                                                       ("matmul", True, "k")]


@pytest.mark.parametrize("func", ["kept_loop", "unrolled_loop", "half_the_tile", "zeros_read_first"])
def test_every_spelling_computes_the_product(func: str) -> None:
    out = np.zeros((128, 512), np.float32)
    simulate_kernel(load_kernel(f"{KERNELS}::{func}"), ARRAYS["lhsT"], ARRAYS["rhs"], out)
    expected = kernel_module(KERNELS).reference(**ARRAYS, half=func == "half_the_tile")["out"]
    assert np.allclose(out, expected, rtol=1e-4, atol=1e-4)
