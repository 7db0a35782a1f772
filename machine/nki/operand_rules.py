"""The API pages' rules on an ISA call's operands that neuronsim checks at the call, each
refused at the kernel line with the page's words (a probe of generated kernel mistakes found
them running: an internal error, an operand read out of shape, an engine swapped silently).

* :func:`integer_bits`: a bitvec operator's operands integer tiles; :func:`positive_int`: a size;
* :func:`pattern_pairs`: an ``iota`` / ``affine_select`` ``pattern`` of ``[step, count]``
  pairs covering ``dst``'s elements a partition;
* :func:`same_shape`: an operand of ``dst``'s shape (``affine_select``'s ``on_true_tile``);
* :func:`pool_off_psum`: GpSimd named for an operand in PSUM;
* :func:`transposable_into`: an ``nc_transpose`` no engine can do into an SBUF ``dst``;
* :func:`same_counts`, :func:`one_per_partition`: operands of ``dst``'s partitions and elements,
  or of one element a partition (``reduce_res``);
* :func:`enum_member`: an enum argument (``dge_mode``, ``oob_mode``) its page lists;
* :func:`from_generation`: an instruction its page makes NeuronCore-v3 or -v4 and newer;
* :func:`arithmetic_only`: a bitvec operator where the page takes arithmetic ones alone;
* :func:`on_chip`: a compute instruction's tiles in SBUF or PSUM, said before their shapes are
  compared (an HBM tensor read as one partition of all its elements made the shape messages
  contradict themselves: "destination (64, 128) is not the transpose of (128, 64)");
* :func:`dtype_among`, :func:`same_dtype`: the dtypes an ISA page states for its operands (each
  ran with a cast neuronsim chose, where the compiler refuses the call);
* :func:`off_psum`: tiles of an instruction that runs on GpSimd whatever the kernel names;
* :func:`tensor_scalar_operators`: ``tensor_scalar``'s two operators of one kind, bitvec ones
  on the Vector Engine, an operand for a binary operator.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from neuronsim.machine.ir.dtypes import PACKED, itemsize
from neuronsim.machine.model.optable import BITVEC_OPS, UNARY_ALU_OPS
from neuronsim.machine.nki import ops
from neuronsim.machine.nki.errors import NkiError, fail, shown
from neuronsim.machine.nki.layout import Layout
from neuronsim.machine.nki.tiles import is_tile
from neuronsim.machine.nki.tracer import current

__all__ = ["integer_bits", "pe_transpose_dtype", "positive_int", "vector_transposable", "pattern_pairs", "same_shape",
           "same_counts",
           "one_per_partition", "enum_member", "pool_off_psum", "transposable_into", "on_chip", "from_generation",
           "arithmetic_only", "INTEGER_DTYPES", "dtype_among", "same_dtype", "off_psum", "tensor_scalar_operators",
           "BITVEC_NAMES", "power_off_psum", "packed_zero", "gpsimd_dma_size", "same_rank", "legacy_broadcast",
           "matmul_dtypes", "in_sbuf"]


def _layout(value: Any) -> Layout | None:
    """The layout of a tile operand (a tile or a layout), None for a number or anything else;
    its bounds are the instruction's to check, once its mask= bounds it (ops.lay)."""
    return value if isinstance(value, Layout) else ops.lay(value, bounded=False) if is_tile(value) else None


def on_chip(call: str, **operands: Any) -> None:
    """Every tile among ``operands`` (by parameter name) in SBUF or PSUM, where compute engines
    read and write (the ISA pages' "Memory types"; ``nl.copy``: "must be a tile in SBUF or PSUM")."""
    for name, value in operands.items():
        layout = _layout(value)
        if layout is not None and not layout.on_chip:
            fix = "compute into a tile, then store it" if name == "dst" else "load it first"
            raise fail(f"{call}: {name} is {layout.tensor.name} {tuple(layout.shape)} in HBM; compute engines read "
                       f"and write tiles in SBUF or PSUM ({fix}: nl.load / nl.store, nisa.dma_copy)")


def from_generation(call: str, first: int) -> None:
    """A warning at ``call`` traced for a NeuronCore older than v``first``: its page's "Available
    only on NeuronCore-v{first} and newer" (or "Supported arch versions: NeuronCore-v{first}+").
    A warning, not a refusal: a kernel that names no target is traced for trn1, and the public
    kernels written for trn3's MX instructions name none (the MX tutorial's); it runs as modelled."""
    tracer = current()
    if tracer.nc_generation < first:
        tracer.warn("generation",
                    f"{call} is available only on NeuronCore-v{first} and newer (its page), and the kernel is traced "
                    f"for NeuronCore-v{tracer.nc_generation}: trace it for the target it is written for "
                    f"(@nki.jit(platform_target=\"trn2\"), or $NEURON_PLATFORM_TARGET_OVERRIDE=trn2 for a kernel "
                    f"that names none)")


#: Engines a page rules out before some NeuronCore: (call, engine) -> (first generation, its words).
_ENGINE_FROM = {
    ("nisa.tensor_copy", "act"): (3, "On NeuronCore v2, tensor_copy is not supported on the Scalar Engine. Instead, "
                                     "use nisa.activation with op=nl.copy."),
    ("nisa.rng", "pool"): (3, "Supported engines: NeuronCore-v2: Vector. NeuronCore-v3+: GpSimd, Vector."),
}

#: The operator pairs the tensor_scalar page lets the Scalar Engine run on trn2 (NeuronCore-v3).
_ACT_PAIRS_ON_V3 = {("multiply", "add"), ("multiply", None), ("add", None)}


def engine_on_generation(call: str, engine: str | None, ops_: tuple[str | None, ...] = ()) -> None:
    """A warning at ``call`` run on ``engine`` (the kernel named it) where its page rules that
    engine out for the NeuronCore traced for (tensor_copy on ACT and rng on GpSimd before v3;
    tensor_scalar on ACT on trn2 outside the page's operator pairs ``ops_``).  A warning, as
    :func:`from_generation`'s: a kernel that names no target is traced for trn1."""
    tracer = current()
    first, words = _ENGINE_FROM.get((call, engine), (0, ""))
    if call == "nisa.tensor_scalar" and engine == "act" and tracer.nc_generation == 3 and \
            (tuple(ops_) + (None,))[:2] not in _ACT_PAIRS_ON_V3:
        first, words = 4, ("The Scalar Engine on trn2 only supports some operator combinations: op0=nl.multiply and "
                           "op1=nl.add; op0=nl.multiply and op1=None; op0=nl.add and op1=None")
    if tracer.nc_generation < first:
        tracer.warn("generation",
                    f"{call} on the {_ENGINE_NAMES.get(engine, engine)} traced for NeuronCore-v{tracer.nc_generation}: "
                    f"its page: \"{words}\" (run as modelled)")


def vector_bias(call: str, bias: Any) -> None:
    """A warning for a number as ``activation``'s ``bias`` traced for NeuronCore-v2: its page,
    "In NeuronCore-v2, the bias must be a [N, 1] vector, but starting NeuronCore-v3, bias can
    either be a compile-time constant scalar or a [N, 1] vector" (0, no bias at all, passes)."""
    tracer = current()
    if tracer.nc_generation < 3 and not is_tile(bias) and bias is not None and ops.number(bias) != 0:
        tracer.warn("generation",
                    f"{call}: bias is the number {ops.number(bias)!r}, and its page: \"In NeuronCore-v2, the bias must "
                    f"be a [N, 1] vector\" (a constant scalar from NeuronCore-v3; run as modelled)")


_ENGINE_NAMES = {"act": "Scalar Engine", "pool": "GpSimd Engine", "dve": "Vector Engine", "pe": "Tensor Engine"}


def arithmetic_only(call: str, **ops_: str | None) -> None:
    """Refuse a bitvec operator among ``ops_`` (ALU names by parameter name): "Bitvec operators
    are not supported in this API" (scalar_tensor_tensor's and tensor_scalar_reduce's pages)."""
    for name, op in ops_.items():
        if op in BITVEC_OPS:
            raise fail(f"{call}: {name} is the bitvec operator {op}, and its page says \"Bitvec operators are not "
                       f"supported in this API\" (arithmetic operators only)")


def vector_transposable(view: Any) -> bool:
    """Whether the Vector Engine can transpose ``view``: (32, 32) or smaller (nc_transpose's page)."""
    return view.num_partitions <= 32 and view.free_count <= 32


def transpose_mode(stationary: Layout, moving: Layout) -> bool:
    """Whether ``nc_matmul(..., is_transpose=True)`` is a transpose of ``stationary``.  On
    NeuronCore-v2 the flag only tells the profiler "this instruction is a transpose": the
    instruction is the matmul ``stationary.T @ moving`` it computes, which is the transpose when
    the moving tile holds the identity (False, whatever the moving tile's shape: a square one
    need not be the identity, as attention's 128-row K tiles are not, and its values are not
    known when the kernel is traced; a probe).  From v3, transpose mode proper, the page
    transposes "by loading it as a stationary tile and using an identity matrix as the moving
    tile": a moving tile shaped as that identity ([K, K], K the stationary's partitions) is
    taken for it, any other refused."""
    if current().nc_generation < 3:
        return False
    st, mv = stationary.view(), moving.view()
    if mv.num_partitions == st.num_partitions == mv.free_count:
        return True
    raise fail(f"nc_matmul(is_transpose=True): transpose mode moves the stationary tile through an identity "
               f"moving tile of ({st.num_partitions}, {st.num_partitions}); this moving tile is {moving.shape} "
               f"(NeuronCore-v{current().nc_generation}; on v2 the flag only labels the matmul for the profiler)")


def pe_transpose_dtype(source_dtype: str) -> str:
    """The dtype of a PE transpose's PSUM result where the kernel names none: the source's from
    NeuronCore-v3, whose PE transposes are bit-accurate (the nc_transpose page; an int32 tile staged
    as float32 lost its bits above 2**24: a probe, on vLLM's block-table kernel), float32 on v2,
    where the transpose is the matmul against the identity and lands as a matmul's result."""
    return source_dtype if current().nc_generation >= 3 else "float32"


def positive_int(value: Any, what: str) -> int:
    """``value`` as an int, refused at the kernel line unless it is a positive integer."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise fail(f"{what} is a positive int, not {value!r}")
    return int(value)


#: The bitvec operators (the ISA's table of math operators; ``invert`` is NKI's unary one).
BITVEC_NAMES = frozenset((*BITVEC_OPS, "invert"))


def integer_bits(call: str, ops_: tuple[str, ...], **operands: Any) -> None:
    """Refuse a float tile among ``operands`` of a bitvec operator: their pages take integer tiles
    only (``nl.bitwise_and`` ...: "Inputs must be integer typed"; ``nisa.tensor_tensor`` /
    ``tensor_scalar`` / ``tensor_reduce``: "the input/output data types must be integer types")."""
    bitvec = next((op for op in ops_ if op in BITVEC_NAMES), None)
    for name, value in operands.items() if bitvec else ():
        layout = _layout(value)
        if layout is not None and not layout.element_dtype.startswith(("int", "uint")):
            raise fail(f"{call}: {name} is a {layout.element_dtype} tile, and the bitvec operator {bitvec} "
                       f"takes integer tiles only (its page; a float's bits: view them as integers, t.view(nl.int32))")


def pattern_pairs(pattern: Any, dst: Layout, call: str) -> list[list[int]]:
    """An ``iota`` / ``affine_select`` ``pattern``: ``[step, count]`` pairs of integers whose
    counts multiply to ``dst``'s elements a partition (the iota page: "as long as the number of
    elements per partition in dst matches the product"; affine_select's is "similar to
    nisa.iota").  A flat ``[1, 512]`` was an internal error, a short count ignored."""
    try:
        pairs = [(step, count) for step, count in pattern]
    except (TypeError, ValueError):
        raise fail(f"{call}: pattern is a list of [step, count] pairs (such as [[1, 512]]), not {pattern!r}") from None
    if not pairs or any(not isinstance(v, (int, np.integer)) or isinstance(v, bool) for pair in pairs for v in pair) \
            or any(count < 1 for _step, count in pairs):
        raise fail(f"{call}: pattern {pattern!r}: each [step, count] pair holds two integers, the count at least 1")
    covered, holds = prod(int(count) for _step, count in pairs), dst.view().free_count
    if covered != holds:
        raise fail(f"{call}: pattern {pattern!r} covers {covered} elements a partition, and dst {dst.tensor.name} "
                   f"{dst.shape} holds {holds} (its page: the counts' product is dst's elements per partition)")
    return [[int(step), int(count)] for step, count in pairs]


def pool_off_psum(engine: str | None, call: str, *operands: Any) -> None:
    """Refuse GpSimd (``engine``, as the kernel named it) asked for an operand in PSUM (the
    tensor_copy page: "GpSimd cannot access PSUM"; it ran on the Vector Engine instead, without
    a word, where tensor_scalar is refused)."""
    if engine == "pool":
        for value in operands:
            layout = _layout(value)
            if layout is not None and layout.tensor.memory.name == "PSUM":
                raise fail(f"{call}(engine=nisa.gpsimd_engine) of {layout.tensor.name} in PSUM: GpSimd cannot "
                           "access PSUM (its page): name the vector or scalar engine, or none")


def transposable_into(dst: Layout, source: Layout) -> None:
    """An ``nc_transpose`` into ``dst`` with no engine named: into SBUF only the Vector Engine
    writes, and it transposes (32, 32) or smaller (the page; the Tensor Engine's (128, 128) go
    to PSUM); a 128 x 128 tile into SBUF ran on the Vector Engine without a word."""
    view = source.view()
    if dst.tensor.memory.name == "SBUF" and not vector_transposable(view):
        raise fail(f"nisa.nc_transpose of a {view.shape} tile into {dst.tensor.name} in SBUF: the Vector Engine, "
                   "the one that writes SBUF, transposes (32, 32) or smaller, and the Tensor Engine writes PSUM "
                   "only (its page): transpose into a PSUM tile")


def same_counts(call: str, dst: Layout, partitions: bool = True, **operands: Any) -> None:
    """Refuse a tile operand that does not occupy ``dst``'s partitions (unless not ``partitions``)
    and elements per partition (select_reduce's, tensor_copy_predicated's and nc_stream_shuffle's
    pages; it ran, reading past or short of the operand)."""
    view = dst.view()
    for name, value in operands.items():
        layout = _layout(value)
        if layout is not None and (layout.view().free_count != view.free_count or partitions
                                   and layout.view().num_partitions != view.num_partitions):
            what = "partitions and elements per partition" if partitions else "elements per partition"
            raise fail(f"{call}: {name} is {tuple(layout.shape)}, and dst {dst.tensor.name} {tuple(dst.shape)}: its "
                       f"page asks for the same {what}")


def one_per_partition(call: str, name: str, value: Any, rows: int) -> None:
    """Refuse a ``reduce_res`` (or a vector operand) that is not one element on each of ``rows``
    partitions (the pages' "(on_true.shape[0], 1)", "one element per partition")."""
    on_chip(call, **{name: value})  # an HBM tensor is said to be one before its shape is compared
    layout = _layout(value)
    if layout is not None and (layout.view().num_partitions, layout.view().free_count) != (rows, 1):
        raise fail(f"{call}: {name} is {tuple(layout.shape)}: its page takes one element on each of the {rows} "
                   "partitions")


def enum_member(call: str, what: str, value: Any, names: tuple[str, ...]) -> None:
    """Refuse an enum argument its page does not list (``dge_mode=7``, ``oob_mode="ignore"``: they
    ran as the default); None is the default, and an int the enum's value by position
    (nki-library passes ``dge_mode=3``, an ``IntEnum``'s)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and 0 <= value < len(names):
        return
    if value is not None and getattr(value, "name", value) not in names:
        raise fail(f"{call}: {what}={value!r} is none of its page's nisa.{what} values ({', '.join(names)})")


def same_shape(value: Any, dst: Layout, call: str, name: str) -> None:
    """Refuse an operand tile of another shape than ``dst`` (affine_select's page: on_true_tile and
    the output "must have the same shape"; it read the wrong elements)."""
    layout = _layout(value)
    shape = tuple(layout.shape) if layout is not None else None
    if shape is not None and shape != tuple(dst.shape):
        raise fail(f"{call}: {name} is {shape}, and dst {dst.tensor.name} is {tuple(dst.shape)}: its page asks "
                   "for the same shape")


#: The integer dtypes (the rng page's "int8, int16, int32, uint8, uint16, or uint32").
INTEGER_DTYPES = ("int8", "int16", "int32", "uint8", "uint16", "uint32")


def dtype_among(call: str, allowed: tuple[str, ...], page: str, **operands: Any) -> None:
    """Refuse a tile among ``operands`` (by parameter name) of a dtype none of ``allowed``;
    ``page`` is its page's sentence, quoted in the message."""
    for name, value in operands.items():
        layout = _layout(value)
        if layout is not None and layout.element_dtype not in allowed:
            article = "an" if layout.element_dtype.startswith("int") else "a"
            raise fail(f'{call}: {name} is {article} {layout.element_dtype} tile; its page: "{page}"')


def same_dtype(call: str, page: str, **operands: Any) -> None:
    """Refuse tiles among ``operands`` of two dtypes (the pages of the calls that cast nothing:
    nc_stream_shuffle, nc_n_gather, local_gather, tensor_copy_predicated, dropout, sendrecv);
    ``page`` is the page's sentence, quoted."""
    tiles = [(name, layout) for name, layout in ((n, _layout(v)) for n, v in operands.items()) if layout is not None]
    for name, layout in tiles[1:]:
        first, kept = tiles[0]
        if layout.element_dtype != kept.element_dtype:
            raise fail(f'{call}: {first} is {kept.element_dtype} and {name} {layout.element_dtype}; its page: '
                       f'"{page}"')


def in_sbuf(call: str, page: str, **operands: Any) -> None:
    """Refuse an operand that is no tile in SBUF (sendrecv's "Both src and dst tiles must be in
    SBUF": an HBM source ran as a DMA from HBM, a probe); ``page`` is its page's sentence."""
    for name, value in operands.items():
        layout = _layout(value)
        if layout is None or layout.tensor.memory.name != "SBUF":
            where = f"{layout.tensor.name} in {layout.tensor.memory.name}" if layout is not None else shown(value)
            raise fail(f'{call}: {name} is {where}; its page: "{page}"')


def off_psum(call: str, page: str, **operands: Any) -> None:
    """Refuse a tile among ``operands`` in PSUM where the instruction runs on GpSimd whatever the
    kernel names (nc_n_gather; tensor_tensor's nl.power): GpSimd cannot access PSUM, and
    neuronsim staged the tile through SBUF, or ran it on the Vector Engine, without a word."""
    for name, value in operands.items():
        layout = _layout(value)
        if layout is not None and layout.tensor.memory.name == "PSUM":
            raise fail(f'{call}: {name} is {layout.tensor.name} in PSUM; its page: "{page}"')


#: Operators that take no operand (``operand0`` None or 0, the tensor_scalar page): the unary
#: ones, ``abs`` and ``bypass`` (which ignore it).
_OPERANDLESS = frozenset((*UNARY_ALU_OPS, "abs", "bypass"))
#: The engines tensor_scalar's page lists besides the Vector Engine, as kernels name them.
_NOT_VECTOR = {"act": "nisa.scalar_engine", "pool": "nisa.gpsimd_engine"}


def tensor_scalar_operators(call: str, names: tuple[str, ...] | None, engine: str | None, operand0: Any) -> None:
    """The tensor_scalar page's rules on its operators ``names`` (ALU names, op1's if given) run
    on ``engine`` (the sequencer the kernel named, None: the compiler's choice): "must be of the
    same type (both bitvec or both arithmetic)"; "If bitvec operators are used, the tensor_scalar
    instruction must run on Vector Engine"; operand0 "Must be None or 0 when op0 is a unary
    operator", and a binary op0 needs one (None ran as some value).  ``names`` None: an operator
    is no operator (the call's own diagnosis says so)."""
    if names is None:
        return
    kinds = {op in BITVEC_NAMES for op in names}
    if len(kinds) > 1:
        raise fail(f'{call}: op0 is {names[0]} and op1 {names[1]}; its page: "The two operators, op0 and op1, in a '
                   f'tensor_scalar instruction must be of the same type (both bitvec or both arithmetic)"')
    if kinds == {True} and engine in _NOT_VECTOR:
        raise fail(f'{call}(engine={_NOT_VECTOR[engine]}) of the bitvec operator {names[0]}; its page: "If bitvec '
                   f'operators are used, the tensor_scalar instruction must run on Vector Engine"')
    if operand0 is None and names[0] not in _OPERANDLESS:
        raise fail(f"{call}: operand0 is None, and op0 {names[0]} takes an operand (its page: a scalar or a "
                   f"(data.shape[0], 1) tile; None only for a unary operator)")


def power_off_psum(op: tuple[str, ...] | None, **operands: Any) -> None:
    """``tensor_tensor``'s ``nl.power`` runs on GpSimd: its page, "Since GpSimd Engine cannot access
    PSUM, the input/output tiles cannot be in PSUM if op is nl.power" (it ran, on the Vector Engine);
    ``op``: the ALU name of the call's operator, as a 1-tuple (None: no operator)."""
    if op == ("pow",):
        off_psum("nisa.tensor_tensor(op=nl.power)", "Since GpSimd Engine cannot access PSUM, the input/output tiles "
                 "cannot be in PSUM if op is nl.power.", **operands)


def packed_zero(dst: Any, value: Any) -> None:
    """memset's page: "For x4 packed types (float8_e4m3fn_x4, float8_e5m2_x4, float4_e2m1fn_x4),
    only value=0 is supported" (1.0 ran, filling each packed word with some bits)."""
    layout = _layout(dst)
    if layout is not None and layout.element_dtype in PACKED and isinstance(value, (int, float, np.number)) \
            and value != 0:
        raise fail(f"nisa.memset of {layout.tensor.name}, a {layout.element_dtype} tile, to {value!r}; its page: "
                   f"\"For x4 packed types (float8_e4m3fn_x4, float8_e5m2_x4, float4_e2m1fn_x4), only value=0 is "
                   f"supported.\"")


#: The bytes a partition a sendrecv over GpSimd's DMA carries at most, by element size (its page).
_GPSIMD_DMA_BYTES = {4: 1024, 2: 512, 1: 256}


def gpsimd_dma_size(dma_engine: Any, src: Any) -> None:
    """sendrecv's page: ``nisa.dma_engine.gpsimd_dma`` "restricts the data size per partition to not
    exceed: 1024 bytes for 32-bit types, 512 bytes for 16-bit types, 256 bytes for 8-bit types"."""
    layout = _layout(src)
    if getattr(dma_engine, "name", dma_engine) != "gpsimd_dma" or layout is None:
        return
    size = itemsize(layout.element_dtype)
    carried, limit = layout.view().free_count * size, _GPSIMD_DMA_BYTES.get(size)
    if limit is not None and carried > limit:
        raise fail(f"nisa.sendrecv(dma_engine=nisa.dma_engine.gpsimd_dma) of {carried} bytes a partition "
                   f"({tuple(layout.shape)} {layout.element_dtype}); its page: that mode \"restricts the data size per "
                   f"partition to not exceed\" {limit} bytes for {8 * size}-bit types (use nisa.dma_engine.dma)")


def same_rank(call: str, x: Any, shape: Any) -> None:
    """nl.broadcast_to's page: the target shape "Must have the same rank as x" (a (128, 1) tile
    broadcast to (128, 4, 64) ran, its new axes last)."""
    if not is_tile(x):
        return
    promoted = current().generation == "legacy" and all(n == 1 for n in x.shape)  # (numpy's rule: its page)
    if len(tuple(shape)) != len(x.shape) and not (promoted and len(tuple(shape)) > len(x.shape)):
        raise fail(f'{call} of {tuple(x.shape)} to {tuple(shape)}; its page: the shape "Must have the same rank as x"')


def legacy_broadcast(a: Layout, b: Layout) -> bool:
    """Whether a legacy ``tensor_tensor`` of two tiles of other shapes that broadcast (NKI's rule:
    aligned on the partition axis, :func:`~neuronsim.machine.nki.ops.broadcast_shape`) runs as the
    broadcast, with a warning at the call.  The sources disagree: the page asks for as many
    elements per partition (and a user's such kernel failed to build on trn2), while Stanford
    CS149's asst4-trainium2 (legacy API, trn2) tells students tensor_tensor "should be helpful for
    adding bias" and its public submissions add a [P, 1] column so, and NxD's router_topk_kernel
    multiplies a [P, A, B] tile by a [P, A] one and by a [P, 1, B] one, a kernel its tests run on
    hardware.  NKI 0.7's tensor_tensor keeps the refusal."""
    shapes = [tuple(a.shape), tuple(b.shape)]
    try:
        wide = ops.broadcast_shape(*shapes)
    except NkiError:
        return False
    if prod(wide) != max(prod(s) for s in shapes):  # each side broadcast: no tile holds the result
        return False
    small = shapes[0] if prod(shapes[0]) < prod(shapes[1]) else shapes[1]
    current().warn("broadcast",
                   f"nisa.tensor_tensor of a {wide} tile and a {small} one: its page asks for as many elements per "
                   f"partition (a user's such kernel failed to build on trn2), while public legacy kernels broadcast "
                   f"so (Stanford CS149's asst4-trainium2 adds a bias, NxD's router_topk_kernel scales rows); run "
                   f"as the broadcast. "
                   f"nisa.tensor_scalar with a [P, 1] column as operand0 is safe under both")
    return True


def matmul_dtypes(call: str, stationary: Layout, moving: Layout) -> None:
    """The nc_matmul page's operand dtypes, for ``nl.matmul`` too ("nki.language.matmul calls
    nki.isa.nc_matmul under the hood"): float8, bfloat16, float16, tfloat32 or float32, and a
    float32 / tfloat32 tile beside one of the same (int32 tiles and bf16 x fp32 ran: probes)."""
    names = (stationary.element_dtype, moving.element_dtype)
    if any("int" in name for name in names):  # (a view read as fp8 is fp8)
        raise fail(f"{call} of {names[0]} x {names[1]} tiles: nc_matmul's page takes float8, bfloat16, float16, "
                   f"tfloat32 or float32 operands (cast integers first, e.g. nl.copy(t, dtype=nl.float32))")
    if len({name in ("float32", "tfloat32") for name in names}) == 2:
        raise fail(f"{call} of {names[0]} x {names[1]} tiles: nc_matmul's page says \"if one of the input tiles is "
                   f"tfloat32/float32, the other tile must also be tfloat32/float32\"")
