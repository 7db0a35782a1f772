"""``t.view(dtype)`` of a tensor of blocks, then indexed with its block index first (nki-samples'
rmsnorm quantization, ``t.view(nl.uint8)[g, :, :4]``): the block, read as the dtype."""

from neuronxcc import nki
import neuronxcc.nki.language as nl


@nki.jit
def bytes_of_each_block(x):  # x (2, 128, 1) float32: out (2, 128, 4) uint8, its bytes
    out = nl.ndarray((2, 128, 4), dtype=nl.uint8, buffer=nl.shared_hbm)
    t = nl.ndarray((2, nl.par_dim(128), 1), dtype=nl.float32, buffer=nl.sbuf)
    for g in nl.affine_range(2):
        t[g] = nl.load(x[g])
    for g in nl.affine_range(2):
        nl.store(out[g], value=t.view(nl.uint8)[g, :, :4])
    return out
