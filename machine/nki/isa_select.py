"""The ``nki.isa`` search, shuffle, cumulative, predicated-select, partition-reduce and random
ops in both API generations, and ``nl.rand`` / ``nl.dropout`` / ``nl.random_seed``.

The current API writes ``dst`` at once (:func:`current_names`); the legacy one returns a
pending tile where its reference does, and writes ``dst=`` where the kernel passes one
(:func:`legacy_names`).  What each op computes: :mod:`neuronsim.machine.model.semantics_select`.
Random numbers come from the simulator's per-engine generator, seeded by the run's data seed
(``simulate(data_seed=...)``) or by ``set_rand_state`` from the seed tile's bytes: the same
seed gives the same numbers, so a kernel's result is deterministic, but not the hardware's
XORWOW sequence.
"""

from __future__ import annotations

from math import prod
from typing import Any

from neuronsim.machine.ir.dtypes import DTYPES, is_float
from neuronsim.machine.nki import emitters_select as es
from neuronsim.machine.nki import operand_rules, ops
from neuronsim.machine.nki.emitters import engine_of
from neuronsim.machine.nki.tiles import is_tile
from neuronsim.machine.nki.tiles import result_tile as _result
from neuronsim.machine.nki.handles import emit_call
from neuronsim.machine.nki.tracer import api, current

__all__ = ["current_names", "legacy_names", "language_names", "ISA_SELECT_OPS"]

#: The ``nki.isa`` names this module implements (both generations).
ISA_SELECT_OPS = ("max8", "nc_find_index8", "nc_match_replace8", "nc_stream_shuffle", "tensor_scalar_cumulative",
                  "range_select", "select_reduce", "tensor_copy_predicated", "tensor_partition_reduce", "dropout",
                  "rng", "rand2", "set_rng_seed", "rand_set_state", "rand_get_state", "sequence_bounds",
                  "nonzero_with_count", "nc_n_gather", "local_gather")


def _dst(dst: Any):
    layout = ops.lay(dst)
    current().note_write(layout)
    return layout


def _emit(fn, name: Any = None):
    return emit_call(fn, name)


def _engine(engine: Any, default: str) -> str:
    return engine_of(engine, ("dve", "pool"), default)


# -- the current API: dst first -------------------------------------------------------------
def _current() -> dict[str, Any]:
    @api("nisa.max8")
    def max8(dst, src, name=None, **_kw):
        return _emit(lambda: es.max8(_dst(dst), src), name)

    @api("nisa.nc_find_index8")
    def nc_find_index8(dst, data, vals, name=None, **_kw):
        return _emit(lambda: es.find_index8(_dst(dst), data, vals), name)

    @api("nisa.nc_match_replace8")
    def nc_match_replace8(dst, data, vals, imm, dst_idx=None, name=None, **_kw):
        return _emit(lambda: es.match_replace8(_dst(dst), data, vals, imm, dst_idx), name)

    @api("nisa.nc_stream_shuffle")
    def nc_stream_shuffle(dst, src, shuffle_mask, name=None, **_kw):
        return _emit(lambda: es.stream_shuffle(_dst(dst), src, shuffle_mask), name)

    @api("nisa.tensor_scalar_cumulative")
    def tensor_scalar_cumulative(dst, src, op0, op1, imm0, imm1=None, reduce_cmd=None, name=None, **_kw):
        return _emit(lambda: es.cumulative(_dst(dst), src, op0, op1, imm0, imm1, reduce_cmd), name)

    @api("nisa.range_select")
    def range_select(dst, on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_cmd=None, reduce_res=None,
                     reduce_op=None, range_start=0, on_false_value=None, name=None, **_kw):
        return _emit(lambda: es.range_select(_dst(dst), on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_cmd,
                                             reduce_res, reduce_op, range_start, on_false_value), name)

    @api("nisa.select_reduce")
    def select_reduce(dst, predicate, on_true, on_false, reduce_res=None, reduce_cmd=None, reduce_op=None,
                      reverse_pred=False, name=None, **_kw):
        return _emit(lambda: es.select_reduce(_dst(dst), predicate, on_true, on_false, reduce_res, reduce_cmd,
                                              reduce_op, reverse_pred, page_rules=True), name)

    @api("nisa.tensor_copy_predicated")
    def tensor_copy_predicated(dst, src, predicate, reverse_pred=False, name=None, **_kw):
        return _emit(lambda: es.copy_predicated(_dst(dst), src, predicate, reverse_pred, page_rules=True), name)

    @api("nisa.tensor_partition_reduce")
    def tensor_partition_reduce(dst, op, data, name=None, **_kw):
        return _emit(lambda: es.partition_reduce(_dst(dst), op, data), name)

    @api("nisa.dropout")
    def dropout(dst, data, prob, name=None, **_kw):
        _dropout_dtypes(dst, data, prob)
        return _emit(lambda: es.dropout(_dst(dst), data, prob), name)

    @api("nisa.rng")
    def rng(dst, engine=None, name=None, **_kw):  # (a float32 dst ran, as bits: a probe)
        operand_rules.engine_on_generation("nisa.rng", _engine(engine, "dve"))
        operand_rules.dtype_among("nisa.rng", operand_rules.INTEGER_DTYPES, "The output dst tile must be an integer "
                                  "type: int8, int16, int32, uint8, uint16, or uint32.", dst=dst)
        return _emit(lambda: es.random(_dst(dst), bits=True, engine=_engine(engine, "dve")), name)

    @api("nisa.rand2")
    def rand2(dst, min, max, name=None, **_kw):  # NKI's parameter names shadow the builtins
        operand_rules.from_generation("nisa.rand2", 4)
        return _emit(lambda: es.random(_dst(dst), min, max), name)

    return {"max8": max8, "nc_find_index8": nc_find_index8, "nc_match_replace8": nc_match_replace8,
            "nc_stream_shuffle": nc_stream_shuffle, "tensor_scalar_cumulative": tensor_scalar_cumulative,
            "range_select": range_select, "select_reduce": select_reduce,
            "tensor_copy_predicated": tensor_copy_predicated, "tensor_partition_reduce": tensor_partition_reduce,
            "dropout": dropout, "rng": rng, "rand2": rand2, **_seeding(), **_gpsimd()}


def _gpsimd() -> dict[str, Any]:
    @api("nisa.sequence_bounds")
    def sequence_bounds(dst, segment_ids, name=None, **_kw):
        return _emit(lambda: es.sequence_bounds(_dst(dst), segment_ids), name)

    @api("nisa.nonzero_with_count")
    def nonzero_with_count(dst, src, index_offset=0, padding_val=-1, name=None, **_kw):
        operand_rules.from_generation("nisa.nonzero_with_count", 3)
        return _emit(lambda: es.nonzero_with_count(_dst(dst), src, index_offset, padding_val), name)

    @api("nisa.nc_n_gather")
    def nc_n_gather(dst, data, indices, name=None, **_kw):  # (PSUM data ran, staged; a bf16 dst, cast: a probe)
        operand_rules.off_psum("nisa.nc_n_gather", "All input and output tiles (data, indices, and dst) must be in "
                               "SBUF. GpSimd Engine cannot access PSUM", data=data, indices=indices, dst=dst)
        operand_rules.same_dtype("nisa.nc_n_gather", "The output dst tile must have the same data type as data.",
                                 data=data, dst=dst)
        return _emit(lambda: es.n_gather(_dst(dst), data, indices), name)

    @api("nisa.local_gather")
    def local_gather(dst, src_buffer, index, num_elem_per_idx=1, num_valid_indices=None, name=None, **_kw):
        return _emit(lambda: es.local_gather(_dst(dst), src_buffer, index, num_elem_per_idx, num_valid_indices),
                     name)

    return {"sequence_bounds": sequence_bounds, "nonzero_with_count": nonzero_with_count,
            "nc_n_gather": nc_n_gather, "local_gather": local_gather}


def _seeding() -> dict[str, Any]:
    @api("nisa.set_rng_seed")
    def set_rng_seed(src_seeds, name=None, **_kw):
        return _emit(lambda: es.seed(src_seeds, "dve"), name)

    @api("nisa.rand_set_state")
    def rand_set_state(src_seeds, engine=None, name=None, **_kw):
        operand_rules.from_generation("nisa.rand_set_state", 3)
        return _emit(lambda: es.seed(src_seeds, _engine(engine, "pool")), name)

    @api("nisa.rand_get_state")
    def rand_get_state(dst, engine=None, name=None, **_kw):
        operand_rules.from_generation("nisa.rand_get_state", 3)
        return _emit(lambda: es.store_state(_dst(dst), _engine(engine, "pool")), name)

    return {"set_rng_seed": set_rng_seed, "rand_set_state": rand_set_state, "rand_get_state": rand_get_state}


def _dropout_dtypes(dst: Any, data: Any, prob: Any, legacy: bool = False) -> None:
    """The dropout page's dtypes: "The output data type dst.dtype must match the input data type
    data.dtype" (the legacy page's dtype=: "must match ... if input data type is any of the integer
    types"); a prob tile float32 for integer data, else any float type (a probe: they ran)."""
    integer = is_tile(data) and ops.lay(data).element_dtype in operand_rules.INTEGER_DTYPES
    if not legacy or integer:
        operand_rules.same_dtype("nisa.dropout", "The output data type dst.dtype must match the input data type "
                                 "data.dtype." if not legacy else "The output data type must match the input data "
                                 "type of data if input data type is any of the integer types.", data=data, dst=dst)
    floats = tuple(d for d in DTYPES if is_float(d))
    operand_rules.dtype_among("nisa.dropout", ("float32",) if integer else floats, "If data type of data is any of the "
                              "integer types (e.g., int32, int16), prob data type must be float32; If data type of "
                              "data is any of the float types (e.g., float32, bfloat16), prob data can be any valid "
                              "float type", prob=prob)


# -- the legacy API: results returned, dst= where the reference takes one ----------------------
def _into(dst: Any, mask: Any, fn) -> None:
    current().emit(lambda: fn(_dst(dst)), mask=mask)


def _legacy() -> dict[str, Any]:
    @api("nisa.max8")
    def max8(src, *, dtype=None, mask=None, **_kw):
        return _result((src.shape[0], 8), dtype or src.dtype, "sbuf", lambda dst: es.max8(dst, src), mask)

    @api("nisa.nc_find_index8")
    def nc_find_index8(data, vals, *, dtype=None, mask=None, **_kw):
        return _result((data.shape[0], 8), dtype or "uint32", "sbuf", lambda dst: es.find_index8(dst, data, vals),
                       mask)

    @api("nisa.nc_match_replace8")
    def nc_match_replace8(data, vals, imm, dst_idx=None, *, dtype=None, mask=None, **_kw):
        return _result(data.shape, dtype or data.dtype, "sbuf",
                       lambda dst: es.match_replace8(dst, data, vals, imm, dst_idx), mask)

    @api("nisa.nc_stream_shuffle")
    def nc_stream_shuffle(src, dst, shuffle_mask, *, mask=None, **_kw):
        _into(dst, mask, lambda d: es.stream_shuffle(d, src, shuffle_mask))

    @api("nisa.tensor_scalar_cumulative")
    def tensor_scalar_cumulative(src, dst, op0, op1, imm0, imm1=None, reduce_cmd=None, *, mask=None, **_kw):
        _into(dst, mask, lambda d: es.cumulative(d, src, op0, op1, imm0, imm1, reduce_cmd))

    @api("nisa.range_select")
    def range_select(on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_cmd=None, reduce_res=None,
                     reduce_op=None, range_start=0, on_false_value=None, *, dtype=None, mask=None, **_kw):
        return _result(on_true_tile.shape, dtype or on_true_tile.dtype, "sbuf",
                       lambda dst: es.range_select(dst, on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_cmd,
                                                   reduce_res, reduce_op, range_start, on_false_value), mask)

    @api("nisa.select_reduce")
    def select_reduce(dst, predicate, on_true, on_false, reduce_res=None, reduce_cmd=None, reduce_op=None,
                      reverse_pred=False, *, mask=None, **_kw):
        _into(dst, mask, lambda d: es.select_reduce(d, predicate, on_true, on_false, reduce_res, reduce_cmd,
                                                    reduce_op, reverse_pred, page_rules=True))

    @api("nisa.tensor_copy_predicated")
    def tensor_copy_predicated(src, dst, predicate, reverse_pred=False, *, mask=None, **_kw):
        _into(dst, mask, lambda d: es.copy_predicated(d, src, predicate, reverse_pred, page_rules=True))

    @api("nisa.tensor_partition_reduce")
    def tensor_partition_reduce(op, data, *, dtype=None, mask=None, **_kw):
        shape = (1, *data.shape[1:])
        return _result(shape, dtype or data.dtype, "sbuf", lambda dst: es.partition_reduce(dst, op, data), mask)

    @api("nisa.dropout")
    def dropout(data, prob, *, dtype=None, mask=None, **_kw):
        def emit(dst):
            _dropout_dtypes(dst, data, prob, legacy=True)
            es.dropout(dst, data, prob)
        return _result(data.shape, dtype or data.dtype, "sbuf", emit, mask)

    @api("nisa.sequence_bounds")
    def sequence_bounds(segment_ids, *, dtype=None, mask=None, **_kw):
        shape = (segment_ids.shape[0], 2, *segment_ids.shape[1:])
        return _result(shape, dtype or segment_ids.dtype, "sbuf", lambda dst: es.sequence_bounds(dst, segment_ids),
                       mask)

    @api("nisa.local_gather")
    def local_gather(src_buffer, index, num_elem_per_idx=1, num_valid_indices=None, *, mask=None, **_kw):
        rows, k = src_buffer.shape[0], int(ops.number(num_elem_per_idx))
        valid = int(ops.number(num_valid_indices)) if num_valid_indices is not None else 16 * prod(index.shape[1:])
        return _result((rows, valid * k), src_buffer.dtype, "sbuf",
                       lambda dst: es.local_gather(dst, src_buffer, index, k, valid), mask)

    return {"max8": max8, "nc_find_index8": nc_find_index8, "nc_match_replace8": nc_match_replace8,
            "nc_stream_shuffle": nc_stream_shuffle, "tensor_scalar_cumulative": tensor_scalar_cumulative,
            "range_select": range_select, "select_reduce": select_reduce,
            "tensor_copy_predicated": tensor_copy_predicated, "tensor_partition_reduce": tensor_partition_reduce,
            "dropout": dropout, **_dst_forms(), "sequence_bounds": sequence_bounds, "local_gather": local_gather}


def _dst_forms() -> dict[str, Any]:
    """The ops whose legacy form also takes ``dst=`` (their current functions serve)."""
    current_forms = _current()
    return {name: current_forms[name] for name in ("rng", "rand2", "set_rng_seed", "rand_set_state",
                                                    "rand_get_state", "nonzero_with_count", "nc_n_gather")}


# -- nki.language ------------------------------------------------------------------------------
@api("nl.rand")
def rand(shape, dtype=None, buffer=None, name="", **_kw):
    """Uniform values in [0, 1) from the Vector Engine's generator."""
    return _result(tuple(shape), dtype or "float32", "sbuf", lambda dst: es.random(dst))


@api("nl.dropout")
def dropout(x, rate, dtype=None, **_kw):
    return _result(x.shape, dtype or x.dtype, "sbuf", lambda dst: es.dropout(dst, x, rate))


@api("nl.gather_flattened")
def gather_flattened(data, indices, axis=0, dtype=None, **_kw):
    """Per partition, the elements of ``data``'s flattened free dimensions at ``indices``."""
    if axis not in (0, None):
        raise current().refuse(f"nl.gather_flattened(axis={axis})", "axis=0")
    return _result(indices.shape, dtype or data.dtype, "sbuf", lambda dst: es.n_gather(dst, data, indices))


@api("nl.random_seed")
def random_seed(seed, **_kw):
    current().emit(lambda: es.seed(seed, "dve"))


def current_names() -> dict[str, Any]:
    return _current()


def legacy_names() -> dict[str, Any]:
    return _legacy()


def language_names() -> dict[str, Any]:
    return {"rand": rand, "dropout": dropout, "random_seed": random_seed, "gather_flattened": gather_flattened}
