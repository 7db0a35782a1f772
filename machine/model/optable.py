"""The op table: engines, operands, attributes and cost of every known op.

Sources are sections of ``docs/machine-model.md`` ([1.4] costs, [4] the ISA to
engine map, [2.1] partition rules, [2.4] DMA triggers).  Costs are element costs ``C`` in
engine cycles; :mod:`neuronsim.machine.model.cost` adds the engine's fixed overhead and result
latency for dependent instructions (``docs/timing.md``).  The numerical meaning of each op is
in :mod:`neuronsim.machine.model.semantics`.

==================================  ===================  =======================  ===========================
op                                  engines              reads -> writes          cost (engine cycles, N =
                                                                                  free elements/partition)
==================================  ===================  =======================  ===========================
``dma_copy``                        any sequencer        1 -> 1 (DRAM/SBUF)       latency ``dma_fixed_ns``
                                                                                  (+ ``hwdge_ns``), then
                                                                                  8 partitions per DMA
                                                                                  engine at its bandwidth
``matmul``                          pe                   stationary, moving       ``max(min(64,M), N)``,
                                                         [, psum acc] -> psum     x4 for fp32 operands;
                                                                                  ``double_row``: M, N the
                                                                                  halves (two rows a pass)
``transpose``                       pe, dve              1 -> 1                   pe ``max(P, min(64,F))``,
                                                                                  fp32 x4 (trn1) / x2 (transpose
                                                                                  mode); dve ``max(64, N)``
``activation``                      act                  data [, bias] [, scale]  ``max(64, N)``, ``+ 64`` with
                                                         -> out [, reduce_res]    ``reduce_op`` (a 2nd write)
``tensor_tensor``                   dve, pool            2 -> 1                   ``max(64, 2N)``; ``N`` with a
                                                                                  PSUM input or bf16 add/sub/mul
``tensor_scalar``                   dve, act, pool       data [, operand0]        ``max(64, N)`` (pool 150+N)
                                                         [, operand1] -> 1
``tensor_tensor_scan``              dve                  data0, data1             ``max(64, 2N)``
                                                         [, initial] -> 1
``tensor_reduce``                   dve                  1 -> 1                   ``N`` (``N/2`` bf16 add/max)
``bn_stats``                        dve                  1 (N <= 512) -> 6/part.  ``max(64, N)``
``bn_aggr``                         dve                  1 (3k/part.) -> 2/part.  ``max(64, 13N/3)``
``tensor_copy``                     dve, act, pool       1 -> 1                   ``max(64, N)`` (pool 150+N);
                                                                                  ``dynamic``: ``max(600, N)``
``memset``                          dve, pool            0 -> 1                   ``N`` (``N/2`` zero in 2-byte)
``iota``                            pool                 0 -> 1                   ``150 + N``
``affine_select``                   pool                 1 -> 1                   ``150 + N``
``set_rand_state``                  dve, pool            0..1 -> 0                ``64``
``get_rand_state``                  dve, pool            0 -> 1                   ``max(64, N)``
``random``                          dve, pool            0 -> 1                   ``max(64, N)``
``max8``                            dve                  1 -> 1 (8/part.)         ``max(64, N)``
``nc_find_index8``                  dve                  data, vals -> 1          ``max(64, N)``
``nc_match_replace8``               dve                  data, vals -> out        ``max(64, N)``
                                                         [, indices]
``nc_stream_shuffle``               dve                  src [, dst] -> dst       ``max(64, N)``
``tensor_scalar_cumulative``        dve                  data [, operand0]        ``max(64, N)``
                                                         [, initial] -> 1
``range_select``                    dve                  data, bound0, bound1     ``max(64, N)``
                                                         [, initial] -> out
                                                         [, reduce_res]
``exponential``                     dve                  data [, max_value]       ``max(64, N/4)`` (v4's 4x)
                                                         [, initial] -> out
                                                         [, reduce_res]
``select_reduce``                   dve                  predicate, on_true       ``max(64, 2N)``
                                                         [, on_false] [, initial]
                                                         -> out [, reduce_res]
``tensor_copy_predicated``          dve                  predicate [, src]        ``max(64, 2N)``
                                                         [, dst] -> dst
``tensor_partition_reduce``         pool                 1 -> 1 (1 partition)     ``150 + N * ceil(P / 8)``
``sequence_bounds``                 pool                 1 -> 1 (2 per element)   ``150 + N``
``nonzero_with_count``              pool                 src [, dst] -> dst       ``150 + N``
``quantize_mx``                     dve                  src -> data, scales      ``max(64, N)`` (N of src)
``matmul_mx``                       pe                   stationary, moving,      as ``matmul`` (``N`` packed
                                                         their scales -> psum     moving elements)
``nc_n_gather``                     pool                 data, indices -> 1       ``150 + N``
``dma_transpose``                   any sequencer        1 -> 1 (SBUF/DRAM)       as ``dma_copy``
``dma_accumulate``                  any sequencer        src, dst -> dst          as ``dma_copy`` (the
                                                                                  destination's bytes read
                                                                                  too)
``local_gather``                    pool                 data, indices -> 1       ``150 + N``
any other name                      any sequencer        any -> any               ``cycles`` attr, else
(opaque)                                                                          ``max(64, N)``; ISA names
                                                                                  (``reciprocal`` 8N ...) their
                                                                                  ISA formula
==================================  ===================  =======================  ===========================

Per-partition operands (:mod:`neuronsim.machine.model.oprules`): activation ``bias`` / ``scale``,
``tensor_scalar`` ``operand0`` / ``operand1`` and ``tensor_tensor_scan`` ``initial`` are each
an immediate (a number attribute) or a ``[P, 1]`` tile, named by its read:
``"scale": {"read": 1}``.  (Shorthand kept from the first format: a single extra read that no
attribute names is the first operand, ``bias`` / ``operand0`` / ``initial``.)

Sources of the new ops' meaning and limits are the NKI ISA pages (``nki.isa.activation``,
``activation_reduce``, ``tensor_scalar``, ``tensor_tensor_scan``, ``tensor_reduce``,
``bn_stats``, ``bn_aggr``; aws-neuron-sdk ``nki/api/nki/isa/__init__.py``) and the operator
table "Supported Math Operators for NKI ISA" (``nki/api/nki.api.shared.rst``); costs are
[1.4] (``activation_reduce`` +MIN_II, ``tensor_tensor_scan`` 2N, ``bn_aggr`` 13N/3; ``bn_stats``
takes the one-input DVE rule N, which SDK-LN's "~N DVE" for LayerNorm v2 statistics agrees
with, docs/kernel-patterns.md 5.2).

Hardware constraints (the spec's, then the reference's), checked by
:func:`neuronsim.machine.formats.validate.validate_program`:

* compute engines never touch DRAM and only DMA ops touch DRAM; DMA ops never touch PSUM;
* POOL never touches PSUM [1.1, 4];
* PE writes only PSUM and reads SBUF, plus the PSUM tile it accumulates into [1.1];
* ``tensor_tensor`` reads at most one PSUM operand [kernels 1.1], and so does
  ``tensor_tensor_scan`` among ``data0`` / ``data1`` (NKI ``tensor_tensor_scan``);
* ``bn_stats`` reads at most 512 elements per partition (``nl.tile_size.bn_stats_fmax``);
  ``bn_aggr`` reads whole ``(count, mean, variance * count)`` triples, a multiple of 3
  elements per partition;
* ``tensor_reduce`` ``axis`` names free dimensions of its read (as the access's element
  shape ``(P, c0, ..., ck)`` numbers them, 1..k+1) that run consecutively to the last one;
* activation ``reduce_op`` and a second write (the ``reduce_res`` tile) go together;
* DMA triggers [2.4]: any sequencer may trigger a transfer with static descriptors
  (``dge: "none"``, the default); software DGE (``"swdge"``) is generated by POOL; hardware
  DGE (``"hwdge"``) exists from trn2 on and is commanded by SP or ACT;
* partition start [2.1]: a compute access spanning more than 64 partitions starts at
  partition 0, one spanning 33-64 starts at 0 or 64, one spanning at most 32 starts at a
  multiple of 32 (DMA transfers are not bound by it, nor register ops reading one element:
  ``REGISTER_OPS`` in ``machine/ir/program.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from neuronsim.machine.ir.program import SEQUENCERS

__all__ = ["OpSpec", "OP_TABLE", "op_spec", "ACTIVATION_FUNCS", "ALU_OPS", "BITVEC_OPS", "UNARY_ALU_OPS", "REDUCE_OPS",
           "DGE_MODES",
           "ACT_REDUCE_OPS", "BN_STATS_FMAX", "ISA_COSTS", "RANGE_CMPS", "CUMULATIVE_OPS", "ENGINE_CHOICE_KEY",
           "MOVABLE_ALU_OPS", "engine_choices"]

#: Activation functions ``activation`` accepts (``func(in * scale + bias)``).
ACTIVATION_FUNCS = (
    "identity", "copy", "exp", "log", "tanh", "sigmoid", "relu", "gelu", "silu", "gelu_apprx_sigmoid",
    "gelu_apprx_tanh", "gelu_dx", "gelu_apprx_sigmoid_dx", "erf", "erf_dx", "tan",
    "square", "sqrt", "rsqrt", "reciprocal", "abs", "sign", "neg",
    "silu_dx", "softplus", "mish", "sin", "cos", "arctan", "floor", "ceil", "trunc",
)
#: Binary ALU ops of ``tensor_tensor`` / ``tensor_scalar`` / ``tensor_tensor_scan``: NKI's
#: arithmetic operators (comparisons and logical ops give 1.0 or 0.0), plus ``divide``,
#: ``bypass`` and ``abs`` (``nl.abs`` in an op slot: the magnitude of its left operand, the
#: other ignored, as nki-library's rmsnorm_quant uses it for an absolute maximum), and its
#: bitvec operators (:data:`BITVEC_OPS`: integer bit patterns, exact).
BITVEC_OPS = ("bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift")
ALU_OPS = ("add", "subtract", "multiply", "divide", "max", "min", "pow", "bypass",
           "equal", "not_equal", "greater", "greater_equal", "less", "less_equal",
           "logical_and", "logical_or", "logical_xor", "abs", "mod", "fmod", "abs_max", "abs_min", *BITVEC_OPS)
#: NKI's other unary ALU operators, in an op slot of ``tensor_scalar`` (whose operand they
#: ignore): ``rsqrt`` (GpSimd or ACT), ``reciprocal``, ``logical_not`` and the bitvec
#: ``invert`` (the ISA's table of math operators).
UNARY_ALU_OPS = ("rsqrt", "reciprocal", "logical_not", "invert")
#: Reductions of ``tensor_reduce`` (the arithmetic rows NKI marks as legal reduction ops,
#: ``subtract`` aside).
REDUCE_OPS = ("add", "subtract", "max", "min", "multiply", "logical_and", "logical_or", "logical_xor",
              "bitwise_and", "bitwise_or", "bitwise_xor")
#: The fused reduction of ``activation``: the ACT reduce registers sum, and from NeuronCore-v3
#: take the max or the min (the activation_reduce page restricts v2 to addition); from v4 the
#: signed element of the largest or smallest magnitude (activate2's page: ``nl.abs_max`` / ``nl.abs_min``).
ACT_REDUCE_OPS = ("add", "max", "min", "abs_max", "abs_min")
#: Elements per partition one ``bn_stats`` reads at most.
BN_STATS_FMAX = 512
#: DMA descriptor-generation modes [2.4].
DGE_MODES = ("none", "swdge", "hwdge")


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_number(v: Any) -> bool:
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return False
    if isinstance(v, int):
        try:  # an integer a float computation can use (not one of 400 digits)
            float(v)
        except OverflowError:
            return False
    return True


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _one_of(*choices: str) -> Callable[[Any], bool]:
    def check(v: Any) -> bool:
        return v in choices

    check.__doc__ = "one of " + ", ".join(repr(c) for c in choices)
    check.choices = choices  # type: ignore[attr-defined]  # read by the docs generator (enum)
    return check


_is_bool.__doc__ = "a boolean"
_is_number.__doc__ = "a number"
_is_int.__doc__ = "an integer"


def _non_negative_int(v: Any) -> bool:
    """a non-negative integer below 2**63"""
    return _is_int(v) and 0 <= v < 2**63


def _group(v: Any) -> bool:
    """a string or integer group id"""
    return isinstance(v, str) or _is_int(v)


def _number_or_read(v: Any) -> bool:
    """a number (an immediate) or {"read": INDEX} (a [P, 1] tile among the reads)"""
    if _is_number(v):
        return True
    return isinstance(v, dict) and set(v) == {"read"} and _is_int(v["read"])


def _steps(v: Any) -> bool:
    """a list of [step, count] pairs (integers, counts >= 1), outermost first"""
    return isinstance(v, list) and all(isinstance(p, list) and len(p) == 2 and _is_int(p[0]) and _is_int(p[1])
                                       and p[1] >= 1 for p in v)


def _axes(v: Any) -> bool:
    """a free axis (an integer >= 1) or a non-empty list of them"""
    items = v if isinstance(v, list) else [v]
    return bool(items) and all(_is_int(a) and a >= 1 for a in items)


#: Attributes every op accepts.
COMMON_ATTRS: dict[str, Callable[[Any], bool]] = {"cycles": _non_negative_int}


@dataclass(frozen=True, slots=True)
class OpSpec:
    """What the table knows about one op."""

    name: str
    engines: tuple[str, ...]
    reads: tuple[int, int]
    """Minimum and maximum number of read accesses."""
    writes: tuple[int, int]
    attrs: dict[str, Callable[[Any], bool]] = field(default_factory=dict)
    """Attribute name -> validator (its docstring says what is expected)."""
    opaque: bool = False
    doc: str = ""
    operands: tuple[str, ...] = ()
    """Per-partition operand attributes, in shorthand order (see :mod:`neuronsim.machine.model.oprules`)."""
    data_reads: int = 1
    """Reads before the per-partition operand tiles (the data the op streams)."""

    def attr_validator(self, key: str) -> Callable[[Any], bool] | None:
        return COMMON_ATTRS.get(key) or self.attrs.get(key)


_ALL = SEQUENCERS
#: Comparisons ``range_select`` applies to the free index (NKI ``range_select``'s list).
RANGE_CMPS = ("equal", "less", "less_equal", "greater", "greater_equal")
#: Reductions of ``tensor_scalar_cumulative`` (its ``op1``) and ``tensor_partition_reduce``.
CUMULATIVE_OPS = ("add", "subtract", "multiply", "max", "min")


def _positive_int(v: Any) -> bool:
    """a positive integer"""
    return _is_int(v) and v >= 1


def _shape(v: Any) -> bool:
    """a list of positive integers (the source's shape, partitions first)"""
    return isinstance(v, list) and bool(v) and all(_positive_int(n) for n in v)


def _perm(v: Any) -> bool:
    """a permutation of 0 .. k-1 (the i-th result axis is source axis v[i])"""
    return isinstance(v, list) and sorted(v) == list(range(len(v))) and all(_is_int(a) for a in v)


def _shuffle_mask(v: Any) -> bool:
    """a list of 32 source partitions of a quadrant (integers 0..31, or 255: keep the destination's)"""
    return isinstance(v, list) and len(v) == 32 and all(_is_int(m) and (0 <= m < 32 or m == 255) for m in v)


# The top-8 search, shuffle, cumulative and predicated ops of ``nki.isa`` (meanings in
# neuronsim.machine.model.semantics_select): the accumulating ones take the previous value of
# the engine's accumulator register as their ``initial`` operand tile.
_SEARCH_AND_SELECT = (
    OpSpec("max8", ("dve",), (1, 1), (1, 1), doc="out[p, 0:8] = the 8 largest values of in[p], descending"),
    OpSpec("nc_find_index8", ("dve",), (2, 2), (1, 1),
           doc="out[p, j] = index of the first (not yet taken) occurrence of vals[p, j] in data[p]"),
    OpSpec("nc_match_replace8", ("dve",), (2, 2), (1, 2), {"imm": _is_number},
           doc="out = data with the first occurrence of each vals[p, j] replaced by imm; writes[1] = its index"),
    OpSpec("nc_stream_shuffle", ("dve",), (1, 2), (1, 1), {"mask": _shuffle_mask},
           doc="out[32q + i] = in[32q + mask[i]] in every quadrant q (mask 255: out[32q + i] kept)"),
    OpSpec("tensor_scalar_cumulative", ("dve",), (1, 3), (1, 1),
           {"op0": _one_of(*ALU_OPS), "operand0": _number_or_read, "op1": _one_of(*CUMULATIVE_OPS),
            "initial": _number_or_read},
           doc="reg = initial; out[:, i] = reg = (in[:, i] <op0> operand0) <op1> reg",
           operands=("operand0", "initial")),
    OpSpec("range_select", ("dve",), (3, 4), (1, 2),
           {"cmp0": _one_of(*RANGE_CMPS), "cmp1": _one_of(*RANGE_CMPS), "start": _is_int, "value": _is_number,
            "bound0": _number_or_read, "bound1": _number_or_read, "initial": _number_or_read},
           doc="out = in where cmp0(start + i, bound0) and cmp1(start + i, bound1) else value; "
               "writes[1][p] = max(initial, max(out[p]))",
           operands=("bound0", "bound1", "initial")),
    OpSpec("exponential", ("dve",), (1, 3), (1, 2), {"max_value": _number_or_read, "initial": _number_or_read},
           doc="out = exp(in - max_value) in fp32 (NeuronCore-v4's Vector Engine); "
               "writes[1][p] = initial + sum(out[p])",
           operands=("max_value", "initial")),
    OpSpec("select_reduce", ("dve",), (2, 4), (1, 2),
           {"reverse_pred": _is_bool, "on_false": _number_or_read, "initial": _number_or_read},
           doc="out = on_true where predicate != 0 (== 0 with reverse_pred) else on_false; "
               "writes[1][p] = max(initial, max(out[p]))",
           operands=("on_false", "initial"), data_reads=2),
    OpSpec("tensor_copy_predicated", ("dve",), (2, 3), (1, 1), {"value": _is_number, "reverse_pred": _is_bool},
           doc="out = src (or value) where predicate != 0 (== 0 with reverse_pred), else out unchanged"),
    OpSpec("tensor_partition_reduce", ("pool",), (1, 1), (1, 1),
           {"op": _one_of("add", "multiply", "max", "min", "bitwise_or", "bitwise_and", "bitwise_xor")},
           doc="out[0, f] = reduce over the partitions p of in[p, f]"),
    OpSpec("sequence_bounds", ("pool",), (1, 1), (1, 1),
           doc="out[p, 0, i] / out[p, 1, i] = start / end (exclusive) of the run of equal ids holding in[0, i]"),
    OpSpec("nonzero_with_count", ("pool",), (1, 2), (1, 1), {"index_offset": _is_int, "padding": _is_int},
           doc="rows 0, 16, ...: indices of the non-zero elements + index_offset, padding, then their count"),
    OpSpec("nc_n_gather", ("pool",), (2, 2), (1, 1),
           doc="out[p, j] = data[p, indices[p, j]], data's free dimensions flattened"),
    OpSpec("dma_transpose", _ALL, (1, 1), (1, 1), {"dge": _one_of(*DGE_MODES), "shape": _shape, "axes": _perm},
           doc="out[F, P] = in[P, F]: a DMA that transposes a 2-D source (with shape / axes: "
               "out = in as shape, its axes permuted)"),
    OpSpec("dma_accumulate", _ALL, (2, 2), (1, 1), {"dge": _one_of(*DGE_MODES), "op": _one_of("add", "max", "min")},
           doc="out = out <op> in: a read-modify-write DMA (reads[1] is the destination itself)"),
    OpSpec("local_gather", ("pool",), (2, 2), (1, 1), {"elements": _positive_int, "valid": _positive_int},
           doc="per 16 partitions, out[p, j*k:(j+1)*k] = data[p, i_j:i_j+k] for the core's indices i_j"),
)
#: The microscaling ops (NeuronCore-v4; meanings in neuronsim.machine.model.semantics_mx).
_MX_DTYPES = ("float8_e4m3fn_x4", "float8_e5m2_x4", "float4_e2m1fn_x4")
_MX = (
    OpSpec("quantize_mx", ("dve",), (1, 1), (2, 2), {"dtype": _one_of(*_MX_DTYPES[:2]), "scale_start": _is_int},
           doc="writes[0][p, f] = 4 lanes in[p, 4f:4f+4] / 2^e; writes[1] = e per 8 partitions x 1 element"),
    OpSpec("matmul_mx", ("pe",), (4, 5), (1, 1),
           {"accumulate": _is_bool, "group": _group, "stationary_dtype": _one_of(*_MX_DTYPES),
            "moving_dtype": _one_of(*_MX_DTYPES), "stationary_scale_start": _is_int,
            "moving_scale_start": _is_int},
           doc="out[M,N] (+)= sum over K and 4 lanes of stationary[K,M,j] * moving[K,N,j], scaled, in fp32"),
)
OP_TABLE: dict[str, OpSpec] = {
    spec.name: spec
    for spec in (
        OpSpec("dma_copy", _ALL, (1, 1), (1, 1), {"dge": _one_of(*DGE_MODES), "bitcast": _is_bool},
               doc="copy the source bytes to the destination, casting element-wise via fp32 (bitcast: as they are)"),
        OpSpec("matmul", ("pe",), (2, 3), (1, 1),
               {"accumulate": _is_bool, "group": _group, "double_row": _is_bool},
               doc="out[M,N] (+)= stationary[K,M]^T @ moving[K,N] in fp32 (double_row: [K,2,M] and [K,2,N], "
                   "the pairs contracted too)"),
        OpSpec("transpose", ("pe", "dve"), (1, 1), (1, 1), doc="out[F,P] = in[P,F]"),
        OpSpec("activation", ("act",), (1, 3), (1, 2),
               {"func": _one_of(*ACTIVATION_FUNCS), "scale": _number_or_read, "bias": _number_or_read,
                "reduce_op": _one_of(*ACT_REDUCE_OPS), "group": _group},
               doc="out = func(in * scale + bias); with reduce_op, writes[1][p] = reduce(out[p, :])",
               operands=("bias", "scale")),
        OpSpec("tensor_tensor", ("dve", "pool"), (2, 2), (1, 1),
               {"op": _one_of(*ALU_OPS), "group": _group}, doc="out = in0 <op> in1"),
        OpSpec("tensor_scalar", ("dve", "act", "pool"), (1, 3), (1, 1),
               {"op0": _one_of(*ALU_OPS, *UNARY_ALU_OPS), "operand0": _number_or_read,
                "op1": _one_of(*ALU_OPS, *UNARY_ALU_OPS), "operand1": _number_or_read, "reverse": _is_bool,
                "reverse0": _is_bool, "reverse1": _is_bool},
               doc="out = (in <op0> operand0) <op1> operand1, operands immediates or [P,1] tiles",
               operands=("operand0", "operand1")),
        OpSpec("tensor_tensor_scan", ("dve",), (2, 3), (1, 1),
               {"op0": _one_of(*ALU_OPS), "op1": _one_of(*ALU_OPS), "initial": _number_or_read,
                "reverse0": _is_bool, "reverse1": _is_bool},
               doc="out[:, i] = (data0[:, i] <op0> out[:, i-1]) <op1> data1[:, i], out[:, -1] = initial",
               operands=("initial",), data_reads=2),
        OpSpec("tensor_reduce", ("dve",), (1, 1), (1, 1),
               {"op": _one_of(*REDUCE_OPS), "axis": _axes, "negate": _is_bool, "keepdims": _is_bool,
                "group": _group},
               doc="out[p, kept..] = reduce over the axis dims (default: every free dim) of in[p]"),
        OpSpec("bn_stats", ("dve",), (1, 1), (1, 1),
               doc="out[p] = (count, mean, var*count) of the even, then of the odd elements of in[p]"),
        OpSpec("bn_aggr", ("dve",), (1, 1), (1, 1),
               doc="out[p] = (mean, variance) of the (count, mean, var*count) triples of in[p]"),
        OpSpec("tensor_copy", ("dve", "act", "pool"), (1, 1), (1, 1), {"dynamic": _one_of("src", "dst")},
               doc="out = cast(in) (attr dynamic: the src / dst address read at run time)"),
        OpSpec("memset", ("dve", "pool"), (0, 0), (1, 1), {"value": _is_number}, doc="out = value"),
        OpSpec("iota", ("pool",), (0, 0), (1, 1),
               {"base": _is_number, "step": _is_number, "partition_step": _is_number, "pattern": _steps},
               doc="out[p, i] = base + p * partition_step + i * step (pattern: + sum of step_d * i_d)"),
        OpSpec("affine_select", ("pool",), (1, 1), (1, 1),
               {"offset": _is_number, "channel_multiplier": _is_number, "pattern": _steps,
                "cmp": _one_of(*ALU_OPS), "value": _is_number},
               doc="out = in where cmp(offset + p * channel_multiplier + pattern . i, 0) else value"),
        OpSpec("set_rand_state", ("dve", "pool"), (0, 1), (0, 0), {"seed": _non_negative_int},
               doc="seed the engine's random generator (from attr seed, or the first read)"),
        OpSpec("get_rand_state", ("dve", "pool"), (0, 0), (1, 1),
               doc="out = the engine's generator state as uint32 words (set_rand_state of them restores it)"),
        OpSpec("random", ("dve", "pool"), (0, 0), (1, 1),
               {"low": _is_number, "high": _is_number, "bits": _is_bool},
               doc="out = uniform[low, high) from the engine's random generator"),
        *_SEARCH_AND_SELECT,
        *_MX,
    )
}


def _stt(n: int, two_byte: bool, attrs: Any, spec: Any) -> float:
    """``scalar_tensor_tensor``: 2N, N for 2-byte operands with subtract / multiply."""
    fast = two_byte and all(attrs.get(k) in ("subtract", "multiply") for k in ("op0", "op1"))
    return float(n if fast else 2 * n)


#: Element cost (cycles, before the MIN_II floor / GPSIMD_START) of opaque ops named after an
#: ``nki.isa`` instruction, from its docstring's "estimated instruction cost" (``nki.isa``
#: API reference, release 2.26): ``formula(N, two_byte_operands, attrs, machine)``.
ISA_COSTS: dict[str, Callable[[int, bool, Any, Any], float]] = {
    "reciprocal": lambda n, _b, _a, _s: 8.0 * n,
    "scalar_tensor_tensor": _stt,
    "tensor_copy_predicated": lambda n, _b, _a, _s: 2.0 * n,
    "tensor_scalar_reduce": lambda n, _b, _a, s: float(max(s.min_ii_cycles, n) + s.min_ii_cycles),
    "activation_reduce": lambda n, _b, _a, s: float(max(s.min_ii_cycles, n) + s.min_ii_cycles),
    "tensor_copy_dynamic_src": lambda n, _b, _a, _s: float(max(600, n)),
    "tensor_copy_dynamic_dst": lambda n, _b, _a, _s: float(max(600, n)),
    "affine_select": lambda n, _b, _a, _s: float(n),
}


def op_spec(op: str) -> OpSpec:
    """The spec of ``op``; unknown names are opaque ops accepting any operands and attrs."""
    spec = OP_TABLE.get(op)
    if spec is not None:
        return spec
    return _opaque_spec(op)


@lru_cache(maxsize=4096)  # one per opaque op name, not one per instance asked about
def _opaque_spec(op: str) -> OpSpec:
    return OpSpec(op, _ALL, (0, 1 << 30), (0, 1 << 30), opaque=True,
                  doc="opaque: writes are a deterministic function of reads and the op name")


#: ``extras`` key of an instruction whose engine the kernel left to the compiler (NKI's
#: ``engine=unknown``, the default of ``nisa.tensor_scalar`` and of the ``nl.*`` elementwise and
#: copy calls): the engines the frontend offers; the ``schedule`` pass picks one of them.
ENGINE_CHOICE_KEY = "x-engines"
#: The ALU ops the frontend offers to both DVE and ACT: the plain arithmetic both engines'
#: ``tensor_scalar`` run (NKI's ``tensor_scalar``: "Vector or Scalar or GpSimd Engine").
MOVABLE_ALU_OPS = frozenset({"add", "subtract", "multiply", "max", "min", "bypass"})


def engine_choices(instr: Any) -> tuple[str, ...]:
    """The engines ``instr`` may run on: its own, or, when the kernel left the choice to the
    compiler (:data:`ENGINE_CHOICE_KEY`), those listed that the table allows for its op.

    >>> from neuronsim.machine.ir.program import Instruction, frozen_mapping
    >>> offered = frozen_mapping({"x-engines": ["dve", "act", "pe"]})
    >>> engine_choices(Instruction("t", "dve", "tensor_copy", extras=offered))
    ('dve', 'act')
    >>> engine_choices(Instruction("t", "dve", "tensor_copy"))
    ('dve',)
    """
    listed = instr.extras.get(ENGINE_CHOICE_KEY) if instr.extras else None
    if not listed:
        return (instr.engine,)
    allowed = op_spec(instr.op).engines
    return tuple(e for e in listed if e in allowed) or (instr.engine,)
