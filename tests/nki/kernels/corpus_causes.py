"""Kernels for constructs that blocked corpus kernels (issue 28): each is a small kernel of our
own using the construct the way the public kernels do."""

from dataclasses import dataclass

import nki
import nki.isa as nisa
import nki.language as nl


@dataclass
class SectionLike(nl.NKIObject):
    """Fields as bare class attributes, as nki-library's attention_cte declares its params."""

    offset = None
    scale = 1.0


@dataclass
class MixedFields(nl.NKIObject):
    rows: int
    bias = 0.0


@nki.jit
def dataclass_params(x):
    params = SectionLike(offset=1, scale=2.0)
    mixed = MixedFields(x.shape[0], bias=0.5)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    tile = nl.load(x[0:mixed.rows, params.offset:x.shape[1]])
    nl.store(out[0:mixed.rows, 0:x.shape[1] - params.offset], tile * params.scale + mixed.bias)
    return out


@dataclass
class UnsetField(nl.NKIObject):
    rows: int
    missing: int


@nki.jit
def optional_input(x, bias=None):
    """``if bias:`` on an HBM tensor tests its presence, as nki-library's kernels do."""
    fields = UnsetField(rows=x.shape[0])  # `missing` never given: None
    tile = nl.load(x)
    if bias:
        tile = tile + nl.load(bias)
    if fields.missing is None:
        tile = tile * 2.0
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, tile)
    return out


@nki.jit
def branch_on_tile(x):
    tile = nl.load(x)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    if tile:  # an on-chip tile's value in Python control flow
        nl.store(out, tile)
    return out




@nki.jit
def dma_transpose_nd(x):
    """nisa.dma_transpose of a 3-D or 4-D DRAM source: the API page's permutation by rank."""
    perm = {3: (2, 1, 0), 4: (3, 1, 2, 0)}[len(x.shape)]
    shape = tuple(x.shape[a] for a in perm)
    tile = nl.ndarray(shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_transpose(dst=tile, src=x)
    out = nl.ndarray(shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=tile)
    return out
