"""Draw helpers behind :mod:`neuronsim.verify.strategies`: pieces of programs valid by construction.

Each ``draw_*`` helper takes hypothesis's ``draw`` (from a ``@composite`` strategy or
``st.data()``) and returns an IR value that respects the op table and the hardware rules of
:mod:`neuronsim.machine.formats.validate` without any rejection: bounds are computed first, then drawn within.
Strategy objects are cached (building one per draw is what makes naive generators slow).

Examples
--------
>>> from neuronsim.machine.ir.program import MemoryKind, Tensor
>>> t = Tensor("t", MemoryKind.SBUF, "float32", (48, 8), partition=32, offset=0)
>>> compute_starts(t)[:2]      # relative start, widest span: only partitions 32 and 64 work
[(0, 32), (32, 16)]
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import lru_cache

from hypothesis import strategies as st

from dataclasses import replace

from neuronsim.machine.ir.dtypes import DTYPES
from neuronsim.machine.model.geometry import access_extent
from neuronsim.machine.ir.program import PSUM_BANK_BYTES, Access, MemoryKind, Tensor
from neuronsim.machine.model.optable import ACTIVATION_FUNCS, ALU_OPS, REDUCE_OPS, OpSpec

__all__ = [
    "OPAQUE_OPS", "OPAQUE_DMA_OPS", "draw_int", "draw_flag", "draw_pick", "partition_start_ok",
    "first_partition", "compute_starts", "draw_onchip_tensor", "draw_dram_tensor", "draw_pattern",
    "draw_access", "compute_reachable", "operand_tensors", "draw_attrs", "draw_operand_tiles", "draw_axis",
    "draw_triples_access", "no_source_constants",
]

#: Small region every placement falls into, so that tensors overlap often.
_SBUF_BYTES = 256
_DRAM_BYTES = 512
_PARTITION_BASES = (0, 0, 32, 64, 96)
_PARTITION_COUNTS = (4, 1, 2, 3, 8, 16, 32, 33, 64, 128, 128)
_NUMBERS = (0, 1, -1, 0.5, 2.0, -3.25)
_MAX_ELEMENTS = 256  # elements one access pattern enumerates at most
#: Opaque op names: unknown to the op table (``dma_gather`` is an opaque *DMA* op).
OPAQUE_OPS = ("custom_kernel", "fused_norm")
OPAQUE_DMA_OPS = ("dma_gather",)


@contextmanager
def no_source_constants() -> Iterator[None]:
    """Generate without the literals of our own source code.

    Hypothesis (6.13x on) draws now and then from a pool of the constants written in every
    *local* module it finds in ``sys.modules``.  The programs a seed gives would then depend
    on which of our modules happen to be imported (the CLI imports more than a test does) and
    on every number anyone adds to the code base; the fuzzer's results must depend on the
    seed alone, and a test's examples on its seed, not on the tests run before it in the same
    worker.  Inside this context the pool is empty (its cache is cleared on the way in and
    out); the strategies of :mod:`neuronsim.verify.strategies` draw inside it.
    """
    from hypothesis.internal.conjecture import providers

    saved = providers._get_local_constants
    empty = providers.Constants()
    providers._get_local_constants = lambda: empty
    providers.CONSTANTS_CACHE.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = saved
        providers.CONSTANTS_CACHE.cache.clear()


# -- cheap draws: cached strategies (building a strategy object per draw is the slow part) --
@lru_cache(maxsize=4096)
def _integers(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


def draw_int(draw, lo: int, hi: int) -> int:
    """An integer in ``[lo, hi]`` (no draw at all when there is one choice)."""
    return lo if lo == hi else draw(_integers(lo, hi))


def draw_flag(draw) -> bool:
    """A boolean (shrinking towards False)."""
    return draw(_BOOLEANS)


def draw_pick(draw, items: Sequence):
    """One of ``items`` (shrinking towards the first)."""
    return items[draw_int(draw, 0, len(items) - 1)]


_BOOLEANS = st.booleans()


def partition_start_ok(first: int, span: int) -> bool:
    """The partition-start rule of compute accesses (``neuronsim.machine.model.optable``, [2.1]).

    >>> partition_start_ok(64, 64), partition_start_ok(32, 33), partition_start_ok(96, 32)
    (True, False, True)
    """
    if span > 64:
        return first == 0
    if span > 32:
        return first in (0, 64)
    return first % 32 == 0


def _max_span(first: int) -> int:
    """Widest span a compute access starting at absolute partition ``first`` may have."""
    if first == 0:
        return 128
    if first == 64:
        return 64
    return 32 if first % 32 == 0 else 0


# -- tensors ----------------------------------------------------------------------------
def first_partition(tensor: Tensor) -> int:
    """Where the tensor's partitions start; virtual tensors are generated for partition 0."""
    return tensor.partition or 0


def compute_starts(tensor: Tensor) -> list[tuple[int, int]]:
    """``(relative start, max span)`` pairs a compute access to ``tensor`` may use."""
    if tensor.memory == MemoryKind.DRAM:
        return []
    base, count = first_partition(tensor), tensor.shape[0]
    out = []
    for first in range(base, base + count):
        span = min(_max_span(first), base + count - first)
        if span > 0:
            out.append((first - base, span))
    return out


def _inside(draw, start: int, near: Tensor) -> int:
    """A byte position at or shortly after ``start`` inside ``near``'s bytes (storage reuse)."""
    return start + draw_int(draw, 0, min(16, near.bytes_per_partition - 1))


def draw_onchip_tensor(
    draw, name: str, memory: MemoryKind, virtual: bool, *, aligned: bool = False, near: Tensor | None = None
) -> Tensor:
    """An SBUF / PSUM tensor; placed on ``near``'s first partition and bytes when given."""
    if virtual:
        base = 0
    elif near is not None:
        base = near.partition
    else:
        base = draw_pick(draw, _PARTITION_BASES) if aligned or draw_flag(draw) else draw_int(draw, 0, 127)
    nparts = draw_pick(draw, [n for n in _PARTITION_COUNTS if base + n <= 128])
    if memory == MemoryKind.PSUM:
        dtype = draw_pick(draw, ("float32", "bfloat16", "int32"))
    else:
        dtype = draw_pick(draw, sorted(DTYPES))
    free = tuple(draw_int(draw, 1, 8) for _ in range(draw_int(draw, 1, 2)))
    shape = (nparts, *free)
    if virtual:
        return Tensor(name, memory, dtype, shape)
    nbytes = Tensor(name, memory, dtype, shape).bytes_per_partition
    if memory == MemoryKind.SBUF:
        offset = _inside(draw, near.offset, near) if near is not None else draw_int(draw, 0, _SBUF_BYTES - 64)
        return Tensor(name, memory, dtype, shape, partition=base, offset=offset)
    bank = near.bank if near is not None else draw_int(draw, 0, 2)
    offset = _inside(draw, near.offset, near) if near is not None else draw_int(draw, 0, 256)
    return Tensor(name, memory, dtype, shape, partition=base, offset=min(offset, PSUM_BANK_BYTES - nbytes), bank=bank)


def draw_dram_tensor(draw, name: str, virtual: bool, alias: str | None, near: Tensor | None = None) -> Tensor:
    """A DRAM tensor: virtual, in alias group ``alias``, or at an address (near ``near``'s)."""
    dtype = draw_pick(draw, sorted(DTYPES))
    shape = tuple(draw_int(draw, 1, 8) for _ in range(draw_int(draw, 1, 3)))
    role = draw_pick(draw, ("internal", "input", "output"))
    if virtual:
        return Tensor(name, MemoryKind.DRAM, dtype, shape, role=role)
    if alias is not None:
        return Tensor(name, MemoryKind.DRAM, dtype, shape, alias=alias, role=role)
    address = _inside(draw, near.address, near) if near is not None else draw_int(draw, 0, _DRAM_BYTES)
    return Tensor(name, MemoryKind.DRAM, dtype, shape, address=address, role=role)


# -- accesses ---------------------------------------------------------------------------
def draw_pattern(draw, budget: int, strides: bool) -> tuple[tuple[int, int], ...]:
    """A ``[[stride, count], ...]`` pattern whose span is at most ``budget`` elements."""
    if not strides:
        return ((1, draw_int(draw, 1, min(budget + 1, _MAX_ELEMENTS))),)
    dims = []
    remaining, elements = budget, 1
    for _ in range(draw_int(draw, 1, 3)):
        # Mostly the interesting small strides (1, interleaves, broadcast), sometimes any.
        stride = draw_int(draw, 0, max(remaining, 0)) if draw_flag(draw) else draw_pick(draw, (1, 2, 0, 3))
        if stride == 0 or stride > remaining:
            stride, limit = 0, 3
        else:
            limit = remaining // stride + 1
        count = draw_int(draw, 1, max(1, min(limit, _MAX_ELEMENTS // elements, 16)))
        remaining -= stride * (count - 1)
        elements *= count
        dims.append((stride, count))
    return tuple(dims)


def draw_access(
    draw,
    tensor: Tensor,
    loops: Sequence[tuple[str, int]],
    *,
    compute: bool,
    strides: bool = True,
) -> Access:
    """An access to ``tensor`` that stays inside it for every index of ``loops``.

    ``compute`` accesses obey the partition-start rule (for virtual tensors, as if placed at
    partition 0); DMA accesses may use any partitions.
    """
    partitions = None
    if tensor.memory != MemoryKind.DRAM:
        nparts = tensor.shape[0]
        if compute:
            whole_ok = partition_start_ok(first_partition(tensor), nparts)
            if not (whole_ok and draw_flag(draw)):
                start, span = draw_pick(draw, compute_starts(tensor))
                step = draw_int(draw, 1, min(4, span))
                partitions = (start, draw_int(draw, 1, (span - 1) // step + 1), step)
        elif draw_flag(draw):
            start = draw_int(draw, 0, nparts - 1)
            step = draw_int(draw, 1, 4)
            partitions = (start, draw_int(draw, 1, (nparts - 1 - start) // step + 1), step)
    size = tensor.free_elements
    moving = [(name, trip) for name, trip in loops if draw_flag(draw)] if loops else []
    if not moving and draw_flag(draw):
        # Default pattern: the rest of the tensor from the offset.
        offset = draw_int(draw, 0, size - 1)
        return Access(tensor.name, partitions, offset if offset or draw_flag(draw) else None)
    pattern = draw_pattern(draw, size - 1, strides)
    span = sum(stride * (count - 1) for stride, count in pattern)
    room = size - 1 - span
    shifts, below, above = [], 0, 0
    for name, trip in moving:
        if trip == 1:  # the loop never moves the offset: any shift is in bounds
            shift = draw_int(draw, -8, 8)
        else:
            reach = (room - below - above) // (trip - 1)
            shift = draw_int(draw, -reach, reach)
            if shift < 0:
                below += -shift * (trip - 1)
            else:
                above += shift * (trip - 1)
        shifts.append((name, shift))
    offset = draw_int(draw, below, room - above)
    offset_or_none = offset if offset or moving or draw_flag(draw) else None
    return Access(tensor.name, partitions, offset_or_none, pattern, tuple(shifts))


# -- instructions -----------------------------------------------------------------------
def compute_reachable(tensors: Mapping[str, Tensor], memory: MemoryKind) -> list[Tensor]:
    """Tensors of ``memory`` that a compute access can reach."""
    return [t for t in tensors.values() if t.memory == memory and compute_starts(t)]


def operand_tensors(tensors: Mapping[str, Tensor], engine: str, write: bool) -> list[Tensor]:
    """Tensors a compute op on ``engine`` may read (or write)."""
    sbuf, psum = compute_reachable(tensors, MemoryKind.SBUF), compute_reachable(tensors, MemoryKind.PSUM)
    if engine == "pool":
        return sbuf
    if engine == "pe":
        return psum if write else sbuf
    return sbuf + psum


def draw_number_attrs(draw, *keys: str) -> dict:
    return {key: draw_pick(draw, _NUMBERS) for key in keys if draw_flag(draw)}


def draw_attrs(draw, op: str) -> dict:
    """Attributes of ``op`` (per-partition operands as immediates; see :func:`draw_operand_tiles`)."""
    if op == "activation":
        attrs = draw_number_attrs(draw, "scale", "bias")
        if draw_flag(draw):
            attrs["func"] = draw_pick(draw, ACTIVATION_FUNCS)
        return attrs
    if op == "tensor_tensor":
        return {"op": draw_pick(draw, ALU_OPS)}
    if op == "tensor_scalar":
        attrs = {"op0": draw_pick(draw, ALU_OPS), "operand0": draw_pick(draw, _NUMBERS)}
        if draw_flag(draw):
            attrs.update(op1=draw_pick(draw, ALU_OPS), operand1=draw_pick(draw, _NUMBERS))
        if draw_flag(draw):
            attrs.update({"reverse": True} if draw_flag(draw) else {"reverse0": draw_flag(draw),
                                                                   "reverse1": draw_flag(draw)})
        return attrs
    if op == "tensor_tensor_scan":
        attrs = {key: draw_pick(draw, ALU_OPS) for key in ("op0", "op1") if draw_flag(draw)}
        attrs.update(draw_number_attrs(draw, "initial"))
        attrs.update({key: True for key in ("reverse0", "reverse1") if draw_flag(draw)})
        return attrs
    if op == "tensor_reduce":
        return {"op": draw_pick(draw, REDUCE_OPS), "negate": draw_flag(draw)}
    if op in ("bn_stats", "bn_aggr"):
        return {}
    if op == "memset":
        return {"value": draw_pick(draw, _NUMBERS)}
    if op == "iota":
        return draw_number_attrs(draw, "base", "step", "partition_step")
    if op == "set_rand_state":
        return {"seed": draw_int(draw, 0, 2**31 - 1)} if draw_flag(draw) else {}
    if op == "random":
        low = draw_pick(draw, (0, -1, 0.5))
        return {"low": low, "high": low + draw_pick(draw, (1, 2.5))}
    if op in OPAQUE_OPS or op in OPAQUE_DMA_OPS:
        attrs = {"cycles": draw_int(draw, 0, 500)} if draw_flag(draw) else {}
        if draw_flag(draw):
            attrs["mode"] = draw_pick(draw, ("fast", "exact"))
        return attrs
    return {}




def draw_operand_tiles(draw, spec: OpSpec, attrs: dict, nreads: int, draw_read) -> list[Access]:
    """Turn some per-partition operands of ``spec`` into tiles (``neuronsim.machine.model.oprules``).

    Returns the extra reads (each from ``draw_read()``) and names them in ``attrs``
    (``{"read": k}``); a single tile of the first operand sometimes uses the shorthand form
    (the unnamed extra read).
    """
    extra: list[Access] = []
    for slot in spec.operands:
        if draw_flag(draw):
            extra.append(draw_read())
            attrs[slot] = {"read": nreads + len(extra) - 1}
    first = spec.operands[0] if spec.operands else None
    if len(extra) == 1 and first is not None and attrs.get(first) == {"read": nreads} and draw_flag(draw):
        del attrs[first]
    return extra


def draw_axis(draw, tensor: Tensor, access: Access):
    """A ``tensor_reduce`` ``axis`` for a read of ``access``: a suffix of its free dimensions."""
    rank = 1 + len(access_extent(tensor, access)[1])
    start = draw_int(draw, 1, rank - 1)
    axes = list(range(start, rank))
    return axes[0] if len(axes) == 1 and draw_flag(draw) else axes


def draw_triples_access(draw, tensor: Tensor, access: Access, *, broadcast: bool = True) -> Access | None:
    """``access`` (its partitions kept) reading a multiple of 3 elements per partition
    (``bn_aggr``); None when ``tensor`` is too small and ``broadcast`` (stride-0) reads are out."""
    size = tensor.free_elements
    if size >= 3 and (not broadcast or draw_flag(draw)):
        count = 3 * draw_int(draw, 1, min(size // 3, 8))
        pattern, offset = ((1, count),), draw_int(draw, 0, size - count)
    elif broadcast:  # a broadcast read fits any tensor
        pattern, offset = ((0, 3 * draw_int(draw, 1, 2)),), draw_int(draw, 0, size - 1)
    else:
        return None
    return replace(access, offset=offset or None, pattern=pattern, per_iteration=())
