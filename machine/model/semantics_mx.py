"""Numerics of the OCP microscaling (MX) ops: ``quantize_mx`` (DVE) and ``matmul_mx`` (PE).

A packed ``_x4`` element holds four narrow floats (lanes) along the contraction axis; see
:mod:`neuronsim.machine.ir.dtypes` for the storage.  A *scaling group* is 32 values:
8 partitions x the 4 lanes of one element, so a data tile ``[P, F]`` has ``P / 8`` x ``F``
scales.  The scale of data partition ``p`` (counted from the tile's first partition) sits on
scale row ``32 * (p // 32) + (p % 32) // 8`` of the scale access, free index ``f``: each
32-partition quadrant keeps its scales in its own first rows, as the NKI docs of
``nisa.quantize_mx`` / ``nc_matmul_mx`` lay them out.  A scale is an E8M0 power of two: a
``float8_e8m0fnu`` value, or as ``uint8`` its biased exponent ``e`` meaning ``2**(e - 127)``.
A scale access may start ``k`` rows into a quadrant (attributes ``scale_start``,
``stationary_scale_start``, ``moving_scale_start``: the access then begins on the quadrant's
first row, and every scale row above moves down ``k``).

``quantize_mx`` follows the NKI documentation's scale rule (twice the OCP sample
algorithm's): ``X = 2**(floor(log2(amax)) - (Emax - 1))`` with ``Emax`` 8 for e4m3fn, 15 for
e5m2; an all-zero group gets ``2**-127``; values are ``src / X`` rounded to the lane type.

>>> codes = pack(np.array([[[1.0, -2.0, 0.5, 6.0]]], np.float32), "float4_e2m1fn_x4")
>>> unpack(codes, "float4_e2m1fn_x4").tolist()
[[[1.0, -2.0, 0.5, 6.0]]]
"""

from __future__ import annotations

from typing import Callable

import ml_dtypes
import numpy as np

from neuronsim.machine.ir.dtypes import PACKED, scale_rows

__all__ = ["pack", "unpack", "scale_rows", "scale_values", "quantize", "OPS", "EMAX"]

#: The largest unbiased exponent of each fp8 lane type (NKI's ``E_max`` for ``quantize_mx``).
EMAX = {"float8_e4m3fn_x4": 8, "float8_e5m2_x4": 15}
_E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)


def _codes(lane: np.dtype, width: int) -> np.ndarray:
    """Every lane code's float value (the decode table), by code."""
    return np.arange(1 << width, dtype=np.uint8).view(lane).astype(np.float32)  # fp4: one code a byte


def unpack(packed: np.ndarray, dtype: str) -> np.ndarray:
    """``[..., 4]`` float32 lane values of packed ``dtype`` storage ``[...]``."""
    lane, width = PACKED[dtype]
    table = _codes(lane, width)
    words = packed.astype(np.uint32)
    mask = (1 << width) - 1
    return np.stack([table[(words >> (j * width)) & mask] for j in range(4)], axis=-1)


def pack(values: np.ndarray, dtype: str) -> np.ndarray:
    """Packed storage of ``[..., 4]`` values, each rounded to the lane type (nearest even)."""
    lane, width = PACKED[dtype]
    codes = values.astype(np.float32).astype(lane).view(np.uint8).astype(np.uint32) & ((1 << width) - 1)
    word = sum(codes[..., j] << (j * width) for j in range(4))
    return np.asarray(word).astype(np.uint32 if width == 8 else np.uint16)


def scale_values(scales: np.ndarray, partitions: int, start: int = 0) -> np.ndarray:
    """``[partitions, F]`` float32 scale of every data element (from the scale access)."""
    rows = scales.reshape(scales.shape[0], -1)[scale_rows(partitions, start)]
    if rows.dtype == _E8M0:
        return rows.astype(np.float32)
    return np.ldexp(np.float32(1), rows.astype(np.int32) - 127).astype(np.float32)  # uint8: biased exponents


def quantize(src: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """``src [P, 4F]`` to packed data ``[P, F]`` and the unbiased scale exponents ``[P / 8, F]``."""
    rows, free = src.shape[0], src.shape[1] // 4
    lanes = src.astype(np.float32).reshape(rows, free, 4)
    groups = np.abs(lanes).reshape(rows // 8, 8, free, 4).max(axis=(1, 3))
    with np.errstate(divide="ignore"):
        top = np.floor(np.log2(groups))
    exponents = np.where(groups > 0, top - (EMAX[dtype] - 1), -127).clip(-127, 127).astype(np.int32)
    per_element = np.repeat(exponents, 8, axis=0)[:, :, None]
    return pack(np.ldexp(lanes, -per_element), dtype), exponents


def _quantize_mx(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    from neuronsim.machine.model.semantics import _rows, cast

    data_out, scale_out = outs
    src = _rows(reads[0])
    packed, exponents = quantize(src, attrs["dtype"])
    scales = np.array(scale_out, copy=True).reshape(scale_out.shape[0], -1)
    groups = exponents.shape[0]
    rows = scale_rows(8 * groups, attrs.get("scale_start", 0))[::8]  # each group's row: its first partition's
    if scales.dtype == _E8M0:
        scales[rows, :exponents.shape[1]] = np.ldexp(np.float32(1), exponents).astype(_E8M0)
    else:
        scales[rows, :exponents.shape[1]] = cast(exponents + 127, scales.dtype)
    return [packed.reshape(data_out.shape), scales.reshape(scale_out.shape)]


def dequantize(packed: np.ndarray, scales: np.ndarray, dtype: str, start: int = 0) -> np.ndarray:
    """``[P, F, 4]`` float32 values of a packed tile ``[P, F]`` and its scale access."""
    data = packed.reshape(packed.shape[0], -1)
    return unpack(data, dtype) * scale_values(scales, data.shape[0], start)[:, :data.shape[1], None]


def _matmul_mx(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    """``out[m, n] = sum over p, j of stationary[p, m, j] * moving[p, n, j]``, dequantized, fp32."""
    from neuronsim.machine.model.semantics import _f32, _fit, cast

    stationary = dequantize(reads[0], reads[2], attrs["stationary_dtype"], attrs.get("stationary_scale_start", 0))
    moving = dequantize(reads[1], reads[3], attrs["moving_dtype"], attrs.get("moving_scale_start", 0))
    product = np.einsum("pmj,pnj->mn", stationary, moving, dtype=np.float32)
    out = outs[0]
    result = _fit(product, out.shape)
    if attrs.get("accumulate", False):
        result = _f32(out) + result
    return [cast(result, out.dtype)]


OPS: dict[str, Callable[..., list[np.ndarray]]] = {"quantize_mx": _quantize_mx, "matmul_mx": _matmul_mx}
