"""Calls on one element of a tile (``t[0, 0]``), as nki-samples' flash-attention backward seeds
its dropout: ``nl.random_seed(seed=nl.add(seed_local[0, 0], offset))``.  The result is a tile of
one partition and one element."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def element_plus_three(a):  # a (4, 4) float32: out (1, 1) = a[0, 2] + 3 (partition 0: an engine starts there)
    out = nl.ndarray((1, 1), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(out, value=nl.add(t[0, 2], 3.0))
    return out


@nki.jit
def seeded_from_an_element(seed, x):  # seed (1, 1) int32; x (128, 512): dropout of rate 0 keeps x
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    seed_local = nl.load(seed[0:1, 0:1])
    nl.random_seed(seed=nl.add(seed_local[0, 0], 3))
    nl.store(out, value=nl.dropout(nl.load(x), rate=0.0))
    return out


@nki.jit
def seed_of_one_element(seed):  # seed (1,) int32: nl.load(seed[0]) is a [1, 1] tile (flash_fwd's seeding)
    out = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.shared_hbm)
    seed_local = nl.load(seed[0])
    nl.store(out, value=nl.add(seed_local[0, 0], 5, dtype=nl.int32))
    return out
