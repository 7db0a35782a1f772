"""The bare ``sbuf`` / ``hbm`` keywords of current NKI kernels (tests/nki/test_keyword_buffers.py)."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def doubled(x):
    t = sbuf.view(dtype=x.dtype, shape=x.shape)  # noqa: F821 - an NKI keyword, no import
    nisa.dma_copy(dst=t, src=x)
    y = sbuf.view(x.dtype, x.shape)  # noqa: F821 - positional, as the profiling page writes it
    nisa.tensor_tensor(dst=y, data1=t, data2=t, op=nl.add)
    out = hbm.view(dtype=x.dtype, shape=x.shape)  # noqa: F821
    nisa.dma_copy(dst=out, src=y)
    return out


@nki.jit
def keyword_as_a_buffer(x):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=sbuf)  # noqa: F821
    nisa.dma_copy(dst=t, src=x)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out
