"""Paged-attention decode over KV-cache blocks (vLLM / PyPTO style orchestration).

Scenario
    One decode step for ``B`` sequences.  Each sequence's keys and values sit in blocks of a
    shared paged KV cache; the block table (here a runtime formula of the sequence and block
    index standing for the table lookup) gives each block's place, so the cache windows have
    runtime offsets.  Per sequence (a ``pl.parallel`` loop) the orchestrator allocates the
    online-softmax state (running max ``m``, sum ``l``, accumulator ``acc``), then walks the
    sequence's ``n_blocks`` blocks (a runtime trip count): ``qk`` scores the query against the
    key block, ``softmax_update`` folds the scores into ``m`` / ``l`` and rescales ``acc``,
    ``pv`` accumulates the value block; after the walk ``normalize`` writes the sequence's row
    of the output.

What the passes do
    The state tiles are updated in place every block (``inout``), a chain the TensorMap
    would track with a lookup and an insert per slot per task; the analysis orders each update
    after the previous one with explicit deps (including the WAR of ``qk``'s score tile,
    rewritten every block while ``softmax_update`` of the previous block may still read it),
    so the whole body becomes one MANUAL scope.  The deps on the previous block are carried
    in the block loop: a sequence's first block waits for nothing of the previous sequence,
    and the sequences still run side by side.
"""

from __future__ import annotations

from neuronsim.machine.tasks.task_builder import In, InOut, Out, TaskBuilder
from neuronsim.machine.tasks.ir import TaskProgram

B, HEAD, BLOCK, NUM_BLOCKS, BLOCKS_PER_SEQ = 4, 128, 64, 64, 6


def build_tasks(batch: int = B, blocks_per_seq: int = BLOCKS_PER_SEQ) -> TaskProgram:
    """The decode step for ``batch`` sequences of ``blocks_per_seq`` blocks (the scalar's default)."""
    tb = TaskBuilder("paged_attention_decode", cores=8)
    qk = tb.kernel("qk", In("q"), In("k"), Out("s"), returns="s", cost=1800)
    update = tb.kernel("softmax_update", In("s"), InOut("m"), InOut("l"), InOut("acc"), Out("p"),
                       returns=("m", "l", "acc", "p"), cost=700)
    pv = tb.kernel("pv", In("p"), In("v"), InOut("acc"), returns="acc", cost=1800)
    norm = tb.kernel("normalize", In("acc"), In("l"), Out("o"), returns="o", cost=400)
    q = tb.param("q", (batch, HEAD), "bfloat16")
    k_cache = tb.param("k_cache", (NUM_BLOCKS * BLOCK, HEAD), "bfloat16")
    v_cache = tb.param("v_cache", (NUM_BLOCKS * BLOCK, HEAD), "bfloat16")
    out = tb.param("out", (batch, HEAD), "bfloat16", direction="out")
    n_blocks = tb.scalar("n_blocks", value=blocks_per_seq)
    for b in tb.parallel(batch, name="seqs"):
        q_b = tb.slice(q, (1, HEAD), (b, 0), name="q_b")
        m = tb.create((1, 1), name="m")
        l_sum = tb.create((1, 1), name="l")
        acc = tb.create((1, HEAD), name="acc")
        s = tb.create((1, BLOCK), name="s")
        p = tb.create((1, BLOCK), name="p")
        for j in tb.range(n_blocks, name="blocks"):
            place = (b * 7 + j * 3) % NUM_BLOCKS  # the block table lookup
            k_blk = tb.slice(k_cache, (BLOCK, HEAD), (place * BLOCK, 0), name="k_blk")
            v_blk = tb.slice(v_cache, (BLOCK, HEAD), (place * BLOCK, 0), name="v_blk")
            tb.submit(qk, [q_b, k_blk, s], name="qk", task_id="t_qk")
            tb.submit(update, [s, m, l_sum, acc, p], name="softmax_update", task_id="t_softmax_update")
            tb.submit(pv, [p, v_blk, acc], name="pv", task_id="t_pv")
        o_b = tb.slice(out, (1, HEAD), (b, 0), name="o_b")
        tb.submit(norm, [acc, l_sum, o_b], name="normalize", task_id="t_normalize")
    return tb.program()
