"""Whole-program errors of traced kernels (tests/nki/test_error_sites.py): each names the
kernel line that made the tensor (and the kernel's variable), never ``<kernel>``."""

import nki
import nki.language as nl


@nki.jit
def tile_past_sbuf_end(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    late = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf, address=(0, 196600))  # past the end
    late[...] = nl.load(x)
    nl.store(out, value=late)
    return out


@nki.jit
def output_larger_than_dram(x):
    huge = nl.ndarray((1 << 20, 1 << 20), dtype=nl.float32, buffer=nl.shared_hbm)  # 4 TiB
    nl.store(huge[0:128, 0:8], value=nl.load(x))
    return huge


@nki.jit
def returns_a_tile(x):
    t = nl.load(x)
    return t  # an SBUF tile


class CallableKernel:
    """A kernel written as a callable object: its errors name its __call__."""

    def __call__(self, x, y):
        return x
