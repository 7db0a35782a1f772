"""Views of another dtype read or written by compute engines and by a DMA transpose
(tests/nki/test_reinterpret_compute.py): ``.view(dtype)`` and ``.ap(dtype=)`` name the same bytes
read as the new dtype, wherever an instruction takes them."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def words_as_bf16_doubled(words):
    """uint16 words read as bfloat16 by the Vector engine (the same size, stored otherwise)."""
    P, F = words.shape
    tile = nl.ndarray((P, F), dtype=words.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=words)
    doubled = nl.ndarray((P, F), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=doubled, data=tile.view(nl.bfloat16), op0=nl.multiply, operand0=2.0)
    out = nl.ndarray((P, F), dtype=nl.bfloat16, buffer=nl.shared_hbm, name="out")
    nisa.dma_copy(dst=out, src=doubled)
    return out


@nki.jit
def floats_as_halves(values):
    """Each float32 read as two bfloat16 by a copy engine (``.ap(dtype=)``, a smaller element)."""
    P, F = values.shape
    tile = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=values)
    halves = nl.ndarray((P, 2 * F), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=halves, src=tile.ap(pattern=[[2 * F, P], [1, 2 * F]], offset=0, dtype=nl.bfloat16))
    out = nl.ndarray((P, 2 * F), dtype=nl.bfloat16, buffer=nl.shared_hbm, name="out")
    nisa.dma_copy(dst=out, src=halves)
    return out


@nki.jit
def halves_as_words(halves):
    """bfloat16 pairs read as one int32 each by a copy engine (``.view``, a larger element)."""
    P, F2 = halves.shape
    tile = nl.ndarray((P, F2), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=halves)
    words = nl.ndarray((P, F2 // 2), dtype=nl.int32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=words, src=tile.view(nl.int32))
    out = nl.ndarray((P, F2 // 2), dtype=nl.int32, buffer=nl.shared_hbm, name="out")
    nisa.dma_copy(dst=out, src=words)
    return out


@nki.jit
def written_as_halves(halves):
    """A copy engine writes bfloat16 values through a view of a float32 tile (the bytes land as
    they are; the tile then leaves as float32)."""
    P, F2 = halves.shape
    tile = nl.ndarray((P, F2), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=halves)
    words = nl.ndarray((P, F2 // 2), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=words.view(nl.bfloat16), src=tile)
    out = nl.ndarray((P, F2 // 2), dtype=nl.float32, buffer=nl.shared_hbm, name="out")
    nisa.dma_copy(dst=out, src=words)
    return out


@nki.jit
def trailing_words_transposed(rows):
    """The int32 kept in the last two bfloat16 columns of each row, transposed by DMA into one
    partition (nki-library's token indices packed after the hidden values)."""
    T, W = rows.shape
    column = nl.ndarray((1, T), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_transpose(dst=column.ap(pattern=[[T, 1], [1, 1], [1, 1], [1, T]], offset=0),
                       src=rows.ap(pattern=[[W // 2, T], [1, 1], [1, 1], [1, 1]], offset=W // 2 - 1,
                                   dtype=nl.int32))
    out = nl.ndarray((1, T), dtype=nl.int32, buffer=nl.shared_hbm, name="out")
    nisa.dma_copy(dst=out, src=column)
    return out


@nki.jit
def strided_view(values):
    """Every other bfloat16 read as float32: the innermost run is not contiguous (refused)."""
    P, F = values.shape
    tile = nl.ndarray((P, F), dtype=values.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=values)
    words = tile[:, 0:F:2].view(nl.float32)  # strided view refused here
    return words
