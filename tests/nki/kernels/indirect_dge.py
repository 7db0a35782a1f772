"""A gather by ``.ap(vector_offset=)`` with each ``dge_mode`` (the NKI DGE page: an indirect
``dma_copy`` takes ``unknown`` or ``swdge``; ``hwdge`` "does not support indirect (gather/scatter)
operations", ``none`` cannot handle runtime-computed indices)."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def gather(table, rows, mode="swdge"):  # table (128, 512) float32, rows (64, 1) int32: out = table[rows[:, 0]]
    offsets = nl.ndarray((64, 1), nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=offsets, src=rows)
    t = nl.ndarray((64, 512), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=table.ap([[512, 64], [1, 512]], 0, vector_offset=offsets, indirect_dim=0),
                  dge_mode=getattr(nisa.dge_mode, mode))
    out = nl.ndarray((64, 512), nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
