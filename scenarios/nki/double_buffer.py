"""A double-buffered DMA pipeline, legacy NKI (the ``double_buffer`` scenario).

``out = silu(a) + b`` over row tiles.  The input buffers are placed by hand, two slots
each (``ncc.sbuf.mod_alloc``: ``a_buf`` at byte 0, ``b_buf`` after it), the output
buffer ``c_buf`` has two slots the compiler places, and ``h`` one.  The loop runs over
tile pairs; the two slots are unrolled by hand (``static_range``).  ``b`` is loaded with
software DGE (descriptors generated on GpSimd).
"""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

SLOTS = 2


@nki.jit
def double_buffer(a, b, out):
    rows, cols = a.shape
    tile = nl.tile_size.pmax
    slot_bytes = cols * 4
    a_buf = nl.ndarray((SLOTS, nl.par_dim(tile), cols), dtype=nl.float32,
                       buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(SLOTS,)))
    b_buf = nl.ndarray((SLOTS, nl.par_dim(tile), cols), dtype=nl.float32,
                       buffer=ncc.sbuf.mod_alloc(base_addr=SLOTS * slot_bytes, num_free_tiles=(SLOTS,)))
    # an activation in a kernel that places tiles names its bias (err_bias_tensor_must_be_specified_in_allocation)
    zero = nl.ndarray((nl.par_dim(tile), 1), dtype=nl.float32,
                      buffer=ncc.sbuf.mod_alloc(base_addr=2 * SLOTS * slot_bytes))
    zero[...] = nisa.memset(shape=(tile, 1), value=0.0, dtype=nl.float32)
    for pair in nl.affine_range(rows // (SLOTS * tile)):
        # declared in the body: a tile made outside would be written by every iteration of
        # the affine loop (the errors page's "unexpected output dependencies")
        h = nl.ndarray((nl.par_dim(tile), cols), dtype=nl.float32, buffer=nl.sbuf)
        c_buf = nl.ndarray((SLOTS, nl.par_dim(tile), cols), dtype=nl.float32, buffer=nl.sbuf)
        for slot in nl.static_range(SLOTS):
            t = SLOTS * pair + slot
            a_buf[slot] = nl.load(a[t * tile:(t + 1) * tile, :])
            nisa.dma_copy(dst=b_buf[slot], src=b[t * tile:(t + 1) * tile, :], dge_mode=nisa.dge_mode.swdge)
            h[...] = nisa.activation(op=nl.silu, data=a_buf[slot], bias=zero)
            c_buf[slot] = nisa.tensor_tensor(h, b_buf[slot], op=nl.add)
            nl.store(out[t * tile:(t + 1) * tile, :], value=c_buf[slot])


def reference(a, b):
    """numpy: ``silu(a) + b``."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    return {"out": (a / (1.0 + np.exp(-a)) + b).astype(np.float32)}
