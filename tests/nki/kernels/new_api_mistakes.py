"""Mistakes in the NKI 0.6 / 0.7 constructs neuronsim took in at round 4's twenty-fourth session
(tile grids, rearrange, scalar_alu and NkiScalar, empty_like(transpose_axes=), fori_loop(unroll=)),
one function each, the mistake on the line marked ``# mistake``: each is one located line.  The
functions share one preamble (a tile, a device scalar, a grid), which some of them do not use."""

import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


def _preamble(x, v):
    """A tile of ``x``, a device scalar read from ``v`` and a grid of ``x``."""
    t = nl.ndarray((128, 24), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x[0:128, 0:24])
    iv = nl.ndarray((1, 2), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=iv, src=v)
    return t, nisa.scalar_load(iv[0:1, 0:1]), nl.tiles(x, tile_shape=(128, 128))


@nki.jit
def transpose_order(x, v):
    t, a, g = _preamble(x, v)
    nl.empty_like(t, transpose_axes=(0, 1))  # mistake
    return x


@nki.jit
def transpose_type(x, v):
    t, a, g = _preamble(x, v)
    nl.empty_like(t, transpose_axes=1)  # mistake
    return x


@nki.jit
def like_of_a_number(x, v):
    t, a, g = _preamble(x, v)
    nl.empty_like(5)  # mistake
    return x


@nki.jit
def grid_float_bound(x, v):
    t, a, g = _preamble(x, v)
    nl.tiles(x, tile_shape=(128, 128))[0:1.5, 0]  # mistake
    return x


@nki.jit
def grid_zero_step(x, v):
    t, a, g = _preamble(x, v)
    nl.tiles(x, tile_shape=(128, 128))[0:2:0, 0]  # mistake
    return x


@nki.jit
def block_shape_int(x, v):
    t, a, g = _preamble(x, v)
    nl.blocks(x, tile_shape=(128, 128), block_shape=2)  # mistake
    return x


@nki.jit
def element_shape_int(x, v):
    t, a, g = _preamble(x, v)
    nl.alloc_tiles(tile_shape=(128, 128), element_shape=5, buffer=nl.sbuf, dtype=x.dtype)  # mistake  # noqa: E501
    return x


@nki.jit
def block_shape_none(x, v):
    t, a, g = _preamble(x, v)
    nl.alloc_blocks(tile_shape=(128, 128), block_shape=None, element_shape=(128, 256), buffer=nl.sbuf, dtype=x.dtype)  # mistake  # noqa: E501
    return x


@nki.jit
def address_text(x, v):
    t, a, g = _preamble(x, v)
    nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf, address='x')  # mistake
    return x


@nki.jit
def rearrange_size_text(x, v):
    t, a, g = _preamble(x, v)
    t.rearrange(('p', ('h', 'w')), ('p', 'w', 'h'), {'h': 'x'})  # mistake
    return x


@nki.jit
def rearrange_size_unnamed(x, v):
    t, a, g = _preamble(x, v)
    t.rearrange(('p', ('h', 'w')), ('p', 'w', 'h'), {'h': 4, 'q': 3})  # mistake
    return x


@nki.jit
def rearrange_size_disagrees(x, v):
    t, a, g = _preamble(x, v)
    t.rearrange(('p', ('h', 'w')), ('p', 'w', 'h'), {'h': 4, 'p': 7})  # mistake
    return x


@nki.jit
def negative_shift(x, v):
    t, a, g = _preamble(x, v)
    a << -1  # mistake
    return x


@nki.jit
def scalar_of_text(x, v):
    t, a, g = _preamble(x, v)
    nisa.NkiScalar('abc')  # mistake
    return x


@nki.jit
def scalar_load_none(x, v):
    t, a, g = _preamble(x, v)
    nisa.scalar_load(None)  # mistake
    return x


@nki.jit
def unroll_array(x, v):
    t, a, g = _preamble(x, v)
    nl.fori_loop(0, 2, lambda i: None, unroll=np.array([1, 2]))  # mistake
    return x


@nki.jit
def grid_field_set(x, v):
    t, a, g = _preamble(x, v)
    g.data = t  # mistake
    return x


@nki.jit
def grid_iterated(x, v):
    t, a, g = _preamble(x, v)
    [c for c in g]  # mistake
    return x


@nki.jit
def int_too_wide(x, v):
    t, a, g = _preamble(x, v)
    a + 2 ** 40  # mistake
    return x


@nki.jit
def range_of_a_scalar(x, v):
    t, a, g = _preamble(x, v)
    for _ in range(a):  # mistake
        nisa.tensor_scalar(t, t, op0=nl.add, operand0=1.0)
    return x


@nki.jit
def int_of_a_loop_index(x, v):
    t, a, g = _preamble(x, v)

    def body(i):
        k = int(i)  # mistake
        nisa.dma_copy(dst=x[0:1, k:k + 1], src=t[0:1, 0:1])

    nl.fori_loop(0, 4, body)
    return x
