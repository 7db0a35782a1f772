"""An indirect load whose index tile follows an integer (``data[b, idx, i_f]``, nki-samples'
nearest-neighbour resize): the tile of row numbers gives the result's partitions, as
``nl.arange(128)[:, None]`` would, and the integer's dimension is dropped."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def even_rows(data):  # data (B, 256, C): out[b] = data[b, 0:256:2]
    B, S, C = data.shape
    out = nl.ndarray((B, 128, C), dtype=data.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(C)[None, :]
    for b in nl.affine_range(B):
        rows = nisa.iota(i_p * 2, dtype=nl.int32)
        nl.store(out[b, i_p, i_f], value=nl.load(data[b, rows, i_f]))
    return out
