"""Cases of the corpus run: nki-library's collectives, launched on ranks (``Case.ranks``): the
seven kernels of test_collectives.py, the SBUF-to-SBUF all-gathers and the fine-grained ring
kernels.  Every rank gets the same inputs (their tests give each its own where the result does
not depend on it); references give every rank's outputs by name (:func:`_per_rank`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from corpus_cases import Case, case
from corpus_cases_sdk import _f

SRC = "nki-library/src/nkilib_src/nkilib/"
COLL = "nki-library/test/integration/nkilib/experimental/collectives/test_collectives.py::"
#: A replica group as the plain list of ranks (the kernels take either; the library's
#: ReplicaGroup is neuronsim's stand-in once the kernel file is loaded, not before).
RANKS = [[0, 1]]


def _per_rank(reference: Callable[..., Any], ranks: int = 2, name: str = "return0") -> Callable[..., dict[str, Any]]:
    """A reference of every rank's returned array (``reference(rank, **inputs)``), by the names a
    launch on ranks gives them: ``return0``, ``return0_rank1``, ... (``name`` for a returned
    tensor the kernel named)."""
    def outputs(**inputs: Any) -> dict[str, Any]:
        return {(name if r == 0 else f"{name}_rank{r}"): reference(r, **inputs) for r in range(ranks)}
    return outputs


def _gathered(lhs: Any, ranks: int) -> np.ndarray:
    """The ring all-gather's result of identical inputs: [RANK_N, LNC 1, CHANNEL 1, m, K]."""
    return np.stack([_f(lhs)] * ranks)[:, None, None]


def _attn_q_batch_shard(input, **_):
    """test_collectives' attn_q_batch_shard on 2 ranks of one GQA group (G 2, NBSd), every rank
    the same input: the gathered heads (G, n, B, S, d) in each rank's gathered_buf, rank r's
    batch slice [2r, 2r + 2) of them as its output (G n, B / G, S, d)."""
    gathered = np.concatenate([_f(input)] * 2).reshape(2, 2, 4, 8, 64)
    outs = {"gathered_buf": gathered, "gathered_buf_rank1": gathered}
    return {**outs, **_per_rank(lambda r, **_: gathered[:, :, 2 * r:2 * r + 2].reshape(4, 2, 8, 64))()}



CASES: dict[str, Case] = {
    SRC + "experimental/collectives/fg_allgather.py::fine_grained_allgather": case(
        "bf16[512,512]~", 4, 1, ranks=4, ref=_per_rank(lambda r, lhs, **_: _gathered(lhs, 4), 4, "result_sbuf"),
        note=("collectives across ranks: test_fg_allgather.py:46, its one row, gathers over tp_degree 4 "
            "ranks at LNC 2 (the LNC 1 row at line 56 is commented out and still 4 ranks); here 4 ranks at "
            "LNC 1 (one channel), every rank the same lhs (the ring's order is checked by tests/nki/test_ranks.py)")),
    SRC + "experimental/collectives/fgcc.py::allgather_compute_matmul": case(
        "bf16[512,512]~", "bf16[512,512]~", 4, 1, ranks=4, tolerance=(2e-2, 1e-2),
        ref=_per_rank(lambda r, lhs, rhs, **_: _gathered(lhs, 4) @ _f(rhs), 4, "result_tensor_sbuf"),
        note=("collectives across ranks: test_fgcc.py:51, its one active row, gathers over tp_degree 4 "
            "ranks at LNC 2; here 4 ranks at LNC 1, every rank the same lhs and rhs: each gathered block "
            "times rhs, bf16 products (rtol 2e-2)")),
    SRC + "experimental/collectives/sb2sb_allgather.py::allgather_sb2sb": case(
        "bf16[128,512]~", RANKS, 2, ranks=2, ref=_per_rank(lambda r, inp, **_: np.concatenate([_f(inp)] * 2, axis=1)),
        note=("collectives across ranks: test_sb2sb_allgather.py:44 on, every row 8 to 64 ranks; here 2")),
    SRC + "experimental/collectives/sb2sb_allgather.py::allgather_sb2sb_tiled": case(
        "bf16[128,512]~", RANKS, 2, ranks=2, ref=_per_rank(lambda r, inp, **_: np.concatenate([_f(inp)] * 2, axis=1)),
        note=("collectives across ranks: test_sb2sb_allgather.py:103 on, every row 4 ranks at LNC 2; here 2")),
    COLL + "all_reduce_hbm_kernel": case(
        "f32[128,512]~", RANKS, ranks=2, ref=_per_rank(lambda r, input, **_: 2 * _f(input)),
        note=("collectives across ranks: test_collectives.py:318 runs it on 2 ranks, (2, 2) and (2, 1) "
            "(ranks, LNC), its x (128, 512); every rank the same input, as that test's; every rank's output")),
    COLL + "all_gather_hbm_kernel": case("f32[2,3]~", RANKS, 2, ranks=2,
        ref=_per_rank(lambda r, input, **_: np.concatenate([_f(input)] * 2)),
        note=("collectives across ranks: test_collectives.py:345 runs it on 2 ranks, (2, 2) and (2, 1) "
            "(ranks, LNC); every rank the same input (its test gives each its own)")),
    COLL + "reduce_scatter_hbm_kernel": case("f32[4,3]~", RANKS, 2, ranks=2,
        ref=_per_rank(lambda r, input, **_: 2 * _f(input)[2 * r:2 * r + 2]),
        note=("collectives across ranks: test_collectives.py:380 runs it on 2 ranks, (2, 2) and (2, 1) "
            "(ranks, LNC); every rank the same input: rank r's chunk summed over the ranks")),
    COLL + "all_to_all_hbm_kernel": case("f32[2,3]~", RANKS, ranks=2,
        ref=_per_rank(lambda r, input, **_: np.stack([_f(input)[r]] * 2)),
        note=("collectives across ranks: test_collectives.py:418 runs it on 4 ranks at LNC 2 or 8 at "
            "LNC 1; here 2 (the kernel's docstring's example), every rank the same input: rank r keeps its "
            "row r and gets the other's row r")),
    COLL + "rank_id_kernel": case("f32[2,2,3]~", ranks=2, ref=_per_rank(lambda r, in_tensor, **_: _f(in_tensor)[r]),
        note=("collectives across ranks: test_collectives.py:447 runs it on 2 ranks, (2, 2) and (2, 1) "
            "(ranks, LNC); rank r's output: slice r")),
    COLL + "dma_copy_rank_id_kernel": case("f32[2,2,3]~", np.arange(2, dtype=np.int32).reshape(1, 2), ranks=2,
        ref=_per_rank(lambda r, in_tensor, **_: _f(in_tensor)[r]),
        note=("collectives across ranks: test_collectives.py:476 runs it on 2 ranks, (2, 2) and (2, 1) "
            "(ranks, LNC); the identity lookup [[0, 1]] of its docstring")),
    COLL + "attn_q_batch_shard": case(
        "bf16[2,4,8,64]~", np.array([[0, 2]], np.int32), "0:bf16[2,2,4,8,64]", 2, RANKS, ranks=2,
        ref=_attn_q_batch_shard,
        note=("collectives across ranks: test_collectives.py:510, its one row, 4 ranks at LNC 2 (TP2DP2); "
            "here 2 ranks, one GQA group of 2 (NBSd: n 2, B 4, S 8, d 64): iota_workers [[0, 2]] as its "
            "docstring computes them, gathered_buf (G, n, B, S, d); every rank the same input")),
}
