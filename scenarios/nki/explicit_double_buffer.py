"""Load / compute / store over hand-placed rotating buffers, legacy NKI with direct
allocation (the ``explicit_double_buffer`` scenario; the direct-allocation guide's
double buffer).

``out = exp(a) * b`` in [128, 512] tiles.  Each buffer is one ``ncc.sbuf.mod_alloc``
placement laid out tile after tile from byte 0: ``a_buf``, ``b_buf`` and ``c_buf`` have a
block dimension indexed by the column-tile loop variable and two physical slots
(``num_free_tiles=(2,)``: block ``n`` lives in slot ``n mod 2``), the intermediate ``e``
has one.  A slot is reused two tiles later, across the row loop's boundary too.
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

TILE_P, TILE_F = 128, 512
SLOTS = 2


@nki.jit
def explicit_double_buffer(a, b, out):
    rows, cols = a.shape
    col_tiles = cols // TILE_F
    tile_bytes = TILE_F * 4
    a_buf = nl.ndarray((col_tiles, nl.par_dim(TILE_P), TILE_F), dtype=nl.float32,
                       buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(SLOTS,)))
    b_buf = nl.ndarray((col_tiles, nl.par_dim(TILE_P), TILE_F), dtype=nl.float32,
                       buffer=ncc.sbuf.mod_alloc(base_addr=SLOTS * tile_bytes, num_free_tiles=(SLOTS,)))
    e = nl.ndarray((nl.par_dim(TILE_P), TILE_F), dtype=nl.float32,
                   buffer=ncc.sbuf.mod_alloc(base_addr=2 * SLOTS * tile_bytes))
    c_buf = nl.ndarray((col_tiles, nl.par_dim(TILE_P), TILE_F), dtype=nl.float32,
                       buffer=ncc.sbuf.mod_alloc(base_addr=(2 * SLOTS + 1) * tile_bytes, num_free_tiles=(SLOTS,)))
    # an activation in a kernel that places tiles names its bias (err_bias_tensor_must_be_specified_in_allocation)
    zero = nl.ndarray((nl.par_dim(TILE_P), 1), dtype=nl.float32,
                      buffer=ncc.sbuf.mod_alloc(base_addr=(3 * SLOTS + 1) * tile_bytes))
    zero[...] = nisa.memset(shape=(TILE_P, 1), value=0.0, dtype=nl.float32)
    for m in nl.affine_range(rows // TILE_P):
        for n in nl.affine_range(col_tiles):
            rows_m, cols_n = slice(m * TILE_P, (m + 1) * TILE_P), slice(n * TILE_F, (n + 1) * TILE_F)
            a_buf[n] = nl.load(a[rows_m, cols_n])
            b_buf[n] = nl.load(b[rows_m, cols_n])
            e[...] = nisa.activation(op=nl.exp, data=a_buf[n], bias=zero)
            c_buf[n] = nisa.tensor_tensor(e, b_buf[n], op=nl.multiply)
            nl.store(out[rows_m, cols_n], value=c_buf[n])


def reference(a, b):
    """numpy: ``exp(a) * b``."""
    return {"out": (np.exp(a.astype(np.float64)) * b.astype(np.float64)).astype(np.float32)}
