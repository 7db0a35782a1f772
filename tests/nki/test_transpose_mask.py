"""A legacy ``nisa.nc_transpose(x[i, j], mask=...)`` or ``nl.transpose(...)`` whose mask is
written in the source's indices bounds the destination's axes the other way round: the
destination's rows are the source's columns.  The mask was applied to the destination at the
same places.  An edge tile (44 of 128 columns) was refused as "destination (128, 44) is not the
transpose of (128, 44)" with ``nc_transpose`` (an autocomp transpose kernel at a shape not a
multiple of 128, found by a helper); with ``nl.transpose`` the copy out of PSUM wrote the wrong
corner, and the kernel's outputs were silently wrong."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.verify.nki.run import run_kernel

KERNEL = '''
from neuronxcc import nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc.nki.language import par_dim


@nki.jit
def tiled_transpose(x):
    rows, cols = x.shape
    out = nl.ndarray((cols, rows), dtype=x.dtype, buffer=nl.shared_hbm)
    for r in nl.affine_range((rows + 127) // 128):
        for c in nl.affine_range((cols + 127) // 128):
            i = nl.arange(128)[:, None]
            j = nl.arange(128)[None, :]
            inside = (r * 128 + i < rows) & (c * 128 + j < cols)
            LOAD
            dst = nl.ndarray((par_dim(128), 128), dtype=x.dtype, buffer=nl.sbuf)
            p = nl.arange(128)[:, None]
            q = nl.arange(128)[None, :]
            dst[p, q] = TRANSPOSE(SOURCE, mask=inside)
            nl.store(out[c * 128 + p, r * 128 + q], value=dst[p, q], mask=(c * 128 + p < cols) & (r * 128 + q < rows))
    return out
'''
#: The transposes of a tile loaded first (PE) and of the HBM source itself (the DMA ones).
ON_CHIP = {"LOAD": "src = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.sbuf)\n"
                   "            src[i, j] = nl.load(x[r * 128 + i, c * 128 + j], mask=inside)",
           "SOURCE": "src[i, j]"}
FROM_HBM = {"LOAD": "pass", "SOURCE": "x[r * 128 + i, c * 128 + j]"}


def _kernel(call: str, parts: dict[str, str]) -> str:
    text = KERNEL.replace("TRANSPOSE", call)
    for key, value in parts.items():
        text = text.replace(key, value)
    return text


@pytest.mark.parametrize("call", ["nisa.nc_transpose", "nl.transpose"])
def test_a_transpose_masked_in_its_source_indices_writes_the_transposed_edge(tmp_path, call):
    (tmp_path / "k.py").write_text(_kernel(call, ON_CHIP))
    x = np.random.default_rng(4).standard_normal((200, 300)).astype(np.float32)
    out, report = run_kernel(f"{tmp_path / 'k.py'}::tiled_transpose", x, seeds=(None,))
    assert not report.run.problems(), report.run.problems()[:3]
    np.testing.assert_array_equal(out, x.T)


@pytest.mark.parametrize("call", ["nl.load_transpose2d", "nisa.dma_transpose"])
def test_a_dma_transpose_masked_in_its_source_indices_writes_the_transposed_edge(tmp_path, call):
    """The DMA transposes too: their edge tiles wrote the wrong corner (27,000 of 60,000
    outputs wrong at 200 x 300, with only an uninitialised-read warning)."""
    (tmp_path / "k.py").write_text(_kernel(call, FROM_HBM))
    x = np.random.default_rng(6).standard_normal((200, 300)).astype(np.float32)
    out, report = run_kernel(f"{tmp_path / 'k.py'}::tiled_transpose", x, seeds=(None,))
    assert not report.run.problems(), report.run.problems()[:3]
    assert not report.findings, report.findings
    np.testing.assert_array_equal(out, x.T)
