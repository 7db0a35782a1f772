"""Element types of the program format and their numpy representations.

bf16 and the two fp8 formats come from ``ml_dtypes`` (the same package the NKI simulator
uses for its precise floating-point mode).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

__all__ = ["DTYPES", "itemsize", "numpy_dtype", "is_float"]

#: Every dtype name the format accepts, mapped to its numpy dtype.
DTYPES: dict[str, np.dtype] = {
    "float32": np.dtype(np.float32),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float16": np.dtype(np.float16),
    "float8_e4m3": np.dtype(ml_dtypes.float8_e4m3fn),
    "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "int32": np.dtype(np.int32),
    "int16": np.dtype(np.int16),
    "int8": np.dtype(np.int8),
    "uint32": np.dtype(np.uint32),
    "uint16": np.dtype(np.uint16),
    "uint8": np.dtype(np.uint8),
}

_ITEMSIZE = {name: dt.itemsize for name, dt in DTYPES.items()}


def itemsize(dtype: str) -> int:
    """Bytes per element.

    >>> itemsize("bfloat16"), itemsize("float8_e4m3"), itemsize("float32")
    (2, 1, 4)
    """
    return _ITEMSIZE[dtype]


def numpy_dtype(dtype: str) -> np.dtype:
    """The numpy dtype that stores elements of ``dtype``."""
    return DTYPES[dtype]


def is_float(dtype: str) -> bool:
    """True for the floating-point formats."""
    return dtype.startswith(("float", "bfloat"))
