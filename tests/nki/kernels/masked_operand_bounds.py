"""An SBUF tile read in column blocks whose last one runs past its end, each read bounded by
its call's mask= (nki-samples' collective matmul copies its right-hand side so when N is no
multiple of 512): the access stays inside, and the operand rules checked at the call do not
refuse it before the mask bounds it."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def masked_blocks(a, bounded=True):  # a (128, 256), read in two blocks of 192 columns
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_x = nl.arange(192)[None, :]
    a_sb = nl.load(a)
    for n in nl.affine_range(2):
        inside = (n * 192 + i_x) < 256
        doubled = nl.ndarray((128, 192), dtype=a.dtype, buffer=nl.sbuf)
        doubled[...] = nl.multiply(a_sb[i_p, n * 192 + i_x], 2.0, mask=inside if bounded else None)
        nl.store(out[i_p, n * 192 + i_x], value=doubled, mask=inside)
    return out
