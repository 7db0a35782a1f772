"""Tiled GEMM with split-K: partial products per K slice, then reduction tasks per output tile.

Scenario
    ``C[M, N] = A[M, K] @ B[K, N]`` in tiles of ``T x T``.  K is long, so each output tile's
    K range is split in ``SPLIT`` slices computed as independent tasks (more parallelism than
    output tiles): ``matmul`` writes slice ``s``'s partial product to its own window of a
    workspace; a ``reduce`` task then sums the ``SPLIT`` partials of the tile into C.  The
    output tiles are a ``pl.parallel`` loop; the split is a sequential loop (its partials go
    to distinct windows of the workspace, carried through the loop as PyPTO's ``init_values``).

What the passes do
    Each ``reduce`` reads the whole window the ``matmul`` tasks of its tile wrote, through the
    split loop's return var: the analysis re-binds those producers to it and gives ``reduce``
    one loop fan-in dep (every ``matmul`` of the tile's split loop);
    the matmuls' writes and the reduce's read skip the TensorMap, and the whole body becomes
    MANUAL.
"""

from __future__ import annotations

from neuronsim.machine.tasks.task_builder import In, Out, TaskBuilder
from neuronsim.machine.tasks.ir import TaskProgram

M, N, K, T, SPLIT = 512, 512, 4096, 128, 4


def build_tasks() -> TaskProgram:
    tb = TaskBuilder("gemm_splitk", cores=8)
    mm = tb.kernel("matmul", In("a"), In("b"), Out("part"), returns="part", cost=6000)
    red = tb.kernel("reduce", In("parts"), Out("c"), returns="c", cost=900)
    a = tb.param("a", (M, K), "bfloat16")
    b = tb.param("b", (K, N), "bfloat16")
    c = tb.param("c", (M, N), "float32", direction="out")
    ws = tb.create((M // T * (N // T) * SPLIT * T, T), "float32", name="workspace")
    ks = K // SPLIT
    for tile in tb.parallel((M // T) * (N // T), name="tiles"):
        mi, ni = tile // (N // T), tile % (N // T)
        parts = tb.slice(ws, (SPLIT * T, T), (tile * SPLIT * T, 0), name="parts")
        for s, (acc,) in tb.parallel(SPLIT, init=(parts,), name="split"):
            a_blk = tb.slice(a, (T, ks), (mi * T, s * ks), name="a_blk")
            b_blk = tb.slice(b, (ks, T), (s * ks, ni * T), name="b_blk")
            part = tb.slice(acc, (T, T), (s * T, 0), name="part")
            tb.submit(mm, [a_blk, b_blk, part], name="matmul", task_id="t_mm")
            summed = tb.yield_(acc)
        c_blk = tb.slice(c, (T, T), (mi * T, ni * T), name="c_blk")
        tb.submit(red, [summed, c_blk], name="reduce", task_id="t_red")
    return tb.program()
