"""The attribute sets of the ``nki.language`` stand-ins (current and legacy)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from neuronsim.machine.nki import arith, control, emitters, grids, isa_select, keywords, language, scalars, spmd_loops
from neuronsim.machine.nki.dtypes import nl_dtypes
from neuronsim.machine.nki.tiles import NkiTensor

__all__ = ["current_language", "legacy_language", "LANGUAGE_NAMES"]

#: nki.language names both generations share (see neuronsim.machine.nki.language, spmd_loops and arith;
#: nl.where is a select, in neuronsim.machine.nki.emitters).
LANGUAGE_NAMES = (
    "ndarray", "zeros", "ones", "full", "zeros_like", "empty_like", "shared_identity_matrix", "shared_constant",
    "load", "store", "load_transpose2d", "copy", "static_cast", "broadcast_to",
    "program_id", "num_programs", "program_ndim", "affine_range", "sequential_range", "static_range",
    "device_print", "tile_size", "NKIObject", "par_dim", "ds", "arange", "mgrid",
    "sbuf", "psum", "hbm", "shared_hbm", "private_hbm",
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "equal", "not_equal", "greater",
    "greater_equal", "less", "less_equal", "logical_and", "logical_or", "logical_xor", "mod", "fmod", "abs_max",
    "abs_min", "var", "atomic_rmw",
    "exp", "log", "tanh", "sigmoid", "relu", "gelu", "gelu_apprx_tanh", "gelu_apprx_sigmoid", "silu", "square",
    "sqrt", "rsqrt", "reciprocal", "abs", "sign", "negative", "sum", "max", "min", "mean", "matmul",
    "transpose", "softmax", "rms_norm", "where", "is_hbm", "is_sbuf", "is_psum", "is_on_chip", "expand_dims",
    "no_reorder", "loop_reduce", "spmd_dim", "nc", "logical_not", "bypass",
    "silu_dx", "softplus", "mish", "sin", "cos", "arctan", "floor", "ceil", "trunc",
    "gelu_dx", "gelu_apprx_sigmoid_dx", "erf", "erf_dx", "tan",
    "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "invert",
)


_ACT_TABLE = "an activation function neuronsim's op table does not have"
_ALU_TABLE = "an ALU operator neuronsim's op table does not have"

#: Real ``nki.language`` names (the API reference module, NKI 0.2-0.7, and the legacy
#: ``neuronxcc.nki.language``) that neuronsim does not model, with the reason: they import,
#: and using one stops the trace at that line.  Any other missing name is a typo
#: (:func:`~neuronsim.machine.nki.errors.no_such_name`).
LANGUAGE_REFUSED = {
    "all_reduce": "collectives: neuronsim models one NeuronCore",
    "int64": "64-bit data types", "uint64": "64-bit data types", "float64": "64-bit data types",
    "average": _ALU_TABLE, "prelu": _ALU_TABLE,
    "NkiScalar": "scalars in registers",
}


def _names() -> dict[str, Any]:
    out: dict[str, Any] = dict(nl_dtypes())
    for name in LANGUAGE_NAMES:
        out[name] = (getattr(language, name, None) or getattr(spmd_loops, name, None) or getattr(arith, name, None)
                     or getattr(emitters, name))
    out["prod"] = arith.prod_
    out["all"] = arith.all_
    out["ds"] = scalars.ds  # its start may be a runtime index (a one-element tile)
    for name in ("ds", "arange"):  # an odd argument is the kernel's mistake, at its line
        out[name] = keywords.kernel_arguments(out[name], f"nl.{name}")
    out["identity"] = arith.identity
    out.update(control.language_names())  # fori_loop, while_loop, if_else, dynamic_range
    out.update(isa_select.language_names())  # rand, dropout, random_seed
    # types kernels name in annotations (evaluated when the kernel file is imported)
    out["NkiTensor"] = out["tile"] = NkiTensor
    out["DType"] = str
    out["MemoryRegion"] = SimpleNamespace(sbuf=language.sbuf, psum=language.psum, hbm=language.hbm,
                                          shared_hbm=language.shared_hbm, private_hbm=language.private_hbm)
    return out


def current_language() -> dict[str, Any]:
    names = _names()
    # NKI 0.7's tile and block grids (empty_like / zeros_like of a grid too)
    names.update(grids.language_names(names["empty_like"], names["zeros_like"]))
    # nki-library's Trn3 kernels (experimental/mxfp_subkernels) loop with ``nl.range``, a name the
    # stored API reference lacks; in the current generation every ``*_range`` is Python's range
    names["range"] = spmd_loops.static_range
    return names


def legacy_language() -> dict[str, Any]:
    return _names()
