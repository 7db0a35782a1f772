"""Kernels for constructs that blocked corpus kernels (issue 28): each is a small kernel of our
own using the construct the way the public kernels do."""

from dataclasses import dataclass

import nki
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
