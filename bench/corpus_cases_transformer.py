"""Cases of the corpus run: nki-library's token-generation (TKG) attention and transformer kernels
whose tests build their arguments from a configuration (the fused attention block, its test's
SBUF-I/O wrapper, the four-layer tensor-parallel transformer, the attention_tkg test wrapper).
Their tests build about forty arguments from a configuration; the builders here restate those
tests' input layouts at a smaller size of the same structure (:func:`attention_block_args`,
:func:`transformer_tp4_args`), with values of our own drawing."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from corpus_cases import Case, api, case

SRC = "nki-library/src/nkilib_src/nkilib/experimental/transformer/"
TEST = "nki-library/test/integration/nkilib/experimental/transformer/"
ATTN_TEST = "nki-library/test/integration/nkilib/core/attention/test_attention_tkg.py::"


def _attention_mask(s_ctx: int, batch: int, heads: int, s_tkg: int) -> np.ndarray:
    """Every context position visible: [S_ctx, B, heads, S_tkg] uint8 ones (the tests' mask
    layout; which positions they hide shapes the values, not the instructions)."""
    return np.ones((s_ctx, batch, heads, s_tkg), np.uint8)


def attention_block_args(batch: int, q_heads: int, d_head: int, hidden: int, s_ctx: int, s_tkg: int) -> dict[str, Any]:
    """test_attention_block_tkg.generate_kernel_inputs for a configuration with its defaults
    (flat KV cache, not transposed, RMSNorm of X, RoPE in contiguous halves, cache update,
    output projection, no bias, no quantization, HBM in and out), by the wrapper's names."""
    qkv = (q_heads + 2) * d_head  # one K and one V head (GQA)
    return {
        "X": f"bf16[{batch},{s_tkg},{hidden}]~", "X_in_sb": False, "X_hidden_dim_actual": None,
        "rmsnorm_X_enabled": True, "rmsnorm_X_eps": 1e-3, "rmsnorm_X_gamma": f"bf16[1,{hidden}]",
        "W_qkv": f"bf16[{hidden},{qkv}]~", "bias_qkv": None, "quantization_type_qkv": api("QuantizationType.NONE"),
        "weight_dequant_scale_qkv": None, "input_dequant_scale_qkv": None,
        "rmsnorm_QK_enabled": False, "rmsnorm_QK_eps": 1e-3, "W_rmsnorm_Q_pre_rope": None,
        "W_rmsnorm_K_pre_rope": None,
        "cos": f"bf16[{d_head // 2},{batch},{s_tkg}]", "sin": f"bf16[{d_head // 2},{batch},{s_tkg}]",
        "rope_contiguous_layout": True,
        "rmsnorm_QK_post_rope_enabled": False, "rmsnorm_QK_post_rope_eps": 1e-3, "W_rmsnorm_Q_post_rope": None,
        "W_rmsnorm_K_post_rope": None,
        "skip_attention": False, "K_cache_transposed": False, "active_blocks_table": None,
        "K_cache": f"bf16[{batch},1,{s_ctx},{d_head}]~", "V_cache": f"bf16[{batch},1,{s_ctx},{d_head}]~",
        "attention_mask": _attention_mask(s_ctx, batch, q_heads, s_tkg), "sink": None, "softmax_scale": None,
        "enable_fa_s_prior_tiling": True, "k_scale": None, "v_scale": None,
        "update_cache": True,
        # the test's cache lengths: (3 b + 3 S_ctx / 4) mod (S_ctx - S_tkg), one a batch row
        "kv_cache_update_idx": ((np.arange(batch) * 3 + s_ctx // 4 * 3) % (s_ctx - s_tkg))[:, None].astype(np.uint32),
        "W_out": f"bf16[{q_heads * d_head},{hidden}]~", "bias_out": None,
        "quantization_type_out": api("QuantizationType.NONE"), "weight_dequant_scale_out": None,
        "input_dequant_scale_out": None, "transposed_out": False, "out_in_sb": False,
        "KVDP": 1, "KVDP_replica_group": None,
    }


#: The wrapper's names of arguments the kernel names otherwise (the kernel has no X_in_sb).
_KERNEL_NAMES = {"rmsnorm_QK_enabled": "rmsnorm_QK_pre_rope_enabled", "rmsnorm_QK_eps": "rmsnorm_QK_pre_rope_eps",
                 "W_rmsnorm_Q_pre_rope": "rmsnorm_QK_pre_rope_W_Q", "W_rmsnorm_K_pre_rope": "rmsnorm_QK_pre_rope_W_K",
                 "W_rmsnorm_Q_post_rope": "rmsnorm_QK_post_rope_W_Q",
                 "W_rmsnorm_K_post_rope": "rmsnorm_QK_post_rope_W_K"}


def attention_block_kernel_args(**config: int) -> dict[str, Any]:
    """:func:`attention_block_args` by the kernel's own parameter names."""
    args = attention_block_args(**config)
    del args["X_in_sb"]
    return {_KERNEL_NAMES.get(name, name): value for name, value in args.items()}


def transformer_tp4_args(tp: int, batch: int, s_ctx: int, q_heads: int, d_head: int, hidden: int,
                         intermediate: int) -> dict[str, Any]:
    """test_transformer_tkg.prepare_test_parametrized's inputs (four layers, one KV head, S_tkg 1;
    the first and last layers' MLP unquantized, the middle two with scales; replica groups of at
    most four ranks), by the wrapper's names."""
    layers, s_tkg = 4, 1
    heads = q_heads // tp
    ffn = -(-(intermediate // tp) // 128) * 128  # the test rounds each core's share up to 128
    qkv = d_head * (heads + 2)
    args: dict[str, Any] = {"X": f"bf16[{batch},{s_tkg},{hidden}]~"}
    for name, shape in (("W_qkv", (hidden, qkv)), ("W_out", (heads * d_head, hidden)), ("W_gate", (hidden, ffn)),
                        ("W_up", (hidden, ffn)), ("W_down", (ffn, hidden)), ("W_gamma_qkv", (1, hidden)),
                        ("W_gamma_mlp", (1, hidden)), ("K_cache", (batch, 1, d_head, s_ctx)),
                        ("V_cache", (batch, 1, s_ctx, d_head))):
        for layer in range(layers):
            args[f"{name}_{layer}"] = f"bf16[{','.join(map(str, shape))}]~"
    args["RoPE_cos"] = args["RoPE_sin"] = f"bf16[{d_head // 2},{batch},{s_tkg}]"
    args["mask_cache"] = np.ones((s_ctx, batch, heads, s_tkg), np.bool_)
    args["mask_active"] = np.ones((batch, heads, s_tkg, s_tkg), np.bool_)
    args["position_ids"] = ((np.arange(batch) * 3 + s_ctx // 4 * 3)[:, None] + np.arange(s_tkg)).astype(np.uint32)
    args["eps"], args["sbuf_residual_and_cc"] = 1e-6, False
    for layer in range(layers):
        quantized = layer not in (0, layers - 1)
        args[f"W_gate_scale_{layer}"] = np.full((128, ffn), 0.5, np.float32) if quantized else None
        args[f"W_up_scale_{layer}"] = np.full((128, ffn), 0.5, np.float32) if quantized else None
        args[f"W_down_scale_{layer}"] = np.full((128, hidden), 0.5, np.float32) if quantized else None
    args["replica_groups"] = (tuple(range(min(tp, 4))),)
    return args


def attn_tkg_args(bs: int, q_head: int, s_active: int, curr_sprior: int, full_sprior: int, d_head: int) -> dict:
    """run_attention_tkg_test's inputs for its configuration ``AttnTKGConfig(bs, q_head, s_active,
    curr_sprior, full_sprior, d_head, 0, qk_in_sb=True)`` with a sink (flat KV, k_prior as
    [B, 1, d, s_prior], Q and K handed over in SBUF layout [d, B * heads * S_active], the output in
    HBM [B, heads, d, S_active]); the mask [s_prior, B, heads, S_active] lets every position
    through (its values shape the outputs, not the instructions)."""
    return {
        "q": f"bf16[{d_head},{bs * q_head * s_active}]", "k_active": f"bf16[{d_head},{bs * s_active}]",
        "v_active": f"bf16[{bs},1,{s_active},{d_head}]", "k_prior": f"bf16[{bs},1,{d_head},{full_sprior}]",
        "v_prior": f"bf16[{bs},1,{full_sprior},{d_head}]",
        "mask": np.ones((curr_sprior, bs, q_head, s_active), np.uint8),
        "inv_freqs": None, "rope_pos_ids": None, "start_pos_ids": None, "sink": f"f32[{q_head},1]",
        "active_blocks_table": None,
        "attn_out_shape": (bs, q_head, d_head, s_active), "k_out_shape": (bs, 1, d_head, s_active),
        "cfg": api(f"AttnTKGConfig({bs}, {q_head}, {s_active}, {curr_sprior}, {full_sprior}, {d_head}, 0, "
                   "qk_in_sb=True)"),
        "dtype": api("nl.bfloat16"), "DBG": False,
    }


def _attn_tkg(q, k_active, v_active, k_prior, v_prior, mask, sink, attn_out_shape, **_):
    """The attention_tkg test's reference restated: the last S_active positions of the first
    s_prior cache positions replaced by the new tokens' K and V; scores K^T q (no scaling); masked
    positions out; the head's sink logit joins each softmax as one more position and is dropped
    after it; the output [B, heads, d, S_active]."""
    bs, heads, d, s_active = attn_out_shape
    s_prior = mask.shape[0]
    f32 = lambda x: np.asarray(x, np.float32)  # noqa: E731
    query = f32(q).reshape(d, bs, heads, s_active).transpose(1, 2, 0, 3)  # [B, heads, d, S]
    keys = f32(k_prior)[:, 0, :, :s_prior].copy()  # [B, d, s_prior]
    values = f32(v_prior)[:, 0, :s_prior, :].copy()  # [B, s_prior, d]
    keys[:, :, -s_active:] = f32(k_active).reshape(d, bs, s_active).transpose(1, 0, 2)
    values[:, -s_active:, :] = f32(v_active)[:, 0]
    score = np.einsum("bdp,bhds->bhps", keys, query)
    score = np.where(np.asarray(mask).transpose(1, 2, 0, 3) == 0, -np.inf, score)
    sinks = np.broadcast_to(f32(sink).reshape(1, heads, 1, 1), (bs, heads, 1, s_active))
    score = np.concatenate([score, sinks], axis=2)
    prob = np.exp(score - score.max(axis=2, keepdims=True))
    prob = (prob / prob.sum(axis=2, keepdims=True))[:, :, :-1, :]
    return np.einsum("bhps,bpd->bhds", prob, values)


_BLOCK = {"batch": 4, "q_heads": 8, "d_head": 64, "hidden": 1024, "s_ctx": 2048, "s_tkg": 1}
_BLOCK_NOTE = ("the test's HBM-I/O row (B 4, 8 query heads, d_head 64, S_tkg 1, LNC 2) at H 1024 and S_ctx 2048 "
               "(theirs: H 6144, S_ctx 11264); no reference: the test's golden is a torch model")

CASES: dict[str, Case] = {
    # the test's row AttnTKGConfig(128, 1, 1, 128, 256, 64, 0, qk_in_sb=True) with a sink, LNC 1
    ATTN_TEST + "attn_tkg_wrapper": case(
        lnc=1, ref=_attn_tkg,
        **attn_tkg_args(bs=128, q_head=1, s_active=1, curr_sprior=128, full_sprior=256, d_head=64)),
    # the kernel asserts NeuronCore-v3 or later (nc-version >= gen3): traced for Trn2
    SRC + "attention_block_tkg.py::attention_block_tkg": dataclasses.replace(case(
        grid=(2,), note=_BLOCK_NOTE + ("; two cores by its test: AttnBlkTestConfig.lnc defaults to 2 "
            "(test_attention_block_tkg_utils.py:58), no row sets another, and "
            "test_attention_block_tkg.py:1164 passes it as CompilerArgs(logical_nc_config=cfg.lnc)"),
        **attention_block_kernel_args(**_BLOCK)), machine="trn2"),
    TEST + "test_attention_block_tkg.py::attention_block_tkg_kernel_test_wrapper": dataclasses.replace(case(
        grid=(2,), note=_BLOCK_NOTE + ("; two cores by its test: AttnBlkTestConfig.lnc defaults to 2 "
            "(test_attention_block_tkg_utils.py:58), no row sets another, and "
            "test_attention_block_tkg.py:1164 passes it as CompilerArgs(logical_nc_config=cfg.lnc)"),
        **attention_block_args(**_BLOCK)), machine="trn2"),
    # the test's first Llama-3 70B row (TP 8: each core 8 query heads; LNC 2) at H 1024, I 8192,
    # S_ctx 1024; four layers whose all-reduces span the replica group's ranks
    TEST + "test_transformer_tkg.py::transformer_tkg_tp4_4layer_wrapper": case(
        grid=(2,), note="a collective over four ranks: the answer of a one-core model is its refusal at the line",
        **transformer_tp4_args(tp=8, batch=1, s_ctx=1024, q_heads=64, d_head=128, hidden=1024, intermediate=8192)),
}
