"""A kernel's arguments as the trace takes them.

Each numpy array the kernel is called with, by position, by parameter name or through its
``**kwargs``, becomes a DRAM tensor named after its parameter (a ``**kwargs`` one after its
key), which the kernel receives as an HBM tensor; every other argument is passed as it is.
A launch on several ranks gives each rank its own tensors (``x_rank1``, ...), of rank 0's
values unless the caller gives a rank its own (``x_rank1=...``).

An array through ``**kwargs`` reached the kernel as a numpy array, and its first NKI call
refused it, at that call's line, as no tile ("dst is ndarray": a probe).
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import numpy as np

from neuronsim.machine.formats.validate import MAX_DIMENSIONS
from neuronsim.machine.ir.dtypes import not_held, numpy_dtype
from neuronsim.machine.nki.dtypes import to_dtype
from neuronsim.machine.nki.errors import NkiError, SourceLine
from neuronsim.machine.nki.layout import Layout
from neuronsim.machine.nki.tiles import NkiTensor
from neuronsim.machine.nki.tracer import Tracer

__all__ = ["bind_arguments", "RANK_ARGUMENT"]

#: ``x_rank3``: rank 3's own values of array parameter ``x`` (a launch on ``ranks``).
RANK_ARGUMENT = re.compile(r"(\w+)_rank(\d+)")


def bind_arguments(tracer: Tracer, func: Any, arrays: tuple[Any, ...], kwargs: dict[str, Any], where: SourceLine,
                   converted: dict[int, np.ndarray] | None = None
                   ) -> tuple[list[inspect.BoundArguments], dict[str, np.ndarray]]:
    """Each rank's bound arguments, arrays made HBM tensors, and the tensors' input values.
    ``where``: the kernel's definition (a mistake of the arguments is said there);
    ``converted``: copies made before, by array id (a trace attempted again)."""
    signature = inspect.signature(func)
    # (a parameter's own rank copies; through **kwargs, a given array's: its x_rank1 was another
    # array of the same tensor name, "declared twice", an exit 3: a probe)
    named = set(signature.parameters) | (set(kwargs) if any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()) else set())
    if tracer.ranks > 1:  # rank 0's own NAME_rank0 is NAME where no NAME is given (it was "missing NAME": a probe)
        kwargs = {(m[1] if (m := RANK_ARGUMENT.fullmatch(k)) and int(m[2]) == 0 and m[1] in named
                   and m[1] not in kwargs and isinstance(v, np.ndarray) else k): v for k, v in kwargs.items()}
    own = {k: v for k, v in kwargs.items() if (m := RANK_ARGUMENT.fullmatch(k)) and m[1] in named
           and 1 <= int(m[2]) < tracer.ranks and isinstance(v, np.ndarray)}
    kwargs = {k: v for k, v in kwargs.items() if k not in own}
    try:
        bounds = [signature.bind(*arrays, **kwargs) for _ in range(tracer.ranks)]
    except TypeError as err:
        # the parameters by name alone: annotations such as `nl.ndarray` print as function objects
        star = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}  # (`*args` read `args`)
        params = ", ".join(star.get(p.kind, "") + name for name, p in signature.parameters.items())
        raise NkiError(where, f"arguments do not fit {getattr(func, '__name__', 'the kernel')}({params}): {err}") \
            from None
    values: dict[str, np.ndarray] = {}

    def tensor(name: str, value: np.ndarray, rank: int) -> NkiTensor:
        dtype = _argument_dtype(name, value, where)
        tensor_name = name if rank == 0 else f"{name}_rank{rank}"
        if tensor_name in own:
            value = _rank_value(tensor_name, own[tensor_name], value, where)
        ref = tracer.kb.dram_input(tensor_name, value.shape, dtype)
        known = converted.get(id(value)) if converted is not None else None
        if known is None:
            known = _kept_or_converted(value, numpy_dtype(dtype))
            if converted is not None:
                converted[id(value)] = known
        values[tensor_name] = known
        made = NkiTensor(Layout.whole(ref.tensor))
        tracer.parameters[id(made)] = value
        return made

    for rank, each in enumerate(bounds):  # every rank its own copy of the inputs (machine/nki/ranks.py)
        for param, value in list(each.arguments.items()):
            if _is_array(value):
                each.arguments[param] = tensor(param, value, rank)
            elif signature.parameters[param].kind is inspect.Parameter.VAR_KEYWORD and isinstance(value, dict):
                for key, item in list(value.items()):
                    if _is_array(item):
                        value[key] = tensor(key, item, rank)
    return bounds, values


def _is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) and value.ndim > 0


def _rank_value(name: str, value: np.ndarray, first: np.ndarray, where: SourceLine) -> np.ndarray:
    """Rank r's own array ``name`` (``x_rank{r}``), of the shape rank 0's ``x`` has."""
    if value.shape != first.shape:
        raise NkiError(where, f"argument {name}: shape {value.shape}, and rank 0's is {first.shape}: "
                              "every rank's copy of a parameter has its shape")
    return value


def _argument_dtype(param: str, value: np.ndarray, where: SourceLine) -> str:
    """The dtype of array argument ``param``; one the machine does not hold is the caller's
    mistake, at the kernel's definition (raw 2-byte records: bf16 saved by numpy, which loads
    them back as ``|V2`` without their type); so is an array of more dimensions than a tensor has."""
    if value.ndim > MAX_DIMENSIONS:
        raise NkiError(where, f"argument {param}: {value.ndim} dimensions; a tensor has at most {MAX_DIMENSIONS}")
    try:
        dtype = to_dtype(value.dtype)
    except ValueError as err:
        hint = ("; view it as ml_dtypes.bfloat16 (2 bytes) or ml_dtypes.float8_e4m3fn (1 byte)"
                if value.dtype.kind == "V" else "")
        raise NkiError(where, f"argument {param}: {getattr(err, 'message', err)}{hint}") from None
    if (why := not_held(value, dtype)) is not None:  # (a float64 argument is float32: 1e39 would be inf)
        # (raised inside the try above, it was caught and wrapped again: "argument x: argument x: ...")
        raise NkiError(where, f"argument {param}: {param}{why}, which {value.dtype} holds")
    return dtype


def _kept_or_converted(value: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The input as the traced program starts from it: ``value`` itself when it has the
    tensor's dtype and nothing can write it (read-only, as is every array it views: the
    command line's ``--inputs``), else a converted copy, so that a caller changing its
    arrays after the trace does not change what the trace saw.  (A copy of a production
    kernel's weights is seconds and as many bytes again: 344 MB for NKIBench's ``lora``.)"""
    held: Any = value
    while isinstance(held, np.ndarray):
        if held.flags.writeable:
            return value.astype(dtype)
        held = held.base
    return value if held is None and value.dtype == dtype else value.astype(dtype)
