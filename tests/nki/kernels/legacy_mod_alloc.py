"""Direct-allocation group, legacy NKI: SBUF tiles placed with ``ncc.sbuf.mod_alloc``
(a three-slot rotating input buffer indexed by the loop variable, a one-slot intermediate)
and ``ncc.sbuf.alloc`` with an allocation function, PSUM with ``ncc.psum.mod_alloc``
(two rotating banks).  Each tile: transpose on PE into its bank, scale on ACT, store."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

P = 128


def _after_inputs(idx, pdim_size, fdim_size):
    """Output slots after the three input slots: (start partition, byte offset)."""
    (block,) = idx
    return 0, 3 * P * 4 + P * 4 + (block % 2) * P * 4


@nki.jit
def rotate_transpose(x, y):
    tiles = x.shape[0] // P
    in_buf = nl.ndarray((tiles, nl.par_dim(P), P), dtype=nl.float32,
                        buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(3,)))
    scaled = nl.ndarray((nl.par_dim(P), P), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=3 * P * 4))
    out_buf = nl.ndarray((tiles, nl.par_dim(P), P), dtype=nl.float32, buffer=ncc.sbuf.alloc(_after_inputs))
    ps = nl.ndarray((tiles, nl.par_dim(P), P), dtype=nl.float32,
                    buffer=ncc.psum.mod_alloc(base_bank=2, num_bank_tiles=(2,)))
    # an activation in an allocated kernel names its bias (err_bias_tensor_must_be_specified_in_allocation)
    zero = nl.ndarray((nl.par_dim(P), 1), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=6 * P * 4))
    zero[...] = nisa.memset(shape=(P, 1), value=0.0, dtype=nl.float32)
    for t in nl.affine_range(tiles):
        in_buf[t] = nl.load(x[t * P:(t + 1) * P, :])
        ps[t] = nisa.nc_transpose(in_buf[t], engine=nisa.tensor_engine)
        scaled[...] = nisa.activation(op=nl.copy, data=ps[t], scale=3.0, bias=zero)
        out_buf[t] = nisa.tensor_copy(scaled, engine=nisa.vector_engine)
        nl.store(y[t * P:(t + 1) * P, :], value=out_buf[t])


def inputs(seed=0):
    x = np.random.default_rng(seed).normal(size=(6 * P, P)).astype(np.float32)
    return {"x": x, "y": np.zeros_like(x)}


def reference(x):
    tiles = [3.0 * x[t * P:(t + 1) * P].T for t in range(x.shape[0] // P)]
    return {"y": np.concatenate(tiles).astype(np.float32)}
