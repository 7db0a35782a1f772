"""``+=`` into SBUF inside an ``affine_range`` loop, three ways (legacy API): into a slice of its
own per iteration, into a tile made in the loop body, and into one tile shared by every
iteration (the only one the compiler does not order: a value carried across iterations)."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

TILES = 4


@nki.jit
def own_slices(x, out):
    # x: [128, 4 * 2 * 64]; out[:, t] = x[:, t, 0] + x[:, t, 1] over 64-column chunks
    sums = nl.zeros((TILES, nl.par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    for h in nl.sequential_range(2):
        for t in nl.affine_range(TILES):
            chunk = nl.load(x[:, (2 * t + h) * 64:(2 * t + h + 1) * 64])
            sums[t] += chunk
    for t in nl.affine_range(TILES):
        nl.store(out[:, t * 64:(t + 1) * 64], value=sums[t])


@nki.jit
def tile_per_iteration(x, out):
    for t in nl.affine_range(TILES):
        acc = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        for h in nl.sequential_range(2):
            acc += nl.load(x[:, (2 * t + h) * 64:(2 * t + h + 1) * 64])
        nl.store(out[:, t * 64:(t + 1) * 64], value=acc)


@nki.jit
def shared_tile(x, out):
    acc = nl.zeros((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    for t in nl.affine_range(2 * TILES):
        acc += nl.load(x[:, t * 64:(t + 1) * 64])
    for t in nl.affine_range(TILES):
        nl.store(out[:, t * 64:(t + 1) * 64], value=acc)


def reference(x):
    pairs = x.reshape(128, TILES, 2, 64).sum(axis=2)
    return {"out": pairs.reshape(128, TILES * 64)}
