"""Numerical meaning of every op: what an instruction writes, given what it reads.

:func:`execute` takes the instruction, the values of its reads (typed arrays in each access's
element shape, see :mod:`neuronsim.machine.sim.memory`) and live views of its writes, and returns the value
of every write, already cast to the written tensor's dtype and shaped like the write.

Conventions (project choices where the reference is silent):

* **Total.** Every program that validates simulates: operand shapes never make an op fail.
  A compute operand ``(P, c_0, ..., c_k)`` is used as ``[P, F]`` with ``F = c_0 * ... * c_k``
  (row-major).  An input that should match the output is read row-major and repeated
  cyclically or truncated to fill it (``numpy.resize``; a no-op when the counts agree, as in
  any well-shaped program); so is a per-partition operand (activation bias / scale,
  ``tensor_scalar`` operands, a scan's ``initial``) to ``[P, 1]``, and a matmul product or a
  transpose to its output.  Per-partition results (reductions, statistics) fill each output
  partition row-major, partitions and values repeated cyclically or truncated.
* **Arithmetic in fp32.** Inputs are widened to float32 (bf16 / fp8 through ``ml_dtypes``),
  the op is computed in float32 and the result cast to the output dtype.  PSUM accumulation
  is fp32: an accumulating matmul adds to the current contents of the bytes it writes.
* **Casts** (:func:`cast`): float to float goes through float32 and rounds to nearest even
  (``ml_dtypes``); integer to float is exact where the format allows; float to
  integer rounds half to even, saturates at the integer range and maps NaN to 0.
* **Random numbers** come from a per-engine generator (``numpy`` PCG64) kept in the memory
  state; ``set_rand_state`` reseeds it from ``attrs.seed`` or, without it, from the first
  read: the state ``get_rand_state`` stored there, else a BLAKE2b digest of its bytes (seed 0
  when there is neither; ``Memory.seed_rng``).
* **Opaque ops** (any name outside :data:`neuronsim.machine.model.optable.OP_TABLE`): write ``i`` receives
  bytes drawn uniformly from ``[0, 64)`` by a PCG64 stream seeded with
  ``BLAKE2b(op name, i, bytes of read 0, bytes of read 1, ...)``: a deterministic function of
  the op name and every byte it reads, finite in every float dtype.

Op meanings are those of the op table (``doc`` column); the details:

==================================  =================================================================
``dma_copy``                        the source elements, row-major, into the destination; counts must
                                    agree; same dtype copies bytes, integers to integers of one
                                    width keep their bits, otherwise casts via fp32; with
                                    ``bitcast`` the source bytes, row-major, become the destination's
                                    elements as they are (byte counts agree: NKI's ``.ap(dtype=)``)
``matmul``                          ``out[M, N] (+)= stationary[K, M]^T @ moving[K, N]`` in fp32;
                                    ``reads[0]`` stationary, ``reads[1]`` moving (``reads[2]``, the
                                    accumulated tile, is not needed: the write's contents are used);
                                    with different partition counts the first ``min(K, K')`` contract
``transpose``                       ``out[F, P] = in[P, F]``
``activation``                      ``func(in * scale + bias)``; ``scale`` (default 1) and ``bias``
                                    (default 0) are immediates or ``[P, 1]`` tiles
                                    (:mod:`neuronsim.machine.model.oprules`); ``gelu`` is the erf form
                                    ``0.5 x (1 + erf(x / sqrt 2))``, ``gelu_apprx_tanh`` the tanh
                                    one, ``gelu_apprx_sigmoid`` ``x * sigmoid(1.702 x)``; with
                                    ``reduce_op`` the second write gets the per-partition sum of the
                                    fp32 activation result (before the output cast), ACT's reduce
                                    registers being 32-bit (NKI ``activation_reduce``)
``tensor_tensor``                   ``in0 <op> in1``; ``bypass`` passes ``in0``, ``abs`` its magnitude;
                                    comparisons give 1.0 or 0.0, logical ops treat non-zero as true
``tensor_scalar``                   ``(in <op0> s0) <op1> s1``, ``s0`` / ``s1`` immediates (default 0) or
                                    ``[P, 1]`` tiles; a missing op is skipped; ``reverse0`` (``reverse1``)
                                    puts the operand on the left of ``op0`` (``op1``), ``reverse`` both
``tensor_tensor_scan``              per partition, ``state = initial`` (default 0, an immediate or a
                                    ``[P, 1]`` tile) then for each free index ``i`` in order
                                    ``state = (data0[i] <op0> state) <op1> data1[i]``, ``out[i] = state``
                                    (``reverse0``: ``state <op0> data0[i]``; ``reverse1``:
                                    ``data1[i] <op1> ...``); the carried state stays fp32
``tensor_reduce``                   ``out[p, kept] = reduce(in[p, ...])`` over the ``axis`` dimensions
                                    of the read's element shape (default: all free ones; ``keepdims``
                                    only shapes the destination, which the write access already gives);
                                    ``negate`` negates it; results fill the output row-major
``bn_stats``                        per partition ``(count, mean, var * count)`` of the elements at even
                                    free indices, then of those at odd indices (biased variance; an
                                    empty half gives zeros), in fp32
``bn_aggr``                         per partition ``(mean, variance)`` of the union the
                                    ``(count, mean, var * count)`` triples describe (Chan's combination),
                                    in fp32; no elements give zeros
``tensor_copy``                     ``cast(in)``: same dtype copies bytes, otherwise via fp32, integers
                                    to integers too (saturating: the ``tensor_copy`` page)
``memset``                          ``value`` (default 0)
``iota``                            ``base + p * partition_step + i * step`` (defaults 0, 0, 1), ``p`` the
                                    partition and ``i`` the flat free index inside the access; with a
                                    ``pattern`` whose counts multiply to the free size, ``sum(step_d *
                                    i_d)`` over the free index split by its counts replaces ``i * step``
                                    (NKI ``iota``'s access pattern)
``affine_select``                   ``in`` where ``cmp(offset + p * channel_multiplier + sum(step_d *
                                    i_d), 0)`` holds, else ``value``: ``p`` the partition, ``i_d`` the
                                    free index split by the ``pattern`` counts (NKI ``affine_select``;
                                    no pattern, or counts not matching the free size: no free term)
``set_rand_state``                  reseeds the engine's generator; writes nothing
``get_rand_state``                  the engine's generator state as uint32 words, restored by their reseed
``random``                          uniform in ``[low, high)`` (defaults 0, 1); with ``bits``, 32 random
                                    bits per element, truncated to the written integer dtype (NKI ``rng``)
``max8``                            per partition the 8 largest values of the read (fp32), descending; a
                                    row of fewer than 8 is padded with -inf
``nc_find_index8``                  per partition and ``j`` = 0..7 in order, the index of the first
                                    occurrence of ``vals[j]`` (the first 8 elements of read 1's row) not
                                    taken by an earlier ``j``; all ones (the dtype's largest) if none
``nc_match_replace8``               as ``nc_find_index8`` with ``j`` = 7..0 (the API's tie-break for
                                    duplicates); the data with the matched elements set to ``imm``; the
                                    indices to the second write
``nc_stream_shuffle``               ``out[32q + i] = src[32q + mask[i]]`` per quadrant ``q`` (source
                                    partition taken modulo the source's count: a one-partition source
                                    broadcasts); mask 255 keeps the destination element (read 1, if
                                    given, is the destination, read for the ordering)
``tensor_scalar_cumulative``        per partition ``reg = initial`` (default: the identity of ``op1``,
                                    -inf for max) then ``reg = (in[i] <op0> operand0) <op1> reg``,
                                    ``out[i] = reg``, in order along the row
``range_select``                    ``in`` where ``cmp0(start + i, bound0)`` and ``cmp1(start + i,
                                    bound1)``, else ``value`` (default fp32 min); the second write gets
                                    ``max(initial, max of the row)`` (``initial`` default -inf)
``exponential``                     ``exp(in - max_value)`` in fp32 (NeuronCore-v4's DVE); the second
                                    write gets ``initial`` plus the row's sum (``initial`` default 0)
``select_reduce``                   ``on_true`` (read 1) where the predicate (read 0) is non-zero (zero
                                    with ``reverse_pred``), else ``on_false`` (an immediate, a ``[P, 1]``
                                    tile or a full tile); reduction as ``range_select``
``tensor_copy_predicated``          ``src`` (read 1, or the immediate ``value``) where the predicate (read
                                    0) is non-zero (zero with ``reverse_pred``); elsewhere the
                                    destination keeps its contents
``tensor_partition_reduce``         ``out[0, f] = op`` over the partitions of ``in[:, f]``
``sequence_bounds``                 for the ids of the read's first partition (``n`` of them), per element
                                    the start and the exclusive end of the run of equal consecutive ids
                                    holding it; id 0 is padding: start ``n``, end -1; every partition of
                                    the output ``[P, 2, n]`` gets them (NKI ``sequence_bounds``)
``nonzero_with_count``              in rows 0, 16, 32, ... of the access (one per GpSimd core): the
                                    indices of the non-zero elements plus ``index_offset``, then
                                    ``padding`` (default -1), then their count in the last element;
                                    other rows keep the destination's contents (read 1)
``quantize_mx``                     each group of 8 partitions x 4 elements: scale ``2**e`` from its
                                    largest magnitude, the values over it rounded to fp8 and packed
                                    four to an element; ``e`` into the scale rows (``semantics_mx``)
``matmul_mx``                       the packed lanes times their groups' scales, multiplied as
                                    ``matmul`` over partitions and lanes, in fp32 (``semantics_mx``)
``nc_n_gather``                      per partition, the elements of ``data`` (read 0, free dimensions
                                    flattened) at the ``indices`` (read 1) of that partition; an index
                                    outside ``[0, F)`` wraps modulo ``F`` (undefined on the hardware)
``dma_transpose``                   the read as ``[P, F]`` (its first dimension, the rest flattened),
                                    transposed, row-major into the destination; same dtype copies;
                                    with ``shape`` and ``axes``, the read as ``shape`` with its axes
                                    permuted by ``axes`` (NKI ``dma_transpose``'s 3-D / 4-D forms)
``dma_accumulate``                  ``dst + src`` in fp32 (``reads[1]`` the destination's current
                                    bytes), cast to the destination (NKI ``dma_copy(dst_rmw_op=add)``)
``local_gather``                    per GpSimd core (16 partitions): its index elements, partition
                                    first, the first ``valid`` of them, are element offsets into each
                                    of its partitions' own row; each gives ``elements`` consecutive
                                    elements (NKI ``local_gather``; an offset past the row wraps)
==================================  =================================================================
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from neuronsim.machine.model.elementwise import (ACTIVATIONS, MAGNITUDE_FOLDS, NATIVE_INT, VALID_INPUT, native_int,
                                                 outside_valid_input, subtract_fold)
from neuronsim.machine.model.optable import BITVEC_OPS, OP_TABLE, UNARY_ALU_OPS
from neuronsim.machine.model.oprules import ReadOperand, bind_operands, reduce_axes

__all__ = ["BASE_OPS", "cast", "ACTIVATIONS", "ALU", "opaque_bytes", "opaque"]

F32 = np.float32


def cast(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``values`` as ``dtype`` (see the module doc for the rounding rules).

    >>> cast(np.array([1.5, 2.5, -3e9, np.nan], np.float32), np.dtype(np.int32)).tolist()
    [2, 2, -2147483648, 0]
    """
    values = np.asarray(values)
    if values.dtype == dtype:
        return values
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        wide = np.nan_to_num(values.astype(np.float64), nan=0.0)
        return np.clip(np.rint(wide), info.min, info.max).astype(dtype)
    if values.dtype.kind in "iu":
        return values.astype(np.float64).astype(dtype)
    return values.astype(F32, copy=False).astype(dtype)


def _f32(values: np.ndarray) -> np.ndarray:
    return values.astype(F32, copy=False)


def _rows(values: np.ndarray) -> np.ndarray:
    """``[P, F]`` view of a compute operand."""
    return values.reshape(values.shape[0], -1) if values.ndim else values.reshape(1, 1)


def _fit(values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``values`` row-major, repeated or truncated to ``shape`` (see "Total" above).

    >>> _fit(np.arange(3), (2, 2)).tolist()
    [[0, 1], [2, 0]]
    """
    if values.size == math.prod(shape):  # math.prod: np.prod of a tuple costs 60 us an instance
        return values.reshape(shape)
    if values.size == 0:
        return np.zeros(shape, values.dtype)
    return np.resize(values, shape)


def _per_partition(values: np.ndarray, partitions: int) -> np.ndarray:
    return _fit(_f32(values), (partitions, 1))



def _of_data(fn: Callable[[Any], Any]) -> Callable[[Any, Any], np.ndarray]:
    """An ALU op of the data alone (``bypass``, the unary ones): the other operand only
    broadcasts the result to the shape both give."""
    return lambda a, b: np.broadcast_to(fn(a), np.broadcast_shapes(np.shape(a), np.shape(b)))


#: Binary ALU ops of ``tensor_tensor`` / ``tensor_scalar``.
ALU: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "add": np.add,
    "subtract": np.subtract,
    "multiply": np.multiply,
    "divide": np.divide,
    "max": np.maximum,
    "min": np.minimum,
    "pow": np.power,
    "bypass": _of_data(lambda a: a),
    "abs": _of_data(np.abs),
    "equal": lambda a, b: (a == b).astype(F32),
    "not_equal": lambda a, b: (a != b).astype(F32),
    "greater": lambda a, b: (a > b).astype(F32),
    "greater_equal": lambda a, b: (a >= b).astype(F32),
    "less": lambda a, b: (a < b).astype(F32),
    "less_equal": lambda a, b: (a <= b).astype(F32),
    "logical_and": lambda a, b: np.logical_and(a != 0, b != 0).astype(F32),
    "logical_or": lambda a, b: np.logical_or(a != 0, b != 0).astype(F32),
    "logical_xor": lambda a, b: np.logical_xor(a != 0, b != 0).astype(F32),
    "mod": np.mod,  # Python's x % y: the sign of the divisor (the nl.mod page)
    "fmod": np.fmod,  # C's fmod: the sign of the dividend
    # NeuronCore-v4's magnitude comparisons: the signed value of the larger (smaller) magnitude,
    # y on a tie (the nl.abs_max / nl.abs_min pages)
    "abs_max": lambda a, b: np.where(np.abs(a) > np.abs(b), a, b),
    "abs_min": lambda a, b: np.where(np.abs(a) < np.abs(b), a, b),
}


def _as_bits(x: Any) -> np.ndarray:
    """An operand of a bitvec operator as int64: integers as they are, numbers truncated."""
    x = np.asarray(x)
    return x.astype(np.int64) if x.dtype.kind in "iub" else np.trunc(x).astype(np.int64)


# the unary ones in a tensor_scalar op slot: the data alone, the operand ignored
ALU["rsqrt"] = _of_data(lambda a: 1.0 / np.sqrt(a))
ALU["reciprocal"] = _of_data(lambda a: 1.0 / a)
ALU["logical_not"] = _of_data(lambda a: (a == 0).astype(F32))
ALU["invert"] = _of_data(lambda a: ~_as_bits(a))
_UNARY = frozenset(UNARY_ALU_OPS) | {"abs"}
_BITS = frozenset(BITVEC_OPS) | {"invert"}

# the bitvec operators (NKI's: integer tiles on DVE) compute on the integers themselves, not
# through fp32, and their results are stored by keeping the low bits (:func:`_stored`)
for _op, _fn in (("bitwise_and", np.bitwise_and), ("bitwise_or", np.bitwise_or), ("bitwise_xor", np.bitwise_xor),
                 ("left_shift", np.left_shift)):
    ALU[_op] = lambda a, b, fn=_fn: fn(_as_bits(a), _as_bits(b))
# a logical shift of the 32-bit pattern, zeros shifted in: the ALU operator table's "Logical
# Shift Right | nki.language.right_shift" ("Arithmetic Shift Right: Not supported"), so int32
# -1 >> 4 is 0x0FFFFFFF, not -1
ALU["right_shift"] = lambda a, b: np.right_shift(_as_bits(a) & 0xFFFFFFFF, _as_bits(b))


def _stored(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """A result as ``dtype``: an integer result into an integer tile keeps its low bits (a
    bitvec operator's), anything else by :func:`cast`."""
    if np.asarray(values).dtype.kind in "iu" and dtype.kind in "iu":
        return np.asarray(values).astype(dtype)
    return cast(values, dtype)


_REDUCE: dict[str, Callable[..., np.ndarray]] = {
    "add": np.sum,
    "subtract": subtract_fold,
    "max": np.max,
    "min": np.min,
    "multiply": np.prod,
    "logical_and": lambda x, axis: np.all(x != 0, axis=axis).astype(F32),
    "logical_or": lambda x, axis: np.any(x != 0, axis=axis).astype(F32),
    "logical_xor": lambda x, axis: (np.count_nonzero(x, axis=axis) % 2).astype(F32),
    # the bitvec reductions (the tensor_reduce page: "bitvec operators ... treat elements as bit
    # patterns"): on the integers themselves, as the elementwise ones are
    "bitwise_and": lambda x, axis: np.bitwise_and.reduce(_as_bits(x), axis=axis),
    "bitwise_or": lambda x, axis: np.bitwise_or.reduce(_as_bits(x), axis=axis),
    "bitwise_xor": lambda x, axis: np.bitwise_xor.reduce(_as_bits(x), axis=axis),
}


def opaque_bytes(op: str, index: int, reads: Sequence[np.ndarray], nbytes: int) -> np.ndarray:
    """The bytes an opaque op writes to its write ``index`` (see the module doc).

    >>> a = opaque_bytes("foo", 0, [np.arange(4, dtype=np.int32)], 8)
    >>> bool((a == opaque_bytes("foo", 0, [np.arange(4, dtype=np.int32)], 8)).all()), int(a.max()) < 64
    (True, True)
    >>> bool((a == opaque_bytes("bar", 0, [np.arange(4, dtype=np.int32)], 8)).all())
    False
    """
    digest = hashlib.blake2b(op.encode(), digest_size=16)
    digest.update(index.to_bytes(4, "little"))
    for value in reads:
        digest.update(value.size.to_bytes(8, "little"))
        digest.update(np.ascontiguousarray(value).tobytes())
    seed = int.from_bytes(digest.digest(), "little")
    return np.random.default_rng(seed).integers(0, 64, size=nbytes, dtype=np.uint8)


# -- the ops -------------------------------------------------------------------------------
Outs = Sequence[np.ndarray]


def _dma_copy(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    src, out = reads[0], outs[0]
    if attrs.get("bitcast", False):
        return [np.ascontiguousarray(src).view(np.uint8).reshape(-1).view(out.dtype).reshape(out.shape)]
    if src.dtype == out.dtype:
        return [_fit(src, out.shape)]
    if src.dtype.kind in "iu" and out.dtype.kind in "iu" and src.dtype.itemsize == out.dtype.itemsize:
        # integers of one width keep their bits (a uint32 0xFFFFFFFF lands as int32 -1, as
        # neuronx-distributed's find_index kernel says of its not-found slots); of another width
        # they go through fp32 as the dma_copy page says (int32 300 into int8 saturates at 127)
        return [_fit(_stored(src, out.dtype), out.shape)]
    return [_fit(cast(_f32(src), out.dtype), out.shape)]


def _matmul(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    stationary, moving = _rows(reads[0]), _rows(reads[1])
    if attrs.get("double_row", False):  # [K, 2, M] and [K, 2, N]: each pair of rows contracted as two
        stationary = stationary.reshape(-1, max(stationary.shape[1] // 2, 1))
        moving = moving.reshape(-1, max(moving.shape[1] // 2, 1))
    k = min(stationary.shape[0], moving.shape[0])
    product = _f32(stationary[:k]).T @ _f32(moving[:k])
    out = outs[0]
    result = _fit(product, out.shape)
    if attrs.get("accumulate", False):  # into the product, ours alone: no second [P, N] buffer a matmul
        result = np.add(result, _f32(out), out=result)
    return [cast(result, out.dtype)]


def _transpose(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    flipped = _rows(reads[0]).T
    exact = engine != "pe" or getattr(state, "pe_transpose_exact", False)  # DVE; PE from NeuronCore-v3 on
    if exact and flipped.dtype == outs[0].dtype:  # the elements moved, bits and all (any dtype)
        return [_fit(flipped, outs[0].shape)]
    return [cast(_fit(_f32(flipped), outs[0].shape), outs[0].dtype)]  # v2's PE: a matmul by the identity, in fp32


def _operand(value: float | ReadOperand | None, reads, partitions: int, default: float) -> Any:
    """A per-partition operand: a ``[P, 1]`` tile or a float32 immediate."""
    if isinstance(value, ReadOperand):
        return _per_partition(reads[value.index], partitions)
    return F32(default if value is None else value)


def _bits_operand(value: float | ReadOperand | None, reads, partitions: int, default: float) -> Any:
    """:func:`_operand` of a bitvec operator: its bits as they are ("bit patterns without any
    data type casting", the tensor_scalar page), not through fp32, where ``0x7FFFFFFF``, the
    clear-the-sign-bit mask, would round to 2**31."""
    if isinstance(value, ReadOperand):
        return _fit(reads[value.index], (partitions, 1))
    value = default if value is None else value
    return np.int64(value) if float(value).is_integer() else F32(value)


def _fill_rows(values: np.ndarray, out: np.ndarray) -> np.ndarray:
    """Per-partition results ``[P, k]`` as ``out``'s shape (see "Total" above).

    >>> _fill_rows(np.array([[1.0, 2.0], [3.0, 4.0]]), np.zeros((3, 3))).tolist()
    [[1.0, 2.0, 1.0], [3.0, 4.0, 3.0], [1.0, 2.0, 1.0]]
    """
    p, f = _rows(out).shape
    picked = values[np.arange(p) % values.shape[0]]
    return picked[:, np.arange(f) % picked.shape[1]].reshape(out.shape)


def _activation(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    out = outs[0]
    rows = _rows(_fit(_f32(reads[0]), out.shape))
    operands = bind_operands(OP_TABLE["activation"], attrs, len(reads))
    scale = _operand(operands["scale"], reads, rows.shape[0], 1.0)
    bias = _operand(operands["bias"], reads, rows.shape[0], 0.0)
    func, z = attrs.get("func", "identity"), rows * scale + bias
    if func in VALID_INPUT and state is not None:  # invalid on the device (elementwise.VALID_INPUT): noted
        state.note_outside(func, outside_valid_input(func, z))
    activated = ACTIVATIONS[func](z).astype(F32)
    results = [cast(activated.reshape(out.shape), out.dtype)]
    if len(outs) > 1:
        fold = {"max": np.max, "min": np.min, **MAGNITUDE_FOLDS}.get(attrs.get("reduce_op", "add"))
        total = activated.sum(axis=1, keepdims=True, dtype=F32) if fold is None else fold(activated, axis=1,
                                                                                           keepdims=True)
        results.append(cast(_fill_rows(total, outs[1]), outs[1].dtype))
    return results


def _tensor_tensor(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    out = outs[0]
    op = attrs.get("op", "add")
    if native_int(op, engine, (reads[0], reads[1], out)):
        a, b = (_fit(r, out.shape).astype(np.int64) for r in reads[:2])
        with np.errstate(divide="ignore"):  # an integer mod by 0 is 0 here
            result = NATIVE_INT[op](a, b).astype(np.int64)
        return [_stored(result, out.dtype)]  # the low 32 bits: wraps as 32-bit
    read = (lambda x: x) if op in BITVEC_OPS else _f32
    a = _fit(read(reads[0]), out.shape)
    b = _fit(read(reads[1]), out.shape)
    return [_stored(ALU[op](a, b), out.dtype)]


def _tensor_scalar(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    out = outs[0]
    bits = any(attrs.get(f"op{k}") in _BITS for k in (0, 1))
    rows = _rows(_fit(reads[0] if bits else _f32(reads[0]), out.shape))
    operands = bind_operands(OP_TABLE["tensor_scalar"], attrs, len(reads))
    reverse = attrs.get("reverse", False)
    kind = np.asarray(reads[0]).dtype.kind
    lane = (np.int32 if kind == "i" else np.uint32) if bits and kind in "iub" else None
    value = rows
    for k in (0, 1):
        op = attrs.get(f"op{k}")
        if op is None:
            continue
        scalar = (_bits_operand if op in _BITS else _operand)(operands[f"operand{k}"], reads, rows.shape[0], 0.0)
        reversed_ = attrs.get(f"reverse{k}", reverse) and op not in _UNARY  # a unary op reads the data alone
        value = ALU[op](scalar, value) if reversed_ else ALU[op](value, scalar)
        if op in _BITS and lane is not None:  # a 32-bit lane's pattern, as the second op reads it
            value = value.astype(lane).astype(np.int64)
    return [_stored(np.broadcast_to(value, rows.shape).reshape(out.shape), out.dtype)]


def _tensor_tensor_scan(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    out = outs[0]
    data0 = _rows(_fit(_f32(reads[0]), out.shape))
    data1 = _rows(_fit(_f32(reads[1]), out.shape))
    partitions = data0.shape[0]
    operands = bind_operands(OP_TABLE["tensor_tensor_scan"], attrs, len(reads))
    carried = np.broadcast_to(_operand(operands["initial"], reads, partitions, 0.0), (partitions, 1))[:, 0]
    op0, op1 = ALU[attrs.get("op0", "multiply")], ALU[attrs.get("op1", "add")]
    reverse0, reverse1 = attrs.get("reverse0", False), attrs.get("reverse1", False)
    result = np.empty_like(data0)
    for i in range(data0.shape[1]):
        first = op0(carried, data0[:, i]) if reverse0 else op0(data0[:, i], carried)
        carried = op1(data1[:, i], first) if reverse1 else op1(first, data1[:, i])
        result[:, i] = carried
    return [cast(result.reshape(out.shape), out.dtype)]


def _tensor_reduce(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    out = outs[0]
    op = attrs.get("op", "add")
    bits = op in BITVEC_OPS  # bit patterns, not fp32 values
    source = reads[0] if bits else _f32(reads[0])
    if source.ndim < 2:
        source = _rows(source)
    axes = tuple(a for a in reduce_axes(attrs.get("axis"), source.ndim) if a < source.ndim) or tuple(
        range(1, source.ndim))
    reduced = np.asarray(_REDUCE[op](source, axis=axes), dtype=None if bits else F32)
    if attrs.get("negate", False):
        reduced = -reduced
    rows = _fill_rows(reduced.reshape(source.shape[0], -1), out)
    return [_stored(rows, out.dtype) if bits else cast(rows, out.dtype)]


def _moments(half: np.ndarray) -> list[np.ndarray]:
    """``count, mean, var * count`` of each row of ``half`` in fp32 (zeros when empty)."""
    count = half.shape[1]
    if count == 0:
        zeros = np.zeros(half.shape[0], F32)
        return [zeros, zeros, zeros]
    mean = half.sum(axis=1, dtype=F32) / F32(count)
    m2 = np.square(half - mean[:, None]).sum(axis=1, dtype=F32)
    return [np.full(half.shape[0], count, F32), mean, m2]


def _bn_stats(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    rows = _rows(_f32(reads[0]))
    stats = np.stack(_moments(rows[:, 0::2]) + _moments(rows[:, 1::2]), axis=1)
    return [cast(_fill_rows(stats, outs[0]), outs[0].dtype)]


def _bn_aggr(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    rows = _rows(_f32(reads[0]))
    whole = rows.shape[1] // 3 * 3
    triples = rows[:, :whole].reshape(rows.shape[0], -1, 3)
    count, mean, m2 = triples[..., 0], triples[..., 1], triples[..., 2]
    total = count.sum(axis=1, dtype=F32)
    safe = np.where(total > 0, total, F32(1))
    grand = (count * mean).sum(axis=1, dtype=F32) / safe
    spread = m2.sum(axis=1, dtype=F32) + (count * np.square(mean - grand[:, None])).sum(axis=1, dtype=F32)
    variance = np.where(total > 0, spread / safe, F32(0))
    stats = np.stack([np.where(total > 0, grand, F32(0)), variance], axis=1).astype(F32)
    return [cast(_fill_rows(stats, outs[0]), outs[0].dtype)]


def _tensor_copy(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    """A compute engine's copy: bit for bit between equal dtypes, else through fp32 (the
    tensor_copy page's "intermediate FP32 cast when input and output data types differ",
    integers too: int32 40000 into int16 saturates at 32767); a DMA keeps the bits of integers
    of one width."""
    src, out = reads[0], outs[0]
    integers = src.dtype.kind in "iub" and out.dtype.kind in "iu"
    if integers and src.dtype != out.dtype and not attrs.get("bitcast", False):
        return [_fit(cast(_f32(src), out.dtype), out.shape)]
    return _dma_copy(attrs, reads, outs, engine, state)


def _memset(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    out = outs[0]
    return [cast(np.full(out.shape, attrs.get("value", 0), dtype=np.float64), out.dtype)]


def _iota(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    out = outs[0]
    rows = _rows(out)
    p = np.arange(rows.shape[0], dtype=np.float64)[:, None]
    free = _pattern_index(attrs.get("pattern") or [], rows.shape[1])
    if free is None:
        free = np.arange(rows.shape[1], dtype=np.float64) * attrs.get("step", 1)
    values = attrs.get("base", 0) + p * attrs.get("partition_step", 0) + free[None, :]
    if np.all(values == np.trunc(values)):  # its page: "computed in 32-bit integer arithmetic": past 2**31 - 1 wraps
        values = (values.astype(np.int64) + 2**31) % 2**32 - 2**31
    return [cast(values.reshape(out.shape), out.dtype)]


def _pattern_index(pattern: list, size: int) -> np.ndarray | None:
    """``sum(step_d * i_d)`` for each flat free index, split by the pattern's counts (outermost
    first); None without a pattern whose counts multiply to ``size``."""
    counts = [count for _step, count in pattern]
    if not counts or int(np.prod(counts)) != size:
        return None
    index = np.indices(counts).reshape(len(counts), -1)
    return sum((step * index[d] for d, (step, _count) in enumerate(pattern)), np.zeros(size))


def _affine_select(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    out = outs[0]
    rows = _rows(out)
    values = _fit(_f32(_rows(reads[0])), rows.shape)
    p = np.arange(rows.shape[0], dtype=np.float64)[:, None]
    free = _pattern_index(attrs.get("pattern") or [], rows.shape[1])
    if free is None:
        free = np.zeros(rows.shape[1], dtype=np.float64)
    affine = attrs.get("offset", 0) + p * attrs.get("channel_multiplier", 0) + free[None, :]
    keep = ALU[attrs.get("cmp", "greater_equal")](F32(affine), F32(0)) != 0
    picked = np.where(keep, values, F32(attrs.get("value", 0)))
    return [cast(picked.reshape(out.shape), out.dtype)]


def _set_rand_state(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    state.seed_rng(engine, attrs.get("seed"), reads[0] if reads else None)
    return []


def _get_rand_state(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    return [state.store_rng(engine, outs[0].shape).astype(outs[0].dtype)]


def _random(attrs, reads, outs, engine, state) -> list[np.ndarray]:
    out = outs[0]
    if attrs.get("bits", False):  # 32 random bits, the low ones kept by the integer cast (NKI rng)
        bits = state.rng(engine).integers(0, 2**32, size=out.shape, dtype=np.uint32)
        return [bits.astype(out.dtype) if out.dtype.kind in "iu" else cast(bits, out.dtype)]
    low, high = attrs.get("low", 0.0), attrs.get("high", 1.0)
    u = state.rng(engine).random(out.shape, dtype=np.float32)
    return [cast(F32(low) + u * F32(high - low), out.dtype)]


def _opaque(op: str, reads, outs) -> list[np.ndarray]:
    return [opaque_bytes(op, i, reads, out.size * out.dtype.itemsize).view(out.dtype).reshape(out.shape)
            for i, out in enumerate(outs)]


_OPS: dict[str, Callable[..., list[np.ndarray]]] = {
    "dma_copy": _dma_copy,
    "matmul": _matmul,
    "transpose": _transpose,
    "activation": _activation,
    "tensor_tensor": _tensor_tensor,
    "tensor_scalar": _tensor_scalar,
    "tensor_tensor_scan": _tensor_tensor_scan,
    "tensor_reduce": _tensor_reduce,
    "bn_stats": _bn_stats,
    "bn_aggr": _bn_aggr,
    "tensor_copy": _tensor_copy,
    "memset": _memset,
    "iota": _iota,
    "affine_select": _affine_select,
    "set_rand_state": _set_rand_state,
    "get_rand_state": _get_rand_state,
    "random": _random,
}

#: the ops defined here; :mod:`neuronsim.machine.model.execute` adds the select and MX families
BASE_OPS = _OPS


def opaque(op: str, reads, outs):
    """Values of an op with no modelled meaning (:func:`_opaque`)."""
    return _opaque(op, reads, outs)
