"""Cases of the corpus run: aws-neuron/nki-samples (the tutorials, the contributed kernels, a
kernel of its unit tests).  The tutorials are the SDK examples' twins: they reuse those cases'
references (:mod:`corpus_cases_sdk`)."""

from __future__ import annotations

import dataclasses

import numpy as np

from corpus_cases import Case, api, case
from corpus_cases_sdk import (MX_OFFLINE_ARGS, MX_QUANTIZED, _add, _add_inputs, _f, _matmul, _matmul_mx,
                              _mx_offline, _mx_on_device, _transpose2d, tutorial_rows)

TUT = "nki-samples/src/nki_samples/tutorials/"
ATT = TUT + "attention_fwd_performance/attention_kernels.py::"
MM = TUT + "matrix_multiplication/matrix_multiplication_nki_kernels.py::"
MAMBA = TUT + "fused_mamba/mamba_nki_kernels.py::"
MX = TUT + "mxfp-matmul/mx_kernels.py::"
C = "nki-samples/contributed/"


def _attention(q, k, v):
    """softmax(q^T k) v^T per query row: the tutorial test's numpy attention (d_head x seqlen
    inputs, seqlen x d_head output)."""
    scores = _f(q).T @ _f(k)
    scores = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (scores / scores.sum(axis=1, keepdims=True)) @ _f(v).T


def _maxpool_stride1(in_tensor, pool_size):
    h, w = in_tensor.shape
    ho, wo = h - pool_size + 1, w - pool_size + 1
    windows = [in_tensor[i:i + ho, j:j + wo] for i in range(pool_size) for j in range(pool_size)]
    return np.max(np.stack(windows), axis=0)


def _upsample2x_axis(x, axis):
    """Linear 2x upsampling along one axis, half-pixel centres (align_corners=False): output
    j samples source coordinate (j + 0.5) / 2 - 0.5, clamped to the first and last source."""
    n = x.shape[axis]
    where = np.clip((np.arange(2 * n) + 0.5) / 2 - 0.5, 0, n - 1)
    lo = np.floor(where).astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    weight = (where - lo).reshape([-1 if a == axis else 1 for a in range(x.ndim)])
    return np.take(x, lo, axis=axis) * (1 - weight) + np.take(x, hi, axis=axis) * weight


def _upsample2x(src_arr):
    """The contributed interpolation kernels' check (torch interpolate, scale 2, bilinear or
    trilinear): linear upsampling is separable, one spatial axis (after N, C) at a time."""
    out = _f(src_arr).astype(np.float64)
    for axis in range(2, out.ndim):
        out = _upsample2x_axis(out, axis)
    return out.astype(np.float32)


def _matmul_ab(A_DRAM, B_DRAM, **_):
    """A^T B: the contributed matmul takes A as K x M (its check_correct compares with A.T @ B)."""
    return _f(A_DRAM).T @ _f(B_DRAM)


_Q = ("f32[128,128]~", "f32[128,128]~", "f32[128,128]~")
_QL = ("f32[128,1024]~", "f32[128,1024]~", "f32[128,1024]~")
_TILED = "the test's 4096 cut to 1024 (same tiling, a quarter of the blocks)"

CASES: dict[str, Case] = {
    ATT + "attn_fwd_v1": case(*_Q, ref=_attention),
    ATT + "attn_fwd_v2": case(*_Q, ref=_attention),
    **{ATT + f"attn_fwd_{v}": case(*_QL, ref=_attention, note=_TILED)
       for v in ("v3", "v4", "v5", "v6", "v7", "v8", "v8a", "v9", "v10", "v11")},
    **tutorial_rows(TUT + "average_pool2d/average_pool2d_nki_kernels.py::", MAMBA),
    MM + "nki_matmul_basic_": case("bf16[128,64]", "bf16[128,512]", ref=_matmul),
    MM + "nki_matmul_tiled_": case("bf16[512,256]", "bf16[512,1024]", ref=_matmul),
    MM + "nki_matmul_hoist_load_": case("bf16[512,256]", "bf16[512,1024]", ref=_matmul),
    MM + "nki_matmul_block_free_dimension_": case("bf16[512,512]", "bf16[512,1024]", ref=_matmul),
    MM + "nki_matmul_fully_optimized_": case("bf16[1024,2048]", "bf16[1024,1024]", ref=_matmul),
    MX + "kernel_offline_quantized_mx_matmul": case(*MX_OFFLINE_ARGS, api("nl.float8_e5m2_x4"), ref=_mx_offline),
    MX + "kernel_on_device_quantize_matmul_mx": case(
        *MX_OFFLINE_ARGS[:2], "bf16[128,2048]", api("nl.float8_e5m2_x4"), api("nl.float8_e5m2_x4"),
        ref=_mx_on_device, tolerance=MX_QUANTIZED),
    MX + "kernel_copy_strided_quantize_matmul_mx": case(
        "bf16[512,128]", "bf16[512,512]", api("nl.float8_e5m2_x4"), ref=_matmul_mx, tolerance=MX_QUANTIZED),
    TUT + "tensor_addition/spmd_tensor_addition_nki_kernels.py::nki_tensor_add_kernel_": case(
        "bf16[256,1024]", "bf16[256,1024]", grid=(2, 2), ref=_add_inputs),
    TUT + "tensor_addition/tensor_addition_nki_kernels.py::nki_tensor_add_kernel_": case(
        "bf16[128,512]", "bf16[128,512]", grid=(1, 1), ref=_add_inputs, note="it reads program_id(0) and (1)"),
    TUT + "transpose2d/transpose2d_nki_kernels.py::tensor_transpose2D_kernel_": case(
        np.arange(60, dtype=np.int8).reshape(5, 12), (3, 4), ref=_transpose2d),
    "nki-samples/test/unit/test_neuron_profile.py::nki_tensor_tensor_add": case("f32[128,512]", "f32[128,512]",
                                                                                ref=_add),
    # contributed: the shapes of each file's check_correct()
    C + "interpolate_bilinear_fwd.py::interpolate_bilinear_2x_fwd": case("f32[2,64,128,128]", ref=_upsample2x),
    C + "interpolate_trilinear_fwd.py::interpolate_trilinear_2x_fwd": case("f32[2,64,23,23,23]", ref=_upsample2x),
    C + "maxpooling.py::max_pooling_2d_stride_1": case("f32[448,448]", 3, ref=_maxpool_stride1),
    C + "matmul.py::matmul": case("f16[1024,4096]", "f16[1024,2048]", ref=_matmul_ab,
                                  note="check_correct()'s K 1024, M 4096, N 2048 (the kernel asserts M a multiple "
                                       "of 512, N of 2048); A is K x M (lhsT): a reference of A^T B"),
    # the file's own run: bs 1, d 128, seqlen 16k (its comment: the kernel runs on 16k only, in
    # sections of 8192 queries), q and k [bs, d, seqlen], v [bs, seqlen, d].  The file also runs
    # that check at import (flash_fwd[0](...) and a 16k x 16k numpy reference at module level):
    # that numpy reference alone peaks at 4.3 GB resident (/usr/bin/time -v of the worker with
    # a 12 GiB cap), past the run's 4 GiB address-space cap, so this case's worker gets 12 GiB
    # (our own trace of the kernel at this shape peaked at 0.75 GB resident, 8.4 min on the
    # shared machine, up to its stop: the kernel's sb_mod plan places tiles to byte 203,860 of a
    # partition at line 145, past trn1's 192 KiB; traced for trn2, to byte 236,632 at line 149,
    # past trn2's 224 KiB)
    C + "pipelined_attention.py::flash_fwd": dataclasses.replace(case(
        "bf16[1,128,16384]", "bf16[1,128,16384]", "bf16[1,16384,128]", mixed_precision=True, softmax_scale=0.125,
        use_causal_mask=False), memory_mb=12288),
}
