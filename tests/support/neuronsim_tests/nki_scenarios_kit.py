"""Shared helpers of the tests, moved from tests/nki/test_scenarios_nki.py."""

from __future__ import annotations
from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    file: str
    scenario: str
    legacy: bool
    """Legacy API: outputs are kernel parameters and ``affine_range`` loops are kept."""
    extra_waits: int = 0
    """Waits the traced program's minimum has beyond the builder's (0: equal), and why:"""
    minimum_note: str = ""
    kept_loops: int | None = None
    """Loops the frontend keeps when it cannot keep all the builder's, and why:"""
    loops_note: str = ""
    findings_note: str = ""
    """Why neuronsim's NKI findings flag this correct kernel (empty: they must find nothing)."""

    @property
    def func(self) -> str:
        return self.scenario

    @property
    def id(self) -> str:
        return self.file.removesuffix(".py")


SHARED_BANK = ("nki findings: local_tp's two-dimensional bank rotation puts its block (g, 1) on bank 1 + 4g, the bank "
               "psum.alloc gives attn_psum[g]; the first PV matmul into attn_psum[g] reads only trans_sm's first "
               "columns, so by tile identity nothing orders it after the copy that reads local_tp[g, 1]: a WAR race "
               "between two tiles on one bank, which the builder version orders by its bytes")


UNROLLED = ("current API: the loop is unrolled and every iteration's tiles are new tensors; the allocator rotates "
            "each declaration's tiles through two slots of their own, as the builder's loop rotates one tensor, "
            "and the minimum matches the builder's except by one wait here (two before tile families had buffers "
            "of their own; the one left is not traced to its cause); instances, races and outputs are the "
            "builder's")


CASES = (
    Case("matmul_tiled.py", "matmul_tiled", legacy=True),
    Case("matmul_tiled_current.py", "matmul_tiled", legacy=False, extra_waits=1, minimum_note=UNROLLED),
    Case("softmax.py", "softmax", legacy=True),
    Case("softmax_current.py", "softmax", legacy=False),
    Case("rmsnorm.py", "rmsnorm", legacy=True),
    Case("rmsnorm_current.py", "rmsnorm", legacy=False),
    Case("flash_attention.py", "flash_attention", legacy=True),
    Case("layernorm.py", "layernorm", legacy=True),
    Case("mamba.py", "mamba", legacy=True),
    Case("pe_transpose.py", "pe_transpose", legacy=False),
    Case("transpose2d.py", "transpose2d", legacy=False),
    Case("double_buffer.py", "double_buffer", legacy=True),
    Case("explicit_double_buffer.py", "explicit_double_buffer", legacy=True),
    Case("cross_entropy.py", "cross_entropy", legacy=False),
    Case("allocated_attention.py", "allocated_attention", legacy=True, kept_loops=8, findings_note=SHARED_BANK,
         loops_note="the i / g loops index PSUM tiles placed by allocation functions (psum.alloc) and a "
                    "two-dimensional bank rotation: the frontend places them per iteration, so it unrolls i, g and "
                    "the PV loop inside, and keeps the transpose loop of each of the 2 x 2 x 2 unrolled copies; the "
                    "loops loading v_local, q_local and k_local unroll too, as their blocks are read by constants "
                    "later (v_local[0], q_local[t], k_local[kt]) and every block is a tile of its own"),
    Case("allocated_fused_linear.py", "allocated_fused_linear", legacy=True, kept_loops=4,
         loops_note="w_buf[k + 1] reads block k + 1 of an eight-slot mod_alloc tile, not the block of k's own "
                    "rotation: the frontend unrolls the k loop, and the wm loop loading w_buf, whose blocks are read "
                    "by constants (w_buf[0]) and are each a tile of their own"),
)

