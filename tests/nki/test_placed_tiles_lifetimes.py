"""The compiler's tiles around the kernel's own placed tiles (``address=``): apart while there
is room, else in bytes a placed tile holds only outside its lifetime.  A public kernel (a
gemv of thustorage/NKI-MoE) placed eight PSUM tiles, one per bank, each dead after its copy,
then declared a tile without an address: it was refused, "no PSUM bank has room", as if the
eight banks were held to the end of the kernel.  A compiler allocates around tiles placed in
advance by their lifetimes (the NKI 0.7 ``Allocation`` page: an address is held from a tile's
first write to its last read), and the deps it builds on addresses order the reuse."""

from __future__ import annotations

import numpy as np

from neuronsim.machine.build.builder import KernelBuilder
from neuronsim.machine.ir.program import MemoryKind
from neuronsim.machine.nki import load_kernel
from neuronsim.passes import DEFAULT_PIPELINE
from neuronsim.passes.pipeline import PassContext, run_pipeline
from neuronsim_tests.nki_kernels import run

KERNELS = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def banks_then_transpose(x, w):
    nb = w.shape[1] // 128
    xs = nl.ndarray((128, 1), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=xs, src=x)
    ws = nl.ndarray((128, nb * 128), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=ws, src=w)
    col = nl.ndarray((128, nb), dtype=nl.float32, buffer=nl.sbuf)
    for b in range(nb):  # every bank placed by the kernel, each dead after its copy
        ps = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.psum, address=(0, b * 2048))
        nisa.nc_matmul(ps[:, 0:1], ws[:, b * 128:(b + 1) * 128], xs)
        nisa.tensor_copy(dst=col[:, b:b + 1], src=ps[:, 0:1])
    t = nl.ndarray((nb, 128), dtype=nl.float32, buffer=nl.psum)  # the compiler's to place
    nisa.nc_transpose(dst=t, data=col)
    o = nl.ndarray((nb, 128), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=o, src=t)
    out = nl.ndarray((nb, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=o)
    return out


@nki.jit
def wide_placed_then_tile(x):
    s = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf, address=(0, 0))
    big = nl.ndarray((128, x.shape[1]), dtype=nl.float32, buffer=nl.sbuf, address=(0, 4))
    nisa.dma_copy(dst=big, src=x)
    nisa.tensor_reduce(dst=s, op=nl.add, data=big, axis=1)
    t = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.sbuf)  # only big's dead bytes have room
    nisa.memset(dst=t, value=0.0)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=s)
    out = nl.ndarray((128, 1024), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
'''


def _kernel(tmp_path, name):
    path = tmp_path / "placed_lifetimes.py"
    path.write_text(KERNELS)
    return load_kernel(f"{path}::{name}")


def test_a_tile_goes_to_a_bank_the_kernel_placed_once_that_tile_is_dead(tmp_path):
    rng = np.random.default_rng(0)
    x, w = rng.uniform(-1, 1, (128, 1)).astype(np.float32), rng.uniform(-1, 1, (128, 8 * 128)).astype(np.float32)
    out = run(_kernel(tmp_path, "banks_then_transpose"), x, w, seeds=(None, 1, 2))["return0"]
    expected = np.stack([w[:, b * 128:(b + 1) * 128].T @ x[:, 0] for b in range(8)])
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


def test_an_sbuf_tile_takes_the_bytes_of_a_dead_placed_tile_when_nothing_else_has_room(tmp_path):
    # 4 + 4 * 45000 bytes of placed tiles leave less than a 4 KiB tile's room above them
    x = np.random.default_rng(1).uniform(-1, 1, (128, 45000)).astype(np.float32)
    out = run(_kernel(tmp_path, "wide_placed_then_tile"), x, seeds=(None, 1, 2))["return0"]
    np.testing.assert_allclose(out, np.repeat(x.sum(axis=1, keepdims=True), 1024, axis=1), rtol=1e-4, atol=1e-2)


def _banks(*, live_until_end: bool):
    """A placed PSUM tile on bank 0, then a tile of the compiler's; the placed one is read at
    the end (live all along) or only before the other is born."""
    kb = KernelBuilder("k")
    x = kb.dram_input("x", (128, 512), "float32")
    y = kb.dram_output("y", (128, 512), "float32")
    s = kb.sbuf("s", (128, 512), "float32")
    fixed = kb.psum("fixed", (128, 512), partition=0, bank=0)
    mine = kb.psum("mine", (128, 512))
    kb.dma_copy(s, x)
    kb.tensor_copy(fixed, s)
    if not live_until_end:
        kb.tensor_copy(s, fixed)
    kb.tensor_copy(mine, s)
    kb.tensor_copy(s, mine)
    if live_until_end:
        kb.tensor_copy(s, fixed)
    kb.dma_copy(y, s)
    return run_pipeline(kb.program(), DEFAULT_PIPELINE, PassContext()).tensors


def test_with_room_elsewhere_the_compiler_keeps_its_tiles_apart_from_the_kernels():
    for live in (True, False):  # a dead placed tile's bank is the last resort, not the first choice
        placed = _banks(live_until_end=live)
        assert placed["mine"].memory == MemoryKind.PSUM and placed["mine"].bank != placed["fixed"].bank
