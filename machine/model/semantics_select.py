"""Numerical meaning of the search, shuffle, cumulative and predicated ops (``max8``,
``nc_find_index8``, ``nc_match_replace8``, ``nc_stream_shuffle``, ``tensor_scalar_cumulative``,
``range_select``, ``select_reduce``, ``tensor_copy_predicated``, ``tensor_partition_reduce``),
the GpSimd gathers ``nc_n_gather`` / ``local_gather``, the transposing DMA ``dma_transpose`` and
the read-modify-write DMA ``dma_accumulate``.

The conventions are those of :mod:`neuronsim.machine.model.semantics` (total on any operand
shape, arithmetic in fp32, results cast to the written dtype); the table of that module's
docstring gives each op's meaning, from its ``nki.isa`` API reference page.  Only
:mod:`neuronsim.machine.model.semantics` imports this module (it registers :data:`OPS`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from neuronsim.machine.model.optable import BITVEC_OPS, OP_TABLE
from neuronsim.machine.model.oprules import ReadOperand, bind_operands
from neuronsim.machine.model.semantics import ALU, _REDUCE, _f32, _fill_rows, _fit, _operand, _rows, _stored, cast

__all__ = ["OPS", "FP32_MIN", "NOT_FOUND"]

F32 = np.float32
#: ``range_select``'s fill value: the hardware accepts only the most negative finite fp32.
FP32_MIN = float(np.finfo(np.float32).min)
#: The index ``nc_find_index8`` writes for a value it does not find: all ones, which the cast
#: to the index dtype saturates to (0xFFFFFFFF in uint32, 0xFFFF in uint16).
NOT_FOUND = float(2**32 - 1)
#: The value the accumulator register starts from after ``reset_reduce``, by ``op1``.
_IDENTITY = {"add": 0.0, "subtract": 0.0, "multiply": 1.0, "max": -np.inf, "min": np.inf}
_ACCUMULATE = {"add": np.add, "multiply": np.multiply, "max": np.maximum, "min": np.minimum}


def _max8(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    rows = _rows(_f32(reads[0]))
    if rows.shape[1] < 8:  # fewer than the ISA's minimum of 8: the missing places are -inf
        rows = np.pad(rows, ((0, 0), (0, 8 - rows.shape[1])), constant_values=-np.inf)
    top = -np.sort(-rows, axis=1)[:, :8]
    return [cast(_fill_rows(top, outs[0]), outs[0].dtype)]


def _matches(data: np.ndarray, vals: np.ndarray, order: range) -> tuple[np.ndarray, np.ndarray]:
    """``(index [P, 8], taken [P, F])``: for each ``j`` of ``order`` in turn, the first position
    of ``vals[:, j]`` in ``data`` not taken by an earlier ``j`` (``NOT_FOUND`` if none)."""
    taken = np.zeros(data.shape, dtype=bool)
    index = np.full((data.shape[0], 8), NOT_FOUND)
    rows = np.arange(data.shape[0])
    for j in order:
        free = (data == vals[:, j:j + 1]) & ~taken
        found = free.any(axis=1)
        first = free.argmax(axis=1)
        taken[rows[found], first[found]] = True
        index[found, j] = first[found]
    return index, taken


def _vals(reads, partitions: int) -> np.ndarray:
    """The 8 values of each partition (the first 8 elements of its row of ``vals``)."""
    return _fit(_rows(_f32(reads[1]))[:, :8].ravel(), (partitions, 8))


def _nc_find_index8(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    """Duplicated values take their matches in ascending order (the API reference)."""
    data = _rows(_f32(reads[0]))
    index, _taken = _matches(data, _vals(reads, data.shape[0]), range(8))
    return [cast(_fill_rows(index, outs[0]), outs[0].dtype)]


def _nc_match_replace8(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    """``vals`` are matched from the last to the first (the API reference's tie-break)."""
    data = _rows(_f32(reads[0]))
    index, taken = _matches(data, _vals(reads, data.shape[0]), range(7, -1, -1))
    replaced = np.where(taken, F32(attrs.get("imm", 0.0)), data)
    results = [cast(_fit(replaced, outs[0].shape), outs[0].dtype)]
    if len(outs) > 1:
        results.append(cast(_fill_rows(index, outs[1]), outs[1].dtype))
    return results


def _nc_stream_shuffle(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    out = outs[0]
    result = _rows(np.array(out, copy=True))
    source = _rows(cast(reads[0], out.dtype))
    source = _fit(source, (source.shape[0], result.shape[1]))
    mask = attrs.get("mask") or list(range(32))
    for dst in range(result.shape[0]):
        quadrant, lane = divmod(dst, 32)
        pick = mask[lane]
        if pick != 255:
            result[dst] = source[(quadrant * 32 + pick) % source.shape[0]]
    return [result.reshape(out.shape)]


def _full_or_partition(operand, reads, rows: np.ndarray, default: float):
    """An operand tile the size of ``rows`` (element-wise), else a per-partition operand."""
    if isinstance(operand, ReadOperand) and reads[operand.index].size == rows.size and rows.shape[1] > 1:
        return _f32(reads[operand.index]).reshape(rows.shape)
    return _operand(operand, reads, rows.shape[0], default)


def _tensor_scalar_cumulative(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    out = outs[0]
    rows = _rows(_fit(_f32(reads[0]), out.shape))
    operands = bind_operands(OP_TABLE["tensor_scalar_cumulative"], attrs, len(reads))
    op1 = attrs.get("op1", "add")
    values = ALU[attrs.get("op0", "add")](rows, _operand(operands["operand0"], reads, rows.shape[0], 0.0))
    start = np.broadcast_to(_operand(operands["initial"], reads, rows.shape[0], _IDENTITY[op1]),
                            (rows.shape[0], 1)).astype(F32)
    if op1 in _ACCUMULATE:  # in order along the row: reg = new <op1> reg, as the ISA's loop
        result = _ACCUMULATE[op1].accumulate(np.concatenate([start, values], axis=1), axis=1)[:, 1:]
    else:
        result, reg = np.empty_like(values), start[:, 0]
        for i in range(values.shape[1]):
            reg = ALU[op1](values[:, i], reg)
            result[:, i] = reg
    return [cast(result.reshape(out.shape), out.dtype)]


def _with_reduction(picked: np.ndarray, initial, reads, outs) -> list[np.ndarray]:
    """``[out]``, and the running maximum of each row after ``initial`` when there is a 2nd write."""
    results = [cast(picked.reshape(outs[0].shape), outs[0].dtype)]
    if len(outs) > 1:
        start = _operand(initial, reads, picked.shape[0], -np.inf)
        top = np.maximum(picked.max(axis=1, keepdims=True, initial=-np.inf), start)
        results.append(cast(_fill_rows(np.asarray(top, F32).reshape(-1, 1), outs[1]), outs[1].dtype))
    return results


def _range_select(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    rows = _rows(_fit(_f32(reads[0]), outs[0].shape))
    operands = bind_operands(OP_TABLE["range_select"], attrs, len(reads))
    index = F32(attrs.get("start", 0)) + np.arange(rows.shape[1], dtype=F32)[None, :]
    keep = np.ones(rows.shape, dtype=bool)
    for k in (0, 1):
        bound = _operand(operands[f"bound{k}"], reads, rows.shape[0], 0.0)
        keep &= ALU[attrs.get(f"cmp{k}", "greater_equal")](index, bound) != 0
    picked = np.where(keep, rows, F32(attrs.get("value", FP32_MIN)))
    return _with_reduction(picked, operands["initial"], reads, outs)


def _exponential(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    """``exp(in - max_value)`` in fp32; the 2nd write, when there is one, each row's sum after
    ``initial`` (the accumulator's last value, or 0)."""
    rows = _rows(_fit(_f32(reads[0]), outs[0].shape))
    operands = bind_operands(OP_TABLE["exponential"], attrs, len(reads))
    with np.errstate(over="ignore"):  # exp of a large input is inf on the device too
        values = np.exp(rows - _operand(operands["max_value"], reads, rows.shape[0], 0.0)).astype(F32)
    results = [cast(values.reshape(outs[0].shape), outs[0].dtype)]
    if len(outs) > 1:
        total = values.sum(axis=1, keepdims=True, dtype=F32) + _operand(operands["initial"], reads, rows.shape[0], 0.0)
        results.append(cast(_fill_rows(np.asarray(total, F32).reshape(-1, 1), outs[1]), outs[1].dtype))
    return results


def _predicate(reads, shape: tuple[int, ...], attrs) -> np.ndarray:
    chosen = _rows(_fit(reads[0], shape)) != 0
    return ~chosen if attrs.get("reverse_pred", False) else chosen


def _select_reduce(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    rows = _rows(_fit(_f32(reads[1]), outs[0].shape))
    operands = bind_operands(OP_TABLE["select_reduce"], attrs, len(reads))
    on_false = _full_or_partition(operands["on_false"], reads, rows, FP32_MIN)
    picked = np.where(_predicate(reads, outs[0].shape, attrs), rows, on_false).astype(F32)
    return _with_reduction(picked, operands["initial"], reads, outs)


def _tensor_copy_predicated(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    out = outs[0]
    kept = _rows(_f32(out))
    source = F32(attrs["value"]) if "value" in attrs else _rows(_fit(_f32(reads[1]), out.shape))
    picked = np.where(_predicate(reads, out.shape, attrs), source, kept)
    return [cast(picked.reshape(out.shape), out.dtype)]


def _tensor_partition_reduce(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    op = attrs.get("op", "add")
    if op in BITVEC_OPS:  # on the integers' bits, as tensor_reduce's bitvec reductions
        reduced = _REDUCE[op](_rows(reads[0]), axis=0)
        return [_stored(_fit(reduced, outs[0].shape), outs[0].dtype)]
    reduced = np.asarray(_REDUCE[op](_rows(_f32(reads[0])), axis=0), dtype=F32)
    return [cast(_fit(reduced, outs[0].shape), outs[0].dtype)]


def _sequence_bounds(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    ids = _rows(_f32(reads[0]))[0]
    n = ids.size
    change = np.flatnonzero(np.diff(ids) != 0) + 1
    starts, ends = np.concatenate([[0], change]), np.concatenate([change, [n]])
    run = np.repeat(np.arange(starts.size), ends - starts)
    padding = ids == 0
    bounds = np.stack([np.where(padding, n, starts[run]), np.where(padding, -1, ends[run])]).astype(np.float64)
    out = outs[0]
    partitions = out.shape[0] if out.ndim else 1
    return [cast(_fit(np.broadcast_to(bounds.ravel(), (partitions, bounds.size)), out.shape), out.dtype)]


def _nonzero_with_count(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    out = outs[0]
    result = _rows(np.array(out, dtype=np.float64, copy=True))
    source = _rows(_f32(reads[0]))
    width = result.shape[1]
    for row in range(0, min(result.shape[0], source.shape[0]), 16):  # each GpSimd core's first partition
        found = np.flatnonzero(source[row] != 0)[: width - 1]
        line = np.full(width, float(attrs.get("padding", -1)))
        line[: found.size] = found + attrs.get("index_offset", 0)
        line[-1] = found.size
        result[row] = line
    return [cast(result.reshape(out.shape), out.dtype)]


def _nc_n_gather(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    out = outs[0]
    data = _rows(reads[0])
    index = _rows(_fit(reads[1], out.shape)).astype(np.int64) % max(data.shape[1], 1)
    rows = np.arange(index.shape[0])[:, None] % data.shape[0]
    picked = data[rows, index]
    return [(picked if picked.dtype == out.dtype else cast(_f32(picked), out.dtype)).reshape(out.shape)]


def _dma_transpose(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    """``shape`` / ``axes`` given: the read as the source's shape (row-major), its axes
    permuted (NKI ``dma_transpose``'s ``(2, 1, 0)``, ``(3, 1, 2, 0)``); else ``[P, F]`` flipped."""
    shape, axes = attrs.get("shape"), attrs.get("axes")
    if shape and axes and len(shape) == len(axes) and reads[0].size == math.prod(shape):
        flipped = reads[0].reshape(shape).transpose(axes)
    else:
        flipped = _rows(reads[0]).T
    out = outs[0]
    return [_fit(flipped if flipped.dtype == out.dtype else cast(_f32(flipped), out.dtype), out.shape)]


#: The read-modify-write ops of ``dma_accumulate`` (``max`` / ``min``: the reductions of a
#: collective's DMAs, ``nki.collectives.all_reduce(op=nl.maximum)``).
_RMW = {"add": np.add, "max": np.maximum, "min": np.minimum}


def _dma_accumulate(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    """``dst = dst <op> src`` (NKI ``dma_copy(dst_rmw_op=nl.add)``), in fp32, cast to the destination."""
    out = outs[0]
    current = _f32(_fit(reads[1], out.shape))
    return [cast(_RMW[attrs.get("op", "add")](current, _f32(_fit(reads[0], out.shape))), out.dtype)]


#: Partitions one GpSimd core serves (NKI ``local_gather``: eight cores of 16 partitions).
CORE_PARTITIONS = 16


def _local_gather(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    """Per core, its indices (its 16 partitions' index elements, partition first, the first
    ``valid``) are element offsets shared by its partitions: each partition copies ``elements``
    consecutive elements of its own row from each offset (offsets past the row wrap: undefined
    on the hardware)."""
    out = outs[0]
    data, index = _rows(reads[0]), _rows(reads[1]).astype(np.int64)
    k = int(attrs.get("elements", 1))
    result = _rows(np.array(out, copy=True))
    width = max(data.shape[1], 1)
    for first in range(0, min(result.shape[0], data.shape[0], index.shape[0]), CORE_PARTITIONS):
        core = index[first:first + CORE_PARTITIONS]
        stop = min(first + CORE_PARTITIONS, result.shape[0], data.shape[0])  # the partitions both sides have
        offsets = core.ravel(order="F")[: int(attrs.get("valid", core.size))]
        columns = ((offsets[:, None] + np.arange(k)[None, :]).ravel() % width)[: result.shape[1]]
        picked = data[first:stop][:, columns]
        result[first:stop, : columns.size] = picked if picked.dtype == out.dtype else cast(_f32(picked), out.dtype)
    return [result.reshape(out.shape)]


OPS: dict[str, Callable[..., list[np.ndarray]]] = {
    "max8": _max8,
    "nc_find_index8": _nc_find_index8,
    "nc_match_replace8": _nc_match_replace8,
    "nc_stream_shuffle": _nc_stream_shuffle,
    "tensor_scalar_cumulative": _tensor_scalar_cumulative,
    "range_select": _range_select,
    "exponential": _exponential,
    "select_reduce": _select_reduce,
    "tensor_copy_predicated": _tensor_copy_predicated,
    "tensor_partition_reduce": _tensor_partition_reduce,
    "sequence_bounds": _sequence_bounds,
    "nonzero_with_count": _nonzero_with_count,
    "nc_n_gather": _nc_n_gather,
    "dma_transpose": _dma_transpose,
    "dma_accumulate": _dma_accumulate,
    "local_gather": _local_gather,
}
