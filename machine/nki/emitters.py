"""The ``nki.isa`` operations as emitters: ``fn(dst_layout, ...)`` records one ISA op.

Both API generations use these: the current API's ``nisa.X(dst, ...)`` emits into ``dst`` at
once, the legacy ``nisa.X(...)`` returns a pending tile that is emitted into its destination
when assigned (:mod:`neuronsim.machine.nki.tracer`).  Engines follow the ISA docstrings; ``engine=``
picks among the engines an op runs on.
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod
from typing import Any

import numpy as np

from neuronsim.machine.nki import language, ops
from neuronsim.machine.nki import transpose_dma
from neuronsim.machine.nki.errors import fail
from neuronsim.machine.nki.arith import act_name, alu_name, index_values
from neuronsim.machine.nki.device_values import record_decision
from neuronsim.machine.ir.dtypes import itemsize
from neuronsim.machine.nki.dtypes import to_dtype
from neuronsim.machine.nki.indexing import Mask
from neuronsim.machine.nki.layout import Layout
from neuronsim.machine.nki import operand_rules
from neuronsim.machine.nki.emitters_select import (command, keep_register, register, register_tile, reset_register,
                                                   select_reduce)
from neuronsim.machine.nki.tiles import NkiTensor, is_tile
from neuronsim.machine.nki.tiles import result_tile as _result
from neuronsim.machine.nki.tracer import api, current
from neuronsim.machine.model.optable import MOVABLE_ALU_OPS

__all__ = ["ENGINES", "engine_of", "matmul", "double_row", "transpose", "activation", "tensor_tensor", "tensor_scalar",
           "scalar_tensor_tensor", "tensor_reduce", "tensor_copy", "memset", "iota", "reciprocal", "bn_stats",
           "bn_aggr", "tensor_tensor_scan", "tensor_scalar_reduce", "dma_copy", "dma_transpose", "reduce_axes",
           "where", "mask_tile"]

#: ``engine=`` values (``nisa.vector_engine``, ``nisa.engine.gpsimd`` ...) as sequencers.
ENGINES = {"pe": "pe", "tensor": "pe", "act": "act", "scalar": "act", "activation": "act", "dve": "dve",
           "vector": "dve", "pool": "pool", "gpsimd": "pool", "sp": "sp", "sync": "sp"}


def asked_engine(engine: Any) -> str | None:
    """The sequencer ``engine=`` names (None: left to the compiler)."""
    return ENGINES.get(str(engine)) if engine is not None else None


#: The sequencers as the pages name their engines
_NAMED = {"pe": "nisa.tensor_engine", "act": "nisa.scalar_engine", "dve": "nisa.vector_engine",
          "pool": "nisa.gpsimd_engine", "sp": "nisa.sync_engine"}


def engine_of(engine: Any, allowed: tuple[str, ...], default: str, call: str = "") -> str:
    """The sequencer ``engine=`` names, if the op runs there (else the op's default); with
    ``call``, an engine its page does not list is refused (it ran on the default: a probe)."""
    name = asked_engine(engine)
    if call and name is not None and name not in allowed:
        raise fail(f"{call}(engine={_NAMED[name]}): its page's engine= is " + " or ".join(_NAMED[a] for a in allowed)
                   + " (or none: the compiler's choice)")
    return name if name in allowed else default


def matmul(dst: Layout, stationary: Any, moving: Any, *, accumulate: bool = False, transpose: bool = False,
           perf_mode: Any = None, staged: bool = False) -> None:
    """``staged``: an operand in PSUM is copied to SBUF first (the legacy API's compiler, below)."""
    kb = current().kb
    on_pe = ops.staged_from_psum if staged else (lambda layout: layout)
    if transpose and operand_rules.transpose_mode(ops.lay(stationary), ops.lay(moving)):
        kb.transpose(dst.view(), on_pe(ops.lay(stationary)).view())  # moving: the identity
        return
    st, mv = on_pe(ops.lay(stationary)), on_pe(ops.lay(moving))
    operand_rules.matmul_dtypes("nc_matmul", st, mv)
    if not double_row(perf_mode):
        # its page: at most 512 on NeuronCore-v2 and -v3 (a float32 PSUM bank; a bf16 result of 1024
        # columns fitted a bank, and ran: a probe), from v4 the whole PSUM: 4096 for a float32 dst, 8192 bf16
        limit = 512 if current().nc_generation < 4 else 4096 * 4 // max(itemsize(dst.element_dtype), 2)
        if mv.view().free_count > limit:
            raise fail(f"nc_matmul: a moving tile of {mv.view().free_count} elements a partition; its page allows at "
                       f"most {limit} on NeuronCore-v{current().nc_generation} (512 on v2 and v3, a float32 PSUM bank; "
                       f"from v4 4096 for a float32 dst, 8192 for bfloat16): split the columns into several matmuls")
        kb.matmul(dst.view(), st.view(), mv.view(), accumulate=accumulate)
        return
    # FP8 double row (matmul_perf_mode): [K, 2, M] x [K, 2, N], each pair of rows contracted too
    if current().nc_generation < 3:
        raise fail("nc_matmul(perf_mode=double_row): NeuronCore-v2 (trn1) has no performance modes (the nc_matmul "
                   "page); trace for trn2 or trn3 (@nki.jit(platform_target=...))")
    d, s, m = dst.view(), st.view(), mv.view()
    if (s.num_partitions != m.num_partitions or len(st.shape) < 3 or st.shape[1] != 2 or mv.shape[1] != 2
            or (d.num_partitions, d.free_count) != (s.free_count // 2, m.free_count // 2)):
        raise fail(f"nc_matmul(perf_mode=double_row): stationary {st.shape} [K, 2, M], moving {mv.shape} [K, 2, N] "
                   f"and the result {dst.shape} [M, N] disagree")
    kb.instruction("matmul", "pe", [s, m, d] if accumulate else [s, m], [d],
                   attrs={"accumulate": accumulate, "double_row": True})


def double_row(perf_mode: Any) -> bool:
    """``perf_mode`` asks for the FP8 double-row mode (``matmul_perf_mode.double_row``, the
    SDK tests' ``"double_row_gen3"``)."""
    return str(getattr(perf_mode, "value", perf_mode) or "").startswith("double_row")


matmul.accumulates = True  # type: ignore[attr-defined]


def transpose(dst: Layout, data: Any, engine: Any = None) -> None:
    operand_rules.on_chip("nisa.nc_transpose", data=data, dst=dst)
    eng = engine_of(engine, ("pe", "dve"), "pe" if dst.tensor.memory.name == "PSUM" else "dve", "nisa.nc_transpose")
    source = ops.lay(data).view()
    if asked_engine(engine) == "dve" and not operand_rules.vector_transposable(source):  # (a 64 x 64 one ran: a probe)
        raise fail(f"nc_transpose of a {source.shape} tile on the Vector Engine: its page says the Vector Engine "
                   f"transposes (32, 32) or smaller (the Tensor Engine (128, 128), into PSUM)")
    current().kb.transpose(dst.view(), source, engine=eng)


def activation(dst: Layout, op: Any, data: Any, *, bias: Any = None, scale: Any = 1.0, reduce_op: Any = None,
               reduce_res: Any = None, reduce_cmd: Any = None) -> None:
    """``nisa.activation``; its reduce registers (``reduce_cmd``) kept as the DVE's are
    (:mod:`~neuronsim.machine.nki.emitters_select`): where their last value was written, a hidden
    ``[P, 1]`` fp32 tile when the kernel keeps it in the registers only.  ``reduce`` adds this
    instruction's row sums to it (a DVE add), ``reset`` zeroes it, ``idle`` leaves it alone."""
    operand_rules.on_chip("nisa.activation", data=data, bias=bias, scale=scale)
    _vector_dtype("bias", bias, ("float32", "float16", "bfloat16"))
    _vector_dtype("scale", scale, ("float32",))
    cmd = command(reduce_cmd, "reset_reduce")
    reducer = alu_name(reduce_op) if reduce_op is not None else None
    # the activation_reduce page: "On NeuronCore-v2, the reduce_op can only be an addition"
    # activate2's page adds "nl.abs_max, nl.abs_min" (NeuronCore-v4's magnitude comparisons)
    allowed = ("add",) if current().nc_generation < 3 else ("add", "max", "min") + (
        ("abs_max", "abs_min") if current().nc_generation >= 4 else ())
    # (with idle / reset the reducer folds nothing: a legacy call naming reduce_op=nl.max with no
    # command, idle by its page, runs on v2)
    if reducer is not None and reducer not in allowed and cmd not in ("idle", "reset") and (
            reduce_res is not None or cmd != "reset_reduce"):
        raise current().refuse(f"activation reduce_op={reducer} on NeuronCore-v{current().nc_generation}",
                               "ACT's reduce registers add" + (" (max and min from NeuronCore-v3)"
                                                               if current().nc_generation < 3 else ", max or min"))
    if cmd not in ("reset_reduce", "reduce", "reset", "idle"):
        raise current().refuse(f"nisa.activation(reduce_cmd={cmd})", "reset_reduce, reduce, reset or idle")
    func = act_name(op)
    folds = reducer or "add"
    if cmd == "reset_reduce" and (reducer is None or reduce_res is not None):  # the rows go to reduce_res, if any
        ops.activation(dst, func, data, scale=scale, bias=bias, reduce_res=reduce_res, reduce_op=folds)
        if reduce_res is not None:
            keep_register("act", ops.lay(reduce_res))
        return
    if cmd in ("idle", "reset"):
        ops.activation(dst, func, data, scale=scale, bias=bias)
        if cmd == "reset":
            reset_register("act", dst, 0.0)
        if reduce_res is not None:  # its page: "if reduce_res: reduce_res = reduce_regs" (a probe: left unwritten)
            ops.copy(ops.lay(reduce_res), register("act", "nisa.activation", cmd), "act")
        return
    _through_register("act", "nisa.activation", cmd, dst, reduce_res, folds,
                      lambda rows: ops.activation(dst, func, data, scale=scale, bias=bias, reduce_res=NkiTensor(rows),
                                                  reduce_op=folds))


def _vector_dtype(name: str, value: Any, allowed: tuple[str, ...]) -> None:
    """An activation's ``bias`` / ``scale`` tile in a dtype ACT reads it as: the errors page
    (``err_activation_bias_invalid_type``, ``err_activation_scale_invalid_type``) lets a bias be
    float32, float16 or bfloat16 and a scale float32 only."""
    if not is_tile(value):
        return
    dtype = ops.lay(value).element_dtype
    if dtype not in allowed:
        raise fail(f"nisa.activation: the {name} tile is {dtype}; a {name} vector must be "
                   f"{' or '.join(allowed)} (the NKI errors page, err_activation_{name}_invalid_type)")


def _through_register(engine: str, what: str, cmd: str, dst: Layout, reduce_res: Any, op: str,
                      reduce_into: Callable[[Layout], None]) -> None:
    """An instruction's row reduction (``reduce_into(rows)`` emits it) through ``engine``'s
    accumulator: ``reset_reduce`` starts it there (``reduce_res``, or a hidden tile), ``reduce``
    combines it with the accumulator's last value by ``op`` (a DVE op after the instruction)."""
    rows = register_tile(dst) if reduce_res is None or cmd == "reduce" else ops.lay(reduce_res)
    reduce_into(rows)
    if cmd == "reduce":
        total = ops.lay(reduce_res) if reduce_res is not None else register_tile(dst)
        ops.binary(total, NkiTensor(register(engine, what)), NkiTensor(rows), op, "dve")
        rows = total
    keep_register(engine, rows)


def tensor_tensor(dst: Layout, data1: Any, data2: Any, op: Any, engine: Any = None, legacy: bool = False) -> None:
    """``nisa.tensor_tensor``: both inputs on the same partitions, as many elements in each (the error page's
    ``err_num_partition_mismatch``: ``data1[128, 512], data2[1, 512]`` is an error; the
    ``nl.*`` operators broadcast a row, this instruction does not)."""
    operand_rules.on_chip("nisa.tensor_tensor", data1=data1, data2=data2, dst=dst)
    views = [ops.lay(d).view() for d in (data1, data2) if is_tile(d)]
    if len(views) == 2 and views[0].num_partitions != views[1].num_partitions:
        raise fail(f"nisa.tensor_tensor: data1 has {views[0].num_partitions} partitions and data2 "
                   f"{views[1].num_partitions} (the instruction reads both on the same partitions: broadcast the row "
                   f"first, e.g. nl.broadcast_to, or use nl.add and the other nl.* operators, which broadcast it)")
    # its page: as many elements per partition (a legacy broadcast: a warning, operand_rules.legacy_broadcast)
    if len(views) == 2 and views[0].free_count != views[1].free_count and not (
            legacy and operand_rules.legacy_broadcast(ops.lay(data1), ops.lay(data2))):
        raise fail(f"nisa.tensor_tensor: data1 has {views[0].free_count} elements per partition and data2 "
                   f"{views[1].free_count} (the instruction pairs them element by element: for a column of one "
                   f"value per partition use nisa.tensor_scalar, or nl.subtract and the other nl.* operators, "
                   f"which broadcast it)")
    operand_rules.integer_bits("nisa.tensor_tensor", (alu_name(op),), data1=data1, data2=data2, dst=dst)
    operand_rules.pool_off_psum(asked_engine(engine), "nisa.tensor_tensor", data1, data2, dst)
    chosen = engine_of(engine, ("dve", "pool"), "dve", "nisa.tensor_tensor")
    if asked_engine(engine) is None and len(views) == 2 and \
            ops.native_integers(alu_name(op), dst, ops.lay(data1), ops.lay(data2)):
        chosen = "pool"  # no engine named: two 32-bit integer tiles run on GpSimd's integers (both pages)
    ops.binary(dst, data1, data2, alu_name(op), chosen)


def _operand(value: Any) -> Any:
    return ops.lay(value).view() if is_tile(value) else ops.number(value)


def tensor_scalar(dst: Layout, data: Any, op0: Any, operand0: Any, reverse0: bool = False, op1: Any = None,
                  operand1: Any = None, reverse1: bool = False, engine: Any = None) -> None:
    current().note_write(dst)
    if (op1 is None) != (operand1 is None):  # (op1 alone was dropped without a word: a probe)
        raise fail("nisa.tensor_scalar: op1 and operand1 go together ((data op0 operand0) op1 operand1, its page; "
                   f"both None when unused): op1 {'given' if op1 is not None else 'None'}, operand1 "
                   f"{'given' if operand1 is not None else 'None'}")
    operand_rules.on_chip("nisa.tensor_scalar", data=data, operand0=operand0, operand1=operand1, dst=dst)
    names = [alu_name(op0)] + ([alu_name(op1)] if op1 is not None else [])
    operand_rules.integer_bits("nisa.tensor_scalar", tuple(names), data=data, operand0=operand0, operand1=operand1,
                               dst=dst)
    offer = ENGINES.get(str(engine)) is None and all(name in MOVABLE_ALU_OPS for name in names) \
        and ops.floats(dst, ops.lay(data))  # engine=unknown (the default): the compiler's choice
    with ops.engine_left_to_compiler(offer):
        current().kb.tensor_scalar(
            dst.view(), ops.lay(data).view(), op0=names[0], operand0=_operand(operand0),
            op1=names[1] if op1 is not None else None, operand1=_operand(operand1) if op1 is not None else None,
            reverse0=bool(reverse0) or None, reverse1=bool(reverse1) or None,
            engine=_scalar_engine(engine, names, ops.lay(data)))


def _scalar_engine(engine: Any, names: list[str], data: Layout) -> str:
    """The engine of a ``tensor_scalar``: the one asked for, else DVE; with ``rsqrt``, which the
    ISA's table of math operators runs on GpSimd or ScalarE only, GpSimd (ACT for PSUM data,
    which GpSimd cannot read)."""
    chosen = engine_of(engine, ("dve", "act", "pool"), "", "nisa.tensor_scalar")
    if "rsqrt" not in names:
        return chosen or "dve"
    if chosen == "dve":
        raise fail("tensor_scalar(op=nl.rsqrt) on the Vector Engine: the ISA's math operators table runs "
                   "rsqrt on GpSimd or the Scalar Engine (engine=nisa.gpsimd_engine / scalar_engine)")
    return chosen or ("act" if data.tensor.memory.name == "PSUM" else "pool")


#: ``nisa.activate2``'s tensor-scalar stages, the six its page lists
_ACTIVATE2_STAGES = {("multiply", "add"), ("multiply", "subtract"), ("multiply", "bypass"), ("add", "bypass"),
                     ("subtract", "bypass"), ("bypass", "bypass")}


def activate2(dst: Layout, op: Any, data: Any, imm0: Any, imm1: Any, op0: Any, op1: Any, *, relu_param: Any = 0.0,
              reverse0: bool = False, reverse1: bool = False, reduce_op: Any = None, reduce_res: Any = None,
              reduce_cmd: Any = None) -> None:
    """``nisa.activate2`` (NeuronCore-v4): ``op((data <op0> imm0) <op1> imm1)`` on ACT, with
    ``nisa.activation``'s reductions.  One instruction on the device; here the tensor-scalar
    stage is an ACT ``tensor_scalar`` into a staged fp32 tile, then the activation."""
    tracer = current()
    if tracer.nc_generation < 4:
        raise fail(f"nisa.activate2 runs on NeuronCore-v4 and newer (its page); this kernel is traced for "
                   f"NeuronCore-v{tracer.nc_generation} (trace it for trn3: @nki.jit(platform_target='trn3'))")
    names = (alu_name(op0), alu_name(op1))
    if names not in _ACTIVATE2_STAGES:
        raise fail(f"nisa.activate2(op0={names[0]}, op1={names[1]}): its page allows "
                   + ", ".join(f"({a}, {b})" for a, b in sorted(_ACTIVATE2_STAGES)))
    if not (isinstance(relu_param, (int, float)) and relu_param == 0):
        raise tracer.refuse("nisa.activate2 with relu_param", "the parameterized activation functions")
    staged = data
    if names[0] != "bypass":
        source = ops.lay(data)
        first = ops.float32_tile(source.shape)
        second = names[1] != "bypass"
        tensor_scalar(first, data, op0, imm0, reverse0, op1 if second else None, imm1 if second else None,
                      reverse1 if second else False, engine="act")
        staged = NkiTensor(first)
    activation(dst, op, staged, reduce_op=reduce_op, reduce_res=reduce_res, reduce_cmd=reduce_cmd)


def scalar_tensor_tensor(dst: Layout, data: Any, op0: Any, operand0: Any, op1: Any, operand1: Any,
                         reverse0: bool = False, reverse1: bool = False) -> None:
    """``(data <op0> operand0) <op1> operand1`` as two DVE ops writing ``dst``.  The first op
    writes a staged fp32 tile where ``dst`` is not float32 (the page: all math in float32, the
    float32 result cast to dst's dtype once; a bf16 or int dst would round the intermediate
    too) or where operand1 is read from dst's own tensor (an in-place accumulation, ``acc =
    data * s + acc``: written into dst, the first result would overwrite the operand before
    the second op reads it; the hardware reads both in one instruction)."""
    operand_rules.arithmetic_only("nisa.scalar_tensor_tensor", op0=alu_name(op0), op1=alu_name(op1))
    in_place = is_tile(operand1) and ops.lay(operand1).tensor.name == dst.tensor.name
    if in_place or dst.element_dtype != "float32":
        first_result = ops.float32_tile(dst.shape)
        tensor_scalar(first_result, data, op0, operand0, reverse0)
        staged = NkiTensor(first_result)
    else:
        tensor_scalar(dst, data, op0, operand0, reverse0)
        staged = NkiTensor(dst)
    first, second = (operand1, staged) if reverse1 else (staged, operand1)
    ops.binary(dst, first, second, alu_name(op1), "dve")


def reduce_axes(shape: tuple[int, ...], axis: Any) -> list[int]:
    return ops.free_axes(shape, axis, "tensor_reduce", "use a free axis")


def tensor_reduce(dst: Layout, op: Any, data: Any, axis: Any, negate: bool = False, keepdims: bool = False) -> None:
    operand_rules.on_chip("nisa.tensor_reduce", data=data, dst=dst)
    operand_rules.integer_bits("nisa.tensor_reduce", (alu_name(op),), data=data, dst=dst)
    src, reduced = ops.reduced_last(ops.lay(data), reduce_axes(ops.lay(data).shape, axis))
    current().note_write(dst)
    current().kb.tensor_reduce(dst.view(), src.view(), op=alu_name(op), axis=reduced, negate=bool(negate) or None)


def tensor_copy(dst: Layout, src: Any, engine: Any = None, dynamic: str | None = None) -> None:
    """``nisa.tensor_copy``; ``dynamic`` ``"src"`` / ``"dst"``: ``tensor_copy_dynamic_src`` / ``_dst``,
    the same copy with that side at an offset read at run time (``.ap(scalar_offset=)``, ``nl.ds(reg, n)``)."""
    call = f"nisa.tensor_copy_dynamic_{dynamic}" if dynamic else "nisa.tensor_copy"
    source = ops.lay(src)
    if not (source.on_chip and dst.on_chip):  # (an HBM source ran, as a DMA: a probe of kernel mistakes)
        raise fail(f"{call} copies between tiles in SBUF or PSUM (its page), not from or to "
                   f"{(source if not source.on_chip else dst).tensor.name} in HBM: that is a DMA's, nisa.dma_copy")
    operand_rules.pool_off_psum(asked_engine(engine), call, source, dst)
    ops.copy(dst, source, engine_of(engine, ("dve", "act", "pool"), "dve", call) if asked_engine(engine) else None,
             dynamic)


def memset(dst: Layout, value: Any, engine: Any = None) -> None:
    operand_rules.pool_off_psum(asked_engine(engine), "nisa.memset", dst)
    ops.memset(dst, value, engine_of(engine, ("dve", "pool"), "dve", "nisa.memset"))


iota = ops.iota  # nisa.iota / nl.iota of an index expression (ops.py: arithmetic on nl.arange needs it too)


def reciprocal(dst: Layout, data: Any) -> None:
    """``1 / data`` on DVE (the ISA's reciprocal is a vector-engine op)."""
    tensor_scalar(dst, data, "divide", 1.0, reverse0=True)


def bn_stats(dst: Layout, data: Any) -> None:
    operand_rules.on_chip("nisa.bn_stats", data=data, dst=dst)
    current().note_write(dst)
    current().kb.bn_stats(dst.view(), ops.lay(data).view())


def bn_aggr(dst: Layout, data: Any) -> None:
    current().note_write(dst)
    current().kb.bn_aggr(dst.view(), ops.lay(data).view())


def tensor_tensor_scan(dst: Layout, data0: Any, data1: Any, initial: Any, op0: Any, op1: Any,
                       reverse0: bool = False, reverse1: bool = False) -> None:
    current().note_write(dst)
    current().kb.tensor_tensor_scan(dst.view(), ops.lay(data0).view(), ops.lay(data1).view(),
                                    initial=_operand(initial), op0=alu_name(op0), op1=alu_name(op1),
                                    reverse0=bool(reverse0) or None, reverse1=bool(reverse1) or None)


#: The identity of a reduction: what ``reduce_cmd=reset`` leaves in an accumulator.
_IDENTITY = {"add": 0.0, "max": float("-inf"), "min": float("inf"), "multiply": 1.0}


def tensor_scalar_reduce(dst: Layout, data: Any, op0: Any, operand0: Any, reduce_op: Any, reduce_res: Any,
                         reverse0: bool = False, reduce_cmd: Any = None, reduce_init: Any = None,
                         reduce_res_negate: bool = False) -> None:
    """``tensor_scalar`` into ``dst``, then its per-partition ``reduce_op`` into ``reduce_res``,
    through the Vector Engine's accumulator as ``reduce_cmd`` says (``reduce``: on top of its
    last value, a DVE op after the reduction; ``reset``: its identity; ``idle``: untouched;
    ``load_reduce``: on top of ``reduce_init``; the accumulator kept as
    :mod:`~neuronsim.machine.nki.emitters_select` keeps it).  ``reduce_res_negate`` writes
    the result negated into ``reduce_res``, the accumulator keeping it as it is (the page)."""
    cmd = command(reduce_cmd, "reset_reduce")
    operand_rules.arithmetic_only("nisa.tensor_scalar_reduce", op0=alu_name(op0))
    op = alu_name(reduce_op)
    if op not in ("add", "subtract", "multiply", "max", "min"):  # (a bitvec one ran: a sweep)
        raise fail(f"nisa.tensor_scalar_reduce: reduce_op {op} is none of its page's nl.add, "
                   f"nl.subtract, nl.multiply, nl.max or nl.min")
    operand_rules.one_per_partition("nisa.tensor_scalar_reduce", "reduce_res", reduce_res, dst.view().num_partitions)
    if cmd not in ("reset_reduce", "reduce", "reset", "idle", "load_reduce"):
        raise current().refuse(f"nisa.tensor_scalar_reduce(reduce_cmd={cmd})",
                               "reset_reduce, reduce, load_reduce, reset or idle")
    if (reduce_init is not None) != (cmd == "load_reduce"):
        raise fail("nisa.tensor_scalar_reduce: reduce_init is given with reduce_cmd=load_reduce, and only then "
                   "(the page)")
    values = dst  # what is reduced: the float32 result, as activation_reduce / range_select reduce
    if dst.element_dtype != "float32":  # a bf16 dst rounds what it stores, not what the accumulator adds
        values = ops.float32_tile(dst.shape)
        tensor_scalar(values, data, op0, operand0, reverse0)
        ops.copy(dst, values, "dve")
    else:
        tensor_scalar(dst, data, op0, operand0, reverse0)
    if cmd == "load_reduce":  # the accumulator loads reduce_init, then this instruction reduces on top
        if is_tile(reduce_init):
            keep_register("dve", ops.lay(reduce_init))
        else:
            reset_register("dve", dst, float(reduce_init))
        cmd = "reduce"
    if reduce_res_negate and reduce_res is not None and cmd in ("reset_reduce", "reduce"):
        _through_register_reduce(values, op, cmd, None)
        out = ops.lay(reduce_res)
        current().note_write(out)
        ops.binary(out, NkiTensor(register("dve", "nisa.tensor_scalar_reduce")), -1.0, "multiply", "dve")
        return
    if cmd in ("idle", "reset"):
        if cmd == "reset":
            reset_register("dve", dst, _IDENTITY.get(op, 0.0))
        return

    _through_register_reduce(values, op, cmd, reduce_res)


def _through_register_reduce(dst: Layout, op: str, cmd: str, reduce_res: Any) -> None:
    """The row ``op`` of ``dst`` through the Vector Engine's accumulator, into ``reduce_res``."""
    def reduce_into(rows: Layout) -> None:
        current().note_write(rows)
        current().kb.tensor_reduce(rows.view(), dst.view(), op=op)

    _through_register("dve", "nisa.tensor_scalar_reduce", cmd, dst, reduce_res, op, reduce_into)


def dma_copy(dst: Layout, src: Any, *, dge_mode: Any = None, engine: Any = None, dst_rmw_op: Any = None) -> None:
    rmw = alu_name(dst_rmw_op) if dst_rmw_op is not None else None
    if rmw not in (None, "add"):  # the dma_copy page: "currently, only nl.add is supported"
        raise current().refuse(f"nisa.dma_copy(dst_rmw_op={rmw})", "the ISA adds only (nl.add)")
    oob = current().call_options.get("oob_mode")
    if rmw is not None and getattr(oob, "name", oob) == "skip":  # the page allows error only with it
        raise fail("nisa.dma_copy: dst_rmw_op allows only oob_mode=oob_mode.error")
    source = ops.lay(src)
    mode = getattr(dge_mode, "name", dge_mode)
    if mode in ("hwdge", "none") and (source.indirect is not None or dst.indirect is not None):
        raise fail(f"nisa.dma_copy(dge_mode={mode}) of an indirect access (vector_offset, a tile of indices): the "
                   f"DGE page gives it swdge or unknown only (hwdge \"does not support indirect (gather/scatter) "
                   f"operations\", none cannot handle runtime-computed indices)")
    if getattr(oob, "name", oob) == "skip" and (_wholly_outside(dst) or _wholly_outside(source)):
        # a scalar_offset that lands past its HBM tensor on the traced inputs (nki-library's
        # indexed_flatten marks rows a core does not own with an invalid offset): the DMA skips it
        record_decision("nisa.dma_copy(oob_mode=skip) skipped: its access lies outside its tensor", True,
                        where=current().site[0] if current().site else None)
        return
    ops.dma(dst, source, engine=engine_of(engine, ("sp", "act", "pool"), "sp"),
            dge=str(dge_mode) if dge_mode is not None else None, rmw=rmw)


def _wholly_outside(layout: Layout) -> bool:
    """True for an HBM access at a fixed offset none of whose elements is inside its tensor."""
    if layout.on_chip or layout.indirect is not None or layout.offset.terms:
        return False
    low = high = int(layout.offset.const)
    for _kind, stride, count in layout.axes:
        low, high = low + min(0, stride * (count - 1)), high + max(0, stride * (count - 1))
    return high < 0 or low >= prod(layout.tensor.shape)


def dma_compute(dst: Layout, srcs: Any, reduce_op: Any, scales: Any = None) -> None:
    """``dst = srcs[0] * scales[0] + srcs[1] * scales[1] + ...`` by the DMA engines (the
    dma_compute page: only ``nl.add``, every scale 1.0).  A source that is ``dst`` itself is the
    read of a read-modify-write; every other source is added into ``dst`` by a ``dma_copy`` with
    ``dst_rmw_op=add`` (the gather RMW of an indirect source included), the first one copied
    when no source is ``dst``."""
    op = alu_name(reduce_op) if reduce_op is not None else None
    if op != "add":  # the page: "currently, only nl.add is supported"
        raise current().refuse(f"nisa.dma_compute(reduce_op={op})", "the ISA adds only (nl.add)")
    given = list(srcs) if isinstance(srcs, (list, tuple)) else [srcs]
    layouts = [ops.lay(s) for s in given]
    if not layouts:
        raise fail("nisa.dma_compute: srcs names no source")
    if scales is not None and any(float(ops.number(s)) != 1.0 for s in scales):
        raise fail("nisa.dma_compute: every scale must be 1.0 (the dma_compute page)")
    mine = dst.storage_view()
    # dst itself: its bytes, through dst's own indices when it is indirect (the page's scatter
    # RMW, "dst(HBM)[indices] = dst(HBM)[indices] + src(SB)")
    is_dst = [s.indirect == dst.indirect and s.tensor.name == dst.tensor.name and s.storage_view() == mine
              for s in layouts]
    others = [s for s, same in zip(given, is_dst) if not same]
    if not any(is_dst) and len(others) == 2 and dst.indirect is None and all(s.indirect is None for s in layouts):
        # one transfer adds both in float32 and rounds once, as the page says (a copy of the first
        # into a bf16 dst rounded it before the add: 257 + -256 came out 0)
        ops.dma(dst, ops.lay(others[1]), rmw="add", onto=ops.lay(others[0]))
        return
    if not any(is_dst):
        dma_copy(dst, others.pop(0))
    else:  # dst named again beyond the first: each adds dst once more
        others += [given[is_dst.index(True)]] * (sum(is_dst) - 1)
    for source in others:
        dma_copy(dst, source, dst_rmw_op="add")


def dma_transpose(dst: Layout, src: Any, axes: Any = None, **_kw: Any) -> None:
    """Every form of ``nisa.dma_transpose`` (machine/nki/transpose_dma.py)."""
    transpose_dma.dma_transpose(dst, ops.lay(src), axes)  # a reinterpreting view: its elements as read


@api("nl.atomic_rmw")
def atomic_rmw(dst: Any, value: Any, op: Any, *, mask: Any = None, **_kw: Any) -> None:
    """``nl.atomic_rmw``: ``dst = op(dst, value)`` by DMA, each row read, combined and written
    before the next (rows repeated among the indices all add up, as the page's example does):
    a ``dma_copy`` with ``dst_rmw_op``, which the ISA allows for addition only."""
    if not is_tile(value):
        raise fail(f"nl.atomic_rmw: value is a tile (on chip), not {value!r}")
    if alu_name(op) != "add":
        raise current().refuse(f"nl.atomic_rmw(op={alu_name(op)})", "the ISA's DMA read-modify-write adds only")
    current().emit(lambda: dma_copy(ops.lay(dst), value, dst_rmw_op="add"), mask=mask)


def free_size(shape: tuple[int, ...]) -> int:
    return prod(shape[1:])


def affine_select(dst: Layout, on_true: Any, value: Any, *, offset: Any, channel_multiplier: Any,
                  pattern: list[list[int]], cmp: str) -> None:
    """``dst = on_true where cmp(offset + p * channel_multiplier + pattern . i, 0) else value`` (POOL)."""
    src = ops.staged_from_psum(ops.lay(on_true))
    current().note_write(dst)
    attrs = {"offset": ops.number(offset), "channel_multiplier": ops.number(channel_multiplier),
             "pattern": [[int(s), int(n)] for s, n in pattern], "cmp": cmp, "value": ops.number(value)}
    current().kb.instruction("affine_select", "pool", [src.view()], [dst.view()], attrs=attrs)


def affine_select_pred(dst: Layout, pred: Any, on_true: Any, value: Any) -> None:
    """The legacy form: ``pred`` is one comparison ``expr <cmp> number`` of index vectors
    over the tile's axes (partition axis first)."""
    if not isinstance(pred, Mask) or len(pred.preds) != 1:
        raise fail("nisa.affine_select takes one affine comparison of nl.arange / nl.mgrid indices")
    (expr, cmp, bound), = pred.preds
    expr = ops.from_mask_corner(expr)  # under mask=, the destination box's corner is where it starts
    if not isinstance(expr.const, int):
        expr.const._refuse("an affine_select predicate that depends on a loop index")
    channel_multiplier, free = ops.split_terms(expr)
    pattern = [[coeff, n] for coeff, n in free]
    affine_select(dst, on_true, value, offset=expr.const - bound, channel_multiplier=channel_multiplier,
                  pattern=pattern, cmp=cmp)


def iota_pattern(dst: Layout, pattern: Any, offset: Any, channel_multiplier: Any = 0) -> None:
    """Current-API ``nisa.iota(dst, pattern, offset, channel_multiplier)``."""
    pairs = [(int(s), int(n)) for s, n in (pattern or [[1, 1]])]
    one_run = all(outer == inner * count for (outer, _n), (inner, count) in zip(pairs, pairs[1:]))
    current().note_write(dst)
    if one_run:
        current().kb.iota(dst.view(), base=ops.number(offset), step=pairs[-1][0],
                          partition_step=ops.number(channel_multiplier))
        return
    attrs = {"base": ops.number(offset), "partition_step": ops.number(channel_multiplier),
             "pattern": [[s, n] for s, n in pairs]}  # a multi-dimensional pattern (steps of 0 repeat)
    current().kb.instruction("iota", "pool", [], [dst.view()], attrs=attrs)


@api("nl.where")
def where(condition: NkiTensor, x: Any, y: Any, *, dtype: Any = None, mask: Any = None, **_kw: Any) -> NkiTensor:
    """``x`` where ``condition`` is non-zero, else ``y`` (each a tile or a number): one DVE
    select (``select_reduce``, nothing reduced).  Operands of other shapes broadcast to the
    result's as numpy's do (a ``[P, 1]`` condition or value along the free axis; a ``[1, F]``
    one over the partitions); two numbers select between a tile of the first and the second.
    A select, not ``c * x + (1 - c) * y``: an infinite value not taken (``-inf`` for masked
    scores) stays out of the result, and a condition of 3 is true.  An index vector as ``x`` or
    ``y`` is its values (:func:`~neuronsim.machine.nki.arith.index_values`)."""
    x, y = index_values(x), index_values(y)
    values = [v for v in (x, y) if is_tile(v)]
    if isinstance(condition, Mask):  # a comparison of indices (rows past a bound): a 0 / 1 tile first
        if not values:
            raise fail("nl.where of a comparison of indices between two numbers: give one of them as a tile")
        condition = mask_tile(condition, values[0].shape)
    if not is_tile(condition):
        raise fail(f"nl.where: the condition is a tile or a comparison of indices, not {type(condition).__name__}")
    out = ops.result_dtype(dtype, *values) if values else to_dtype(dtype) if dtype is not None else "float32"
    try:
        shape = tuple(int(n) for n in np.broadcast_shapes(*(t.shape for t in (condition, *values))))
    except ValueError:
        raise fail("nl.where: the condition " + " and ".join(str(tuple(t.shape)) for t in (condition, *values))
                   + " do not broadcast to one shape") from None

    def spread(v: Any) -> Any:
        return v.broadcast_to(shape) if is_tile(v) and tuple(v.shape) != shape else v

    if not values:  # two numbers: a tile of the first to select from
        x = language.full(shape, ops.number(x), dtype=out, buffer=language.sbuf)
    cond, x, y = spread(condition), spread(x), spread(y)
    on_true, reverse = (x, False) if is_tile(x) else (y, True)
    on_false = y if on_true is x else x
    return _result(shape, out, "sbuf",
                   lambda dst: select_reduce(dst, cond, on_true, on_false, reverse_pred=reverse),
                   mask, tuple(v for v in (condition, x, y) if is_tile(v) and tuple(v.shape) == shape))


def mask_tile(mask: Mask, shape: tuple[int, ...]) -> NkiTensor:
    """A comparison of indices as a 0 / 1 fp32 tile of ``shape``: ones, then zero where each
    comparison fails (one ``affine_select`` on POOL per comparison, in place), each iterator
    standing for the tile's axis at its grid position, as ``nisa.affine_select`` reads it."""
    if mask.alternatives:
        raise current().refuse("a comparison of indices joined with | used as a tile",
                               "comparisons joined with &")
    tile = language.full(shape, 1.0, dtype="float32", buffer=language.sbuf)
    for pred in mask.preds:
        current().emit(lambda pred=pred: affine_select_pred(tile.layout, Mask((pred,)), tile, 0.0))
    return tile
