"""Op-specific operand rules: per-partition operand binding and the NKI shape limits.

Per-partition operands
    Some ops take values that are either an immediate or a ``[P, 1]`` tile broadcast along
    the free dimension (NKI: ``nisa.activation`` ``scale`` / ``bias``, ``nisa.tensor_scalar``
    ``operand0`` / ``operand1``, ``nisa.tensor_tensor_scan`` ``initial``).  In the format the
    operand's attribute is a number (the immediate) or ``{"read": K}``: the tile is
    ``reads[K]``, a read after the op's data reads (:attr:`OpSpec.data_reads`).  Every such
    read is named by exactly one operand.  Shorthand (the first format's form, kept): when
    no attribute names a read and there is exactly one extra read, it is the first operand
    of :attr:`OpSpec.operands` (``bias``, ``operand0``, ``initial``), which then has no
    immediate.

Shape limits (NKI ISA pages; checked by :func:`check_op_rules`, located)
    * ``bn_stats`` reads at most :data:`~neuronsim.machine.model.optable.BN_STATS_FMAX` elements per
      partition; ``bn_aggr`` reads a multiple of 3 (whole ``(count, mean, var*count)``
      triples).
    * ``tensor_reduce`` ``axis``: free dimensions of the read's element shape
      ``(P, c0, ..., ck)`` (numbered 1..k+1), consecutive and ending at the last one.
    * ``tensor_tensor_scan``: ``data0`` and ``data1`` are not both in PSUM.
    * ``activation``: ``reduce_op`` and a second write (``reduce_res``) go together.
    * ``tensor_scalar``: ``reverse`` (both operators) or ``reverse0`` / ``reverse1``, not both.
    * ``quantize_mx`` / ``matmul_mx``: their lane types given (``dtype``; ``stationary_dtype``
      and ``moving_dtype``); a quantized source of whole groups of 8 partitions x 4 elements,
      packed data of a quarter of its elements; every scale row a data partition reads
      (:func:`neuronsim.machine.ir.dtypes.scale_rows` from ``*scale_start``) inside
      the scale access, with a scale for every data element of the row.

>>> from neuronsim.machine.model.optable import OP_TABLE
>>> bind_operands(OP_TABLE["activation"], {"scale": {"read": 1}, "bias": 0.5}, 2)
{'bias': 0.5, 'scale': ReadOperand(index=1)}
>>> bind_operands(OP_TABLE["tensor_scalar"], {"op0": "divide"}, 2)     # shorthand
{'operand0': ReadOperand(index=1), 'operand1': None}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from math import prod
from typing import Any

from neuronsim.machine.ir.dtypes import READ_AS_KEY, itemsize, scale_rows
from neuronsim.machine.ir.errors import LazyPath, ProgramError, join_path
from neuronsim.machine.model.geometry import access_extent
from neuronsim.machine.ir.program import Instruction, MemoryKind, Tensor
from neuronsim.machine.model.optable import BN_STATS_FMAX, OpSpec, op_spec

__all__ = ["ReadOperand", "bind_operands", "check_op_rules", "reduce_axes"]


@dataclass(frozen=True, slots=True)
class ReadOperand:
    """A per-partition operand given as a tile: ``reads[index]``."""

    index: int


def _named_read(value: Any) -> int | None:
    return value["read"] if isinstance(value, Mapping) and "read" in value else None


def bind_operands(spec: OpSpec, attrs: Mapping[str, Any], nreads: int) -> dict[str, float | ReadOperand | None]:
    """Each operand of ``spec``: its immediate, its tile read, or None (absent: the default).

    Assumes a validated instruction (:func:`check_op_rules`); on others it stays total
    (an out-of-range read is ignored).
    """
    bound: dict[str, float | ReadOperand | None] = {}
    for slot in spec.operands:
        value = attrs.get(slot)
        index = _named_read(value)
        if index is not None:
            bound[slot] = ReadOperand(index) if spec.data_reads <= index < nreads else None
        else:
            bound[slot] = None if value is None else float(value)
    named = any(isinstance(v, ReadOperand) for v in bound.values())
    if spec.operands and not named and nreads == spec.data_reads + 1 and bound[spec.operands[0]] is None:
        bound[spec.operands[0]] = ReadOperand(spec.data_reads)
    return bound


def _check_operand_reads(inst: Instruction, spec: OpSpec, path: str) -> None:
    attrs_path = LazyPath(path, "attrs")
    owner: dict[int, str] = {}
    for slot in spec.operands:
        index = _named_read(inst.attrs.get(slot))
        if index is None:
            continue
        where = join_path(join_path(attrs_path, slot), "read")
        if not spec.data_reads <= index < len(inst.reads):
            raise ProgramError(where, f"read {index} does not exist or is a data read; the operand tiles of "
                                      f"{inst.op!r} are reads {spec.data_reads}..{len(inst.reads) - 1}")
        if index in owner:
            raise ProgramError(where, f"read {index} is already operand {owner[index]!r}")
        owner[index] = slot
    extra = range(spec.data_reads, len(inst.reads))
    if not owner and len(extra) == 1:
        first = spec.operands[0]
        if first in inst.attrs:
            raise ProgramError(join_path(join_path(path, "reads"), extra[0]),
                               f"an extra read is operand {first!r}, which is also given as an immediate; "
                               f"bind the read to an operand with {{\"read\": {extra[0]}}}")
        return
    for index in extra:
        if index not in owner:
            raise ProgramError(join_path(join_path(path, "reads"), index),
                               f"read {index} is no operand: name it with {{\"read\": {index}}} in one of "
                               f"attrs {list(spec.operands)}")


def reduce_axes(axis: Any, rank: int) -> tuple[int, ...]:
    """The reduced dimensions of a ``tensor_reduce`` read of ``rank`` dims (default: all free).

    >>> reduce_axes(None, 3), reduce_axes(2, 3), reduce_axes([1, 2], 3)
    ((1, 2), (2,), (1, 2))
    """
    if axis is None:
        return tuple(range(1, rank))
    items = axis if isinstance(axis, (list, tuple)) else [axis]
    return tuple(sorted(items))


def _check_axes(inst: Instruction, shape: tuple[int, ...], path: str) -> None:
    if "axis" not in inst.attrs:
        return
    axes, rank = reduce_axes(inst.attrs["axis"], len(shape)), len(shape)
    wanted = tuple(range(axes[0], rank))
    if axes != wanted or len(set(axes)) != len(axes):
        raise ProgramError(join_path(join_path(path, "attrs"), "axis"),
                           f"axis {list(axes)} must be consecutive free dimensions ending at the last one of the "
                           f"read, whose element shape is {list(shape)} (e.g. {list(range(rank - 1, rank))} "
                           f"or {list(range(1, rank))})")


def _read_shape(inst: Instruction, tensors: Mapping[str, Tensor], index: int, *, write: bool = False
                ) -> tuple[int, ...]:
    """Element shape ``(P, c0, ..., ck)`` of a compute read (``write``: write) as
    ``neuronsim.machine.sim.memory`` has it."""
    access = (inst.writes if write else inst.reads)[index]
    tensor = tensors[access.tensor]
    _offset, pattern = access_extent(tensor, access)
    partitions = access.partitions[1] if access.partitions is not None else tensor.shape[0]
    return (partitions, *(count for _stride, count in pattern))


def check_op_rules(inst: Instruction, tensors: Mapping[str, Tensor], path: str) -> None:
    """Operand binding and the shape limits of the module doc; raise a located error."""
    spec = op_spec(inst.op)
    if spec.opaque:
        return
    if spec.operands:
        _check_operand_reads(inst, spec, path)
    attrs_path = LazyPath(path, "attrs")
    if inst.op == "activation" and ("reduce_op" in inst.attrs) != (len(inst.writes) == 2):
        where = join_path(path, "writes") if len(inst.writes) == 2 else join_path(attrs_path, "reduce_op")
        raise ProgramError(where, "a fused reduction needs both attrs.reduce_op and a second write (the [P, 1] "
                                  "reduce_res tile)")
    if inst.op == "tensor_scalar" and "reverse" in inst.attrs and ({"reverse0", "reverse1"} & set(inst.attrs)):
        raise ProgramError(join_path(attrs_path, "reverse"),
                           "give either reverse (both operators) or reverse0 / reverse1, not both")
    if inst.op == "tensor_tensor_scan":
        memories = [tensors[a.tensor].memory for a in inst.reads[:2]]
        if memories == [MemoryKind.PSUM, MemoryKind.PSUM]:
            raise ProgramError(join_path(path, "reads"), "data0 and data1 of tensor_tensor_scan cannot both be in PSUM")
    if inst.op in ("quantize_mx", "matmul_mx"):
        _check_mx(inst, tensors, path)
    if inst.op in ("bn_stats", "bn_aggr", "tensor_reduce"):
        shape = _read_shape(inst, tensors, 0)
        free = prod(shape[1:])
        where = join_path(join_path(path, "reads"), 0)
        if inst.op == "bn_stats" and free > BN_STATS_FMAX:
            raise ProgramError(where, f"bn_stats reads at most {BN_STATS_FMAX} elements per partition, not {free}; "
                                      "split the row and aggregate the chunks' statistics with one bn_aggr")
        if inst.op == "bn_aggr" and free % 3:
            raise ProgramError(where, f"bn_aggr reads (count, mean, var*count) triples: {free} elements per "
                                      "partition is not a multiple of 3")
        if inst.op == "tensor_reduce":
            _check_axes(inst, shape, path)


def _check_mx(inst: Instruction, tensors: Mapping[str, Tensor], path: str) -> None:
    """The MX ops' rules of the module doc (what their numerics index by)."""
    attrs_path = join_path(path, "attrs")
    quantize = inst.op == "quantize_mx"
    for key in ("dtype",) if quantize else ("stationary_dtype", "moving_dtype"):
        if key not in inst.attrs:
            raise ProgramError(join_path(attrs_path, key), f"{inst.op} needs attrs.{key}, the packed lane type")
    if quantize:
        rows, free = _rows_and_free(_read_shape(inst, tensors, 0))
        source = inst.reads[0]
        read_as = source.extras.get(READ_AS_KEY) if source.extras else None
        if read_as is not None:  # counted in the dtype the engine reads (an fp32 tile read as bf16)
            free = free * tensors[source.tensor].itemsize // itemsize(read_as)
        if rows % 8 or free % 4:
            raise ProgramError(join_path(join_path(path, "reads"), 0),
                               f"quantize_mx quantizes groups of 8 partitions x 4 elements: a [{rows}, {free}] "
                               "source is not made of them")
        # in bytes: a packed tile is often declared in another dtype and read as the packed one
        data = tensors[inst.writes[0].tensor]
        written = prod(_read_shape(inst, tensors, 0, write=True)) * data.itemsize
        word = 2 if inst.attrs["dtype"].startswith("float4") else 4  # four lanes of 4 or 8 bits
        if written != rows * free // 4 * word:
            raise ProgramError(join_path(join_path(path, "writes"), 0),
                               f"the packed data of a [{rows}, {free}] source is {rows * free // 4 * word} bytes "
                               f"([{rows}, {free // 4}] words of {word} bytes), not {written}")
        pairs = [(rows, free // 4, 1, "scale_start", True)]
    else:
        pairs = [(*_rows_and_free(_read_shape(inst, tensors, data)), scales, f"{side}_scale_start", False)
                 for data, scales, side in ((0, 2, "stationary"), (1, 3, "moving"))]
    for rows, free, scales, key, written in pairs:
        start = inst.attrs.get(key, 0)
        scale_rows_, scale_free = _rows_and_free(_read_shape(inst, tensors, scales, write=written))
        needed = scale_rows(rows, start)
        where = join_path(join_path(path, "writes" if written else "reads"), scales)
        if start < 0 or int(needed.max()) >= scale_rows_:
            raise ProgramError(join_path(attrs_path, key) if key in inst.attrs else where,
                               f"{key} {start}: the {rows} data partitions read scale rows {int(needed.min())}.."
                               f"{int(needed.max())}, and the scale access has {scale_rows_}")
        if scale_free < free:
            raise ProgramError(where, f"a scale per data element of a row: {free} needed, the scale access has "
                                      f"{scale_free}")


def _rows_and_free(shape: tuple[int, ...]) -> tuple[int, int]:
    return shape[0], prod(shape[1:])
