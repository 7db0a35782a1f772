"""``nki.isa`` (current API): every op writes its ``dst`` argument at once.

Also the enums both generations share (``nisa.engine``, ``nisa.dge_mode``, ``nisa.oob_mode``,
``nisa.nc_version``, ``nisa.reduce_cmd``) and the ops neuronsim refuses, with the reason
(:data:`REFUSED`, raised as ``"nisa.X is not supported (...)"`` at the kernel line).
"""

from __future__ import annotations

import enum
from types import SimpleNamespace
from typing import Any

import numpy as np

from neuronsim.machine.ir.program import MemoryKind
from neuronsim.machine.nki import emitters as em, emitters_select as es
from neuronsim.machine.nki import indirect, isa_select, mx, operand_rules, ops, scalars, schedule, transpose_dma
from neuronsim.machine.nki.arith import alu_name, alu_names
from neuronsim.machine.nki.cores import meet
from neuronsim.machine.nki.errors import fail
from neuronsim.machine.nki.groups import footprint_of
from neuronsim.machine.nki.handles import emit_call, written
from neuronsim.machine.nki.tracer import api, current

__all__ = ["current_names", "lnc_names", "REFUSED", "LEGACY_REFUSED", "engine", "dge_mode", "oob_mode", "nc_version",
           "reduce_cmd", "get_nc_version", "enum_names"]


class engine:  # noqa: N801  (NKI's names)
    unknown = None
    dma = "sp"  # a DMA queue's trigger: SP, as for nl.load (docs/nki.md)
    tensor = "pe"
    vector = "dve"
    scalar = "act"
    activation = "act"
    gpsimd = "pool"
    sync = "sp"


class dge_mode:  # noqa: N801
    unknown = None
    none = "none"
    swdge = "swdge"
    hwdge = "hwdge"


class oob_mode:  # noqa: N801
    error = "error"
    skip = "skip"


class reduce_cmd:  # noqa: N801
    idle = "idle"
    reset = "reset"
    reduce = "reduce"
    reset_reduce = "reset_reduce"
    load_reduce = "load_reduce"


class matmul_perf_mode:  # noqa: N801  (a PE throughput option: the timing model has one PE rate)
    none = None
    double_row = "double_row"


class dma_engine:  # noqa: N801  (which DMA engines serve a sendrecv: two-core kernels, refused there)
    dma = "dma"
    gpsimd_dma = "gpsimd_dma"


class NkiValidationError(Exception):
    """What NKI raises for an instruction that breaks a hardware rule (kernels catch it)."""


class nc_version(enum.IntEnum):  # noqa: N801
    gen2 = 2
    gen3 = 3
    gen4 = 4


def get_nc_version() -> nc_version:
    """NeuronCore-v2 for a trn1 machine, v3 for trn2, v4 for trn3."""
    return nc_version(current().nc_generation)


REFUSED = {
    "all_reduce": "collectives", "all_gather": "collectives",
    "reduce_scatter": "collectives", "collective_permute": "collectives",
    "topk": "top-k search", "get_nc_sub_version": "NeuronCore sub-versions",
}

#: The legacy ``neuronxcc.nki.isa`` refuses the MX ops too: only the current API's form
#: (``dst`` first) is modelled (machine/nki/mx.py).
_TWO_CORE = "two-core kernels: write them with nki.isa"
LEGACY_REFUSED = {**REFUSED, "dma_compute": "DMA compute",
                  "exponential": "NeuronCore-v4's exponential in the legacy API: write it with nki.isa",
                  "sendrecv": _TWO_CORE, "core_barrier": _TWO_CORE,
                  "nc_matmul_mx": "MX ops in the legacy API: write them with nki.isa",
                  "activate2": "NeuronCore-v4's two-stage activation in the legacy API: write it with nki.isa",
                  "quantize_mx": "MX ops in the legacy API: write them with nki.isa",
                  **dict.fromkeys(("tensor_copy_dynamic_src", "tensor_copy_dynamic_dst"), "the legacy form's tiles "
                                  "of offsets: write it with nki.isa, its offset an .ap(scalar_offset=) register")}

Handle = schedule.NkiInstruction  # what every nisa call returns


_dst = written  # machine/nki/handles.py


_emit = emit_call  # one emitter for both ISA modules (machine/nki/handles.py)


@api("nisa.nc_matmul")
def nc_matmul(dst, stationary, moving, is_stationary_onezero=False, is_moving_onezero=False, is_transpose=False,
              accumulate=None, tile_position=(), tile_size=(), perf_mode=None, name=None, **_kw) -> Handle:
    tracer = current()
    out = ops.lay(dst)
    allowed = ("float32",) if tracer.nc_generation < 4 else ("float32", "bfloat16")
    if not is_transpose and out.on_chip and out.element_dtype not in allowed:  # (bf16 and int32 ran: a probe)
        raise fail(f"nisa.nc_matmul: dst {out.tensor.name} is {out.element_dtype}; its page: \"The dst tile must be a "
                   f"float32 tile in NeuronCore-v2 and NeuronCore-v3. Starting NeuronCore-v4, dst can either be a "
                   f"float32 or bfloat16 tile\" (this kernel: NeuronCore-v{tracer.nc_generation})")
    inferred = accumulate is None
    if accumulate and not is_transpose and tracer.nc_generation < 4:
        _accumulating_onto_a_value(tracer, out)
    if inferred:  # add to an open accumulation group (written, not read since), else start one
        tracer.flush()
        accumulate = tracer.accumulates_into(ops.lay(dst))
    extras = {"x-nki-accumulate": True} if accumulate else None
    if inferred and not accumulate and tracer.kept_loops():  # a compiled loop's body: verify/nki/control_findings.py
        extras = {"x-nki-accumulate-inferred": False}
    return _emit(lambda: em.matmul(_dst(dst), stationary, moving, accumulate=bool(accumulate),
                                   transpose=bool(is_transpose), perf_mode=perf_mode), name, extras)


def _accumulating_onto_a_value(tracer: Any, out: Any) -> None:
    """A warning at ``nc_matmul(accumulate=True)`` onto PSUM a memset or a copy wrote last, on
    NeuronCore-v2 / v3: its page, "matmul accumulating into a PSUM location that was
    value-initialized by a non-matmul instruction (e.g., memset, tensor_copy) is not supported
    and is undefined behavior on hardware" (it ran and added, silently: a probe).  A warning:
    the simulator adds, as v4 does; the legacy ``nl.zeros(psum)`` then ``+=`` idiom, which the
    compiler turns into a first matmul that overwrites, is not this call."""
    tracer.flush()
    if out.on_chip and out.tensor.memory == MemoryKind.PSUM and tracer.psum_open.value_initialised(*footprint_of(out)):
        tracer.warn("generation",
                    f"nisa.nc_matmul(accumulate=True) onto {out.tensor.name}, which a non-matmul instruction wrote "
                    f"last: its page, \"On NeuronCore-v2 and NeuronCore-v3, matmul accumulating into a PSUM location "
                    f"that was value-initialized by a non-matmul instruction (e.g., memset, tensor_copy) is not "
                    f"supported and is undefined behavior on hardware\" (start the group with accumulate=False)")


@api("nisa.nc_transpose")
def nc_transpose(dst, data, engine=None, name=None, **_kw) -> Handle:
    if em.asked_engine(engine) is None:  # the compiler's choice of engine, into the kernel's own dst
        operand_rules.transposable_into(_dst(dst), ops.lay(data))
    return _emit(lambda: em.transpose(_dst(dst), data, engine), name)


@api("nisa.activation")
def activation(dst, op, data, bias=None, scale=1.0, reduce_op=None, reduce_res=None, reduce_cmd="idle",
               name=None, **_kw) -> Handle:
    operand_rules.vector_bias("nisa.activation", bias)
    return _emit(lambda: em.activation(_counted("nisa.activation", dst, data=data), op, data, bias=bias, scale=scale,
                                       reduce_op=reduce_op, reduce_res=reduce_res, reduce_cmd=reduce_cmd), name)


def _counted(call: str, dst: Any, **sources: Any) -> Any:
    """``dst``'s layout, refused unless each source tile occupies as many partitions and elements
    per partition (the activation page: "The number of elements per partition of data and dst
    tiles must be the same"; tensor_copy's: "the same partition axis size and also the same
    number of elements per partition"; a [P, 1] column into [P, 64] ran as a broadcast: a probe)."""
    out = _dst(dst)
    if out.on_chip and all(not em.is_tile(v) or ops.lay(v).on_chip for v in sources.values()):  # (HBM: on_chip's)
        operand_rules.same_counts(call, out, **sources)
    return out


@api("nisa.activate2")
def activate2(dst, op, data, imm0, imm1, op0, op1, relu_param=0.0, reverse0=False, reverse1=False, reduce_op=None,
              reduce_res=None, reduce_cmd="idle", name=None, **_kw) -> Handle:
    return _emit(lambda: em.activate2(_dst(dst), op, data, imm0, imm1, op0, op1, relu_param=relu_param,
                                      reverse0=reverse0, reverse1=reverse1, reduce_op=reduce_op,
                                      reduce_res=reduce_res, reduce_cmd=reduce_cmd), name)


@api("nisa.activation_reduce")
def activation_reduce(dst, op, data, reduce_op, reduce_res, bias=None, scale=1.0, name=None, **_kw) -> Handle:
    return _emit(lambda: em.activation(_counted("nisa.activation_reduce", dst, data=data), op, data, bias=bias,
                                       scale=scale, reduce_op=reduce_op, reduce_res=reduce_res), name)


@api("nisa.tensor_tensor")
def tensor_tensor(dst, data1, data2, op, engine=None, name=None, **_kw) -> Handle:
    operand_rules.power_off_psum(alu_names(op), data1=data1, data2=data2, dst=dst)
    def emit() -> None:
        out = _counted("nisa.tensor_tensor", dst, data1=data1)  # (both inputs [P, 1] into [P, 64] ran: a probe)
        em.tensor_tensor(out, data1, data2, op, engine)
    return _emit(emit, name)


_INT32 = ("int32", "uint32")


@api("nisa.tensor_scalar")
def tensor_scalar(dst, data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False,
                  engine=None, name=None, **_kw) -> Handle:
    op0 = "bypass" if op0 is None else op0  # (nki-library's optional clamps pass None: no operator, as op1's)
    names = alu_names(op0, op1)
    operand_rules.tensor_scalar_operators("nisa.tensor_scalar", names, em.asked_engine(engine), operand0)
    operand_rules.engine_on_generation("nisa.tensor_scalar", em.asked_engine(engine), names or ())
    if names and not set(names) & operand_rules.BITVEC_NAMES and not _address_arithmetic(dst, data):
        operand_rules.dtype_among("nisa.tensor_scalar", ("float32",), "arithmetic operators impose no restriction on "
                                  "the data types of input tensor data and output tensor dst, but the operand0 and "
                                  "operand1 (if used) must be float32", operand0=operand0, operand1=operand1)
    return _emit(lambda: em.tensor_scalar(_dst(dst), data, op0, operand0, reverse0, op1, operand1, reverse1,
                                          engine), name)


def _address_arithmetic(dst: Any, data: Any) -> bool:
    """Whether ``data`` and ``dst`` are both int32 / uint32 tiles: the page's "int32/uint32
    address-arithmetic pattern (tensor_scalar_addr)", which it names without saying its operands'
    dtypes (their float32 rule is left unenforced there)."""
    return all(hasattr(t, "layout") and t.layout.element_dtype in _INT32 for t in (dst, data))


@api("nisa.scalar_tensor_tensor")
def scalar_tensor_tensor(dst, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, name=None,
                         **_kw) -> Handle:
    if not em.is_tile(operand1):  # (a number ran: a probe; its page: "an SBUF or PSUM tile" of data's shape)
        raise fail(f"nisa.scalar_tensor_tensor: operand1 is {operand1!r}, and its page takes a tile of data's shape "
                   "(for a number, nisa.tensor_scalar with op1 and operand1)")
    return _emit(lambda: em.scalar_tensor_tensor(_dst(dst), data, op0, operand0, op1, operand1, reverse0,
                                                 reverse1), name)


@api("nisa.tensor_reduce")
def tensor_reduce(dst, op, data, axis, negate=False, keepdims=False, name=None, **_kw) -> Handle:
    def emit() -> None:
        shape = ops.lay(data).shape
        axes = sorted(em.reduce_axes(shape, axis))
        if not axes:  # (axis=() was an IndexError here, an internal error: probe_bf)
            raise fail(f"nisa.tensor_reduce over axis {axis!r}: no axis to reduce (give one free axis or more)")
        # (axis=1 of a (P, 8, 8) tile ran: a probe; axes of one element after the last are the same pattern)
        if axes != list(range(axes[0], axes[-1] + 1)) or any(n != 1 for n in shape[axes[-1] + 1:]):
            raise fail(f"nisa.tensor_reduce over axis {axis!r} of a {tuple(shape)} tile: its page: \"The reduction "
                       "axes must be the last contiguous free dimension(s) of the tile, ending at the final "
                       "dimension\" (move the axis last with a view, or reduce with nl.sum and the other nl.* "
                       "reductions)")
        em.tensor_reduce(_dst(dst), op, data, axis, negate, keepdims)
    return _emit(emit, name)


@api("nisa.tensor_copy")
def tensor_copy(dst, src, engine=None, name=None, **_kw) -> Handle:
    operand_rules.engine_on_generation("nisa.tensor_copy", em.asked_engine(engine))
    return _emit(lambda: em.tensor_copy(_counted("nisa.tensor_copy", dst, src=src), src, engine), name)


def _dynamic_copy(side: str):
    @api(f"nisa.tensor_copy_dynamic_{side}")
    def copy(dst, src, engine=None, name=None, **_kw) -> Handle:
        call = f"nisa.tensor_copy_dynamic_{side}"
        operand_rules.engine_on_generation(call, em.asked_engine(engine))
        return _emit(lambda: em.tensor_copy(_counted(call, dst, src=src), src, engine, side), name)

    copy.__name__ = f"tensor_copy_dynamic_{side}"
    return copy


tensor_copy_dynamic_src, tensor_copy_dynamic_dst = _dynamic_copy("src"), _dynamic_copy("dst")


@api("nisa.memset")
def memset(dst, value, engine=None, name=None, **_kw) -> Handle:
    operand_rules.packed_zero(dst, value)
    return _emit(lambda: em.memset(_dst(dst), value, engine), name)


@api("nisa.iota")
def iota(dst, pattern=None, offset=0, channel_multiplier=0, name=None, **_kw) -> Handle:
    operand_rules.on_chip("nisa.iota", dst=dst)
    if pattern is not None and not isinstance(pattern, (list, tuple)):  # an index expression
        return _emit(lambda: em.iota(_dst(dst), pattern), name)
    if pattern is not None:
        pattern = operand_rules.pattern_pairs(pattern, _dst(dst), "nisa.iota")
    return _emit(lambda: em.iota_pattern(_dst(dst), pattern, offset, channel_multiplier), name)


@api("nisa.affine_select")
def affine_select(dst, pattern, channel_multiplier, on_true_tile, on_false_value, cmp_op=None, offset=0, name=None,
                  **_kw) -> Handle:
    cmp = alu_name(cmp_op) if cmp_op is not None else "equal"
    operand_rules.on_chip("nisa.affine_select", dst=dst, on_true_tile=on_true_tile)
    pairs = operand_rules.pattern_pairs(pattern, _dst(dst), "nisa.affine_select")
    operand_rules.same_shape(on_true_tile, _dst(dst), "nisa.affine_select", "on_true_tile")
    return _emit(lambda: em.affine_select(_dst(dst), on_true_tile, on_false_value, offset=offset,
                                   channel_multiplier=channel_multiplier, pattern=pairs, cmp=cmp), name)


@api("nisa.reciprocal")
def reciprocal(dst, data, name=None, **_kw) -> Handle:
    return _emit(lambda: em.reciprocal(_dst(dst), data), name)


@api("nisa.bn_stats")
def bn_stats(dst, data, name=None, **_kw) -> Handle:
    return _emit(lambda: em.bn_stats(_dst(dst), data), name)


@api("nisa.bn_aggr")
def bn_aggr(dst, data, name=None, **_kw) -> Handle:
    return _emit(lambda: em.bn_aggr(_dst(dst), data), name)


@api("nisa.tensor_tensor_scan")
def tensor_tensor_scan(dst, data0, data1, initial, op0, op1, reverse0=False, reverse1=False, name=None,
                       **_kw) -> Handle:
    return _emit(lambda: em.tensor_tensor_scan(_dst(dst), data0, data1, initial, op0, op1, reverse0, reverse1),
                 name)


@api("nisa.tensor_scalar_reduce")
def tensor_scalar_reduce(dst, data, op0, operand0, reduce_op, reduce_res=None, reverse0=False, reduce_cmd=None,
                         reduce_init=None, reduce_res_negate=False, name=None, **_kw) -> Handle:
    return _emit(lambda: em.tensor_scalar_reduce(_dst(dst), data, op0, operand0, reduce_op, reduce_res, reverse0,
                                                 reduce_cmd, reduce_init=reduce_init,
                                                 reduce_res_negate=bool(reduce_res_negate)), name)


@api("nisa.exponential")
def exponential(dst, src, max_value=0.0, reduce_res=None, reduce_cmd=None, reduce_init=0.0, name=None,
                **_kw) -> Handle:
    return _emit(lambda: es.exponential(_dst(dst), src, max_value, reduce_res, reduce_cmd, reduce_init), name)


@api("nisa.dma_copy")
def dma_copy(dst, src, dst_rmw_op=None, oob_mode=None, dge_mode=None, engine=None, name=None, priority=None,
             **_kw) -> Handle:
    operand_rules.enum_member("nisa.dma_copy", "dge_mode", dge_mode, ("unknown", "none", "swdge", "hwdge"))
    operand_rules.enum_member("nisa.dma_copy", "oob_mode", oob_mode, ("error", "skip"))
    return _emit(lambda: em.dma_copy(_dst(dst), src, dge_mode=dge_mode, engine=engine, dst_rmw_op=dst_rmw_op),
                 name)


@api("nisa.sendrecv")
def sendrecv(src, dst, send_to_rank, recv_from_rank, pipe_id=0, dma_engine=None, name=None, **_kw) -> Handle:
    """Swap SBUF tiles between the two cores of an LNC=2 kernel (machine/nki/cores.py): each core
    copies its partner's ``src`` into its own ``dst`` by DMA, between two meetings."""
    operand_rules.from_generation("nisa.sendrecv", 3)
    for what, value in (("send_to_rank", send_to_rank), ("recv_from_rank", recv_from_rank)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) not in (0, 1):
            raise fail(f"nisa.sendrecv: {what}={value!r}; its page: \"send_to_rank and recv_from_rank must be either "
                       f"0 or 1\"")  # (2 was an internal error: a probe)
    operand_rules.in_sbuf("nisa.sendrecv", "Both src and dst tiles must be in SBUF", src=src, dst=dst)
    operand_rules.same_dtype("nisa.sendrecv", "src and dst must have the same data type", src=src, dst=dst)
    operand_rules.gpsimd_dma_size(dma_engine, src)
    tracer = current()
    rank, posts = meet(tracer, "nisa.sendrecv", (src, int(send_to_rank), int(recv_from_rank)))
    partner_src, partner_sends_to, _ = posts[int(recv_from_rank)]
    if partner_sends_to != rank:
        raise fail(f"nisa.sendrecv: core {rank} receives from core {int(recv_from_rank)}, "
                   f"which sends to core {partner_sends_to}")
    handle = _emit(lambda: em.dma_copy(_dst(dst), partner_src), name)
    meet(tracer, "nisa.sendrecv")  # neither core overwrites its src before the other copied it
    return handle


@api("nisa.core_barrier")
def core_barrier(data, cores=(0, 1), engine=None, name=None, **_kw) -> None:
    """Both cores of an LNC=2 kernel reach this line before either goes on (machine/nki/cores.py)."""
    operand_rules.from_generation("nisa.core_barrier", 3)
    # its page: "must be data in shared HBM that multiple cores are accessing"; a core's own HBM is
    # refused (it ran: a probe), a tile is not: nki-library's router_topk passes one in SBUF
    if em.is_tile(data) and ops.lay(data).tensor.name in current().hbm.private:
        raise fail("nisa.core_barrier: data is each core's own HBM; its page: \"The data parameter ... must be data in "
                   "shared HBM that multiple cores are accessing\"")
    if sorted(int(c) for c in cores) != [0, 1]:
        raise fail(f"nisa.core_barrier: cores={tuple(cores)}; only (0, 1) is supported (the ISA reference)")
    meet(current(), "nisa.core_barrier")


def lnc_names() -> dict[str, Any]:
    """``nki.lnc`` (NKI 0.7's home of the two-core calls; its page calls the ``nki.isa`` entry points
    "deprecated compatibility wrappers"): ``sendrecv`` without ``pipe_id``, ``dma_engine`` fifth;
    ``core_barrier`` as ``nki.isa``'s (``nki.lnc.sendrecv`` was refused as not modelled: a probe)."""
    def lnc_sendrecv(src, dst, send_to_rank, recv_from_rank, dma_engine=None, name=None, priority=None, **_kw):
        return sendrecv(src, dst, send_to_rank, recv_from_rank, dma_engine=dma_engine, name=name)

    return {"sendrecv": lnc_sendrecv, "core_barrier": core_barrier}


@api("nisa.dma_compute")
def dma_compute(dst, srcs, reduce_op=None, scales=None, unique_indices=True, oob_mode=None, name=None, **_kw
                ) -> Handle:
    def emit() -> None:
        out = _dst(dst)
        if unique_indices and out.indirect is not None:
            indirect.repeated_rows_warning("nisa.dma_compute", out.indirect)
        em.dma_compute(out, srcs, reduce_op, scales)
    return _emit(emit, name)


@api("nisa.dma_transpose")
def dma_transpose(dst, src, axes=None, dge_mode=None, name=None, priority=None, oob_mode=None, **_kw) -> Handle:
    operand_rules.enum_member("nisa.dma_transpose", "dge_mode", dge_mode, ("unknown", "none", "swdge", "hwdge"))

    def emit() -> None:
        out = _dst(dst)
        transpose_dma.page_rules(out, ops.lay(src), dge_mode)
        em.dma_transpose(out, src, axes=axes)
    return _emit(emit, name)


def enum_names() -> dict[str, Any]:
    """Enums and engine constants of ``nki.isa`` (both generations)."""
    return {"engine": engine, "dge_mode": dge_mode, "oob_mode": oob_mode, "reduce_cmd": reduce_cmd,
            "nc_version": nc_version, "get_nc_version": get_nc_version,
            "constants": SimpleNamespace(oob_mode=oob_mode, dge_mode=dge_mode, engine=engine),
            "matmul_perf_mode": matmul_perf_mode, "dma_engine": dma_engine,
            "NkiValidationError": NkiValidationError, "NkiInstruction": schedule.NkiInstruction,
            "dependency": schedule.dependency, "tensor_engine": engine.tensor, "vector_engine": engine.vector,
            "scalar_engine": engine.scalar,
            "gpsimd_engine": engine.gpsimd, "sync_engine": engine.sync, "unknown_engine": engine.unknown}


#: The ``nki.isa`` ops both generations offer (each module defines its own spelling of each).
ISA_OPS = ("nc_matmul", "nc_transpose", "activation", "activation_reduce", "tensor_tensor", "tensor_scalar",
        "scalar_tensor_tensor", "tensor_reduce", "tensor_copy", "memset", "iota", "reciprocal", "bn_stats",
        "bn_aggr", "tensor_tensor_scan", "tensor_scalar_reduce", "dma_copy", "dma_transpose", "affine_select")


def current_names() -> dict[str, Any]:
    names = {name: globals()[name] for name in ISA_OPS}
    # the current API's only (the legacy one refuses them)
    names.update(dma_compute=dma_compute, sendrecv=sendrecv, core_barrier=core_barrier, activate2=activate2,
                 exponential=exponential, tensor_copy_dynamic_src=tensor_copy_dynamic_src,
                 tensor_copy_dynamic_dst=tensor_copy_dynamic_dst)
    names.update(enum_names())
    names.update(scalars.isa_names())  # scalar_load, NkiScalar, register_* (machine/nki/scalars.py)
    names.update(isa_select.current_names())  # max8, select_reduce, rng ... (machine/nki/isa_select.py)
    names.update(mx.isa_names())  # quantize_mx, nc_matmul_mx (machine/nki/mx.py)
    return names
