"""Functional memory: SBUF, PSUM and DRAM as numpy byte arrays, read and written by access.

Every memory is one flat ``uint8`` array:

* SBUF: ``sbuf_partitions`` rows, partition-major, each as long as the program's SBUF tensors
  reach into a partition (at most ``sbuf_partition_bytes``, 192 KiB on trn1);
* PSUM: likewise, rows up to ``psum_banks x psum_bank_bytes`` (8 x 2 KiB);
* DRAM: only as large as the program needs (see :class:`DramLayout`).

Rows only as long as the program reaches keep a small kernel's run from drawing and copying
24 MiB of SBUF it never touches; the bytes at a given partition and offset are the same
whatever the row length (the seeded pattern is drawn per row).

An access instance is read or written as a *typed* numpy array of its **element shape**:
``(partitions, count_0, ..., count_k)`` for SBUF / PSUM and ``(count_0, ..., count_k)`` for
DRAM, the counts being the access pattern's (spec, "Accesses"; the default pattern is one
dimension of ``E - offset`` elements).  :class:`AccessView` holds the byte offset and strides
of that array inside its memory, so reading or writing is one strided numpy view, never a
byte loop.  A pattern with stride 0 reads the same element repeatedly; written, the element
ends up holding the value numpy assigns last (row-major order), in every run alike.

Initial contents (project choice, documented for reproducibility):

* every byte not covered by an ``input`` tensor starts as a seeded pattern of bytes drawn
  uniformly from ``[0, 64)``.  Read as any float format of the spec this is a finite,
  non-negative value below 4 (the sign bit and the top exponent bit are clear), so
  uninitialised reads propagate ordinary numbers, never NaN.  The sequential reference run and
  every timed run start from the very same bytes, so only ordering differences can make their
  outputs differ;
* DRAM ``input`` tensors hold values from ``--inputs FILE.npz`` (by tensor name, of the
  tensor's shape but for dimensions of 1, or flat, cast to the tensor's dtype; another shape
  of as many elements, a transpose, is refused) or else seeded values:
  floats uniform in ``[-1, 1)`` rounded to the dtype, signed integers in ``[-8, 8)``,
  unsigned in ``[0, 16)``.  Inputs are written in tensor-name order, so where input tensors
  overlap the last name wins.

Alias groups (project choice): an alias-group tensor has no address, so every tensor of one
group is placed at the *same* base, after the addressed tensors (aliasing is maximal: the
group's tensors share their first bytes).  Groups follow each other in name order, each
``4096``-byte aligned and as long as its longest tensor.
"""

from __future__ import annotations

import hashlib

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import prod

import numpy as np

from neuronsim.machine.ir.dtypes import READ_AS_KEY, not_held, numpy_dtype
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.fast_dataclasses import quick_init
from neuronsim.machine.model.geometry import access_extent, access_shape, iteration_shift
from neuronsim.machine.ir.program import Access, MemoryKind, Program, Tensor
from neuronsim.machine.model.presets import MachineSpec

__all__ = [
    "AccessView",
    "DramLayout",
    "Memory",
    "access_view",
    "initial_memory",
    "UNINITIALISED_BYTE_LIMIT",
    "DEFAULT_PATTERN",
    "NORMAL_FLOAT_PATTERN",
    "NAN_PATTERN",
    "GROUP_ALIGN",
]

#: Uninitialised bytes are drawn from ``[0, UNINITIALISED_BYTE_LIMIT)`` (a power of two: a mask).
UNINITIALISED_BYTE_LIMIT = 64
#: ``(first, count)``: the bytes a pattern draws from, ``[first, first + count)`` (``count`` a power
#: of two, ``first`` a multiple of it).  The default, :data:`UNINITIALISED_BYTE_LIMIT`'s, and one
#: whose every float of any width (fp32, bf16, fp16, fp8) is a normal number, between 2**-31 and 1:
#: for runs that only compare what unwritten bytes reach (a matmul of the default's tiny values
#: makes subnormals, which the CPU computes tens of times slower).
DEFAULT_PATTERN, NORMAL_FLOAT_PATTERN = (0, UNINITIALISED_BYTE_LIMIT), (0x30, 0x10)
#: Every byte 0xFF: NaN in every float width (-1 in every integer one).
NAN_PATTERN = (0xFF, 1)
#: Alignment of each alias group's base address in the simulated DRAM.
#: SBUF / PSUM rows are simulated in multiples of this many bytes.
ROW_ALIGN = 64
GROUP_ALIGN = 4096

_SPACES = {MemoryKind.SBUF: 0, MemoryKind.PSUM: 1, MemoryKind.DRAM: 2}


@dataclass(frozen=True, slots=True)
class DramLayout:
    """Where each DRAM tensor lives in the simulated DRAM array."""

    base: Mapping[str, int]
    """Tensor name -> byte address of its first element."""
    size: int
    """Bytes of simulated DRAM."""
    sbuf_row: int = 0
    """Bytes simulated per SBUF partition (0: none)."""
    psum_row: int = 0
    """Bytes simulated per PSUM partition (0: none)."""

    @classmethod
    def of(cls, program: Program) -> DramLayout:
        """Addressed tensors at their address; alias groups after them (see module doc).

        >>> from neuronsim.machine.ir.program import Tensor, MemoryKind, Program
        >>> ts = {"a": Tensor("a", MemoryKind.DRAM, "float32", (4,), address=100),
        ...       "g1": Tensor("g1", MemoryKind.DRAM, "float32", (8,), alias="G"),
        ...       "g2": Tensor("g2", MemoryKind.DRAM, "uint8", (3,), alias="G")}
        >>> layout = DramLayout.of(Program(ts))
        >>> layout.base["a"], layout.base["g1"], layout.base["g2"], layout.size
        (100, 4096, 4096, 4128)
        """
        base: dict[str, int] = {}
        end = 0
        groups: dict[str, list[Tensor]] = {}
        for tensor in program.tensors.values():
            if tensor.memory != MemoryKind.DRAM:
                continue
            if tensor.alias is not None:
                groups.setdefault(tensor.alias, []).append(tensor)
            elif tensor.address is not None:
                base[tensor.name] = tensor.address
                slots = (tensor.rotate.slots - 1) * tensor.rotate.stride if tensor.rotate is not None else 0
                end = max(end, tensor.address + slots + tensor.bytes_per_partition)
        for group in sorted(groups):
            start = -(-end // GROUP_ALIGN) * GROUP_ALIGN
            for tensor in groups[group]:
                base[tensor.name] = start
            end = start + max(t.bytes_per_partition for t in groups[group])
        rows = {MemoryKind.SBUF: 0, MemoryKind.PSUM: 0}
        for tensor in program.tensors.values():
            if tensor.memory in rows and not tensor.is_virtual:
                slots = (tensor.rotate.slots - 1) * tensor.rotate.stride if tensor.rotate is not None else 0
                rows[tensor.memory] = max(rows[tensor.memory], tensor.byte_base + slots + tensor.bytes_per_partition)
        return cls(base, end, -(-rows[MemoryKind.SBUF] // ROW_ALIGN) * ROW_ALIGN,
                   -(-rows[MemoryKind.PSUM] // ROW_ALIGN) * ROW_ALIGN)


@quick_init
@dataclass(frozen=True, slots=True)
class AccessView:
    """A typed strided window of one memory: what an access instance touches."""

    space: int
    """0 SBUF, 1 PSUM, 2 DRAM."""
    offset: int
    """Byte offset of element ``(0, ..., 0)`` inside the space's flat array."""
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: np.dtype
    tensor: str


def access_view(tensor: Tensor, access: Access, iteration: Mapping[str, int], spec: MachineSpec,
                dram: DramLayout) -> AccessView:
    """The :class:`AccessView` of ``access`` at loop indices ``iteration``."""
    offset, pattern = access_extent(tensor, access)
    size = tensor.itemsize
    moved, pmoved = iteration_shift(tensor, access, iteration)  # bytes (shifts and rotation), partitions
    # a dimension of one element never steps: its stride is 0, so a valid stride past what numpy
    # can index (``[[2**62, 1], ...]``, partitions ``[0, 1, 2**63-1]``) names the same bytes
    free_strides = tuple(stride * size if count > 1 else 0 for stride, count in pattern)
    dtype, shape = numpy_dtype(tensor.dtype), access_shape(tensor, access)
    read_as = access.extras.get(READ_AS_KEY)
    if read_as is not None and numpy_dtype(read_as) != dtype:
        dtype, shape, free_strides = _read_as(tensor, read_as, shape, free_strides)
    space = _SPACES[tensor.memory]
    if tensor.memory == MemoryKind.DRAM:
        return AccessView(space, dram.base[tensor.name] + offset * size + moved, shape, free_strides, dtype,
                          tensor.name)
    row = dram.sbuf_row if tensor.memory == MemoryKind.SBUF else dram.psum_row
    start, _count, step = access.partitions or (0, tensor.shape[0], 1)
    first = (tensor.partition or 0) + start + pmoved
    byte = first * row + tensor.byte_base + offset * size + moved
    strides = (step * row if _count > 1 else 0, *free_strides)
    return AccessView(space, byte, shape, strides, dtype, tensor.name)


def _read_as(tensor: Tensor, read_as: str, shape: tuple[int, ...], free_strides: tuple[int, ...]
             ) -> tuple[np.dtype, tuple[int, ...], tuple[int, ...]]:
    """The bytes of an access read as ``read_as`` (numpy's ``.view`` of them): the innermost
    run of the tensor's elements, contiguous, holds a whole number of ``read_as`` elements."""
    dtype, own = numpy_dtype(read_as), tensor.itemsize
    if dtype.itemsize == own:
        return dtype, shape, free_strides
    run = shape[-1] * own
    if (shape[-1] > 1 and free_strides[-1] != own) or run % dtype.itemsize:
        raise ValueError(f"{tensor.name}: reading {run} bytes a run of {tensor.dtype} as {read_as} needs a "
                         f"contiguous innermost run of whole {read_as} elements")
    count = run // dtype.itemsize
    return dtype, (*shape[:-1], count), (*free_strides[:-1], dtype.itemsize if count > 1 else 0)


class Memory:
    """The three memories of one run, plus each engine's random generator state.

    Mutable on purpose: a run writes into it.  :meth:`copy` gives an independent run its own.
    """

    __slots__ = ("spaces", "dram_layout", "partitions", "rng_seed", "rngs", "saved_rngs", "pe_transpose_exact",
                 "current", "outside")

    def __init__(self, spaces: list[np.ndarray], dram_layout: DramLayout, partitions: int, rng_seed: int,
                 pe_transpose_exact: bool = False) -> None:
        self.spaces = spaces
        self.dram_layout = dram_layout
        self.partitions = partitions
        self.rng_seed = rng_seed
        self.rngs: dict[str, np.random.Generator] = {}
        self.saved_rngs: dict[bytes, dict] = {}  # a stored state's bytes -> the generator state stored
        self.pe_transpose_exact = pe_transpose_exact  # the machine's (MachineSpec), read by the transpose
        self.current = -1  # the instance being executed (the executor sets it)
        self.outside: list[tuple[int, str, int, float]] = []  # note_outside's notes

    def copy(self) -> Memory:
        """Same bytes and fresh random generators in their initial state."""
        return Memory([space.copy() for space in self.spaces], self.dram_layout, self.partitions, self.rng_seed,
                      self.pe_transpose_exact)

    def view(self, where: AccessView) -> np.ndarray:
        """A live typed view (writes through to memory)."""
        return np.ndarray(where.shape, where.dtype, buffer=self.spaces[where.space], offset=where.offset,
                          strides=where.strides)

    def read(self, where: AccessView) -> np.ndarray:
        """A copy of the elements, in the access's element shape."""
        return self.view(where).copy()

    def write(self, where: AccessView, values: np.ndarray) -> None:
        self.view(where)[...] = values

    def note_outside(self, func: str, outside: tuple[int, float] | None) -> None:
        """Note that the instance executing gave activation ``func`` ``outside = (count, first)``
        inputs outside its valid range (:data:`~neuronsim.machine.model.elementwise.VALID_INPUT`;
        None: none did): ``(instance, func, count, first)`` in :attr:`outside`."""
        if outside is not None:
            self.outside.append((self.current, func, *outside))

    def rng(self, engine: str) -> np.random.Generator:
        """The random generator of ``engine`` (seeded from the data seed until reseeded)."""
        gen = self.rngs.get(engine)
        if gen is None:
            gen = self.rngs[engine] = np.random.default_rng([self.rng_seed, sum(map(ord, engine)), len(engine)])
        return gen

    def seed_rng(self, engine: str, seed: int | None, words: np.ndarray | None) -> None:
        """Reseed ``engine``'s generator: by ``seed``, or from a state tile's ``words``: the very
        generator state a ``get_rand_state`` stored there (:meth:`store_rng`), else one the words'
        digest seeds (the device's XORWOW draws are not modelled, only their determinism)."""
        if seed is not None or words is None:
            self.rngs[engine] = np.random.default_rng(seed or 0)
            return
        data = np.ascontiguousarray(words).tobytes()
        saved = self.saved_rngs.get(data)
        if saved is not None:
            gen = np.random.default_rng()
            gen.bit_generator.state = saved
            self.rngs[engine] = gen
            return
        self.rngs[engine] = np.random.default_rng(
            int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little"))

    def store_rng(self, engine: str, shape: tuple[int, ...]) -> np.ndarray:
        """``engine``'s generator state as uint32 words of ``shape`` (a function of the state),
        remembered so that reseeding from them restores it (:meth:`seed_rng`)."""
        state = self.rng(engine).bit_generator.state
        digest = hashlib.blake2b(repr(state).encode(), digest_size=8).digest()
        words = np.random.default_rng(int.from_bytes(digest, "little")).integers(0, 2**32, size=shape, dtype=np.uint32)
        self.saved_rngs[words.tobytes()] = state
        return words

    def dram_array(self, tensor: Tensor, copy: bool = True) -> np.ndarray:
        """A DRAM tensor as an array of its dtype and shape: one copy of its bytes (through
        :meth:`tensor_bytes` it was two, 64 MB for a 4096^2 bf16 output), or with ``copy=False``
        a view of this memory, for a memory nothing writes any more."""
        base = self.dram_layout.base[tensor.name]
        raw = self.spaces[2][base:base + tensor.bytes_per_partition]
        array = raw.view(numpy_dtype(tensor.dtype)).reshape(tensor.shape)
        return array.copy() if copy else array

    def fill_tensor(self, tensor: Tensor, byte: int) -> None:
        """Every byte of a placed tensor's storage (each rotation slot too) set to ``byte``."""
        slots = (tensor.rotate.slots - 1) * tensor.rotate.stride if tensor.rotate is not None else 0
        end = tensor.byte_base + slots + tensor.bytes_per_partition
        if tensor.memory == MemoryKind.DRAM:
            base = self.dram_layout.base[tensor.name]
            self.spaces[2][base:base + slots + tensor.bytes_per_partition] = byte
            return
        space = self.spaces[_SPACES[tensor.memory]]
        first = tensor.partition or 0
        space.reshape(-1, space.size // self.partitions)[first:first + tensor.shape[0], tensor.byte_base:end] = byte

    def tensor_bytes(self, tensor: Tensor) -> bytes:
        """The bytes of a placed tensor, row-major (SBUF / PSUM: partition by partition)."""
        nbytes = tensor.bytes_per_partition
        if tensor.memory == MemoryKind.DRAM:
            base = self.dram_layout.base[tensor.name]
            return self.spaces[2][base:base + nbytes].tobytes()
        space = self.spaces[_SPACES[tensor.memory]]
        rows = space.reshape(-1, space.size // self.partitions)
        first = tensor.partition or 0
        return rows[first:first + tensor.shape[0], tensor.byte_base:tensor.byte_base + nbytes].tobytes()


def _same_layout(given: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """An array of shape ``given`` holds a tensor of ``shape`` row by row: the same shape but
    for dimensions of 1, or a flat array.

    >>> _same_layout((128, 64), (128, 64)), _same_layout((8192,), (128, 64)), _same_layout((128,), (128, 1))
    (True, True, True)
    >>> _same_layout((64, 128), (128, 64))
    False
    """
    return len(given) <= 1 or [d for d in given if d != 1] == [d for d in shape if d != 1]


def _input_values(tensor: Tensor, supplied: np.ndarray | None, rng: np.random.Generator) -> np.ndarray:
    dtype = numpy_dtype(tensor.dtype)
    count = prod(tensor.shape)
    if supplied is not None:
        if supplied.size != count:
            raise ProgramError(f"inputs.{tensor.name}", f"has {supplied.size} elements; tensor {tensor.name!r} "
                               f"has shape {list(tensor.shape)} ({count} elements)")
        supplied = np.asarray(supplied)
        if not _same_layout(supplied.shape, tuple(tensor.shape)):  # (the transpose was taken row by row: a probe)
            raise ProgramError(f"inputs.{tensor.name}", f"has shape {list(supplied.shape)}; tensor {tensor.name!r} "
                               f"has shape {list(tensor.shape)} (a flat array of its {count} elements is taken too)")
        if supplied.dtype == dtype:  # bytes as given (the float64 round trip below is exact for them, and slow)
            return supplied.reshape(-1)
        why = not_held(supplied, tensor.dtype)  # (numpy's cast gave NaN and 2**40 + 5 as int32 INT_MIN)
        if why is not None:
            raise ProgramError(f"inputs.{tensor.name}", f"{tensor.name}{why}: tensor {tensor.name!r} is {tensor.dtype}")
        with np.errstate(all="ignore"):
            return supplied.reshape(-1).astype(np.float64).astype(dtype)
    kind = dtype.kind
    if kind in "iu":
        low, high = (-8, 8) if kind == "i" else (0, 16)
        return rng.integers(low, high, size=count).astype(dtype)
    return rng.uniform(-1.0, 1.0, size=count).astype(np.float32).astype(dtype)


def _pattern(data_seed: int, space: int, rows: int, row: int,
             written: Sequence[tuple[int, int]] = (), drawn_from: tuple[int, int] = DEFAULT_PATTERN) -> np.ndarray:
    """The seeded uninitialised bytes of one memory: row ``p`` drawn from its own stream, so a
    byte's value does not depend on how long the rows are.

    ``written`` (one row only: DRAM): byte ranges ``[lo, hi)`` the caller overwrites next (the
    inputs); they are left undrawn, the generator jumping over them, so that the bytes around
    them are the stream's all the same (a 4096^3 matmul's two 32 MB inputs, issue 31)."""
    words = -(-row // 8)
    if rows == 1 and written:
        return _pattern_around(data_seed, space, row, written, drawn_from)
    if rows == 1:  # DRAM: the drawn buffer is the memory (no second copy of ~100 MB)
        drawn = _row_bytes(data_seed, space, 0, words)
        out = drawn if words * 8 == row else drawn[:row].copy()
    else:
        out = np.empty(rows * row, np.uint8)
        for p in range(rows):
            out[p * row:(p + 1) * row] = _row_bytes(data_seed, space, p, words)[:row]
    _bounded(out, drawn_from)
    return out


def _bounded(out: np.ndarray, drawn_from: tuple[int, int]) -> None:
    """Drawn bytes in place into ``[first, first + count)`` (``drawn_from``)."""
    first, count = drawn_from
    out &= np.uint8(count - 1)
    if first:
        out |= np.uint8(first)


def _pattern_around(data_seed: int, space: int, row: int, written: Sequence[tuple[int, int]],
                    drawn_from: tuple[int, int] = DEFAULT_PATTERN) -> np.ndarray:
    """One row of the pattern with the bytes of ``written`` left as they come (uninitialised):
    each gap between them drawn from the row's stream advanced to the gap's first 64-bit word
    (``PCG64.advance``: as if the words before had been drawn)."""
    out = np.empty(row, np.uint8)
    start = 0
    for lo, hi in sorted(written) + [(row, row)]:
        if lo > start:  # a gap [start, lo) nobody writes
            first, last = start // 8, -(-lo // 8)
            drawn = _row_bytes(data_seed, space, 0, last - first, skip=first)
            out[start:lo] = drawn[start - 8 * first:lo - 8 * first]
            _bounded(out[start:lo], drawn_from)
        start = max(start, hi)
    return out


def _row_bytes(data_seed: int, space: int, p: int, words: int, skip: int = 0) -> np.ndarray:
    """The bytes ``rng.bytes(row)`` gives for row ``p`` (numpy draws them as little-endian
    uint32s, two from each 64-bit output of the generator, low half first), read as the raw
    64-bit outputs: a fifth of the time for a DRAM of 100 MB (issue 31).  Held to
    ``rng.bytes`` by ``tests/unit/test_functional_fast_paths.py``."""
    generator = np.random.default_rng([data_seed, 0x5EED, space, p]).bit_generator
    if skip:
        generator.advance(skip)
    return generator.random_raw(words).astype("<u8", copy=False).view(np.uint8)


def initial_memory(program: Program, spec: MachineSpec, data_seed: int = 0,
                   inputs: Mapping[str, np.ndarray] | None = None,
                   drawn_from: tuple[int, int] = DEFAULT_PATTERN) -> Memory:
    """Memory as a run starts: the seeded pattern, then the input tensors (see module doc).

    ``inputs`` may also give an ``output`` tensor its initial values (a kernel parameter it
    updates in place, such as a cache it writes one slot of); without them an output starts
    as the seeded pattern, as before.  ``drawn_from``: the pattern's bytes (see
    :data:`DEFAULT_PATTERN`)."""
    inputs = dict(inputs or {})
    for name in inputs:
        tensor = program.tensors.get(name)
        if tensor is None or tensor.memory != MemoryKind.DRAM or tensor.role not in ("input", "output"):
            raise ProgramError(f"inputs.{name}", "names no DRAM tensor with role 'input' or 'output'")
    layout = DramLayout.of(program)
    given = [name for name in sorted(program.tensors) if program.tensors[name].memory == MemoryKind.DRAM
             and (program.tensors[name].role == "input" or name in inputs)]
    written = [(layout.base[name], layout.base[name] + program.tensors[name].bytes_per_partition) for name in given]
    spaces = [_pattern(data_seed, 0, spec.sbuf_partitions, layout.sbuf_row, drawn_from=drawn_from),
              _pattern(data_seed, 1, spec.sbuf_partitions, layout.psum_row, drawn_from=drawn_from),
              _pattern(data_seed, 2, 1, layout.size, written, drawn_from)]
    values_rng = np.random.default_rng([data_seed, 0x1A7A])
    for name in given:
        values = _input_values(program.tensors[name], inputs.get(name), values_rng)
        base = layout.base[name]
        spaces[2][base:base + values.nbytes] = values.view(np.uint8)
    return Memory(spaces, layout, spec.sbuf_partitions, data_seed, spec.pe_transpose_exact)
