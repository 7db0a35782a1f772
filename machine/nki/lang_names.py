"""The attribute sets of the ``nki.language`` stand-ins (current and legacy)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from neuronsim.machine.nki import arith, language
from neuronsim.machine.nki.dtypes import nl_dtypes
from neuronsim.machine.nki.tiles import NkiTensor

__all__ = ["current_language", "legacy_language", "LANGUAGE_NAMES"]

#: nki.language names both generations share (see neuronsim.machine.nki.language / neuronsim.machine.nki.arith).
LANGUAGE_NAMES = (
    "ndarray", "zeros", "ones", "full", "zeros_like", "empty_like", "shared_identity_matrix", "shared_constant",
    "load", "store", "load_transpose2d", "copy", "broadcast_to",
    "program_id", "num_programs", "program_ndim", "affine_range", "sequential_range", "static_range",
    "device_print", "tile_size", "NKIObject", "par_dim", "ds", "arange", "mgrid",
    "sbuf", "psum", "hbm", "shared_hbm", "private_hbm",
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "equal", "not_equal", "greater",
    "greater_equal", "less", "less_equal", "logical_and", "logical_or", "logical_xor",
    "exp", "log", "tanh", "sigmoid", "relu", "gelu", "gelu_apprx_tanh", "gelu_apprx_sigmoid", "silu", "square",
    "sqrt", "rsqrt", "reciprocal", "abs", "sign", "negative", "sum", "max", "min", "mean", "matmul",
    "transpose", "softmax", "where",
)


#: nki.language names refused with a reason (any other unknown name: "not modelled by neuronsim").
LANGUAGE_REFUSED = {
    "dynamic_range": "dynamic loops: neuronsim traces static programs",
    "atomic_rmw": "atomic read-modify-write DMA",
    "rand": "random numbers", "random_seed": "random numbers", "dropout": "random numbers",
    "gather_flattened": "gathers", "float8_e4m3fn_x4": "packed MX data types", "float8_e5m2_x4": "packed MX data types",
    "float4_e2m1fn_x4": "packed MX data types", "int64": "64-bit data types", "uint64": "64-bit data types",
    "float64": "64-bit data types",
}


def _names() -> dict[str, Any]:
    out: dict[str, Any] = dict(nl_dtypes())
    for name in LANGUAGE_NAMES:
        out[name] = getattr(language, name, None) or getattr(arith, name)
    out["prod"] = arith.prod_
    out["identity"] = arith.identity
    # types kernels name in annotations (evaluated when the kernel file is imported)
    out["NkiTensor"] = out["tile"] = NkiTensor
    out["MemoryRegion"] = SimpleNamespace(sbuf=language.sbuf, psum=language.psum, hbm=language.hbm,
                                          shared_hbm=language.shared_hbm, private_hbm=language.private_hbm)
    return out


def current_language() -> dict[str, Any]:
    return _names()


def legacy_language() -> dict[str, Any]:
    return _names()
