"""Current-API kernels looping with Python's ``range`` (as many public kernels do), a helper
called inside the loops with a loop of its own, and a comprehension: every instruction must
name the loop indices in force."""

import nki
import nki.isa as nisa
import nki.language as nl

P = 128


def _scaled_copy(src, out, row, col):
    """A helper with its own loop over two halves of a column tile."""
    for half in range(2):
        width = src.shape[1] // 4
        t = nl.ndarray((P, width), dtype=src.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=src[row * P:(row + 1) * P, nl.ds((2 * col + half) * width, width)])
        nisa.dma_copy(dst=out[row * P:(row + 1) * P, nl.ds((2 * col + half) * width, width)], src=t)


@nki.jit
def copy_tiles(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for row in range(a.shape[0] // P):
        for col in range(2):
            _scaled_copy(a, out, row, col)
    return out


@nki.jit
def comprehension(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    tiles = [nl.load(a[r * P:(r + 1) * P, :]) for r in range(a.shape[0] // P)]
    for r, t in enumerate(tiles):
        nl.store(out[r * P:(r + 1) * P, :], t)
    return out
