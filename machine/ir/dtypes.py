"""Element types of the program format and their numpy representations.

bf16 and the two fp8 formats come from ``ml_dtypes`` (the same package the NKI simulator
uses for its precise floating-point mode).

The packed MX formats (``*_x4``, NeuronCore-v4) hold four narrow floats in one element: an
fp8 ``_x4`` element is stored as the 32 bits of its four fp8 codes (a ``uint32``), an
``float4_e2m1fn_x4`` element as the 16 bits of its four fp4 codes (a ``uint16``); lane ``j``
is bits ``[j*w, (j+1)*w)``.  They are storage, not arithmetic types (:func:`is_float` is
false): only the MX ops (``neuronsim.machine.model.semantics_mx``) read their lanes.
``float8_e8m0fnu`` (the MX shared scale, a power of two) is ml_dtypes' type.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

__all__ = ["DTYPES", "PACKED", "READ_AS_KEY", "itemsize", "numpy_dtype", "is_float", "scale_rows", "not_held"]

#: Access extension key: the dtype an engine reads the access's bytes as (a reinterpreting view;
#: the pattern stays in the tensor's own elements, so every footprint is the same bytes).
READ_AS_KEY = "x-read-as"

#: Every dtype name the format accepts, mapped to its numpy dtype.
DTYPES: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float16": np.dtype(np.float16),
    "float8_e4m3": np.dtype(ml_dtypes.float8_e4m3),  # IEEE-style: max 240, infinities (NKI's float8_e4m3)
    "float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),  # OCP's: max 448, no infinity (NKI's float8_e4m3fn)
    "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "int32": np.dtype(np.int32),
    "int16": np.dtype(np.int16),
    "int8": np.dtype(np.int8),
    "uint32": np.dtype(np.uint32),
    "uint16": np.dtype(np.uint16),
    "uint8": np.dtype(np.uint8),
    "float8_e8m0fnu": np.dtype(ml_dtypes.float8_e8m0fnu),
    "float8_e4m3fn_x4": np.dtype(np.uint32),
    "float8_e5m2_x4": np.dtype(np.uint32),
    "float4_e2m1fn_x4": np.dtype(np.uint16),
}

#: The packed MX formats: the ml_dtypes type of one lane and the lane's width in bits.
PACKED: dict[str, tuple[np.dtype, int]] = {
    "float8_e4m3fn_x4": (np.dtype(ml_dtypes.float8_e4m3fn), 8),
    "float8_e5m2_x4": (np.dtype(ml_dtypes.float8_e5m2), 8),
    "float4_e2m1fn_x4": (np.dtype(ml_dtypes.float4_e2m1fn), 4),
}



def scale_rows(partitions: int, start: int = 0) -> np.ndarray:
    """The scale row of each of ``partitions`` data partitions of a packed MX tile: the data's
    32-partition quadrants each have their scales from row ``start`` of the quadrant on, one
    row per 8 data partitions (``nisa.quantize_mx`` / ``nc_matmul_mx`` lay them out so).

    >>> scale_rows(40).tolist()[::8], scale_rows(8, start=2).tolist()[:1]
    ([0, 1, 2, 3, 32], [2])
    """
    p = np.arange(partitions)
    return start + 32 * (p // 32) + (p % 32) // 8


_ITEMSIZE = {name: dt.itemsize for name, dt in DTYPES.items()}


def itemsize(dtype: str) -> int:
    """Bytes per element.

    >>> itemsize("bfloat16"), itemsize("float8_e4m3"), itemsize("float8_e4m3fn_x4"), itemsize("float4_e2m1fn_x4")
    (2, 1, 4, 2)
    """
    return _ITEMSIZE[dtype]


def numpy_dtype(dtype: str) -> np.dtype:
    """The numpy dtype that stores elements of ``dtype``."""
    return DTYPES[dtype]


def is_float(dtype: str) -> bool:
    """True for the floating-point formats (not the packed MX storage formats)."""
    return dtype.startswith(("float", "bfloat")) and dtype not in PACKED


def not_held(values: np.ndarray, dtype: str) -> str | None:
    """Why ``values`` cannot become ``dtype`` by value, naming the first element that does not
    fit (``[2, 0] = 668.4 ...``), or None when every one fits.  An integer dtype holds the
    integers of its range (no NaN, infinity or fraction: numpy would wrap them, or give its
    undefined cast); a float dtype holds every finite value that stays finite (rounding to its
    precision is what converting means; one beyond its range would become an infinity or NaN).

    >>> not_held(np.array([1.0, 668.4]), "int8")
    '[1] = 668.4 is outside int8 (-128 to 127)'
    >>> not_held(np.array([[2.0**40 + 5]]), "int32")
    '[0, 0] = 1099511627781.0 is outside int32 (-2147483648 to 2147483647)'
    >>> not_held(np.array([0.5, 1.0]), "uint8"), not_held(np.array([1e6]), "bfloat16")
    ('[0] = 0.5 is not an integer (uint8)', None)
    >>> not_held(np.array([1e6]), "float16")
    '[0] = 1000000.0 is beyond float16 (it would be inf)'
    """
    target = numpy_dtype(dtype)
    flat = np.asarray(values).reshape(-1)
    if flat.dtype == target or flat.dtype.kind == "b" or flat.size == 0:
        return None
    with np.errstate(all="ignore"):
        if target.kind in "iu":
            info = np.iinfo(target)
            if flat.dtype.kind in "iu":
                bad = (flat < info.min) | (flat > info.max)
            else:
                wide = flat.astype(np.float64)
                bad = ~np.isfinite(wide) | (wide != np.round(wide)) | (wide < info.min) | (wide > info.max)
            first = int(np.argmax(bad)) if bad.any() else None
            if first is None:
                return None
            value = flat[first].item() if flat.dtype.kind in "iu" else float(flat[first])
            shown = str(flat[first])  # (a float32's own digits: 668.4, not 668.4000244140625)
            if not np.isfinite(value):
                why = f"has no {dtype} value"
            elif info.min <= value <= info.max:
                why = f"is not an integer ({dtype})"
            else:
                why = f"is outside {dtype} ({info.min} to {info.max})"
        else:
            wide = flat.astype(np.float64)
            bad = np.isfinite(wide) & ~np.isfinite(wide.astype(target).astype(np.float64))
            if not bad.any():
                return None
            first = int(np.argmax(bad))
            shown, why = str(flat[first]), f"is beyond {dtype} (it would be {wide[first:first + 1].astype(target)[0]})"
    index = ", ".join(str(int(k)) for k in np.unravel_index(first, np.shape(values))) if np.ndim(values) else ""
    return f"[{index}] = {shown} {why}"
