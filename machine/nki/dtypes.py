"""NKI data types as neuronsim names (``nl.float32``, ``nl.bfloat16``, the fp8 kinds, ...).

An NKI dtype is a :class:`NkiDtype`, a ``str`` naming the program format's dtype, so
``x.dtype == nl.bfloat16`` and ``dtype=x.dtype`` work as kernels expect; numpy dtypes,
``ml_dtypes`` ones and their names are accepted wherever a dtype is.

>>> to_dtype("bf16"), to_dtype(np.float32), nl_dtypes()["float8_e4m3"].itemsize
('bfloat16', 'float32', 1)
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from neuronsim.machine.ir.dtypes import DTYPES, PACKED, itemsize
from neuronsim.machine.nki.errors import NkiError, fail, shown

__all__ = ["NkiDtype", "to_dtype", "declared_dtype", "nl_dtypes", "promote", "is_float_dtype", "packed_array",
           "sizeinbytes"]


class NkiDtype(str):
    """A dtype name with the attributes kernels read (``itemsize``, ``name``)."""

    @property
    def itemsize(self) -> int:
        return itemsize(self)

    @property
    def name(self) -> str:
        return str(self)

    @property
    def min(self) -> float | int:
        """The most negative finite value (``nl.fp32.min``, as kernels write minus infinity)."""
        return _info(self).min.item()

    @property
    def max(self) -> float | int:
        return _info(self).max.item()


def _info(dtype: str) -> Any:
    dt = DTYPES[dtype]
    return np.iinfo(dt) if dt.kind in "iu" else ml_dtypes.finfo(dt)


#: Names NKI uses for the format's dtypes (tfloat32 is stored as float32; bool as uint8).
#: ``float8_e4m3`` and ``float8_e4m3fn`` are two formats (max 240 with infinities, and OCP's max
#: 448 without), as the nki.language dtype list and nki-library's ``kernel_helpers`` (its FP8
#: maxima 240.0 and 448.0, keyed by the two) have them.
_ALIASES = {
    "bf16": "bfloat16", "fp32": "float32", "fp16": "float16", "half": "float16", "float": "float32",
    "tfloat32": "float32", "float8e4": "float8_e4m3", "float8e5": "float8_e5m2",
    "bool_": "uint8", "bool": "uint8",
}
_BY_NUMPY = {np.dtype(v): k for k, v in DTYPES.items() if k not in PACKED}  # packed: uint storage, not a numpy type
_BY_NUMPY[np.dtype(np.bool_)] = "uint8"
_BY_NUMPY[np.dtype(np.float64)] = "float32"  # numpy's default float: NKI has no fp64 tiles


def to_dtype(value: Any) -> NkiDtype:
    """The format dtype name of ``value`` (a name, numpy / ml_dtypes dtype or scalar type).

    Raises ValueError (an :class:`~neuronsim.machine.nki.errors.NkiError` at the kernel line,
    when tracing) for a type the program format cannot hold (int64, ...)."""
    if isinstance(value, str):
        name = _ALIASES.get(value, value)
        if name in DTYPES:
            return NkiDtype(name)
        raise fail(f"dtype {value!r} is not supported (neuronsim holds {', '.join(DTYPES)})")
    try:
        dt = np.dtype(value)
    except NkiError:  # a refused name's own refusal (nl.int64), raised as numpy asked it for .dtype
        raise
    except (TypeError, ValueError):  # (a tile given as the dtype: numpy tries its .dtype, a string)
        raise fail(f"{shown(value)} is not a dtype") from None
    if dt.metadata and dt.metadata.get(_PACKED_KEY) in PACKED:  # an array of packed MX words (packed_array)
        return NkiDtype(dt.metadata[_PACKED_KEY])
    if dt in _BY_NUMPY:
        return NkiDtype(_BY_NUMPY[dt])
    raise fail(f"dtype {dt} is not supported (neuronsim holds {', '.join(DTYPES)})")


def declared_dtype(value: Any) -> NkiDtype:
    """The dtype a tensor is declared with (``nl.ndarray`` / ``nl.zeros`` ... ``dtype=``): as
    :func:`to_dtype`, but numpy's float64, which :func:`to_dtype` reads as float32 for the
    numbers and arrays numpy makes, is refused, as ``nl.float64`` is (the Supported Data Types
    table lists no 64-bit float; a probe's fp64 tile ran as fp32)."""
    try:
        wide = not isinstance(value, str) and np.dtype(value) == np.float64
    except NkiError:
        raise
    except (TypeError, ValueError):  # not a dtype: to_dtype says so
        wide = False
    if wide:
        raise fail(f"dtype {np.dtype(value)} is not supported: NKI's Supported Data Types table has no 64-bit float "
                   "(use nl.float32)")
    return to_dtype(value)


#: The numpy dtype metadata key naming the packed MX format an array's integer words hold.
_PACKED_KEY = "neuronsim_packed"


def packed_array(words: Any, dtype: str) -> np.ndarray:
    """``words`` (integers of the format's storage: uint32 for the fp8 ``_x4`` formats, uint16 for
    ``float4_e2m1fn_x4``) as an array a kernel receives as a tensor of the packed ``dtype``, as NKI's
    own arrays of ``nl.float4_e2m1fn_x4`` ... are: numpy has no such type, so the storage dtype
    carries the name in its metadata, which views and reshapes keep.

    >>> str(to_dtype(packed_array(np.zeros((2, 3), np.uint16), "float4_e2m1fn_x4").reshape(3, 2).dtype))
    'float4_e2m1fn_x4'
    """
    if dtype not in PACKED:
        raise ValueError(f"{dtype!r} is not a packed MX dtype ({', '.join(PACKED)})")
    storage = DTYPES[dtype]
    array = np.asarray(words)
    if array.dtype.kind not in "iu" or array.dtype.itemsize != storage.itemsize:
        raise ValueError(f"{dtype} words are {storage} integers, not {array.dtype}")
    return array.view(np.dtype(storage, metadata={_PACKED_KEY: dtype}))


def nl_dtypes() -> dict[str, NkiDtype]:
    """The dtype attributes of ``nki.language`` (``nl.float32`` ...)."""
    names = dict.fromkeys(DTYPES)
    out = {name: NkiDtype(name) for name in names}
    for alias, name in _ALIASES.items():
        if alias.isidentifier():
            out[alias] = NkiDtype(name)
    return out


def is_float_dtype(dtype: str) -> bool:
    """Arithmetic floats: the packed MX ``_x4`` formats are storage only (machine/ir/dtypes.py)."""
    return dtype.startswith(("float", "bfloat")) and dtype not in PACKED


_RANK = {"float32": 5, "float16": 4, "bfloat16": 4, "float8_e4m3": 2, "float8_e5m2": 2, "float8_e8m0fnu": 1}


def promote(*dtypes: str) -> NkiDtype:
    """NKI type promotion of tile operands (the "NKI Type Promotion" table of the shared API
    page): a float over an integer; the wider float, or a new widened type where neither holds
    the other (float16 and bfloat16: float32; two fp8 formats: bfloat16); the wider integer,
    or a new widened signed one where the unsigned is as wide as the signed (int8 and uint8:
    int16; int8 and uint16: int32; with uint32: float32, "since int64 isn't supported on the
    hardware").

    >>> promote("bfloat16", "float32"), promote("int32", "bfloat16"), promote("float16", "bfloat16")
    ('float32', 'bfloat16', 'float32')
    >>> promote("float8_e4m3", "float8_e5m2"), promote("int8", "uint8"), promote("int32", "uint32")
    ('bfloat16', 'int16', 'float32')
    >>> promote("uint16", "int32"), promote("uint8", "uint16")
    ('int32', 'uint16')
    """
    floats = [d for d in dtypes if is_float_dtype(d)]
    if floats:
        if {"float16", "bfloat16"} <= set(floats):
            return NkiDtype("float32")  # neither holds the other
        widest = max(floats, key=lambda d: _RANK[d])
        if _RANK[widest] == _RANK["float8_e4m3"] and len(set(floats)) > 1:
            return NkiDtype("bfloat16")  # two fp8 formats: one's range, the other's precision
        return NkiDtype(widest)
    signed = [itemsize(d) for d in dtypes if d.startswith("int")]
    unsigned = [itemsize(d) for d in dtypes if d.startswith("uint")]
    if signed and unsigned and max(unsigned) >= max(signed):
        return NkiDtype({1: "int16", 2: "int32"}.get(max(unsigned), "float32"))
    return NkiDtype(max(dtypes, key=itemsize))


def sizeinbytes(dtype: Any) -> int:
    """Bytes of one element of ``dtype``: ``nki.language.constants.sizeinbytes``, which the
    neuron-team kernels of nki-samples size their free dimensions with (``MAX_F //
    sizeinbytes(img.dtype)``); not on the API pages.

    >>> sizeinbytes("bfloat16"), sizeinbytes(np.float32)
    (2, 4)
    """
    return to_dtype(dtype).itemsize
