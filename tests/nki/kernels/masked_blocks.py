"""A loop over more blocks than a PSUM tensor has, the ones past its last masked off
(nki-samples' blockwise matmul on two cores: ``ps[h_j] += nc_matmul(..., mask=(h_j < n))``)."""

import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def four_of_eight_blocks(a, b, limit=4):  # a (128, 128), b (128, 4096): out = a.T @ b[:, :2048]
    out = nl.ndarray((128, 2048), dtype=np.float32, buffer=nl.shared_hbm)
    a_sb, b_sb = nl.load(a), nl.load(b)
    ps = nl.zeros((4, nl.par_dim(128), 512), dtype=np.float32, buffer=nl.psum)
    for h in nl.affine_range(8):
        ps[h, 0:128, 0:512] += nisa.nc_matmul(a_sb, b_sb[0:128, nl.ds(512 * h, 512)], mask=(h < limit))
    for h in nl.affine_range(4):
        nl.store(out[0:128, nl.ds(512 * h, 512)], nl.copy(ps[h]))
    return out


@nki.jit
def prefetch_next_block(a, masked=True, lazy=False):  # a (3 * 128, 64): out = a, block i + 1 loaded in iteration i
    out = nl.ndarray((384, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    buf = nl.ndarray((3, nl.par_dim(128), 64), dtype=a.dtype, buffer=nl.sbuf, lazy_initialization=lazy)
    ip, jf = nl.arange(128)[:, None], nl.arange(64)[None, :]
    buf[0, ip, jf] = nl.load(a[ip, jf])
    for i in nl.sequential_range(3):
        nl.store(out[i * 128 + ip, jf], buf[i, ip, jf])
        # blockwise matmul's prefetch: the last iteration's names block 3, which its mask keeps it from loading
        buf[i + 1, ip, jf] = nl.load(a[(i + 1) * 128 + ip, jf], mask=(i < 2) if masked else None)
    return out


@nki.jit
def prefetch_next_row(a, attached=False, masked=True):  # a (3, 128, 64): out = a, row i + 1 loaded in iteration i
    """The prefetch with an integer index of HBM (``a[i + 1]``, past the last row in the last
    iteration), its mask given to the load or attached to the view (neuron-team blockwise_mm)."""
    out = nl.ndarray((3, 128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    buf = nl.ndarray((4, nl.par_dim(128), 64), dtype=a.dtype, buffer=nl.sbuf)
    buf[0, 0:128, 0:64] = nl.load(a[0])
    for i in nl.sequential_range(3):
        nl.store(out[i], buf[i, 0:128, 0:64])
        keep = (i < 2) if masked else True
        nxt = nl.load(a[i + 1][keep]) if attached else nl.load(a[i + 1], mask=keep)  # the row
        buf[i + 1, 0:128, 0:64] = nl.copy(nxt)
    return out


@nki.jit
def shape_of_block_past_the_last(a):
    """A block past the last asked its shape: its index is the mistake, said at this line."""
    buf = nl.ndarray((3, nl.par_dim(128), 64), dtype=a.dtype, buffer=nl.sbuf)
    rows = buf[3].shape[0]  # past the last
    out = nl.ndarray((rows, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    return out
