"""Emitters of the top-8 search, stream shuffle, cumulative, predicated-select, partition
reduce, gather and random ``nki.isa`` ops: ``fn(dst_layout, ...)`` records one instruction (the
op table's ``max8`` ... ``local_gather``, ``random``).

The Vector Engine's accumulator register (``reduce_cmd``): ``reset_reduce`` starts it from the
reduction's identity, ``load_reduce`` from ``imm1``, ``reduce`` continues from its last value.
neuronsim keeps no state between instructions, so the register is where its last value was
written: the last column of a ``tensor_scalar_cumulative``'s output, or the ``reduce_res`` tile
of a ``range_select`` / ``select_reduce`` (a hidden ``[P, 1]`` fp32 SBUF tile when the kernel
passes none); a ``reduce`` reads it as its ``initial`` operand, which also orders the two.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from neuronsim.machine.ir.dtypes import DTYPES, is_float
from neuronsim.machine.model.optable import CUMULATIVE_OPS, RANGE_CMPS
from neuronsim.machine.nki import operand_rules, ops
from neuronsim.machine.nki.alloc import declare_tile, spec_of
from neuronsim.machine.nki.arith import alu_name, emit_partition_reduce
from neuronsim.machine.nki.dtypes import to_dtype
from neuronsim.machine.nki.errors import fail, shown
from neuronsim.machine.nki.indexing import Mask
from neuronsim.machine.nki.layout import Layout
from neuronsim.machine.nki.tiles import NkiTensor, is_tile
from neuronsim.machine.nki.tracer import current

__all__ = ["command", "register", "keep_register", "max8", "find_index8", "match_replace8", "stream_shuffle",
           "cumulative", "range_select", "select_reduce", "copy_predicated", "partition_reduce", "sequence_bounds",
           "nonzero_with_count", "n_gather", "local_gather", "random", "seed", "dropout"]

#: The attribute of the trace (one per attempt) that holds where each engine's accumulator
#: register was last written (see the module doc).
_REGISTERS = "_accumulator_registers"
#: ``tensor_scalar_cumulative``'s dtypes (its page: "BF16, FP16, FP32, FP8, UINT8, UINT16, INT8, INT16").
CUMULATIVE_DTYPES = ("bfloat16", "float16", "float32", "float8_e4m3", "float8_e4m3fn", "float8_e5m2", "uint8", "uint16",
                     "int8", "int16")
#: What ``nisa.range_select`` fills where the range fails: its page allows no other value.
_FP32_MIN = np.finfo(np.float32).min


def _registers() -> dict[str, tuple[Layout, int]]:
    """Per engine, the tile holding the accumulator's last value and how many instructions had
    written that tile then (:meth:`KernelBuilder.write_count`)."""
    return vars(current()).setdefault(_REGISTERS, {})


def command(reduce_cmd: Any, default: str) -> str:
    """The name of a ``reduce_cmd`` (either generation's enum, or a string); ``default`` for None."""
    return str(getattr(reduce_cmd, "value", reduce_cmd)) if reduce_cmd is not None else default


def register(engine: str, what: str, cmd: str = "reduce") -> Layout:
    """The last value of ``engine``'s accumulator, for ``reduce_cmd=reduce`` (or a ``reduce_res``
    read out of the registers that ``cmd`` left as they were)."""
    kept = _registers().get(engine)
    if kept is None:  # the kernel's mistake: the registers hold whatever an earlier kernel left
        raise fail(f"{what}(reduce_cmd={cmd}) reads the engine's reduce registers, and nothing in the kernel set "
                   "them before it: start the accumulation with reset_reduce (or reset / load_reduce)"
                   + ("; idle is the call's default (its page), reduce_cmd=nisa.reduce_cmd.reset_reduce gives this "
                      "instruction's own row sums" if cmd == "idle" else ""))
    layout, writes = kept
    name = layout.tensor.name
    # the hardware's 32-bit registers keep their value whatever happens to the tile; neuronsim
    # keeps it in the tile, so a tile written since, or rounded, would continue the chain wrong
    if current().kb.write_count(name) > writes:
        raise current().refuse(f"{what}(reduce_cmd={cmd}) after the kernel wrote {name}, the tile the "
                               "accumulation before it left its value in",
                               "continue the accumulation before writing that tile, or restart it with "
                               "reset_reduce")
    if layout.element_dtype != "float32":
        raise current().refuse(f"{what}(reduce_cmd={cmd}) continuing from {name} ({layout.element_dtype}), "
                               "where the accumulation before it left its value rounded",
                               "a float32 result tile for the accumulation a chain continues")
    return layout


def register_tile(like: Layout) -> Layout:
    """A hidden ``[P, 1]`` fp32 SBUF tile standing for an engine's reduce registers, on the
    partitions of ``like``."""
    return declare_tile(current(), spec_of((like.view().num_partitions, 1), to_dtype("float32"), "sbuf"))


def reset_register(engine: str, like: Layout, identity: float) -> None:
    """``reduce_cmd=reset``: the engine's accumulator holds ``identity`` (a hidden tile's memset)."""
    start = register_tile(like)
    current().kb.memset(start.view(), identity)
    keep_register(engine, start)


def keep_register(engine: str, layout: Layout) -> None:
    """``layout`` now holds ``engine``'s accumulator (``"dve"`` or ``"act"``)."""
    _registers()[engine] = (layout, current().kb.write_count(layout.tensor.name))


def _tile(value: Any, what: str) -> Layout:
    if not is_tile(value):
        got = "a comparison of indices (a mask: pass it as mask=)" if isinstance(value, Mask) else shown(value)
        raise fail(f"{what} must be a tile, got {got}")
    call, _, name = what.rpartition(" ")
    operand_rules.on_chip(call, **{name: value})  # before any shape is compared
    return ops.lay(value)


def _same_rows(a: Layout, b: Layout, what: str) -> None:
    if a.view().num_partitions != b.view().num_partitions:
        raise fail(f"{what}: {a.tensor.name} {a.shape} and {b.tensor.name} {b.shape} have different partition counts")


def _bind(reads: list, attrs: dict, slot: str, value: Any) -> None:
    """A per-partition operand: a tile becomes a read named ``{"read": k}``, a number an immediate."""
    if value is None:
        return
    if isinstance(value, Layout) or is_tile(value):
        reads.append(value if isinstance(value, Layout) else ops.lay(value))
        attrs[slot] = {"read": len(reads) - 1}
    else:
        attrs[slot] = ops.number(value)


def _instr(op: str, engine: str, reads: list[Layout], writes: list[Layout], attrs: dict | None = None) -> None:
    tracer = current()
    for layout in writes:
        tracer.note_write(layout)
    tracer.kb.instruction(op, engine, [r.view() for r in reads], [w.view() for w in writes], attrs=attrs)
    if op in ("range_select", "select_reduce", "exponential") and len(writes) > 1:  # (the accumulator's tile)
        keep_register("dve", writes[1])


def _eight(dst: Layout, like: Layout, what: str) -> None:
    _same_rows(dst, like, what)
    if dst.view().free_count != 8:
        raise fail(f"{what}: the destination {dst.tensor.name} {dst.shape} must hold 8 elements per partition")


def max8(dst: Layout, src: Any) -> None:
    data = _tile(src, "nisa.max8 src")
    _eight(dst, data, "nisa.max8")
    # its page reads between 8 and 16,384 elements a partition; fewer is not refused: nki-library's
    # moe_block_tkg takes the top 8 of 2 experts at the corpus's shape (it ran, max8 padding nothing)
    if data.view().free_count > 16384:
        raise fail(f"nisa.max8 of {data.view().free_count} elements a partition: its page reads 16,384 at most")
    _instr("max8", "dve", [data], [dst])


def find_index8(dst: Layout, data: Any, vals: Any) -> None:
    source = _tile(data, "nisa.nc_find_index8 data")
    _eight(dst, source, "nisa.nc_find_index8")
    if _tile(vals, "nisa.nc_find_index8 vals").view().free_count != 8:  # (4 ran: a probe)
        raise fail("nisa.nc_find_index8: vals holds 8 elements per partition (its page)")
    _instr("nc_find_index8", "dve", [source, _tile(vals, "nisa.nc_find_index8 vals")], [dst])


def match_replace8(dst: Layout, data: Any, vals: Any, imm: Any, dst_idx: Any = None) -> None:
    source = _tile(data, "nisa.nc_match_replace8 data")
    writes = [dst]
    if dst_idx is not None:
        index = _tile(dst_idx, "nisa.nc_match_replace8 dst_idx")
        _eight(index, source, "nisa.nc_match_replace8 dst_idx")
        writes.append(index)
    if _tile(vals, "nisa.nc_match_replace8 vals").view().free_count != 8:  # (4 ran: a probe)
        raise fail("nisa.nc_match_replace8: vals holds 8 elements per partition (its page: \"the 8 values per "
                   "partition to match\")")
    _instr("nc_match_replace8", "dve", [source, _tile(vals, "nisa.nc_match_replace8 vals")], writes,
           {"imm": ops.number(imm)})


def stream_shuffle(dst: Layout, src: Any, shuffle_mask: Any) -> None:
    if any(isinstance(m, (float, np.floating)) for m in shuffle_mask):  # (2.0 ran as 2: a probe)
        raise fail("nisa.nc_stream_shuffle: shuffle_mask holds ints (its page: each element an int or an affine "
                   "expression), not floats")
    mask = [int(ops.number(m)) for m in shuffle_mask]
    if len(mask) != 32 or not all(0 <= m < 32 or m == 255 for m in mask):
        raise fail("nisa.nc_stream_shuffle: shuffle_mask is 32 source partitions (0..31, or 255: keep)")
    source = _tile(src, "nisa.nc_stream_shuffle src")
    # (elements only: nki-library's attention block shuffles one partition's row into 32)
    operand_rules.same_counts("nisa.nc_stream_shuffle", dst, partitions=False, src=source)
    operand_rules.same_dtype("nisa.nc_stream_shuffle", "dst must have same data type as src.", src=source, dst=dst)
    reads = [source, dst] if 255 in mask else [source]  # kept elements: the destination is read too
    _instr("nc_stream_shuffle", "dve", reads, [dst], {"mask": mask})


def _last_element(layout: Layout) -> Layout:
    """The last element of each partition row of ``layout`` (a ``[P, 1]`` view)."""
    axes, offset = [], layout.offset
    for kind, stride, count in layout.axes:
        if kind == "F" and count > 1:
            offset = offset + (count - 1) * stride
            count = 1
        axes.append((kind, stride, count))
    return replace(layout, axes=tuple(axes), offset=offset, tags=None, limits=None)


def cumulative(dst: Layout, src: Any, op0: Any, op1: Any, imm0: Any, imm1: Any = None, reduce_cmd: Any = None) -> None:
    data = _tile(src, "nisa.tensor_scalar_cumulative src")
    operand_rules.dtype_among("nisa.tensor_scalar_cumulative", CUMULATIVE_DTYPES, "Input / output dtypes are "
                              "restricted to BF16, FP16, FP32, FP8, UINT8, UINT16, INT8, INT16", src=data, dst=dst)
    cmd, reducer = command(reduce_cmd, "reset_reduce"), alu_name(op1)
    if reducer not in CUMULATIVE_OPS:
        raise fail(f"nisa.tensor_scalar_cumulative: op1 {reducer!r} is not one of {', '.join(CUMULATIVE_OPS)}")
    reads, attrs = [data], {"op0": alu_name(op0), "op1": reducer}
    _bind(reads, attrs, "operand0", imm0)
    if cmd == "load_reduce":
        _bind(reads, attrs, "initial", imm1)
    elif cmd == "reduce":
        _bind(reads, attrs, "initial", register("dve", "nisa.tensor_scalar_cumulative"))
    elif cmd != "reset_reduce":
        raise current().refuse(f"nisa.tensor_scalar_cumulative(reduce_cmd={cmd})", "reset_reduce, load_reduce, reduce")
    _instr("tensor_scalar_cumulative", "dve", reads, [dst], attrs)
    keep_register("dve", _last_element(dst))


def _reduction(reads: list, attrs: dict, writes: list, what: str, cmd: str, reduce_res: Any, reduce_op: Any) -> None:
    """The accumulator operand and write of ``range_select`` / ``select_reduce`` (max only)."""
    if reduce_op is not None and alu_name(reduce_op) != "max":
        raise current().refuse(f"{what}(reduce_op={alu_name(reduce_op)})", "the ISA reduces with max only")
    if cmd == "idle" and reduce_res is None:
        return
    if cmd == "reduce":
        _bind(reads, attrs, "initial", register("dve", what))
    elif cmd not in ("reset_reduce", "idle"):
        raise current().refuse(f"{what}(reduce_cmd={cmd})", "reset_reduce, reduce or idle")
    if reduce_res is not None:
        target = _tile(reduce_res, f"{what} reduce_res")
    else:  # kept in the register only: a hidden [P, 1] tile stands for it
        target = register_tile(writes[0])
    writes.append(target)  # the accumulator's tile: kept once the instruction has written it (_instr)


def exponential(dst: Layout, src: Any, max_value: Any = 0.0, reduce_res: Any = None, reduce_cmd: Any = None,
                reduce_init: Any = 0.0) -> None:
    """``nisa.exponential`` (NeuronCore-v4's Vector Engine): ``dst = exp(src - max_value)`` in
    fp32, ``max_value`` a number or one element a partition; through the accumulator
    (``reduce_cmd``, idle by its page) each row's sum too: ``reset_reduce`` starts it there,
    ``reduce`` adds to its last value, ``load_reduce`` to ``reduce_init``; ``reduce_res``, when
    given, receives it."""
    what = "nisa.exponential"
    operand_rules.from_generation(what, 4)
    data = _tile(src, f"{what} src")
    operand_rules.same_counts(what, dst, src=data)
    rows = data.view().num_partitions
    reads, attrs = [data], {}
    operand_rules.one_per_partition(what, "max_value", max_value, rows)
    _bind(reads, attrs, "max_value", max_value)
    cmd = command(reduce_cmd, "idle")
    if cmd not in ("idle", "reset", "reset_reduce", "reduce", "load_reduce"):
        raise current().refuse(f"{what}(reduce_cmd={cmd})", "idle, reset, reset_reduce, reduce or load_reduce")
    if (is_tile(reduce_init) or ops.number(reduce_init) != 0) and cmd != "load_reduce":
        raise fail(f"{what}: reduce_init is given with reduce_cmd=load_reduce only (its page: \"unset or set to 0.0 "
                   f"when reduce_cmd is not load_reduce\")")
    writes = [dst]
    if cmd in ("reset_reduce", "reduce", "load_reduce"):
        operand_rules.one_per_partition(what, "reduce_res", reduce_res, rows)
        _bind(reads, attrs, "initial", register("dve", what) if cmd == "reduce" else
              reduce_init if cmd == "load_reduce" else None)
        writes.append(_tile(reduce_res, f"{what} reduce_res") if reduce_res is not None else register_tile(data))
    _instr("exponential", "dve", reads, writes, attrs)
    if cmd == "reset":
        reset_register("dve", data, 0.0)
    if cmd in ("idle", "reset") and reduce_res is not None:  # the registers as they are (activation's page)
        ops.copy(_tile(reduce_res, f"{what} reduce_res"), register("dve", what, cmd), "dve")


def range_select(dst: Layout, on_true: Any, comp_op0: Any, comp_op1: Any, bound0: Any, bound1: Any,
                 reduce_cmd: Any = None, reduce_res: Any = None, reduce_op: Any = None, range_start: Any = 0,
                 on_false_value: Any = None) -> None:
    if current().nc_generation < 3:  # (it ran on trn1: a helper's sweep)
        raise fail(f"nisa.range_select: available on NeuronCore-v3 and newer only (its page), not "
                   f"NeuronCore-v{current().nc_generation}; trace for trn2 or trn3 (@nki.jit(platform_target=...))")
    data = _tile(on_true, "nisa.range_select on_true_tile")
    cmps = [alu_name(comp_op0), alu_name(comp_op1)]
    if any(c not in RANGE_CMPS for c in cmps):
        raise fail(f"nisa.range_select: comparisons must be among {', '.join(RANGE_CMPS)}, got {cmps}")
    reads, attrs = [data], {"cmp0": cmps[0], "cmp1": cmps[1], "start": int(ops.number(range_start))}
    if on_false_value is not None and on_false_value is not Ellipsis:
        attrs["value"] = ops.number(on_false_value)
        if np.float32(attrs["value"]) != _FP32_MIN:  # (ran with -5.0 and filled with it: a helper's sweep)
            raise fail(f"nisa.range_select(on_false_value={on_false_value!r}): its page says it must be FP32_MIN "
                       f"(-3.4028235e+38, nl.fp32.min), a hardware constraint; select another value after it "
                       f"(nisa.tensor_scalar, nl.where)")
    for name, bound in (("bound0", bound0), ("bound1", bound1)):  # (bf16 and (128, 2) bounds ran: a probe)
        operand_rules.one_per_partition("nisa.range_select", name, bound, data.view().num_partitions)
        operand_rules.dtype_among("nisa.range_select", ("float32",), "bound0/bound1 must be FP32 types.",
                                  **{name: bound})
        _bind(reads, attrs, name, bound)
    writes = [dst]
    _reduction(reads, attrs, writes, "nisa.range_select", command(reduce_cmd, "reset_reduce"), reduce_res, reduce_op)
    _instr("range_select", "dve", reads, writes, attrs)


def select_reduce(dst: Layout, predicate: Any, on_true: Any, on_false: Any, reduce_res: Any = None,
                  reduce_cmd: Any = None, reduce_op: Any = None, reverse_pred: bool = False,
                  page_rules: bool = False) -> None:
    """``page_rules``: the kernel's own call, held to its page's shapes (``nl.where`` broadcasts
    a column through it)."""
    reads = [_tile(predicate, "nisa.select_reduce predicate"), _tile(on_true, "nisa.select_reduce on_true")]
    if page_rules:
        operand_rules.same_counts("nisa.select_reduce", dst, predicate=reads[0], on_true=reads[1])
        if all(r.tensor.memory.name == "PSUM" for r in reads):  # (both ran: a probe)
            raise fail("nisa.select_reduce: on_true and predicate are both in PSUM; its page: \"Either on_true or "
                       "predicate may be in PSUM, but not both simultaneously\"")
        _select_reduce_dtypes(reads[0], reads[1], reduce_res)
        rows = dst.view().num_partitions
        operand_rules.one_per_partition("nisa.select_reduce", "on_false", on_false, rows)
        operand_rules.one_per_partition("nisa.select_reduce", "reduce_res", reduce_res, rows)
    attrs: dict[str, Any] = {"reverse_pred": bool(reverse_pred) or None}
    _bind(reads, attrs, "on_false", on_false)
    writes = [dst]
    _reduction(reads, attrs, writes, "nisa.select_reduce", command(reduce_cmd, "idle"), reduce_res, reduce_op)
    _instr("select_reduce", "dve", reads, writes, attrs)


def _select_reduce_dtypes(predicate: Layout, on_true: Layout, reduce_res: Any) -> None:
    """select_reduce's page's dtypes (tfloat32 is float32 here: not told apart); its list of the
    predicate's ("int8, uint8, int16, uint16") is read as its "any supported integer type"."""
    call = "nisa.select_reduce"
    operand_rules.dtype_among(call, tuple(d for d in DTYPES if d not in ("int32", "uint32")), "on_true can be any "
                              "supported dtype except tfloat32, int32, uint32", on_true=on_true)
    operand_rules.dtype_among(call, operand_rules.INTEGER_DTYPES, "predicate dtype can be any supported integer "
                              "type int8, uint8, int16, uint16", predicate=predicate)
    operand_rules.dtype_among(call, tuple(d for d in DTYPES if is_float(d)), "reduce_res dtype must of float type",
                              reduce_res=reduce_res)


def copy_predicated(dst: Layout, src: Any, predicate: Any, reverse_pred: bool = False,
                    page_rules: bool = False) -> None:
    """Elements where the predicate is false keep ``dst``'s contents: ``dst`` is read too
    (``page_rules``: the kernel's own call, held to its page's shapes)."""
    reads = [_tile(predicate, "nisa.tensor_copy_predicated predicate")]
    if page_rules:
        operand_rules.same_counts("nisa.tensor_copy_predicated", dst, predicate=reads[0], src=src)
        operand_rules.dtype_among("nisa.tensor_copy_predicated", ("uint8", "uint16", "uint32"), "predicate must be "
                                  "of type uint8, uint16, or uint32.", predicate=reads[0])
        operand_rules.same_dtype("nisa.tensor_copy_predicated", "src and dst must share the same data type.",
                                 src=src, dst=dst)
    attrs: dict[str, Any] = {"reverse_pred": bool(reverse_pred) or None}
    if is_tile(src):
        reads.append(ops.lay(src))
    else:
        attrs["value"] = ops.number(src)
    _instr("tensor_copy_predicated", "dve", reads + [dst], [dst], attrs)


def partition_reduce(dst: Layout, op: Any, data: Any) -> None:
    """``nisa.tensor_partition_reduce``: its page's operators, "add, max, bitwise_or, bitwise_and"
    (2.33 adds bitwise_xor; its mean, "average" in 2.32, is not modelled: refused as such).
    ``nl.min`` / ``nl.prod`` over the partitions reach :func:`emit_partition_reduce` directly."""
    if getattr(op, "__name__", op) in ("mean", "average"):
        raise current().refuse("nisa.tensor_partition_reduce(op=mean)", "add, max and the bitwise ones")
    reducer = alu_name(op)
    if reducer not in ("add", "max", "bitwise_or", "bitwise_and", "bitwise_xor"):  # (min ran: a probe)
        raise fail(f"nisa.tensor_partition_reduce(op={reducer}): its page's operators are add, max, bitwise_or, "
                   f"bitwise_and (and bitwise_xor from 2.33)")
    operand_rules.integer_bits("nisa.tensor_partition_reduce", (reducer,), data=data, dst=dst)
    emit_partition_reduce(dst, reducer, _tile(data, "nisa.tensor_partition_reduce data"))


def sequence_bounds(dst: Layout, segment_ids: Any) -> None:
    ids = _tile(segment_ids, "nisa.sequence_bounds segment_ids")
    operand_rules.dtype_among("nisa.sequence_bounds", ("float32", "int32"), "Both the input tile (segment_ids) and "
                              "output tile (dst) must have data type nl.float32 or nl.int32.", segment_ids=ids, dst=dst)
    for name, layout in (("segment_ids", ids), ("dst", dst)):  # (4 partitions ran, each its own: a probe)
        if layout.view().num_partitions != 1:
            raise fail(f"nisa.sequence_bounds: {name} is {tuple(layout.shape)}; its page: \"The partition dimension "
                       "must always be 1.\"")
    ids = ops.staged_from_psum(ids)
    n = ids.view().free_count
    if dst.view().free_count != 2 * n:
        raise fail(f"nisa.sequence_bounds: the result {dst.shape} holds a start and an end for each of {n} ids")
    _instr("sequence_bounds", "pool", [ids], [dst])


def nonzero_with_count(dst: Layout, src: Any, index_offset: Any = 0, padding_val: Any = -1) -> None:
    """Rows other than each GpSimd core's first keep their contents: ``dst`` is read too."""
    source = _tile(src, "nisa.nonzero_with_count src")
    operand_rules.dtype_among("nisa.nonzero_with_count", ("float32", "int32"), "src must be in SBUF with dtype "
                              "float32 or int32.", src=source)
    operand_rules.dtype_among("nisa.nonzero_with_count", ("int32",), "dst must be in SBUF with dtype int32.", dst=dst)
    if dst.view().free_count != source.view().free_count + 1:
        raise fail(f"nisa.nonzero_with_count: the result {dst.shape} has one element per partition more than "
                   f"the source {source.shape}")
    _instr("nonzero_with_count", "pool", [source, dst], [dst],
           {"index_offset": int(ops.number(index_offset)), "padding": int(ops.number(padding_val))})


def n_gather(dst: Layout, data: Any, indices: Any) -> None:
    """Per-partition gather on POOL (``nisa.nc_n_gather``, ``nl.gather_flattened``): it reads
    all of ``data`` (which elements, only the indices' values say)."""
    source = ops.staged_from_psum(_tile(data, "the gathered data"))
    index = ops.staged_from_psum(_tile(indices, "the gather indices"))
    if not index.element_dtype.startswith(("int", "uint")):  # (float indices ran, truncated: a probe)
        raise fail(f"the gather indices are {index.element_dtype}: nc_n_gather's and gather_flattened's pages "
                   "take uint32 indices")
    _same_rows(dst, source, "nc_n_gather")
    if dst.view().free_count != index.view().free_count:
        raise fail(f"nc_n_gather: the result {dst.shape} has one element per index of {index.shape}")
    _instr("nc_n_gather", "pool", [source, index], [dst])


#: ``num_elem_per_idx`` values the ``local_gather`` page allows, and the indices a core may use.
LOCAL_GATHER_ELEMENTS = (1, 2, 4, 8, 16, 32)
LOCAL_GATHER_MAX_INDICES = 4096


def local_gather(dst: Layout, src_buffer: Any, index: Any, num_elem_per_idx: Any = 1,
                 num_valid_indices: Any = None) -> None:
    """``nisa.local_gather`` on POOL: each GpSimd core gathers, for each of its 16 partitions,
    ``num_elem_per_idx`` elements at each of its indices (the page's three size rules checked).
    It reads all of ``src_buffer`` (which elements, only the indices' values say)."""
    source = _tile(src_buffer, "nisa.local_gather src_buffer")
    indices = _tile(index, "nisa.local_gather index")
    page = "no data type casting is allowed in this API. The indices in index tile must be uint16 types."
    operand_rules.same_dtype("nisa.local_gather", page, src_buffer=source, dst=dst)
    operand_rules.dtype_among("nisa.local_gather", ("uint16",), page, index=indices)
    rows = source.view().num_partitions
    if rows != indices.view().num_partitions or rows % 16:
        raise fail(f"nisa.local_gather: src_buffer {source.shape} and index {indices.shape} have the same "
                   "partition count, a multiple of 16")
    k = int(ops.number(num_elem_per_idx))
    if k not in LOCAL_GATHER_ELEMENTS:
        raise fail(f"nisa.local_gather: num_elem_per_idx {k} is not one of {LOCAL_GATHER_ELEMENTS}")
    per_core = 16 * indices.view().free_count
    valid = per_core if num_valid_indices is None else int(ops.number(num_valid_indices))
    if not 1 <= valid <= min(per_core, LOCAL_GATHER_MAX_INDICES):
        raise fail(f"nisa.local_gather: num_valid_indices {valid} is outside 1 .. {min(per_core, 4096)} "
                   f"(the elements of 16 partitions of index {indices.shape}, at most 4096)")
    if dst.view().num_partitions != rows or dst.view().free_count != valid * k:
        raise fail(f"nisa.local_gather: the result {dst.shape} holds {valid} x {k} elements on each of {rows} "
                   "partitions")
    _instr("local_gather", "pool", [source, indices], [dst], {"elements": k, "valid": valid})


def random(dst: Layout, low: Any = 0.0, high: Any = 1.0, *, bits: bool = False, engine: str = "dve") -> None:
    if is_tile(low) or is_tile(high):
        raise current().refuse("a random range given as tiles", "immediate min / max")
    attrs = {"bits": True} if bits else {"low": ops.number(low), "high": ops.number(high)}
    _instr("random", engine, [], [dst], attrs)


def seed(src: Any, engine: str = "dve") -> None:
    """Reseed the engine's generator from the seed tile's bytes."""
    _instr("set_rand_state", engine, [_tile(src, "the random seed")], [])


def store_state(dst: Layout, engine: str) -> None:
    """``nisa.rand_get_state``: the engine's generator state into ``dst`` (uint32, one lane a
    partition: 6 words on GpSimd, 24 on the Vector Engine, its page); reseeding from it restores it."""
    what = "nisa.rand_get_state"
    words = {"pool": 6, "dve": 24}[engine]
    operand_rules.dtype_among(what, ("uint32",), "The output dst tile must be uint32.", dst=dst)
    if dst.view().free_count != words:
        raise fail(f"{what}: dst holds {dst.view().free_count} elements a partition; its page: {words} on the "
                   f"{'GpSimd' if engine == 'pool' else 'Vector'} Engine (XORWOW's state)")
    if engine == "pool" and dst.tensor.memory.name == "PSUM":
        raise fail(f"{what}: dst is in PSUM, which the GpSimd Engine cannot access (its page)")
    _instr("get_rand_state", engine, [], [dst])


def dropout(dst: Layout, data: Any, prob: Any) -> None:
    """``data`` where a uniform draw is at least ``prob``, else 0: a draw into a staged fp32 tile,
    compared with ``prob`` (a number or a ``[P, 1]`` tile), times the data (three DVE ops)."""
    source = _tile(data, "dropout data")
    tracer = current()
    keep = ops.float32_tile(source.shape)
    random(keep)
    tracer.note_write(keep)
    operand = ops.lay(prob).view() if is_tile(prob) else ops.number(prob)
    tracer.kb.tensor_scalar(keep.view(), keep.view(), op0="greater_equal", operand0=operand)
    ops.binary(dst, NkiTensor(source), NkiTensor(keep), "multiply")
