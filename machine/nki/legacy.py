"""Legacy ``neuronxcc.nki.isa`` (ops return their result tile), ``neuronxcc.nki.compiler``
(direct allocation) and ``neuronxcc.nki.typing``.

A legacy op's result is pending (see :mod:`neuronsim.machine.nki.tracer`): ``t[...] = nisa.exp(...)``
emits it into ``t``, ``psum[...] += nisa.nc_matmul(a, b)`` emits an accumulating matmul.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from neuronsim.machine.nki import emitters as em
from neuronsim.machine.nki.alloc import declare_tile, spec_of
from neuronsim.machine.nki.dtypes import to_dtype
from neuronsim.machine.nki import isa_select, operand_rules, ops, scalars
from neuronsim.machine.nki.arith import alu_names, index_tile
from neuronsim.machine.nki.isa import ISA_OPS, enum_names
from neuronsim.machine.nki.spmd_loops import no_reorder as _no_reorder
from neuronsim.machine.nki.language import psum as _psum
from neuronsim.machine.nki.language import sbuf as _sbuf
from neuronsim.machine.nki.ops import lay, reducing, result_dtype
from neuronsim.machine.nki.mask_boxes import matmul_roles, restricted_operand
from neuronsim.machine.nki.tiles import NkiTensor, is_tile
from neuronsim.machine.nki.tiles import result_tile as _result
from neuronsim.machine.nki.legacy_rules import allocated_bias
from neuronsim.machine.nki.tracer import api, current
from neuronsim.machine.nki.transpose_dma import transposed_shape

__all__ = ["isa_names", "compiler_names", "typing_names"]


def _free(shape: tuple[int, ...]) -> int:
    return prod(shape[1:])


@api("nisa.nc_matmul")
def nc_matmul(stationary, moving, *, is_stationary_onezero=False, is_moving_onezero=False, is_transpose=False,
              mask=None, perf_mode=None, **_kw):
    if em.double_row(perf_mode):  # [K, 2, M] x [K, 2, N] -> [M, N]
        shape = (_free(stationary.shape) // 2, _free(moving.shape) // 2)
    else:  # (is_transpose too: a transpose's moving tile is the identity, [K, K])
        shape = (_free(stationary.shape), _free(moving.shape))

    def emit(dst, accumulate=False):
        # The page: PE reads SBUF.  An operand in PSUM, an nc_transpose's result used as is (as
        # kernels validated on Trainium do: a DFT by matmul, a flash attention), is copied to
        # SBUF first, as the compiler stages nl.matmul's operands; NKI 0.7's nc_matmul, whose
        # kernel places every tile itself, still refuses it.
        tracer = current()
        box, operands = tracer.mask, (stationary, moving)
        if box is not None and not is_transpose:  # each operand by its own iterators (mask_boxes.matmul_roles)
            roles = roles_of()
            operands = tuple(NkiTensor(restricted_operand(t.layout, box, roles, moving=k == 1))
                             for k, t in enumerate(operands))
            tracer.mask = None
        try:
            em.matmul(dst, *operands, accumulate=accumulate, transpose=bool(is_transpose), perf_mode=perf_mode,
                      staged=True)
        finally:
            tracer.mask = box

    def roles_of():
        return matmul_roles(stationary.layout, moving.layout) if is_tile(stationary) and is_tile(moving) else {}

    emit.accumulates = True  # type: ignore[attr-defined]
    if not is_transpose:
        emit.mask_roles = roles_of  # type: ignore[attr-defined]
    return _result(shape, "float32", "psum", emit, mask)


@api("nisa.nc_transpose")
def nc_transpose(data, *, mask=None, dtype=None, engine=None, **_kw):
    buffer = "sbuf" if em.engine_of(engine, ("pe", "dve"), "pe") == "dve" else "psum"
    # The errors page refuses nc_transpose on PE in a kernel that places its tiles itself
    # (err_transpose_on_tensor_engine_not_allowed_in_allocated_kernel); not enforced: the
    # allocated scenarios write it where nki-samples' kernels issue the identity matmul, their
    # builder twins model it as the op table's transpose (scenarios/allocated_*.py).
    shape = (_free(data.shape), data.shape[0])

    def into(dst):
        on_pe = em.asked_engine(engine) == "pe" or (engine is None and not operand_rules.vector_transposable(
            lay(data).view()))  # (DVE transposes 32 x 32 at most)
        if on_pe and dst.tensor.memory.name != "PSUM":
            # the result assigned to an SBUF tile: the compiler stages the PE's (PSUM only) through PSUM
            staging = to_dtype(operand_rules.pe_transpose_dtype(data.dtype))
            staged = declare_tile(current(), spec_of(dst.shape, staging, "psum"))
            em.transpose(staged, data, "pe")
            current().note_write(dst)
            current().kb.tensor_copy(dst.view(), staged.view(), engine="act")
            return
        em.transpose(dst, data, engine)

    return _result(shape, dtype or data.dtype, buffer, ops.swapped_by_mask(into, mask, data), mask)


@api("nisa.activation")
def activation(op, data, *, bias=None, scale=1.0, reduce_op=None, reduce_res=None, reduce_cmd="idle", mask=None,
               dtype=None, **_kw):
    operand_rules.vector_bias("nisa.activation", bias)
    allocated_bias(current(), "nisa.activation", bias)
    return _result(data.shape, result_dtype(dtype, data), "sbuf",
                   lambda dst: em.activation(dst, op, data, bias=bias, scale=scale, reduce_op=reduce_op,
                                             reduce_res=reduce_res, reduce_cmd=reduce_cmd), mask)


@api("nisa.activation_reduce")
def activation_reduce(op, data, *, reduce_op, reduce_res, bias=None, scale=1.0, mask=None, dtype=None, **_kw):
    allocated_bias(current(), "nisa.activation_reduce", bias)
    return _result(data.shape, result_dtype(dtype, data), "sbuf",
                   lambda dst: em.activation(dst, op, data, bias=bias, scale=scale, reduce_op=reduce_op,
                                             reduce_res=reduce_res), mask)


@api("nisa.tensor_tensor")
def tensor_tensor(data1, data2, op, *, dtype=None, mask=None, engine=None, **_kw):
    operand_rules.power_off_psum(alu_names(op), data1=data1, data2=data2)
    shape = data1.shape if hasattr(data1, "shape") else data2.shape
    if hasattr(data1, "shape") and hasattr(data2, "shape") and prod(data2.shape) > prod(data1.shape):
        shape = data2.shape  # a legacy broadcast of data1 (operand_rules.legacy_broadcast): the wider tile's
    return _result(shape, result_dtype(dtype, data1, data2), "sbuf",
                   lambda dst: em.tensor_tensor(dst, data1, data2, op, engine, legacy=True), mask)


@api("nisa.tensor_scalar")
def tensor_scalar(data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False, *, dtype=None,
                  mask=None, engine=None, **_kw):
    operand_rules.tensor_scalar_operators("nisa.tensor_scalar", alu_names(op0, op1), em.asked_engine(engine), operand0)
    return _result(data.shape, result_dtype(dtype, data), "sbuf",
                   lambda dst: em.tensor_scalar(dst, data, op0, operand0, reverse0, op1, operand1, reverse1, engine),
                   mask)


@api("nisa.scalar_tensor_tensor")
def scalar_tensor_tensor(*, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False, dtype=None,
                         mask=None, **_kw):
    return _result(data.shape, result_dtype(dtype, data, operand1), "sbuf",
                   lambda dst: em.scalar_tensor_tensor(dst, data, op0, operand0, op1, operand1, reverse0, reverse1),
                   mask)


@api("nisa.tensor_reduce")
def tensor_reduce(op, data, axis, *, mask=None, dtype=None, negate=False, keepdims=False, **_kw):
    axes = em.reduce_axes(data.shape, axis)
    shape = tuple(1 if a in axes else n for a, n in enumerate(data.shape)) if keepdims else \
        tuple(n for a, n in enumerate(data.shape) if a not in axes)
    return _result(shape, result_dtype(dtype, data), "sbuf",
                   reducing(lambda dst: em.tensor_reduce(dst, op, data, axis, negate, keepdims), axes, keepdims), mask)


@api("nisa.tensor_copy")
def tensor_copy(src, *, mask=None, dtype=None, engine=None, **_kw):
    operand_rules.engine_on_generation("nisa.tensor_copy", em.asked_engine(engine))
    return _result(src.shape, dtype or src.dtype, "sbuf", lambda dst: em.tensor_copy(dst, src, engine), mask)


@api("nisa.memset")
def memset(shape, value, dtype=None, *, mask=None, engine=None, **_kw):
    return _result(tuple(shape), dtype or "float32", "sbuf", lambda dst: em.memset(dst, value, engine), mask)


@api("nisa.iota")
def iota(expr, dtype=None, *, mask=None, **_kw):
    return index_tile(expr, dtype, mask)


@api("nisa.reciprocal")
def reciprocal(data, *, dtype=None, mask=None, **_kw):
    return _result(data.shape, result_dtype(dtype, data), "sbuf", lambda dst: em.reciprocal(dst, data), mask)


@api("nisa.bn_stats")
def bn_stats(data, *, mask=None, dtype=None, **_kw):
    return _result((data.shape[0], 6), result_dtype(dtype, data), "sbuf", lambda dst: em.bn_stats(dst, data), mask)


@api("nisa.bn_aggr")
def bn_aggr(data, *, mask=None, dtype=None, **_kw):
    return _result((data.shape[0], 2), result_dtype(dtype, data), "sbuf", lambda dst: em.bn_aggr(dst, data), mask)


@api("nisa.tensor_tensor_scan")
def tensor_tensor_scan(data0, data1, initial, op0, op1, reverse0=False, reverse1=False, *, dtype=None, mask=None,
                       **_kw):
    return _result(data0.shape, result_dtype(dtype, data0, data1), "sbuf",
                   lambda dst: em.tensor_tensor_scan(dst, data0, data1, initial, op0, op1, reverse0, reverse1), mask)


@api("nisa.tensor_scalar_reduce")
def tensor_scalar_reduce(*, data, op0, operand0, reduce_op, reduce_res, reverse0=False, dtype=None, mask=None,
                         **_kw):
    return _result(data.shape, result_dtype(dtype, data), "sbuf",
                   lambda dst: em.tensor_scalar_reduce(dst, data, op0, operand0, reduce_op, reduce_res, reverse0),
                   mask)


@api("nisa.dma_copy")
def dma_copy(*, dst, src, mask=None, dst_rmw_op=None, oob_mode=None, dge_mode=None, engine=None, **_kw):
    current().emit(lambda: em.dma_copy(_masked_dst(dst), src, dge_mode=dge_mode, engine=engine,
                                       dst_rmw_op=dst_rmw_op), mask=mask)


def _masked_dst(dst):
    layout = lay(dst)
    current().note_write(layout)
    return layout


@api("nisa.affine_select")
def affine_select(pred, on_true_tile, on_false_value, *, mask=None, dtype=None, **_kw):
    return _result(on_true_tile.shape, dtype or on_true_tile.dtype, "sbuf",
                   lambda dst: em.affine_select_pred(dst, pred, on_true_tile, on_false_value), mask)


@api("nisa.dma_transpose")
def dma_transpose(src, *, axes=None, mask=None, dtype=None, **_kw):
    emit = ops.swapped_by_mask(lambda dst: em.dma_transpose(dst, src, axes), mask, src,
                               when=len(src.shape) == 2 and axes in (None, (1, 0), [1, 0]))
    return _result(transposed_shape(tuple(src.shape), axes), dtype or src.dtype, "sbuf", emit, mask)



def isa_names() -> dict[str, Any]:
    names = {name: globals()[name] for name in ISA_OPS}
    names.update(enum_names())
    names.update(scalars.isa_names())  # register_* (machine/nki/scalars.py)
    names.update(isa_select.legacy_names())  # max8, range_select, dropout ... (machine/nki/isa_select.py)
    return names


def _identity_decorator(func: Any = None, **_kw: Any) -> Any:
    return func if func is not None else (lambda f: f)


def compiler_names() -> dict[str, Any]:
    """``ncc.sbuf`` / ``ncc.psum`` (with ``alloc`` / ``mod_alloc``) and the compiler-option
    decorators kernels use (no effect on the trace)."""
    return {"sbuf": _sbuf, "psum": _psum, "skip_middle_end_transformations": _identity_decorator,
            "enable_stack_allocator": _identity_decorator, "force_auto_alloc": _identity_decorator,
            "no_reorder": _no_reorder}  # as a loop's directives= (attention tutorials): orders nothing


class _TypeHint(type):
    """``nt.tensor[shape, dtype]`` and friends: annotations, and types a kernel may test its
    arguments against (``isinstance(x, nt.tensor)``: neuronx-distributed's topk checks so)."""

    def __getitem__(cls, item: Any) -> Any:
        # nt.tensor[nt.mutable]: NxDI's spelling of nt.mutable_tensor (with the
        # 'enable-mutable-parameter' flag); any other subscript is an annotation only
        items = item if isinstance(item, tuple) else (item,)
        return _MUTABLE_TENSOR if any(part is _MUTABLE for part in items) else Any

    def __call__(cls, *_a: Any, **_k: Any) -> Any:
        return Any

    def __instancecheck__(cls, value: Any) -> bool:
        return isinstance(value, cls.holds)


def _hint(name: str, holds: Any) -> type:
    return _TypeHint(name, (), {"holds": holds, "__module__": "nki.typing"})


_MUTABLE_TENSOR = _hint("mutable_tensor", NkiTensor)
_MUTABLE = _hint("mutable", NkiTensor)


def typing_names() -> dict[str, Any]:
    tensor = _hint("tensor", NkiTensor)
    return {"tensor": tensor, "mutable_tensor": _MUTABLE_TENSOR, "mutable": _MUTABLE,
            "scalar": _hint("scalar", (int, float, np.integer, np.floating)), "tile": _hint("tile", NkiTensor)}
