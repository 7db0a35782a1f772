"""Kernels reading bytes nothing wrote (the ``uninitialised`` warning), and their fixes
(tests/nki/test_uninitialised.py)."""

import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


def inputs(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"a": rng.standard_normal((128, 512)).astype(np.float32)}


@nki.jit
def never_written(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    scratch = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)
    nl.store(out, value=nl.add(nl.load(a), scratch))
    return out


@nki.jit
def half_loaded(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)
    tile[:, 0:256] = nl.load(a[:, 0:256])
    nl.store(out, value=nl.multiply(tile, 2.0))
    return out


@nki.jit
def half_loaded_times_zero(a):  # rows 16: never loaded, "cancelled" by a multiply with 0 (NaN * 0 is NaN)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)
    tile[0:16, :] = nl.load(a[0:16, :])
    nl.store(out, value=nl.multiply(tile, 0.0))
    return out


@nki.jit
def matmul_of_half_loaded(a):
    out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    stationary = nl.ndarray((128, 128), dtype=a.dtype, buffer=nl.sbuf)
    stationary[0:32, :] = nl.load(a[0:32, 0:128])  # the other 96 contraction rows never loaded
    moving = nl.load(a)
    product = nl.matmul(stationary, moving, transpose_x=True)
    nl.store(out, value=nl.copy(product, dtype=a.dtype))
    return out


@nki.jit
def half_loaded_half_used(a):
    out = nl.ndarray((128, 256), dtype=a.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)
    tile[:, 0:256] = nl.load(a[:, 0:256])
    nl.store(out, value=nl.multiply(tile[:, 0:256], 2.0))
    return out


@nki.jit
def rows_not_stored(a):
    """The tutorials' tail tile: half the rows loaded, the whole tile computed, the loaded half
    stored: the garbage rows reach no output."""
    out = nl.ndarray((64, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)
    tile[0:64, :] = nl.load(a[0:64, :])
    doubled = nl.multiply(tile, 2.0)
    nl.store(out, value=doubled[0:64, :])
    return out


@nki.jit
def one_read_reaches_one_not(a):
    """A half-loaded tile stored whole (its garbage reaches the output) beside the tutorials'
    tail tile (its garbage rows reach none): only the first is named."""
    out = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    tile = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)
    tile[:, 0:256] = nl.load(a[:, 0:256])
    tail = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)
    tail[0:64, :] = nl.load(a[0:64, :])
    doubled = nl.multiply(tail, 2.0)
    nl.store(out[0:64, :], value=nl.add(tile[0:64, :], doubled[0:64, :]))
    nl.store(out[64:128, :], value=tile[64:128, :])
    return out


@nki.jit
def tails_on_a_grid(a):
    """one_read_reaches_one_not on a grid of nine programs, each with copies of its own: 18 tiles
    read unwritten, 2 declarations; only the half-loaded tile is named."""
    out = nl.ndarray((9, 128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    g = nl.program_id(0)
    tile = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)
    tile[:, 0:256] = nl.load(a[:, 0:256])
    tail = nl.ndarray((128, 512), dtype=a.dtype, buffer=nl.sbuf)
    tail[0:64, :] = nl.load(a[0:64, :])
    doubled = nl.multiply(tail, 2.0)
    nl.store(out[g, 0:64, :], value=nl.add(tile[0:64, :], doubled[0:64, :]))
    nl.store(out[g, 64:128, :], value=tile[64:128, :])
    return out


@nki.jit
def sum_not_zeroed(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    total = nl.ndarray((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.sequential_range(4):  # noqa: B007 - the iteration names the instance in the finding
        total += nl.load(a)
    nl.store(out, value=total)
    return out


@nki.jit
def sum_zeroed(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    total = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.sequential_range(4):  # noqa: B007 - the iteration names the instance in the finding
        total += nl.load(a)
    nl.store(out, value=total)
    return out


@nki.jit
def body_tile_read_first(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(2):
        tile = nl.ndarray((64, 512), dtype=a.dtype, buffer=nl.sbuf)
        nl.store(out[i * 64:(i + 1) * 64, :], value=nl.exp(tile))
        tile[...] = nl.load(a[i * 64:(i + 1) * 64, :])
    return out


@nki.jit
def scratch_in_hbm(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    scratch = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.hbm)
    nl.store(out, value=nl.add(nl.load(scratch), nl.load(a)))
    return out


@nki.jit
def accumulate_into(a, acc):
    """``acc`` is the caller's: given with the inputs, it holds values; the kernel adds to it."""
    nl.store(acc, value=nl.add(nl.load(acc), nl.load(a)))


def reference(a):
    return 4 * a


@nki.jit
def output_rows_left(a):
    out = nl.ndarray((256, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out[0:128, :], value=nl.exp(nl.load(a)))  # rows 128..255 never written
    return out


@nki.jit
def tail_tile_and_half_the_columns(a):
    out = nl.ndarray((200, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    i_p, i_f, i_h = nl.arange(128)[:, None], nl.arange(512)[None, :], nl.arange(256)[None, :]
    for t in nl.affine_range(2):  # the tail tile's rows 200.. never loaded, never stored
        tile = nl.load(a[t * 128 + i_p, i_f], mask=(t * 128 + i_p < 128 + 72))
        nl.store(out[t * 128 + i_p, i_h], value=nl.exp(tile)[i_p, i_h], mask=(t * 128 + i_p < 200))
    return out  # columns 256.. never written


@nki.jit
def output_written_twice_over(a):
    out = nl.ndarray((256, 512), dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out[0:128, :], value=nl.load(a))
    nl.store(out[128:256, :], value=nl.exp(nl.load(a)))
    return out
