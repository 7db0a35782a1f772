"""Reinterpreting a tensor's bytes as another dtype: ``t.view(dtype)`` and ``t.ap(..., dtype=)``.

The NKI API reference (``NkiTensor.view``, ``NkiTensor.ap``) describes both as views that copy
nothing and read the same storage as the new dtype.  MX kernels use them on the packed weights
their frameworks hand over as plain integers (``uint16`` words holding four fp4 codes,
``uint32`` words holding four fp8 codes), then give the view to ``nisa.nc_matmul_mx``.

neuronsim's program types bytes by their tensor: the simulator reads a tensor's elements as its
dtype's numpy storage.  A view can therefore name another dtype exactly when both are stored
alike (``machine/ir/dtypes.py``: ``uint32`` and the fp8 ``_x4`` formats, ``uint16`` and
``float4_e2m1fn_x4``): every element keeps its bits, and the ops that read the view by its
dtype (the MX ops) take it from :attr:`Layout.element_dtype`.  Any other reinterpretation (the
same size stored differently, as ``uint16`` read as ``bfloat16``, or another element size) is
refused at the kernel line, naming both dtypes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from neuronsim.machine.ir.dtypes import numpy_dtype
from neuronsim.machine.nki.dtypes import to_dtype
from neuronsim.machine.nki.errors import unsupported
from neuronsim.machine.nki.layout import Layout

__all__ = ["reinterpret"]


def reinterpret(layout: Layout, dtype: Any, what: str) -> Layout:
    """``layout`` read as ``dtype`` (``what``: the kernel's spelling, for the refusal)."""
    target, own = str(to_dtype(dtype)), str(layout.tensor.dtype)
    if target == layout.element_dtype:
        return layout
    if numpy_dtype(target) != numpy_dtype(own):
        size = "the same element size stored differently" if numpy_dtype(target).itemsize == \
            numpy_dtype(own).itemsize else "another element size"
        raise unsupported(f"{what}: reading {layout.tensor.name} ({own}) as {target}",
                          f"{size}; neuronsim reinterprets only between dtypes stored alike, as uint32 and the "
                          "fp8 _x4 formats or uint16 and float4_e2m1fn_x4")
    return replace(layout, dtype=None if target == own else target)
