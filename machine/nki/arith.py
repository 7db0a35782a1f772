"""The math half of ``nki.language``: elementwise arithmetic, activation functions,
reductions, ``nl.matmul`` and ``nl.transpose``.

Every function object carries the ISA operator it names (``alu`` for ``tensor_tensor`` /
``tensor_scalar`` ops, ``act`` for activation functions, ``reduce`` for reductions), so
kernels can pass ``nl.add`` / ``nl.exp`` / ``np.add`` as the ``op=`` of an ``nki.isa`` call.
"""

from __future__ import annotations

from collections.abc import Hashable
from math import prod
from typing import Any

import numpy as np

from neuronsim.machine.ir.dtypes import is_float
from neuronsim.machine.nki import operand_rules, ops
from neuronsim.machine.nki.errors import NkiError, fail, shown
from neuronsim.machine.nki.indexing import ArangeExpr
from neuronsim.machine.nki.tiles import NkiTensor, is_tile
from neuronsim.machine.nki.tiles import result_tile as _result
from neuronsim.machine.nki.legacy_rules import allocated_bias
from neuronsim.machine.nki.mask_boxes import swapped_into
from neuronsim.machine.nki.tracer import api, current

__all__ = ["ALU_OF", "ACT_OF", "alu_name", "act_name", "matmul", "transpose", "sum", "max", "min", "mean",
           "prod_", "add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "exp", "log", "tanh",
           "sigmoid", "relu", "gelu", "gelu_apprx_tanh", "gelu_apprx_sigmoid", "gelu_dx",
           "gelu_apprx_sigmoid_dx", "erf", "erf_dx", "tan", "silu", "square", "sqrt", "rsqrt",
           "reciprocal", "abs", "sign", "negative", "equal", "not_equal", "greater", "greater_equal", "less",
           "less_equal", "logical_and", "logical_or", "logical_xor", "logical_not", "mod", "fmod", "abs_max", "abs_min",
           "var", "all_", "bitwise_and", "bitwise_or",
           "bitwise_xor", "left_shift", "right_shift", "invert", "bypass", "softmax", "rms_norm",
           "silu_dx", "softplus", "mish", "sin", "cos", "arctan", "floor", "ceil", "trunc"]

ALU_OF: dict[Any, str] = {}
ACT_OF: dict[Any, str] = {}


def _one_in_psum(x: Any, y: Any) -> tuple[Any, Any]:
    """``x, y`` with ``y`` copied to SBUF when both are PSUM tiles: an ``nl.*`` operation lowers
    to ``tensor_tensor``, which reads at most one PSUM operand, and the compiler stages the
    other (:func:`~neuronsim.machine.nki.ops.staged_from_psum`), as it does for POOL."""
    if is_tile(x) and is_tile(y) and all(ops.lay(v).tensor.memory.name == "PSUM" for v in (x, y)):
        return x, NkiTensor(ops.staged_from_psum(ops.lay(y)))
    return x, y


def index_tile(expr: Any, dtype: Any = None, mask: Any = None) -> NkiTensor:
    """The values of an index expression as a tile made by ``iota`` (``nisa.iota``'s result; a
    1-D expression is one partition's row)."""
    shape = expr.shape if getattr(expr, "ndim", 0) >= 2 else (1, *getattr(expr, "shape", (1,)))
    return _result(shape, dtype or "int32", "sbuf", lambda dst: ops.iota(dst, expr), mask)


def index_values(value: Any) -> Any:
    """An index vector used as a value (``nl.copy`` or ``nl.broadcast_to`` of ``nl.arange(F)[None,
    :]``, which a public kernel's log records as compiled and exact on a device): its values, the
    int32 :func:`index_tile`; anything else as it is."""
    return index_tile(value) if isinstance(value, ArangeExpr) else value


def _index_values(value: Any, other: Any) -> Any:
    """An index vector (``nl.arange(E)[:, None]``) in arithmetic with a tile: its values
    (``nl.arange(E)[:, None] + start``, a row offset the kernel loaded, is the tile of rows an
    indirect DMA reads); beside a number it stays an index expression."""
    return index_values(value) if is_tile(other) else value


def _binary_fn(name: str, alu: str, generation: int = 2):
    @api(f"nl.{name}")
    def fn(x: Any, y: Any, *, dtype: Any = None, mask: Any = None, **_kw: Any) -> NkiTensor:
        if current().nc_generation < generation:  # nl.abs_max / abs_min: "NeuronCore-v4 (trn3) and newer"
            raise fail(f"nl.{name} runs on NeuronCore-v{generation} and newer (its page); this kernel is traced for "
                       f"NeuronCore-v{current().nc_generation} (trace it for trn3: @nki.jit(platform_target='trn3'))")
        x, y = _index_values(x, y), _index_values(y, x)
        operand_rules.integer_bits(f"nl.{name}", (alu,), x=x, y=y)
        operand_rules.on_chip(f"nl.{name}", x=x, y=y)  # each by its own shape, before any broadcast
        shapes = [v.shape for v in (x, y) if is_tile(v)]
        if not shapes:
            raise fail(f"nl.{name} of two numbers: compute it in Python")
        shape = ops.broadcast_shape(*shapes)
        return _result(shape, ops.result_dtype(dtype, x, y), "sbuf",
                       lambda dst: ops.binary(dst, *_one_in_psum(x, y), alu), mask, (x, y))

    fn.__name__ = name
    ALU_OF[fn] = alu
    return fn


def _unary_fn(name: str, act: str):
    @api(f"nl.{name}")
    def fn(x: NkiTensor, *, dtype: Any = None, mask: Any = None, **_kw: Any) -> NkiTensor:
        if not is_tile(x):
            raise fail(f"nl.{name} computes on a tile, not {shown(x)}: compute a number in Python (math, numpy)")
        allocated_bias(current(), f"nl.{name}", None)
        return _result(x.shape, ops.result_dtype(dtype, x), "sbuf", lambda dst: ops.activation(dst, act, x), mask,
                       (x,))

    fn.__name__ = name
    ACT_OF[fn] = act
    return fn


add = _binary_fn("add", "add")
subtract = _binary_fn("subtract", "subtract")
multiply = _binary_fn("multiply", "multiply")
divide = _binary_fn("divide", "divide")
maximum = _binary_fn("maximum", "max")
minimum = _binary_fn("minimum", "min")
power = _binary_fn("power", "pow")
equal = _binary_fn("equal", "equal")
not_equal = _binary_fn("not_equal", "not_equal")
greater = _binary_fn("greater", "greater")
greater_equal = _binary_fn("greater_equal", "greater_equal")
less = _binary_fn("less", "less")
less_equal = _binary_fn("less_equal", "less_equal")
logical_and = _binary_fn("logical_and", "logical_and")
logical_or = _binary_fn("logical_or", "logical_or")
logical_xor = _binary_fn("logical_xor", "logical_xor")
mod = _binary_fn("mod", "mod")
fmod = _binary_fn("fmod", "fmod")
abs_max = _binary_fn("abs_max", "abs_max", generation=4)
abs_min = _binary_fn("abs_min", "abs_min", generation=4)
# the bitvec operators: integer bit patterns (machine/model/semantics.py computes them on the
# integers themselves, not through fp32)
bitwise_and = _binary_fn("bitwise_and", "bitwise_and")
bitwise_or = _binary_fn("bitwise_or", "bitwise_or")
bitwise_xor = _binary_fn("bitwise_xor", "bitwise_xor")
left_shift = _binary_fn("left_shift", "left_shift")
right_shift = _binary_fn("right_shift", "right_shift")


bypass = _binary_fn("bypass", "bypass")

exp = _unary_fn("exp", "exp")
log = _unary_fn("log", "log")
tanh = _unary_fn("tanh", "tanh")
sigmoid = _unary_fn("sigmoid", "sigmoid")
relu = _unary_fn("relu", "relu")
gelu = _unary_fn("gelu", "gelu")
gelu_apprx_tanh = _unary_fn("gelu_apprx_tanh", "gelu_apprx_tanh")
gelu_apprx_sigmoid = _unary_fn("gelu_apprx_sigmoid", "gelu_apprx_sigmoid")
gelu_dx = _unary_fn("gelu_dx", "gelu_dx")
gelu_apprx_sigmoid_dx = _unary_fn("gelu_apprx_sigmoid_dx", "gelu_apprx_sigmoid_dx")
erf = _unary_fn("erf", "erf")
erf_dx = _unary_fn("erf_dx", "erf_dx")
tan = _unary_fn("tan", "tan")
silu = _unary_fn("silu", "silu")
square = _unary_fn("square", "square")
sqrt = _unary_fn("sqrt", "sqrt")
rsqrt = _unary_fn("rsqrt", "rsqrt")
reciprocal = _unary_fn("reciprocal", "reciprocal")
abs = _unary_fn("abs", "abs")  # noqa: A001
sign = _unary_fn("sign", "sign")
negative = _unary_fn("negative", "neg")
identity = _unary_fn("identity", "identity")
silu_dx = _unary_fn("silu_dx", "silu_dx")
softplus = _unary_fn("softplus", "softplus")
mish = _unary_fn("mish", "mish")
sin = _unary_fn("sin", "sin")
cos = _unary_fn("cos", "cos")
arctan = _unary_fn("arctan", "arctan")
floor = _unary_fn("floor", "floor")
ceil = _unary_fn("ceil", "ceil")
trunc = _unary_fn("trunc", "trunc")


def _constant_fn(name: str, alu: str, value: int, doc: str):
    """``nl.<name>(x)``: ``x <alu> value``, a ``tensor_scalar`` on DVE."""
    @api(f"nl.{name}")
    def fn(x: Any, *, dtype: Any = None, mask: Any = None, **_kw: Any) -> NkiTensor:
        operand_rules.integer_bits(f"nl.{name}", (name,), x=x)  # nl.invert: a bitvec operator
        return _result(x.shape, ops.result_dtype(dtype, x), "sbuf", lambda dst: ops.binary(dst, x, value, alu), mask,
                       (x,))

    fn.__name__, fn.__doc__ = name, doc
    return fn


logical_not = _constant_fn("logical_not", "equal", 0, "``x == 0`` (1.0 where ``x`` is zero).")
invert = _constant_fn("invert", "bitwise_xor", -1, "``~x``: every bit flipped, a ``bitwise_xor`` with all ones (-1).")

# numpy's functions name the same operators (kernels pass np.add / np.exp as op=)
for _np, _nl in ((np.add, add), (np.subtract, subtract), (np.multiply, multiply), (np.divide, divide),
                 (np.maximum, maximum), (np.minimum, minimum), (np.power, power), (np.equal, equal),
                 (np.not_equal, not_equal), (np.greater, greater), (np.greater_equal, greater_equal),
                 (np.less, less), (np.less_equal, less_equal), (np.logical_and, logical_and),
                 (np.logical_or, logical_or), (np.logical_xor, logical_xor), (np.bitwise_and, bitwise_and),
                 (np.bitwise_or, bitwise_or), (np.bitwise_xor, bitwise_xor), (np.left_shift, left_shift),
                 (np.right_shift, right_shift), (np.mod, mod), (np.fmod, fmod)):
    ALU_OF[_np] = ALU_OF[_nl]
ALU_OF[abs] = ALU_OF[np.abs] = "abs"  # nl.abs in an ALU op slot (machine/model/optable.py ALU_OPS)
# the other unary ALU operators of the ISA's table, in a tensor_scalar op slot (UNARY_ALU_OPS)
ALU_OF[rsqrt], ALU_OF[logical_not], ALU_OF[invert] = "rsqrt", "logical_not", "invert"
ALU_OF[reciprocal] = ALU_OF[np.reciprocal] = "reciprocal"
for _np, _nl in ((np.exp, exp), (np.log, log), (np.tanh, tanh), (np.sqrt, sqrt), (np.abs, abs), (np.sign, sign),
                 (np.square, square), (np.negative, negative), (np.reciprocal, reciprocal)):
    ACT_OF[_np] = ACT_OF[_nl]


def alu_name(op: Any) -> str:
    """The ISA ALU operator of ``op`` (``nl.add``, ``np.add`` or a name)."""
    if isinstance(op, str):
        return {"maximum": "max", "minimum": "min", "power": "pow"}.get(op, op)
    if not isinstance(op, Hashable):  # (a list where the operator goes: no table holds it)
        raise fail(f"{shown(op)} is not an ALU operator NKI accepts here")
    fn = getattr(op, "__wrapped__", op)
    for candidate in (op, fn):
        if candidate in ALU_OF:
            return ALU_OF[candidate]
    if op in REDUCE_OF:
        return REDUCE_OF[op]
    raise fail(f"{getattr(op, '__name__', op)!r} is not an ALU operator NKI accepts here")


def alu_names(*ops_: Any) -> tuple[str, ...] | None:
    """The ALU operators of ``ops_`` (None ones left out), or None where one is no operator (a tile
    where the operator goes: the call's own diagnosis of its arguments says so, later)."""
    try:
        return tuple(alu_name(op) for op in ops_ if op is not None)
    except NkiError:
        return None


def act_name(op: Any) -> str:
    """The activation function of ``op`` (``nl.exp``, ``np.exp``, ``nl.copy`` ...)."""
    if isinstance(op, str):
        return op
    if not isinstance(op, Hashable):
        raise fail(f"{shown(op)} is not an activation function neuronsim models")
    if op in ACT_OF:
        return ACT_OF[op]
    name = getattr(op, "__name__", "")
    if name in ("copy", "identity"):
        return "identity"
    raise fail(f"{name or op!r} is not an activation function neuronsim models")


# -- reductions ----------------------------------------------------------------------------
def _partition_reduce(x: NkiTensor, op: str, scale_by_count: bool, dtype: Any, mask: Any) -> NkiTensor:
    """A reduction over the partition axis alone: POOL's ``tensor_partition_reduce`` into one
    partition (the result keeps that axis, ``[1, ...]``, so it stays a tile)."""
    def emit(dst) -> None:
        total = dst
        if scale_by_count and dst.element_dtype != "float32":  # the mean page: float32 intermediates
            total = ops.float32_tile(dst.shape)
        emit_partition_reduce(total, alu_name(op), ops.lay(x))
        if scale_by_count:
            current().kb.tensor_scalar(dst.view(), total.view(), op0="multiply", operand0=1.0 / x.shape[0])

    return _result((1, *x.shape[1:]), _reduced_dtype(dtype, x, scale_by_count), "sbuf", emit, mask)


def _reduced_dtype(dtype: Any, x: NkiTensor, mean: bool) -> str:
    """A reduction's result dtype: the call's, else the tile's; a mean of integers is float32
    (the nl.mean page: "float32 intermediate and return values are used for integer inputs")."""
    out = ops.result_dtype(dtype, x)
    return "float32" if mean and dtype is None and not is_float(out) else out


def emit_partition_reduce(dst: Any, reducer: str, data: Any) -> None:
    """POOL's ``tensor_partition_reduce`` of the tile layout ``data`` into the one partition of
    ``dst`` (``nisa.tensor_partition_reduce``, and ``nl.sum`` ... over the partition axis)."""
    if reducer not in ("add", "multiply", "max", "min", "bitwise_or", "bitwise_and", "bitwise_xor"):
        raise current().refuse(f"nisa.tensor_partition_reduce(op={reducer})", "add, max and the bitwise ones")
    source = ops.staged_from_psum(data)  # POOL cannot read PSUM
    if dst.view().num_partitions != 1 or dst.view().free_count != source.view().free_count:
        raise fail(f"nisa.tensor_partition_reduce: the result {dst.shape} is one partition of the data's "
                   f"{source.view().free_count} elements")
    tracer = current()
    tracer.note_write(dst)
    tracer.kb.instruction("tensor_partition_reduce", "pool", [source.view()], [dst.view()], attrs={"op": reducer})


def _axis_given(name: str, x: Any, axis: Any) -> None:
    """Refuse a reduction called without ``axis``: its page (``nki.language.sum(x, axis, *, ...)``,
    and ``max``, ``min``, ``prod``, ``mean``, ``all``, ``var`` alike) gives it no default, where
    numpy's reduces every axis.  An agent-written kernel's ``nl.sum(q * q)`` of a 1-D tile had
    failed inside neuronsim ("min() arg is an empty sequence"), and of a 2-D tile summed its
    free axes as if NKI did."""
    if axis is None:
        shape = tuple(getattr(x, "shape", ()))
        free = tuple(range(1, len(shape)))
        hint = ("a 1-D tile has only its partition axis (axis=0: a cross-partition reduction, where the "
                "API generation allows one)" if not free else
                f"e.g. axis={free[0] if len(free) == 1 else free} for the free axes of a {list(shape)} tile")
        raise fail(f"nl.{name}: axis is required (nki.language.{name}(x, axis, ...) has no default, unlike "
                   f"numpy's); {hint}")


def _reduce_fn(name: str, op: str, scale_by_count: bool = False):
    @api(f"nl.{name}")
    def fn(x: NkiTensor, axis: Any = None, *, dtype: Any = None, mask: Any = None, keepdims: bool = False,
           **_kw: Any) -> NkiTensor:
        _axis_given(name, x, axis)
        if ops.normal_axes(x.shape, axis) == [0]:  # the partition axis alone: POOL
            if current().generation == "legacy":  # (it ran: a probe; NKI 0.7's pages take axis 0 alone)
                raise fail(f"nl.{name}(axis=0): the legacy nl.{name} page's axis \"must be free dimensions, not "
                           f"partition dimension (0)\"; reduce across partitions with nisa.tensor_partition_reduce")
            return _partition_reduce(x, op, scale_by_count, dtype, mask)
        operand_rules.on_chip(f"nl.{name}", x=x)
        axes = ops.free_axes(x.shape, axis, "a reduction")
        kept = tuple(n for a, n in enumerate(x.shape) if a not in axes)
        shape = tuple(1 if a in axes else n for a, n in enumerate(x.shape)) if keepdims else kept
        count = prod(x.shape[a] for a in axes)

        def emit(dst) -> None:
            src, reduced = ops.reduced_last(ops.lay(x), axes)
            total = dst
            if scale_by_count and dst.element_dtype != "float32":  # the mean page: float32 intermediates
                total = ops.float32_tile(dst.shape)
            current().kb.tensor_reduce(total.view(), src.view(), op=op, axis=reduced)
            if scale_by_count:
                current().kb.tensor_scalar(dst.view(), total.view(), op0="multiply", operand0=1.0 / count)

        return _result(shape, _reduced_dtype(dtype, x, scale_by_count), "sbuf", ops.reducing(emit, axes, keepdims),
                       mask)

    fn.__name__ = name
    return fn


sum = _reduce_fn("sum", "add")  # noqa: A001
max = _reduce_fn("max", "max")  # noqa: A001
min = _reduce_fn("min", "min")  # noqa: A001
prod_ = _reduce_fn("prod", "multiply")
mean = _reduce_fn("mean", "add", scale_by_count=True)
all_ = _reduce_fn("all", "logical_and")  # nl.all (the page: along free axes, 1 where every element is non-zero)


@api("nl.var")
def var(x: NkiTensor, axis: Any = None, *, dtype: Any = None, mask: Any = None, keepdims: bool = True,
        **_kw: Any) -> NkiTensor:
    """The population variance over the free ``axis`` (the page: ``keepdims`` ignored, the
    result always keeps its dims): the mean of the squared deviations from the mean, each step
    in float32 (the engines' arithmetic) and the result cast once to ``dtype`` (else the tile's)."""
    _axis_given("var", x, axis)
    centred = subtract(x, mean(x, axis, keepdims=True, dtype="float32", mask=mask), dtype="float32", mask=mask)
    return mean(multiply(centred, centred, dtype="float32", mask=mask), axis, keepdims=True,
                dtype=dtype if dtype is not None else x.dtype, mask=mask)
REDUCE_OF = {sum: "add", max: "max", min: "min", prod_: "multiply", np.sum: "add", np.max: "max", np.amax: "max",
             np.min: "min", np.amin: "min", np.prod: "multiply"}


# -- matmul / transpose ----------------------------------------------------------------------
@api("nl.matmul")
def matmul(x: NkiTensor, y: NkiTensor, *, transpose_x: bool = False, mask: Any = None, **_kw: Any) -> NkiTensor:
    """``x @ y`` on PE into PSUM: ``x`` is ``[K, M]`` with ``transpose_x`` (the stationary
    operand as is), else ``[M, K]`` and transposed on PE first."""
    for name, operand in (("x", x), ("y", y)):  # the page: tiles on SBUF (or PSUM), not HBM tensors
        if not is_tile(operand) or not ops.lay(operand).on_chip:
            what = f"the HBM tensor {ops.lay(operand).tensor.name}" if is_tile(operand) else shown(operand)
            raise fail(f"nl.matmul: {name} is {what}; its operands are tiles on chip (nl.load it first)")
    if len(y.shape) == 1:  # a column, as a reduction without keepdims leaves it (AWS's Mamba2 inference step)
        y = y.reshape((y.shape[0], 1))
    if transpose_x:
        stationary = x
    else:
        if current().allocated and current().generation == "legacy":
            raise fail("nl.matmul without transpose_x=True in a kernel that places its tiles itself: x would be "
                       "transposed on the Tensor Engine into a tile the kernel did not allocate, which NKI refuses "
                       "(err_transpose_on_tensor_engine_not_allowed_in_allocated_kernel); pass x as [K, M] with "
                       "transpose_x=True")
        if len(x.shape) > 2:  # (else the transpose's own message names a call the kernel never made)
            raise fail(f"nl.matmul: x is a {len(x.shape)}-D tile {tuple(x.shape)}; without transpose_x=True it is "
                       "transposed on the Tensor Engine first, which takes a 2-D tile [M, K]")
        stationary = transpose(x)
    operand_rules.matmul_dtypes("nl.matmul", ops.lay(x), ops.lay(y))
    m, n = stationary.shape[-1], y.shape[-1]
    if stationary.shape[0] != y.shape[0]:
        raise fail(f"nl.matmul: contraction dimensions {stationary.shape[0]} and {y.shape[0]} differ")

    def emit(dst, accumulate: bool = False) -> None:
        # PE reads SBUF: an operand in PSUM (a matmul's or transpose's result used as is, as the
        # page allows and AWS's Mamba2 example does) is copied to SBUF first, as the compiler stages it
        current().kb.matmul(dst.view(), ops.staged_from_psum(ops.lay(stationary)).view(),
                            ops.staged_from_psum(ops.lay(y)).view(), accumulate=accumulate)

    emit.accumulates = True  # type: ignore[attr-defined]
    return _result((m, n), "float32", "psum", emit, mask)


@api("nl.transpose")
def transpose(x: NkiTensor, *, dtype: Any = None, mask: Any = None, **_kw: Any) -> NkiTensor:
    """A PE transpose into PSUM, copied back to SBUF (what nl.transpose lowers to); ``mask``
    limits the copy, the instruction that writes the result, as it limits any call's result."""
    operand_rules.on_chip("nl.transpose", x=x)
    if len(x.shape) == 1:  # a column, as a reduction without keepdims leaves it (AWS's Mamba2 inference step)
        x = x.reshape((x.shape[0], 1))
    if len(x.shape) != 2:
        raise fail("nl.transpose transposes a 2-D tile")
    shape = x.shape[::-1]
    staged = _result(shape, operand_rules.pe_transpose_dtype(x.dtype), "psum",
                     lambda dst: current().kb.transpose(dst.view(), ops.staged_from_psum(ops.lay(x)).view()))

    swapped = ops.masked_in_source(mask, x)  # a mask in x's indices bounds the result swapped, staged or not

    def copy_out(dst: Any) -> None:
        mask_now = current().mask  # (the box being emitted: its indices, the result's or not)
        ops.copy(dst, ops.lay(staged, transposed=swapped_into(swapped, mask_now, dst) if mask_now else False), "act")

    return _result(shape, ops.result_dtype(dtype, x), "sbuf", ops.swapped_by_mask(copy_out, mask, x), mask, (x,))


@api("nl.rms_norm")
def rms_norm(x: NkiTensor, w: Any, axis: Any, n: Any, epsilon: float = 1e-06, *, dtype: Any = None,
             compute_dtype: Any = None, mask: Any = None, **_kw: Any) -> NkiTensor:
    """``x / RMS(x) * w``, ``RMS(x) = sqrt(sum(x^2 along axis) / n + epsilon)`` (the API page's
    formula), composed of the ops above in ``compute_dtype`` (fp32 unless given): the squares,
    their sum, ``* 1/n + epsilon``, ``rsqrt``, two products; the page gives no lowering."""
    inner = compute_dtype or "float32"
    total = sum(square(x, dtype=inner, mask=mask), axis=axis, keepdims=True, dtype=inner, mask=mask)
    scale = rsqrt(add(multiply(total, 1.0 / float(n), dtype=inner), float(epsilon), dtype=inner), dtype=inner)
    return multiply(multiply(x, scale, dtype=inner, mask=mask), w, dtype=dtype or x.dtype, mask=mask)


@api("nl.softmax")
def softmax(x: NkiTensor, axis: Any = -1, *, dtype: Any = None, compute_dtype: Any = None, **_kw: Any) -> NkiTensor:
    """exp(x - max) / sum(exp(x - max)) along the free axis (composed of the ops above), each
    step in ``compute_dtype`` or else ``dtype`` (the legacy page: "currently `dtype` and
    `compute_dtype` behave the same, both sets internal compute and return dtype")."""
    work = compute_dtype if compute_dtype is not None else dtype
    shifted = subtract(x, max(x, axis=axis, keepdims=True, dtype=work), dtype=work)
    e = exp(shifted, dtype=work)
    return divide(e, sum(e, axis=axis, keepdims=True, dtype=work), dtype=dtype if dtype is not None else work)

