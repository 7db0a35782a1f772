"""A tile made in an affine loop's body and handed to a helper nested in the kernel (nki-samples'
collective matmul writes its result tiles back so): the helper's lines lie outside the body,
but it runs where the body calls it, so the tile is used inside its block.  A tile used after
its loop is still outside it (the legacy errors page's err_local_variable_used_out_of_scope)."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def nested_helper(a):  # a (256, 64)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)

    def write_back(i, tile):
        nl.store(out[i * 128 + nl.arange(128)[:, None], nl.arange(64)[None, :]], value=tile)

    for i in nl.affine_range(2):
        tile = nl.load(a[i * 128 + nl.arange(128)[:, None], nl.arange(64)[None, :]])
        write_back(i, tile)
    return out


@nki.jit
def used_after_its_loop(a):  # a (256, 64)
    out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        tile = nl.load(a[i * 128 + nl.arange(128)[:, None], nl.arange(64)[None, :]])
    nl.store(out, value=tile)
    return out
