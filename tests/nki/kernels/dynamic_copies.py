"""``nisa.tensor_copy_dynamic_src`` / ``_dst`` (NKI 0.7): a copy between on-chip tiles with the
source's (destination's) offset within each partition read at run time, here a register loaded
from the kernel's ``offset`` input and given as the access pattern's ``scalar_offset``."""

import nki
import nki.isa as nisa
import nki.language as nl


def _offset(offset):
    held = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=held, src=offset)
    return nisa.scalar_load(held)


@nki.jit
def window_from(data, offset):  # data (128, 64) float32, offset (1, 1) int32: out = data[:, offset:offset + 8]
    tile = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=data)
    window = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy_dynamic_src(dst=window, src=tile.ap(pattern=[[64, 128], [1, 8]], offset=0,
                                                         scalar_offset=_offset(offset), indirect_dim=1))
    out = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=window)
    return out


@nki.jit
def window_into(data, offset):  # out = zeros, out[:, offset:offset + 8] = data[:, 0:8]
    tile = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.memset(dst=tile, value=0.0)
    first = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=first, src=data[:, 0:8])
    nisa.tensor_copy_dynamic_dst(dst=tile.ap(pattern=[[64, 128], [1, 8]], offset=0, scalar_offset=_offset(offset),
                                             indirect_dim=1), src=first)
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=tile)
    return out
