"""A tile read reversed along its free axis (``t[i_p, n - 1 - i_f]``, an access pattern of
stride -1), on chip and in a store, after a load filled part of a zeroed tile: the reversed
read depends on the load (its footprint walks down from its offset)."""

import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

N, PAD = 64, 3


@nki.jit
def reversed_after_partial_load(x):
    width = N + PAD
    i_p = nl.arange(128)[:, None]
    i_n = nl.arange(N)[None, :]
    i_w = nl.arange(width)[None, :]
    padded = nl.zeros((128, width), dtype=x.dtype)
    padded[i_p, i_n] = nl.load(x[i_p, i_n])
    flipped = nl.ndarray((128, width), dtype=x.dtype)
    flipped[i_p, i_w] = padded[i_p, width - 1 - i_w]
    whole = nl.ndarray((128, width), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(whole[i_p, i_w], flipped[i_p, i_w])
    back = nl.ndarray((128, N), dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(back[i_p, i_n], flipped[i_p, width - 1 - i_n])  # reversed again: x itself
    return whole, back


def inputs(seed=0):
    return {"x": np.random.default_rng(seed).normal(size=(128, N)).astype(np.float32)}


def reference(x):
    padded = np.concatenate([x, np.zeros((128, PAD), np.float32)], axis=1)
    return {"return0": padded[:, ::-1].copy(), "return1": x.copy()}
