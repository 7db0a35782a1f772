"""Cases of the corpus run: aws-neuron/nki-library (``src/nkilib_src/nkilib`` kernels, the kernels
and wrappers its tests define).  Shapes come from the smallest parameter row of each kernel's
test (``test/integration/nkilib/...``); configuration objects the kernels take (dataclasses,
enums of the library) are written with :func:`corpus_cases.api` and built from the kernel
module's own names when the case runs.

``subkernel`` cases are functions the library decorates with ``@nki.jit`` but calls only from
another kernel, with on-chip tiles or its internal configuration objects as arguments: they
have no DRAM-only entry to run, and are run through the caller's case (the run prints them as
``subkernel``, neither a pass nor a failure)."""

from __future__ import annotations

import dataclasses
from typing import Any

import ml_dtypes
import numpy as np
from neuronsim.machine.nki.dtypes import packed_array

from corpus_cases import Case, api, case, failing
from corpus_cases_sdk import _f, _mx_scales, _mx_words
import corpus_cases_refs as refs

SRC = "nki-library/src/nkilib_src/nkilib/"
TEST = "nki-library/test/integration/nkilib/"
MOE_TKG = SRC + "core/moe/moe_tkg/"
VIEW = TEST + "core/utils/test_tensor_view.py::"
MAXU = TEST + "core/max/test_cascaded_max_utils.py::"


#: Where the MoE CTE shapes come from.
MOE_NOTE = ("T 256 tokens (+1 padding row), H 512, I 256, E 2, three blocks of 256 on two shards (affinities "
            "flattened to [(T+1)*E, 1], as the test reshapes them): the smallest the "
            "shard-on-I checks accept (block a multiple of 256, 512 <= H, I a multiple of 16, two shards); the "
            "tests' rows are H 3072, T 1024")
#: Token positions of three blocks of 256: each block a permutation of the 256 tokens, so a token
#: is at most once in a block (as a router's output is).
MOE_BLOCK_TOKENS = np.concatenate([np.random.default_rng(n).permutation(256) for n in range(3)]).astype(np.int32)
#: How the moe_tkg cases depart from their tests' rows.
MOE_TKG_LNC = ("the tests run LNC 2, where the two cores of the all-expert path trade their halves of H by "
               "nisa.sendrecv; LNC 1 runs the same shapes on one")
#: the SBUF-I/O wrapper's bf16 row (no clamp): outputs of magnitude ~16,000 (up to ~93,000), where one bf16
#: step is 128 to 512; rtol 2e-2 as its test, atol one step at the largest outputs (a lost expert or
#: affinity moves outputs by thousands)
MOE_TKG_BF16 = (2e-2, 512.0)
#: moe_tkg's case is its test's MX row (test_moe_tkg_mx runs only on Trn3), the one that reaches the
#: MX subkernels of all_expert_mx_impl / gate_up_projection_mx / down_projection_mx; the table keeps
#: one case a kernel, and the f16 / bf16 path is checked against numpy by the SBUF-I/O wrapper's case.
#: Its reference (refs.moe_tkg_mx) dequantizes the MXFP4 weights by their e8m0 scales and quantizes the
#: activations as quantize_mx does per the NKI docs (scale 2**(floor(log2 amax) - 7) for e4m3fn); the
#: test's own torch helper takes OCP's scale (- 8, clipped to 448), which leaves 1 % of the outputs
#: outside the tolerance (got / ref 0.995), the docs' rule none (got / ref 0.9999, largest gap 365).
MOE_TKG_MX = ("its test's MX row on the trn3 preset at LNC 1 (T 128, H 3072, I 96, E 1, MXFP4 weights with "
              "e8m0 scales, Swish, POST_SCALE, clamps, biases); outputs up to ~12,000, the bf16 row's "
              "tolerance (the MXFP8 re-quantization of the intermediate flips e4m3 roundings: gaps up to "
              "~370)")


def lib(module: str, attr: str) -> Any:
    """A name of a library module the kernel file does not import itself (an enum of its
    configuration), looked up when the case runs."""
    return api(f"__import__({module!r}, fromlist=['_']).{attr}")


def on_trn3(entry: Case) -> Case:
    """``entry`` traced for Trn3, where the corpus's test runs the kernel only there."""
    return dataclasses.replace(entry, machine="trn3")


def on_trn2(entry: Case) -> Case:
    """``entry`` traced for Trn2 (224 KiB of SBUF a partition), where the corpus's test runs the
    kernel only there (its ``platform_target`` default ``Platforms.TRN2``) and the kernel's own
    SBUF plan does not fit Trn1's 192 KiB."""
    return dataclasses.replace(entry, machine="trn2")


def _moe_all_experts(hidden_input, expert_gate_up_weights, expert_down_weights, expert_affinities,
                     expert_gate_up_bias=None, expert_down_bias=None, expert_affinities_scaling_mode=None,
                     activation_fn=None, gate_clamp_upper_limit=None, up_clamp_upper_limit=None,
                     up_clamp_lower_limit=None, **_):
    """All-expert MoE TKG as the library's torch reference states it: per expert with any
    affinity, ``gate = clamp(x @ W_gate + b_gate, max=g)`` through SiLU or Swish
    (``g * sigmoid(1.702 g)``), times ``up = clamp(x @ W_up + b_up, lo, hi)``, then ``@ W_down +
    b_down``; POST_SCALE weighs each expert's output by its affinity; the experts summed."""
    x, affinities, out = _f(hidden_input), _f(expert_affinities), 0.0
    swish = getattr(activation_fn, "name", "SiLU") == "Swish"
    post_scale = getattr(expert_affinities_scaling_mode, "name", "NO_SCALE") == "POST_SCALE"
    for e in range(expert_gate_up_weights.shape[0]):
        if not affinities[:, e].any():
            continue
        gate, up = x @ _f(expert_gate_up_weights[e, :, 0, :]), x @ _f(expert_gate_up_weights[e, :, 1, :])
        if expert_gate_up_bias is not None:
            gate, up = gate + _f(expert_gate_up_bias[e, 0]), up + _f(expert_gate_up_bias[e, 1])
        if gate_clamp_upper_limit is not None:
            gate = np.minimum(gate, gate_clamp_upper_limit)
        up = np.clip(up, -np.inf if up_clamp_lower_limit is None else up_clamp_lower_limit,
                     np.inf if up_clamp_upper_limit is None else up_clamp_upper_limit)
        act = gate * 0.5 * (1.0 + np.tanh(0.5 * (1.702 if swish else 1.0) * gate))  # x * sigmoid(b x), no overflow
        expert = (act * up) @ _f(expert_down_weights[e])
        if expert_down_bias is not None:
            expert = expert + _f(expert_down_bias[e])
        out = out + (affinities[:, e:e + 1] * expert if post_scale else expert)
    return out


def _moe_sbuf_io(hidden_input, gate_up_weights, down_weights, expert_affinities, gate_up_weights_bias=None,
                 down_weights_bias=None, **options):
    """The SBUF-I/O test wrapper: moe_tkg on the same inputs (its test's reference)."""
    return _moe_all_experts(hidden_input, gate_up_weights, down_weights, expert_affinities,
                            gate_up_weights_bias, down_weights_bias, **options)


def subkernel(caller: str) -> Case:
    """A function run only inside ``caller`` (a key of this table)."""
    return Case(standalone=False, note=f"runs inside {caller.rsplit('::', 1)[-1]}", caller=caller)


def _cross_partition_copy(input_data, src_start_partition, dst_start_partition, num_partitions_to_copy,
                          free_dim_size, **_):
    """Its test's statement: the rows copied onto a zeroed tile, everything else zero."""
    x = _f(input_data)
    out = np.zeros_like(x)
    src, dst, n = src_start_partition, dst_start_partition, num_partitions_to_copy
    out[dst:dst + n, :free_dim_size] = x[src:src + n, :free_dim_size]
    return out


def _tp_broadcast(src_hbm, src_offset, broadcast_count, src_select_index):
    """Its test's statement: column ``src_offset`` of the (selected, flattened) source, as one row
    repeated ``broadcast_count`` times."""
    x = _f(src_hbm)
    if src_select_index is not None:
        x = x[:, src_select_index]
    return np.repeat(x.reshape(x.shape[0], -1)[:, src_offset][None, :], broadcast_count, axis=0)


def _untouched(**_):
    """The dummy output (zeros, ``"0:f32[128,64]"``: an output, so not among the reference's inputs)
    as the kernel received it."""
    return np.zeros((128, 64), np.float32)


def _cumsum(x, axis=-1):
    return np.cumsum(_f(x), axis=axis)


def _nonzero_indices(input_tensor):
    """Per column, the rows of its nonzero elements, then -1; and their count."""
    x = np.asarray(input_tensor)
    indices = np.full((x.shape[1], x.shape[0]), -1, np.int32)
    counts = np.zeros(x.shape[1], np.int32)
    for c in range(x.shape[1]):
        rows = np.flatnonzero(x[:, c])
        indices[c, :rows.size], counts[c] = rows, rows.size
    return indices, counts


def _cascaded_max(input_tensor):
    x = _f(input_tensor)
    return x.max(axis=-1, keepdims=True), x.argmax(axis=-1)[..., None].astype(np.int32)


def _rmsnorm_tkg(input, gamma, **_):
    x = _f(input)
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + 1e-6) * _f(gamma)
    b, s, h = x.shape  # the output's layout: (128, b*s, h/128), hidden split across partitions
    return y.reshape(b * s, 128, h // 128).transpose(1, 0, 2)


def _layernorm_tkg(input, gamma, **_):
    """Layer norm without beta (its docstring), in the same [128, B*S, H/128] layout as rmsnorm_tkg."""
    x = _f(input)
    y = (x - x.mean(axis=-1, keepdims=True)) / np.sqrt(x.var(axis=-1, keepdims=True) + 1e-6) * _f(gamma)
    b, s, h = x.shape
    return y.reshape(b * s, 128, h // 128).transpose(1, 0, 2)


def _folded_store_dst(input_tensor, src_batch_start, src_batch_end, dst_batch_start, dst_batch_end, **_):
    """Its test's statement: the source rows land at the destination rows of a zeroed output."""
    x = _f(input_tensor)
    out = np.zeros((dst_batch_end, x.shape[1]), np.float32)
    out[dst_batch_start:dst_batch_end] = x[src_batch_start:src_batch_end]
    return out


def _conv1d(x_in, filters, **_):
    x, w = _f(x_in), _f(filters)  # (N, C_in, L), (K, C_in, C_out) as the kernel's docstring; stride 1, no padding
    k = w.shape[0]
    cols = np.stack([x[:, :, i:i + x.shape[2] - k + 1] for i in range(k)], axis=-1)
    return np.einsum("nclk,kco->nol", cols, w)


def _topk(inp, **_):
    x = _f(inp)
    order = np.argsort(-x, axis=-1, kind="stable")[:, :8]
    return np.take_along_axis(x, order, axis=-1), order.astype(np.uint32)


def _router_topk(x, w, w_bias, k, **_):
    """Logits x^T w + bias per token ([H, T] input); the k largest experts by logit (descending);
    their affinities a softmax over those k logits, scattered into a zero [T, E] row."""
    logits = _f(x).T @ _f(w) + _f(w_bias).reshape(1, -1)
    index = np.argsort(-logits, axis=-1, kind="stable")[:, :k]
    top = np.take_along_axis(logits, index, axis=-1)
    weights = np.exp(top - top.max(axis=-1, keepdims=True))
    affinities = np.zeros_like(logits)
    np.put_along_axis(affinities, index, weights / weights.sum(axis=-1, keepdims=True), axis=-1)
    return {"router_logits": logits, "expert_index": index.astype(np.uint32), "expert_affinities": affinities}


def _indexed_flatten(input_tensor, f_len, output_len, row_offsets, padding_val=-1, **_):
    """The kernel's pseudocode: row e cut into blocks of f_len, block p written at block
    row_offsets[e] + p of the output (blocks past its end skipped), the rest padding_val."""
    out = np.full((output_len // f_len, f_len), padding_val, np.int32)
    rows = np.asarray(input_tensor).reshape(input_tensor.shape[0], -1, f_len)
    for e, offset in enumerate(np.asarray(row_offsets).reshape(-1)[:rows.shape[0]]):
        for p in range(rows.shape[1]):
            if 0 <= offset + p < out.shape[0]:
                out[offset + p] = rows[e, p]
    return out.reshape(-1)


def _topk_reduce_input(T: int, K: int, H: int, ranks: int) -> np.ndarray:
    """test_topk_reduce.py's buffer: ranks * T rows of H bf16 values plus the row's token number
    as an int32 in its last two bf16 columns; the T * K real rows (token t K times) scattered
    among rows filled with -1."""
    rng = np.random.default_rng(42)
    buffer = np.full((ranks * T, H + 2), -1, ml_dtypes.bfloat16)
    tokens = np.arange(T, dtype=np.int32).repeat(K).reshape(T * K, 1)
    real = np.concatenate([rng.standard_normal((T * K, H)).astype(ml_dtypes.bfloat16),
                           tokens.view(ml_dtypes.bfloat16)], axis=1)
    buffer[rng.permutation(ranks * T)[:T * K]] = real
    return buffer


def _topk_reduce(input, T, **_):
    """Per token t, the sum of the rows whose packed token number is t (the test's reference)."""
    H = input.shape[1] - 2
    ids = np.ascontiguousarray(input[:, H:]).view(np.int32).reshape(-1)
    values = _f(input[:, :H])
    return np.stack([values[ids == t].sum(axis=0) for t in range(T)])


def _dyn_add(input_a, input_b, num_m_tiles):
    rows = int(num_m_tiles.reshape(-1)[0]) * 128
    out = _f(input_a) + _f(input_b)
    out[rows:] = 0
    return out


def _fp4_words(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """Packed MXFP4 words (four e2m1 codes each, every code finite), typed as the tests' own
    ``float4_e2m1fn_x4`` arrays are (:func:`packed_array`)."""
    words = np.random.default_rng(seed).integers(0, 1 << 16, size=shape).astype(np.uint16)
    return packed_array(words, "float4_e2m1fn_x4")


#: Where the MX MoE CTE shapes come from.
MX_CTE_NOTE = ("the MX tests' layout (test_utils.build_moe_bwmm_mx_cte) at a smaller size: T 256 (+1 padding row), "
               "H 512, E 2, two blocks of 256, LNC 2; e5m2_x4 weights passed as uint32 words (the tests' NxD rows) "
               "[E, 128, 2, H/512, I] / [E, 128, I/512, H] with uint8 scales [E, 16, ...]; POST_SCALE affinities")
_MX_CTE_TOKENS = ("bf16[257,512]", "f32[514,1]")


def _mx_cte_weights(intermediate: int) -> dict[str, Any]:
    """The MX MoE CTE kernels' weight, scale, bias and routing arguments (:data:`MX_CTE_NOTE`)
    for an intermediate size of at least 512."""
    n_i = intermediate // 512
    scale_mode = api("ExpertAffinityScaleMode.POST_SCALE")  # the kernel module's own enum (imported as nkilib.)
    return dict(
        gate_up_proj_weight=_mx_words(256, 2 * intermediate, 51).reshape(2, 128, 2, 1, intermediate),
        down_proj_weight=_mx_words(256, n_i * 512, 52).reshape(2, 128, n_i, 512),
        token_position_to_id="i32[512]<257", block_to_expert=np.array([[0], [1]], np.int32),
        gate_and_up_proj_bias="bf16[2,128,2,%d,4]" % n_i, down_proj_bias="bf16[2,512]",
        gate_up_proj_scale=_mx_scales(256, 2 * intermediate, 53).reshape(2, 16, 2, 1, intermediate),
        down_proj_scale=_mx_scales(256, n_i * 512, 54).reshape(2, 16, n_i, 512),
        block_size=256, weight_dtype=api("nl.float8_e5m2_x4"), is_tensor_update_accumulating=True,
        expert_affinities_scaling_mode=scale_mode, gate_clamp_upper_limit=7.0, up_clamp_upper_limit=7.0,
        up_clamp_lower_limit=-7.0)  # every row of the tests clamps so


def _output_projection(attention, weight, **_):
    """out[b * S + s, h] = sum over heads n and d of attention[d, b, n, s] * weight[n * D + d, h]."""
    a = _f(attention)
    d, b, n, s = a.shape
    return a.transpose(1, 3, 2, 0).reshape(b * s, n * d) @ _f(weight)


CASES: dict[str, Case] = {
    # core
    SRC + "core/attention/attention_bwd.py::attention_bwd": case(
        *refs.attention_bwd_inputs(), ref=refs.attention_bwd,
        note="b 1, h 1, d 128, s 512; o and lse from the forward pass over q, k, v, as its test builds them"),
    SRC + "core/attention/attention_cte.py::attention_cte": case(
        "bf16[1,512,128]~", "bf16[1,128,512]~", "bf16[1,512,128]~", ref=refs.attention_cte,
        note="b, s, d; tp_q layout"),
    SRC + "core/attention/gen_mask_tkg.py::gen_mask_tkg_hbm": case("i32[1,1]<256", 1, 8, 1, 256,
                                                                ref=refs.gen_mask_tkg_hbm),
    SRC + "core/cumsum/cumsum.py::cumsum": case("f32[1,256,2]~", ref=_cumsum),
    SRC + "core/embeddings/rope.py::RoPE": case("bf16[128,1,2,128]~", "bf16[64,1,128]", "bf16[64,1,128]", ref=refs.rope,
                                                note="x [d_head, B, heads, S], cos / sin [d_head/2, B, S] (its doc)"),
    SRC + "core/embeddings/rope_hf.py::rope_hf": case(
        "bf16[1,8,128,64]~", "bf16[1,2,128,64]~", "0:bf16[1,8,128,64]", "0:bf16[1,2,128,64]",
        cos="bf16[1,128,64]", sin="bf16[1,128,64]", ref=refs.rope_hf, note="b, heads, s, d: shapes guessed"),
    SRC + "core/max/cascaded_max.py::cascaded_max": case("f32[8,5,4058]~", ref=_cascaded_max),
    SRC + "core/mlp/mlp.py::mlp": case("bf16[1,128,1024]", "bf16[1024,2048]", "bf16[1024,2048]", "bf16[2048,1024]",
                                       note="the file does not parse: its import fails first"),
    SRC + "core/moe/moe_cte/bwmm_shard_on_I.py::blockwise_mm_baseline_shard_intermediate": case(
        "bf16[257,512]", "f32[514,1]", "bf16[2,512,2,256]", "bf16[2,256,512]", 256, MOE_BLOCK_TOKENS, "i32[3]<2",
        ref=refs.blockwise_mm_pre_scale, tolerance=(2e-2, 1e-5), grid=(2,),
        note=MOE_NOTE + ("; two cores by its tests: test_moe_cte.py:187 (lnc_degree = 2) and "
            "test_moe_cte_unified.py:585 (VNC 2 for every non-MX row); PRE_SCALE (its default); each block's "
            "tokens distinct (MOE_BLOCK_TOKENS); bf16 compute, rtol 2e-2 / atol 1e-5 as test_moe_cte.py:246")),
    SRC + "core/moe/moe_cte/bwmm_shard_on_I.py::blockwise_mm_baseline_shard_intermediate_hybrid": case(
        "i32[3,1]<2", "bf16[257,512]", "f32[514,1]", "bf16[2,512,2,256]", "bf16[2,256,512]", 256, "i32[768]<257",
        "i32[3]<2", grid=(2,), note=MOE_NOTE + ("; two cores by its tests: test_moe_cte.py:187 (lnc_degree = 2) and "
            "test_moe_cte_unified.py:585 (VNC 2 for every non-MX row)")),
    SRC + "core/moe/moe_cte/bwmm_shard_on_I.py::blockwise_mm_shard_intermediate_dropping": case(
        "bf16[257,512]", "f32[514,1]", "bf16[2,512,2,256]", "bf16[2,256,512]", 256, "i32[768]<257", "i32[3]<2",
        grid=(2,), note=MOE_NOTE + ("; two cores by its tests: test_moe_cte.py:187 (lnc_degree = 2) and "
            "test_moe_cte_unified.py:585 (VNC 2 for every non-MX row)")),
    SRC + "core/moe/moe_cte/bwmm_shard_on_I_mx.py::blockwise_mm_shard_intermediate_mx": case(
        *_MX_CTE_TOKENS, **_mx_cte_weights(1024), grid=(2,),
        note=MX_CTE_NOTE + ("; two cores by its tests: every row of test_moe_bwmm_mx_cte.py (line 61 on) has "
            "vnc_degree 2, as the MX row of test_moe_cte_unified.py (vnc 2, line 317)")),
    SRC + "core/moe/moe_cte/bwmm_shard_on_I_mx.py::blockwise_mm_shard_intermediate_mx_hybrid": case(
        np.array([1, 1, 0], np.int32), *_MX_CTE_TOKENS, **_mx_cte_weights(1024), grid=(2,),
        note=MX_CTE_NOTE + ("; two cores by its tests: every row of test_moe_bwmm_mx_cte.py (line 61 on) has "
            "vnc_degree 2, as the MX row of test_moe_cte_unified.py (vnc 2, line 317)")),
    SRC + "core/moe/moe_cte/bwmm_shard_on_block.py::bwmm_shard_on_block": dataclasses.replace(case(
        "bf16[257,512]", "f32[514,1]", "bf16[2,512,2,256]", "bf16[2,256,512]", 256, MOE_BLOCK_TOKENS, "i32[3]<2",
        ref=refs.blockwise_mm_unpadded, tolerance=(2e-2, 1e-5), grid=(2,),
        note=MOE_NOTE + ("; two cores by its tests: test_moe_cte.py:187 (lnc_degree = 2) and "
            "test_moe_cte_unified.py:585 (VNC 2 for every non-MX row); each core accumulates its blocks into "
            "its own [:, core, :] of the [T, 2, H] output, compared summed, the padding row no block names "
            "left out (shards_summed); POST_SCALE (its "
            "default); each block's tokens distinct; rtol 2e-2 / atol 1e-5 as test_moe_cte.py:246")),
        decode=refs.shards_summed),
    SRC + "core/moe/moe_cte/bwmm_shard_on_block_mx.py::bwmm_shard_on_block_mx": case(
        *_MX_CTE_TOKENS, **_mx_cte_weights(512), grid=(2,),
        note=MX_CTE_NOTE + ("; two cores by its tests: every row of test_moe_bwmm_mx_cte.py (line 61 on) has "
            "vnc_degree 2, as the MX row of test_moe_cte_unified.py (vnc 2, line 317)")),
    SRC + "core/moe/moe_cte/moe_cte.py::moe_cte": dataclasses.replace(case(
        "bf16[257,512]", "f32[514,1]", "bf16[2,512,2,256]", "bf16[2,256,512]", MOE_BLOCK_TOKENS, "i32[3]<2", 256,
        api("MoECTESpec(implementation=MoECTEImplementation.shard_on_block)"), grid=(2,),
        ref=refs.blockwise_mm_unpadded, tolerance=(2e-2, 1e-5),
        note=MOE_NOTE + ("; two cores by its tests: test_moe_cte.py:187 (lnc_degree = 2) and "
            "test_moe_cte_unified.py:585 (VNC 2 for every non-MX row); compared as bwmm_shard_on_block, "
            "which it runs")), decode=refs.shards_summed),
    # moe_tkg's MX path runs these (:data:`MOE_TKG_MX`)
    **{MOE_TKG + "all_expert_mx_impl.py::" + name: subkernel(MOE_TKG + "moe_tkg.py::moe_tkg") for name in (
        "_all_expert_moe_tkg_mx", "_all_expert_mx_static", "_all_expert_mx_dynamic", "_find_expert_routed_tokens",
        "_init_dynamic_block_indices_hbm", "_get_block_token_position_to_id", "_layout_adapter_qmx_hbm",
        "_load_block_expert_affinities", "_load_expert", "_compute_expert_mlp", "_compute_block")},
    **{MOE_TKG + name: subkernel(MOE_TKG + "moe_tkg.py::moe_tkg") for name in (
        "down_projection_mx.py::load_broadcast_down_weight_scale_bias", "down_projection_mx.py::down_projection_mx",
        "gate_up_projection_mx.py::gate_up_projection_mx_shard_I",
        "gate_up_projection_mx.py::load_gate_up_weight_scale_bias", "gate_up_projection_mx.py::_clamp_tensor",
        "gate_up_projection_mx.py::_matmul_mx_accumulate")},
    MOE_TKG + "moe_tkg.py::moe_tkg": on_trn3(case(
        "bf16[128,3072]~", _fp4_words((1, 128, 2, 6, 96), 61), _fp4_words((1, 24, 1, 3072), 62), "bf16[128,1]",
        "i32[128,1]<1", True, note=MOE_TKG_MX, ref=refs.moe_tkg_mx, tolerance=MOE_TKG_BF16,
        rank_id="u32[1,1]<1", expert_gate_up_bias="bf16[1,24,2,1,4]~", expert_down_bias="bf16[1,3072]~",
        expert_gate_up_weights_scale=_mx_scales(128, 2 * 6 * 96, 63).reshape(1, 16, 2, 6, 96),
        expert_down_weights_scale=_mx_scales(24, 3072, 64).reshape(1, 3, 1, 3072),
        expert_affinities_scaling_mode=api("ExpertAffinityScaleMode.POST_SCALE"), activation_fn=api("ActFnType.Swish"),
        gate_clamp_upper_limit=7.0, up_clamp_upper_limit=8.0, up_clamp_lower_limit=-6.0)),
    SRC + "core/moe_block/moe_block_tkg.py::moe_block_tkg": case(
        "bf16[1,4,512]", "bf16[1,512]", "bf16[512,2]", "bf16[2,512,2,256]", "bf16[2,256,512]", grid=(2,),
        note=("the kernel supports LNC-2 only; two cores by its test: every row of test_moe_block_tkg.py's "
            "MANUAL_PARAMS (line 376 on) has lnc 2, passed at line 551 as "
            "CompilerArgs(logical_nc_config=lnc)")),
    SRC + "core/output_projection/output_projection_cte/output_projection_cte.py::output_projection_cte": case(
        "bf16[1,4,128,128]", "bf16[512,512]", ref=refs.output_projection_cte,
        note="b, heads, d, s; weight (heads*d, H): shapes guessed"),
    # the test's row (B 4, heads 8, S 4, d 64, H 3072, no quantization, no bias) on LNC 2 (its
    # CompilerArgs default on Trn2): attention [d, B, heads, S], weight [heads * d, H]
    SRC + "core/output_projection/output_projection_tkg.py::output_projection_tkg": case(
        "bf16[64,4,8,4]~", "bf16[512,3072]~", grid=(2,), ref=_output_projection, tolerance=(2e-2, 2e-2)),
    SRC + "core/qkv/qkv.py::qkv": case("bf16[1,128,512]", "bf16[512,768]", ref=refs.qkv,
                                       note="b, s, H; fused (H, 3 * 256)"),
    SRC + "core/rmsnorm/rmsnorm_quant.py::rmsnorm_quant_kernel": dataclasses.replace(case(
        "bf16[1,128,512]", "bf16[512]", api("RmsNormQuantKernelArgs(lower_bound=0.0)"), ref=refs.rmsnorm_quant,
        tolerance=(0.072, 1e-4),
        note="compared dequantized (fp8 values times their row's fp32 scale bytes) with its test's rtol 0.072"),
        decode=refs.rmsnorm_quant_decode),
    SRC + "core/subkernels/find_nonzero_indices.py::find_nonzero_indices": case(
        "i32[4096,128]<2", ref=_nonzero_indices, note="[T, E]: its test's first row (T 4096, E 128, one chunk)"),
    # test_indexed_flatten_fast's first row: T 4096, E 1, f_len 128; row offsets [0], output_len
    # E * T + 1024 rounded up to 128
    SRC + "core/subkernels/indexed_flatten.py::indexed_flatten": case(
        np.arange(4096, dtype=np.int32).reshape(1, 4096), 128, 5120, np.zeros((1,), np.int32), None, -1,
        ref=_indexed_flatten,
        grid=(2,), note=("two cores by its test: test_indexed_flatten.py:92 runs it at "
            "CompilerArgs(logical_nc_config=2) only, and its all-reduce by nisa.sendrecv "
            "(indexed_flatten.py:206) has no one-core path")),
    SRC + "core/subkernels/layernorm_tkg.py::layernorm_tkg": case("f16[1,1,2048]~", "f16[1,2048]~", "0:f16[128,1,16]",
                                                                  ref=_layernorm_tkg),
    SRC + "core/subkernels/rmsnorm_tkg.py::rmsnorm_tkg": case(
        "f32[1,1,8192]~", "f32[1,8192]~", "0:f32[128,1,64]", ref=_rmsnorm_tkg),
    # its test builds the config outside the kernel with the module's factories; the sweep's
    # smallest row: batch 1, seqlen 8, vocab 256, K 8, LNC 1
    SRC + "core/topk/rotational_topk.py::rotational_topk": case("f32[8,256]~", api(
        "prepare_rotational_constants(create_rotational_topk_config(inp_shape=(8, 256), topk_config=create_topk_config("
        "inp_shape=(1, 8, 256), inp_dtype=nl.float32, k=8, sorted=True, num_programs=1)))"), ref=_topk),
    SRC + "core/topk/rotational_topk.py::topk": Case(
        standalone=False, caller=SRC + "core/topk/rotational_topk.py::rotational_topk",
        note="a host-side launcher (topk[lnc](...)) of rotational_topk, not a kernel: runs as rotational_topk's case"),
    # experimental
    SRC + "experimental/benchmark/find_nonzero_indices_with_count.py::find_nonzero_indices_with_count": case(
        "i32[1,4096]<2", ref=refs.find_nonzero_indices_with_count, note="a [1, N] row, as its checks ask"),
    # test_topk_reduce.py's first row: LNC 1, 8 source ranks, T 4, K 4, H 2880
    SRC + "experimental/collectives/topk_reduce.py::topk_reduce": case(
        _topk_reduce_input(T=4, K=4, H=2880, ranks=8), 4, 4, ref=_topk_reduce, tolerance=(5e-2, 5e-2),
        note="bf16 sums of K rows: the test's rtol / atol 5e-2"),
    SRC + "experimental/conv/conv1d.py::conv1d": case("f32[1,16,20]~", "f32[3,16,32]~", ref=_conv1d,
                                                      note="the test's first row: N 1, C_in 16, C_out 32, L 20, K 3"),
    SRC + "experimental/conv/depthwise_conv1d.py::depthwise_conv1d_implicit_gemm": case(
        "bf16[1,128,1,64]", "bf16[128,1,1,4]", feature_group_count=128, ref=refs.depthwise_conv1d,
        note="NCHW image, OIHW depthwise filter (feature_group_count = C): shapes guessed"),
    SRC + "experimental/dynamic_shapes/dynamic_elementwise_add.py::dynamic_elementwise_add": case(
        "bf16[512,512]", "bf16[512,512]", np.array([[4]], np.int32), ref=_dyn_add),
    # the tests' minimal row: one position, V 32128, one position a batch
    SRC + "experimental/loss/cross_entropy.py::cross_entropy_forward": case(
        "bf16[1,32128]~", "i32[1]<32128", 1, 32128, ref=refs.cross_entropy_forward),
    SRC + "experimental/loss/cross_entropy.py::cross_entropy_backward": case(
        refs.CE_LOGITS.copy(), "i32[1]<32128", refs.CE_LSE, "mean", 1, 16384, ref=refs.cross_entropy_backward,
        # the gradients are about 3e-5: the default atol 0.01 compared the target's element alone (probe_p);
        # 5 % is the kernel's bf16 x - lse (near -10: half a bf16 ulp, 0.03, is 3 % of exp)
        tolerance=(5e-2, 1e-7)),
    # test_bwmm_bwd.py's inputs at a smaller size of the same structure: T 256 tokens (+1 padding
    # row), H 512, E 2, B 128, top-k 2, I 128; N = ceil((T * topk - (E - 1)) / B) + E - 1 = 5 blocks
    SRC + "experimental/moe/bwd/blockwise_mm_backward.py::blockwise_mm_bwd": case(
        "bf16[257,512]", "bf16[514,1]", "bf16[2,512,2,128]", "bf16[2,128,512]", "bf16[5,2,128,128]",
        "bf16[5,128,512]", "i32[640]<257", "i32[5,1]<2", "bf16[257,512]~", 128,
        grid=(2,), note=("no reference: the test's golden is torch autograd of the forward; two cores by its test: "
            "test_bwmm_bwd.py:132 (lnc_count = 2)")),
    SRC + "experimental/moe/forward/bwmm_shard_on_H.py::blockwise_mm_baseline_shard_hidden": case(
        "bf16[257,512]", "f32[514,1]", "bf16[2,512,2,256]", "bf16[2,256,512]", 128, np.arange(256, dtype=np.int32),
        np.array([[1], [0]], np.int32), ref=refs.blockwise_mm_shard_hidden,
        grid=(2,), note="two blocks of 128 tokens (token_position_to_id flat [N * B], as its doc: each token once), "
             "experts 1 and 0; the earlier [2, 128] ids made N = 0 blocks, a run that computed nothing. With "
             "blocks it all-reduces the gate / up partial sums by nisa.sendrecv (two cores); two cores by its "
             "test: test_bwmm_shard_on_H.py:478 (lnc_count = 2, H-shard uses LNC2)"),
    SRC + "experimental/mxfp_subkernels/mxfp_load_utils.py::mxfp_load_performance_wrapper": dataclasses.replace(
        case("bf16[128,512]", ref=refs.mxfp_load, tolerance=(1 / 16, 1e-4)), decode=refs.mxfp_load_decode),
    # experimental/transformer: bench/corpus_cases_transformer.py
    # kernels and wrappers of the tests
    # the strided flat-KV test's first row: batch 4, one head, s_ctx 256, one active token, LNC 1;
    # pos_ids [128, batch * s_active], the mask [128, s_ctx / 128, batch, heads, s_active]
    TEST + "core/attention/test_gen_mask_tkg.py::gen_mask_tkg_wrapper": case(
        refs.GEN_MASK_POS_IDS, "0:f32[128,2,4,1,1]", 4, 1, 1, False, 256, ref=refs.gen_mask_tkg_wrapper),
    MAXU + "folded_load_store_kernel": case("f32[8,256]~", 1, 0, 8, ref=lambda input_tensor, **_: _f(input_tensor)),
    MAXU + "folded_load_store_dst_kernel": case("f32[16,256]~", 2, 0, 8, 4, 12, ref=_folded_store_dst),
    MAXU + "folded_load_oversized_sb_kernel": case("f32[8,256]~", 1, 0, 8, 16, ref=refs.folded_load_oversized_sb),
    # the tests' first row (BxS 4, H 3072, I 192) on LNC 2, laid out as the tests' input builders
    # lay them: hidden e5m2_x4 [128, H/512, BxS] (finite codes), fp4_x4 weights as uint16 words,
    # scales [P/8, ...]; bias [I/4, 1, 4] (I < 512); down: inter [128, 1, BxS, 4], weights [I/4, 1, H]
    TEST + "core/mlp/test_mlp_proj_mxfp4.py::gate_up_proj_mxfp4_wrapper": case(
        packed_array(_mx_words(128, 24, 41).reshape(128, 6, 4), "float8_e5m2_x4"),
        _mx_scales(128, 24, 42).reshape(16, 6, 4), _fp4_words((128, 6, 192), 45),
        _mx_scales(128, 1152, 43).reshape(16, 6, 192), "bf16[48,1,4]", 3072, 192, 4, grid=(2,),
        note=("two cores by its test: test_mlp_proj_mxfp4.py:293 excludes Trn1 / Trn2 and :323 takes "
            "CompilerArgs(platform_target=...) whose Trn3 default is LNC 2 "
            "(test/utils/common_dataclasses.py:362); the kernel's n_prgs == 1 path is never run by it")),
    TEST + "core/mlp/test_mlp_proj_mxfp4.py::down_proj_mxfp4_wrapper": case(
        "bf16[128,1,4,4]", _fp4_words((48, 1, 3072), 46), _mx_scales(48, 3072, 44).reshape(6, 1, 3072),
        "bf16[1,3072]", 3072, 192, 4, True, grid=(2,),
        note=("two cores by its test: test_mlp_proj_mxfp4.py:293 excludes Trn1 / Trn2 and :354 takes "
            "CompilerArgs(platform_target=...) whose Trn3 default is LNC 2 "
            "(test/utils/common_dataclasses.py:362); the kernel's n_prgs == 1 path is never run by it")),
    TEST + "core/moe/moe_cte/test_moe_cte_common.py::moe_cte_kernel_wrapper": case(
        "bf16[257,512]", "f32[514,1]", "bf16[2,512,2,256]", "bf16[2,256,512]", "i32[768]<257", "i32[3]<2", 256,
        api("BWMMFunc.SHARD_ON_BLOCK"), grid=(2,),
        note=MOE_NOTE + ("; two cores by its tests: test_moe_cte.py:187 (lnc_degree = 2) and "
            "test_moe_cte_unified.py:585 (VNC 2 for every non-MX row)")),
    # its test's row on Trn2 at LNC 1 (:data:`MOE_TKG_LNC`): T 4, H 3072, I 128, E 2, SiLU, POST_SCALE
    TEST + "core/moe/moe_tkg/test_moe_tkg_wrapper.py::moe_tkg_sbuf_io_wrapper": on_trn2(case(
        "bf16[4,3072]~", "bf16[2,3072,2,128]~", "bf16[2,128,3072]~", "bf16[4,2]", "i32[4,2]<2", True,
        note=MOE_TKG_LNC,
        rank_id="u32[1,1]<1", expert_affinities_scaling_mode=api("ExpertAffinityScaleMode.POST_SCALE"),
        ref=_moe_sbuf_io, tolerance=MOE_TKG_BF16)),
    # the kernel's own defaults where the wrapper passes None (router sigmoid, no affinity scaling,
    # SiLU, bf16 router matmul); moe_block_tkg supports LNC-2 only (its kernel_assert), as the
    # test runs it: launched on the two-core grid
    TEST + "core/moe_block/test_moe_block_tkg.py::mx_moe_block_tkg_wrapper": case(
        "bf16[1,4,512]", "bf16[1,512]", "bf16[512,2]",
        np.random.default_rng(71).integers(0, 1 << 16, size=(2, 128, 2, 1, 256)).astype(np.uint16),
        np.random.default_rng(72).integers(0, 1 << 16, size=(2, 64, 1, 512)).astype(np.uint16), grid=(2,),
        expert_gate_up_weights_scale=np.stack([_mx_scales(128, 2 * 256, 73 + e).reshape(16, 2, 1, 256)
                                               for e in range(2)]),
        expert_down_weights_scale=np.stack([_mx_scales(64, 512, 75 + e).reshape(8, 1, 512) for e in range(2)]),
        expert_gate_up_bias="bf16[2,64,2,1,4]~", expert_down_bias="bf16[2,512]~",
        gate_clamp_upper_limit=7.0, up_clamp_upper_limit=8.0, up_clamp_lower_limit=-6.0,
        top_k=2, router_act_fn=api("RouterActFnType.SIGMOID"),
        expert_affinities_scaling_mode=api("ExpertAffinityScaleMode.NO_SCALE"), hidden_act_fn=api("ActFnType.SiLU"),
        router_mm_dtype=api("nl.bfloat16"),
        note=("two cores by its test: every row of test_moe_block_tkg.py's MANUAL_PARAMS (line 376 on) has "
            "lnc 2, passed at line 551 as CompilerArgs(logical_nc_config=lnc); MXFP4 weights as uint16 words in "
            "test_mlp_common.gen_moe_mx_weights's layout ([E, 128, 2, H/512, I], [E, I/4, I/512, H]) with uint8 "
            "scales, top-k 2 (the kernel checks K divisible by the cores), biases and clamps as its rows have")),
    # the test file uses Platforms in a class-level decorator (line 929) without importing it (its
    # import list from test.utils.common_dataclasses leaves it out): importing the file raises
    # NameError in any Python, before any NKI runs
    TEST + "core/qkv/test_qkv_tkg.py::qkv_tkg_sb2sb_wrapper_kernel": failing(
        "bf16[4,1,512]", "bf16[512,768]", refusal="NameError: name 'Platforms' is not defined",
        note="the test file's own NameError on import: Platforms is never imported there"),
    # test_router_topk.py's "Indirect DMA scatter" row (line 76): T 4, H 3072, E 128, k 4, softmax after
    # the top-k, a bias, no pre-norm, shard_on_tokens off; x in the (H, T) HBM layout. Its test runs
    # it at LNC 2 (CompilerArgs() at line 304: Trn2's default), but without token sharding each core
    # does the whole work and this path has no core_barrier (the one-hot scatter rows barrier at
    # router_topk.py:581 / :1074): LNC 1 computes the same
    TEST + "core/router_topk/test_router_topk_common.py::router_topk_kernel_wrapper": case(
        "bf16[3072,4]~", "bf16[3072,128]~", "bf16[1,128]~", "0:bf16[4,128]", "0:bf16[4,128]", "0:u32[4,4]",
        lib("nkilib_src.nkilib.core.utils.common_types", "RouterActFnType.SOFTMAX"), 4, 0, 0,
        router_pre_norm=False, use_indirect_dma_scatter=True, ref=_router_topk, tolerance=(2e-2, 1e-5)),
    TEST + "core/subkernels/test_rmsnorm_mx_quantize_tkg.py::rmsnorm_mx_quantize_tkg_wrapper": case(
        "bf16[1,4,512]~", "bf16[1,512]~", grid=(2,),
        note=("the wrapper asks for LNC 2; two cores by its test: the wrapper's kernel_assert(n_prgs == 2) "
            "at test_rmsnorm_mx_quantize_tkg.py:49, and :247 / :288 CompilerArgs(logical_nc_config=2)")),
    TEST + "core/utils/test_cross_partition_copy.py::kernel_cross_partition_copy": case(
        "f32[128,8]", "0:f32[128,8]", 0, 0, 32, 8, 128, ref=_cross_partition_copy),
    # trace-only tests: the kernel's own kernel_asserts are the check, and its golden is the
    # untouched dummy output
    **{VIEW + name: case("0:f32[128,64]", (128, 64), ref=_untouched) for name in (
        "kernel_test_reinterpret_cast", "kernel_test_reinterpret_cast_mxfp4", "kernel_test_reinterpret_cast_mxfp8",
        "kernel_test_reinterpret_cast_bf16_fp16", "kernel_test_tensorview_from_tensorview",
        "kernel_test_chained_ops_on_tensorview_input")},
    VIEW + "kernel_test_reinterpret_cast_cross_size_indirect": failing(
        "0:f32[128,64]", (128, 64), refusal="reinterpret_cast with different element sizes is not supported"),
    VIEW + "kernel_test_view_ops": case("0:f32[128,64]", (128, 64), "sbuf", (), (128, 64), (64, 1), 0,
                                        ref=_untouched),
    # the test's first dynamic row: input (4, 2, 8), a select of dim 0 at a device-held index (1)
    VIEW + "kernel_dynamic_ops": case(
        "f32[4,2,8]", np.array([[1]], np.int32), "i32[128,1]<4", (("select_dynamic", (0, 1)),), (2, 8),
        ref=lambda input_tensor, dynamic_idx, **_: _f(input_tensor)[int(np.asarray(dynamic_idx).flat[0])]),
    TEST + "core/utils/test_tp_broadcast.py::tp_broadcast_hbm": case("f32[3,8,11]", 1, 2, 4, ref=_tp_broadcast),
    # test_trace_only_fails_on_assert_false expects tracing to raise "This kernel should fail"
    "nki-library/test/unit/test_kernel_tracer.py::kernel_with_assert_false": failing(
        "0:f32[1]", refusal="This kernel should fail",
        note="the test's dummy (1,) output; its test expects the kernel's assert to stop the trace"),
}
