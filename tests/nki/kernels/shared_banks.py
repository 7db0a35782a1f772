"""Direct allocation where two PSUM tiles share banks by design (legacy NKI).

The input tiles are all loaded first.  Per row tile ``g``: PE computes ``x_g^T x_g`` into the
score tile (bank ``g mod score_slots``), DVE evicts it, PE transposes the evicted scores into
the transpose tile (bank ``g mod 2``: the bank of this tile's scores), DVE evicts that and the
tile is stored.  The SBUF tiles are left to the compiler; only PSUM is placed by hand.

Sharing a bank between the two tiles is safe with two score slots: the next scores go to the
other bank, and the scores two tiles later wait (through DVE's program order and the
transpose's read of the evicted scores) for this transpose's eviction.  With one slot
(``score_slots=1``) the next tile's scores land on the bank whose transpose DVE may still be
reading, and nothing in the kernel's data flow orders the two; the compiler does, since it
builds its deps after allocation, on addresses (``docs/nki-checks.md``, ``allocation``).
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

P = 128


@nki.jit
def shared_banks(x, out, score_slots=2):
    tiles = x.shape[0] // P
    xt = nl.ndarray((tiles, nl.par_dim(P), P), dtype=nl.float32, buffer=nl.sbuf)
    score_ps = nl.ndarray((tiles, nl.par_dim(P), P), dtype=nl.float32,
                          buffer=ncc.psum.mod_alloc(base_bank=0, num_bank_tiles=(score_slots,)))
    tp_ps = nl.ndarray((tiles, nl.par_dim(P), P), dtype=nl.float32,
                       buffer=ncc.psum.mod_alloc(base_bank=0, num_bank_tiles=(2,)))
    for g in nl.affine_range(tiles):
        xt[g] = nl.load(x[g * P:(g + 1) * P, :])
    for g in nl.sequential_range(tiles):
        score_ps[g] = nisa.nc_matmul(xt[g], xt[g])  # scores: x_g^T x_g
        s_sb = nisa.tensor_copy(score_ps[g], engine=nisa.vector_engine)
        tp_ps[g] = nisa.nc_transpose(s_sb, engine=nisa.tensor_engine)
        o_sb = nisa.tensor_copy(tp_ps[g], engine=nisa.vector_engine)  # evicts the transpose
        nl.store(out[g * P:(g + 1) * P, :], value=o_sb)


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1, 1, (4 * P, P)).astype(np.float32)
    return {"x": x, "out": np.zeros_like(x)}


def reference(x):
    """numpy: per row tile, ``(x_g^T x_g)^T``."""
    tiles = [x[g * P:(g + 1) * P].astype(np.float64) for g in range(x.shape[0] // P)]
    return {"out": np.concatenate([(t.T @ t).T for t in tiles]).astype(np.float32)}
