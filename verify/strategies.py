"""Hypothesis strategies for well-formed, conflict-rich neuronsim programs.

Every program :func:`programs` draws passes :func:`machine.validate.validate_program`: it is
built valid by construction (no ``filter``), following the op table and every hardware rule
of :mod:`machine.validate` (engines per op, POOL never touches PSUM, only DMAs touch DRAM,
DMAs never touch PSUM, PE writes only PSUM, the partition-start rule of compute accesses,
PSUM tensors inside one bank, at most one PSUM operand of ``tensor_tensor``, DGE triggers).

The programs are small but crowded: a few small tensors placed on purpose over the same
partitions and bytes (storage reuse), accesses with partition ranges and steps, strided and
multi-dimensional patterns, ``per_iteration`` offsets that stay inside their tensor in every
instance, nested loops, DMAs triggered by several sequencers onto several queues, PSUM
accumulation, DRAM alias groups, RNG ops and opaque ops.

Dependence modes (``deps=``):

``"none"``
    no instruction has a dep.
``"random"``
    random valid deps of every kind: on earlier instructions, fan-ins from after a loop, and
    loop-carried ones (including an instruction on itself).  No race-freedom is implied.
``"sequential"``
    :func:`add_sequential_deps`: every instance waits (rule 4) on its immediate predecessor
    instance in program order.  Since a wait orders the *completion* of the waited-on
    instance before the *trigger* of the waiter, ``E(X_k) <= T(X_k+1) <= S(X_k+1)`` for
    consecutive instances, DMAs included (an asynchronous DMA is waited for until it
    completes, not just until it is triggered).  Every pair of instances is therefore
    ordered and the program is race-free under the spec's happens-before, whatever its
    engines, queues and footprints.

Examples
--------
>>> from machine.ir import Dep, Instruction, Loop, Program
>>> body = (Instruction("a", "dve", "op_a"), Loop("i", 2, (Instruction("b", "act", "op_b"),)))
>>> seq = add_sequential_deps(Program({}, body))
>>> [(d.on, d.loop_carried) for d in seq.body[1].body[0].deps]
[('a', False), ('b', True)]
>>> strip_deps(seq) == Program({}, body)
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from machine.dtypes import DTYPES
from machine.edges import EdgeKind
from machine.ir import (
    PSUM_BANK_BYTES, SEQUENCERS, Access, Dep, Instruction, Loop, MemoryKind, Node, Program, Tensor, frozen_mapping,
)
from machine.optable import ACTIVATION_FUNCS, ALU_OPS, OP_TABLE, REDUCE_OPS
from machine.presets import PRESETS, MachineSpec

__all__ = [
    "programs",
    "access_pairs",
    "tensors_and_access",
    "strip_deps",
    "add_sequential_deps",
    "DEPS_MODES",
    "partition_start_ok",
]

DEPS_MODES = ("none", "random", "sequential")

#: Small region every placement falls into, so that tensors overlap often.
_SBUF_BYTES = 256
_DRAM_BYTES = 512
_PARTITION_BASES = (0, 0, 32, 64, 96)
_PARTITION_COUNTS = (4, 1, 2, 3, 8, 16, 32, 33, 64, 128, 128)
_NUMBERS = (0, 1, -1, 0.5, 2.0, -3.25)
#: Opaque op names: unknown to the op table (``dma_gather`` is an opaque *DMA* op).
_OPAQUE_OPS = ("custom_kernel", "fused_norm")
_OPAQUE_DMA_OPS = ("dma_gather",)
_MAX_ELEMENTS = 256  # elements one access pattern enumerates at most


# -- cheap draws: cached strategies (building a strategy object per draw is the slow part) --
@lru_cache(maxsize=4096)
def _integers(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


def _int(draw, lo: int, hi: int) -> int:
    return lo if lo == hi else draw(_integers(lo, hi))


def _flag(draw) -> bool:
    return draw(_BOOLEANS)


def _pick(draw, items: Sequence):
    """One of ``items`` (shrinking towards the first)."""
    return items[_int(draw, 0, len(items) - 1)]


_BOOLEANS = st.booleans()


def partition_start_ok(first: int, span: int) -> bool:
    """The partition-start rule of compute accesses (``machine.optable``, [2.1]).

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
def _first_partition(tensor: Tensor) -> int:
    """Where the tensor's partitions start; virtual tensors are generated for partition 0."""
    return tensor.partition or 0


def _compute_starts(tensor: Tensor) -> list[tuple[int, int]]:
    """``(relative start, max span)`` pairs a compute access to ``tensor`` may use."""
    if tensor.memory == MemoryKind.DRAM:
        return []
    base, count = _first_partition(tensor), tensor.shape[0]
    out = []
    for first in range(base, base + count):
        span = min(_max_span(first), base + count - first)
        if span > 0:
            out.append((first - base, span))
    return out


def _onchip_tensor(
    draw, name: str, memory: MemoryKind, virtual: bool, *, aligned: bool = False, near: Tensor | None = None
) -> Tensor:
    """An SBUF / PSUM tensor; placed on ``near``'s first partition and bytes when given."""
    if virtual:
        base = 0
    elif near is not None:
        base = near.partition
    else:
        base = _pick(draw, _PARTITION_BASES) if aligned or _flag(draw) else _int(draw, 0, 127)
    nparts = _pick(draw, [n for n in _PARTITION_COUNTS if base + n <= 128])
    if memory == MemoryKind.PSUM:
        dtype = _pick(draw, ("float32", "bfloat16", "int32"))
    else:
        dtype = _pick(draw, sorted(DTYPES))
    free = tuple(_int(draw, 1, 8) for _ in range(_int(draw, 1, 2)))
    shape = (nparts, *free)
    if virtual:
        return Tensor(name, memory, dtype, shape)
    nbytes = Tensor(name, memory, dtype, shape).bytes_per_partition
    if memory == MemoryKind.SBUF:
        offset = near.offset + _int(draw, 0, 16) if near is not None else _int(draw, 0, _SBUF_BYTES - 64)
        return Tensor(name, memory, dtype, shape, partition=base, offset=offset)
    bank = near.bank if near is not None else _int(draw, 0, 2)
    offset = near.offset + _int(draw, 0, 16) if near is not None else _int(draw, 0, 256)
    return Tensor(name, memory, dtype, shape, partition=base, offset=min(offset, PSUM_BANK_BYTES - nbytes), bank=bank)


def _dram_tensor(draw, name: str, virtual: bool, alias: str | None, near: Tensor | None = None) -> Tensor:
    """A DRAM tensor: virtual, in alias group ``alias``, or at an address (near ``near``'s)."""
    dtype = _pick(draw, sorted(DTYPES))
    shape = tuple(_int(draw, 1, 8) for _ in range(_int(draw, 1, 3)))
    role = _pick(draw, ("internal", "input", "output"))
    if virtual:
        return Tensor(name, MemoryKind.DRAM, dtype, shape, role=role)
    if alias is not None:
        return Tensor(name, MemoryKind.DRAM, dtype, shape, alias=alias, role=role)
    address = near.address + _int(draw, 0, 64) if near is not None else _int(draw, 0, _DRAM_BYTES)
    return Tensor(name, MemoryKind.DRAM, dtype, shape, address=address, role=role)


@dataclass(frozen=True, slots=True)
class _Config:
    max_instructions: int
    min_instructions: int
    max_loops: int
    max_depth: int
    max_trip: int
    placed: bool
    virtual: bool
    alias_groups: bool
    dma: bool
    psum_accumulation: bool
    rng: bool
    strides: bool
    opaque: bool
    deps: str
    machine: str | None


def _tensor_pool(draw, cfg: _Config) -> dict[str, Tensor]:
    """A few small tensors, often placed right on top of an earlier one (storage reuse)."""
    tensors: dict[str, Tensor] = {}

    def is_virtual() -> bool:
        return not cfg.placed or (cfg.virtual and _flag(draw))

    def near(memory: MemoryKind) -> Tensor | None:
        earlier = [t for t in tensors.values() if t.memory == memory and not t.is_virtual and t.alias is None]
        return _pick(draw, earlier) if earlier and _flag(draw) else None

    for i in range(_int(draw, 1, 3)):
        # The first SBUF tensor sits on a partition every compute access can start from.
        virtual = is_virtual()
        tensors[f"sb{i}"] = _onchip_tensor(
            draw, f"sb{i}", MemoryKind.SBUF, virtual, aligned=i == 0, near=None if virtual else near(MemoryKind.SBUF))
    for i in range(_int(draw, 0, 2)):
        virtual = is_virtual()
        tensors[f"ps{i}"] = _onchip_tensor(
            draw, f"ps{i}", MemoryKind.PSUM, virtual, aligned=True, near=None if virtual else near(MemoryKind.PSUM))
    if cfg.dma:
        for i in range(_int(draw, 1, 2)):
            virtual = is_virtual()
            tensors[f"dr{i}"] = _dram_tensor(draw, f"dr{i}", virtual, None, None if virtual else near(MemoryKind.DRAM))
        if cfg.alias_groups:
            for i in range(_int(draw, 0, 3)):
                tensors[f"al{i}"] = _dram_tensor(draw, f"al{i}", False, _pick(draw, ("g0", "g1")))
    return tensors


# -- accesses ---------------------------------------------------------------------------
def _pattern(draw, budget: int, strides: bool) -> tuple[tuple[int, int], ...]:
    """A ``[[stride, count], ...]`` pattern whose span is at most ``budget`` elements."""
    if not strides:
        return ((1, _int(draw, 1, min(budget + 1, _MAX_ELEMENTS))),)
    dims = []
    remaining, elements = budget, 1
    for _ in range(_int(draw, 1, 3)):
        # Mostly the interesting small strides (1, interleaves, broadcast), sometimes any.
        stride = _int(draw, 0, max(remaining, 0)) if _flag(draw) else _pick(draw, (1, 2, 0, 3))
        if stride == 0 or stride > remaining:
            stride, limit = 0, 3
        else:
            limit = remaining // stride + 1
        count = _int(draw, 1, max(1, min(limit, _MAX_ELEMENTS // elements, 16)))
        remaining -= stride * (count - 1)
        elements *= count
        dims.append((stride, count))
    return tuple(dims)


def _access(
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
            whole_ok = partition_start_ok(_first_partition(tensor), nparts)
            if not (whole_ok and _flag(draw)):
                start, span = _pick(draw, _compute_starts(tensor))
                step = _int(draw, 1, min(4, span))
                partitions = (start, _int(draw, 1, (span - 1) // step + 1), step)
        elif _flag(draw):
            start = _int(draw, 0, nparts - 1)
            step = _int(draw, 1, 4)
            partitions = (start, _int(draw, 1, (nparts - 1 - start) // step + 1), step)
    size = tensor.free_elements
    moving = [(name, trip) for name, trip in loops if _flag(draw)] if loops else []
    if not moving and _flag(draw):
        # Default pattern: the rest of the tensor from the offset.
        offset = _int(draw, 0, size - 1)
        return Access(tensor.name, partitions, offset if offset or _flag(draw) else None)
    pattern = _pattern(draw, size - 1, strides)
    span = sum(stride * (count - 1) for stride, count in pattern)
    room = size - 1 - span
    shifts, below, above = [], 0, 0
    for name, trip in moving:
        if trip == 1:  # the loop never moves the offset: any shift is in bounds
            shift = _int(draw, -8, 8)
        else:
            reach = (room - below - above) // (trip - 1)
            shift = _int(draw, -reach, reach)
            if shift < 0:
                below += -shift * (trip - 1)
            else:
                above += shift * (trip - 1)
        shifts.append((name, shift))
    offset = _int(draw, below, room - above)
    return Access(tensor.name, partitions, offset if offset or moving or _flag(draw) else None, pattern, tuple(shifts))


# -- instructions -----------------------------------------------------------------------
def _onchip(tensors: Mapping[str, Tensor], memory: MemoryKind) -> list[Tensor]:
    """Tensors of ``memory`` that a compute access can reach."""
    return [t for t in tensors.values() if t.memory == memory and _compute_starts(t)]


def _menu(cfg: _Config, tensors: Mapping[str, Tensor]) -> list[tuple[str, tuple[str, ...]]]:
    """``(op, engines)`` the program's tensors can feed; an op listed twice is drawn twice as often."""
    has_psum = bool(_onchip(tensors, MemoryKind.PSUM))
    ops = ["transpose", "activation", "tensor_tensor", "tensor_scalar", "tensor_reduce", "tensor_copy", "memset", "iota"]
    if has_psum:
        ops += ["matmul", "matmul"]
    if cfg.rng:
        ops += ["set_rand_state", "random"]
    menu = [(op, OP_TABLE[op].engines) for op in ops]
    if cfg.opaque:
        menu += [(op, SEQUENCERS) for op in _OPAQUE_OPS]
    if cfg.dma:
        menu += [("dma_copy", SEQUENCERS)] * 3
        if cfg.opaque:
            menu += [(op, SEQUENCERS) for op in _OPAQUE_DMA_OPS]
    # PE writes only PSUM: without a PSUM tensor it has nothing to do.
    return [(op, tuple(e for e in engines if e != "pe" or has_psum)) for op, engines in menu]


def _operand_tensors(tensors: Mapping[str, Tensor], engine: str, write: bool) -> list[Tensor]:
    """Tensors a compute op on ``engine`` may read (or write)."""
    sbuf, psum = _onchip(tensors, MemoryKind.SBUF), _onchip(tensors, MemoryKind.PSUM)
    if engine == "pool":
        return sbuf
    if engine == "pe":
        return psum if write else sbuf
    return sbuf + psum


def _number_attrs(draw, *keys: str) -> dict:
    return {key: _pick(draw, _NUMBERS) for key in keys if _flag(draw)}


def _attrs(draw, op: str) -> dict:
    if op == "activation":
        attrs = _number_attrs(draw, "scale", "bias")
        if _flag(draw):
            attrs["func"] = _pick(draw, ACTIVATION_FUNCS)
        return attrs
    if op == "tensor_tensor":
        return {"op": _pick(draw, ALU_OPS)}
    if op == "tensor_scalar":
        attrs = {"op0": _pick(draw, ALU_OPS), "operand0": _pick(draw, _NUMBERS)}
        if _flag(draw):
            attrs.update(op1=_pick(draw, ALU_OPS), operand1=_pick(draw, _NUMBERS))
        return attrs
    if op == "tensor_reduce":
        return {"op": _pick(draw, REDUCE_OPS), "negate": _flag(draw)}
    if op == "memset":
        return {"value": _pick(draw, _NUMBERS)}
    if op == "iota":
        return _number_attrs(draw, "base", "step", "partition_step")
    if op == "set_rand_state":
        return {"seed": _int(draw, 0, 2**31 - 1)} if _flag(draw) else {}
    if op == "random":
        low = _pick(draw, (0, -1, 0.5))
        return {"low": low, "high": low + _pick(draw, (1, 2.5))}
    if op in _OPAQUE_OPS or op in _OPAQUE_DMA_OPS:
        attrs = {"cycles": _int(draw, 0, 500)} if _flag(draw) else {}
        if _flag(draw):
            attrs["mode"] = _pick(draw, ("fast", "exact"))
        return attrs
    return {}


def _compute_instruction(draw, cfg: _Config, tensors, name: str, op: str, engine: str, loops) -> Instruction:
    def operand(write: bool, *, sbuf_only: bool = False) -> Access:
        choices = _operand_tensors(tensors, engine, write)
        if sbuf_only:
            choices = [t for t in choices if t.memory == MemoryKind.SBUF]
        tensor = _pick(draw, choices)
        return _access(draw, tensor, loops, compute=True, strides=cfg.strides)

    attrs = _attrs(draw, op)
    if op == "matmul":
        out = operand(True)
        reads = [operand(False), operand(False)]
        accumulate = cfg.psum_accumulation and _flag(draw)
        if accumulate:
            reads.append(out)  # an accumulating matmul lists its PSUM tile in both
        if _flag(draw):
            attrs["accumulate"] = accumulate
        if _flag(draw):
            attrs["group"] = f"acc_{out.tensor}"
        return Instruction(name, engine, op, tuple(reads), (out,), frozen_mapping(attrs))
    spec = OP_TABLE.get(op)
    if spec is None:  # opaque compute op
        nreads, nwrites = _int(draw, 0, 2), _int(draw, 0, 2)
        writes = [operand(True) for _ in range(nwrites)]
        if engine == "pe":  # PE reads SBUF (and may accumulate into what it writes)
            reads = [operand(False) for _ in range(nreads)]
            if writes and cfg.psum_accumulation and _flag(draw):
                reads.append(writes[0])
        else:
            reads = [operand(False) for _ in range(nreads)]
        return Instruction(name, engine, op, tuple(reads), tuple(writes), frozen_mapping(attrs))
    nreads = _int(draw, *spec.reads)
    reads: list[Access] = []
    for i in range(nreads):
        psum_read = any(tensors[a.tensor].memory == MemoryKind.PSUM for a in reads)
        reads.append(operand(False, sbuf_only=op == "tensor_tensor" and psum_read))
    writes = [operand(True) for _ in range(spec.writes[0])]
    return Instruction(name, engine, op, tuple(reads), tuple(writes), frozen_mapping(attrs))


def _dma_instruction(draw, cfg: _Config, tensors, spec: MachineSpec, name: str, op: str, engine: str, loops) -> Instruction:
    endpoints = [t for t in tensors.values() if t.memory != MemoryKind.PSUM]

    def side() -> Access:
        return _access(draw, _pick(draw, endpoints), loops, compute=False, strides=cfg.strides)

    if op == "dma_copy":
        reads, writes = [side()], [side()]
        attrs = {}
        modes = ["none"] + (["swdge"] if engine == "pool" else []) + (["hwdge"] if spec.has_hwdge and engine in ("sp", "act") else [])
        if _flag(draw):
            attrs["dge"] = _pick(draw, modes)
    else:
        reads = [side() for _ in range(_int(draw, 1, 2))]
        writes = [side()]
        attrs = _attrs(draw, op)
    queue = _pick(draw, spec.queue_names)
    return Instruction(name, engine, op, tuple(reads), tuple(writes), frozen_mapping(attrs), queue=queue)


# -- structure and deps -----------------------------------------------------------------
def _body(draw, cfg: _Config, tensors, spec: MachineSpec) -> tuple[Node, ...]:
    """Instructions with loops opened and closed around them; bodies are never empty."""
    menu = _menu(cfg, tensors)
    count = _int(draw, cfg.min_instructions, cfg.max_instructions)
    bodies: list[list[Node]] = [[]]
    open_loops: list[tuple[str, int]] = []
    loops_made = 0

    def close() -> None:
        name, trip = open_loops.pop()
        body = bodies.pop()
        bodies[-1].append(Loop(name, trip, tuple(body)))

    for k in range(count):
        while open_loops and bodies[-1] and _flag(draw):
            close()
        while loops_made < cfg.max_loops and len(open_loops) < cfg.max_depth and _flag(draw):
            open_loops.append((f"L{loops_made}", _int(draw, 1, cfg.max_trip)))
            bodies.append([])
            loops_made += 1
        op, engines = _pick(draw, menu)
        engine = _pick(draw, engines)
        name = f"{op}{k}"
        if op.startswith("dma"):
            inst = _dma_instruction(draw, cfg, tensors, spec, name, op, engine, tuple(open_loops))
        else:
            inst = _compute_instruction(draw, cfg, tensors, name, op, engine, tuple(open_loops))
        bodies[-1].append(inst)
    while open_loops:
        close()
    return tuple(bodies[0])


def _merge_deps(deps: Sequence[Dep]) -> tuple[Dep, ...]:
    """One dep per ``(on, loop_carried)``, of the strongest kind (the format's merge)."""
    merged: dict[tuple[str, bool], Dep] = {}
    for dep in deps:
        previous = merged.get((dep.on, dep.loop_carried))
        if previous is None or dep.kind > previous.kind:
            merged[(dep.on, dep.loop_carried)] = dep
    return tuple(merged.values())


_KINDS = (EdgeKind.ORDERED, EdgeKind.ANTI, EdgeKind.OUTPUT, EdgeKind.FLOW)


def _random_deps(draw, program: Program) -> Program:
    placed = list(program.instructions())
    deps_of: dict[str, tuple[Dep, ...]] = {}
    for position, (inst, loops) in enumerate(placed):
        earlier = [other.name for other, _ in placed[:position]]
        mine = {loop.name for loop in loops}
        # Loop-carried targets share a loop with inst: any of them, later ones and itself too.
        carried = [other.name for other, theirs in placed if mine & {loop.name for loop in theirs}]
        deps = []
        for _ in range(_int(draw, 0, 2)):
            loop_carried = bool(carried) and _flag(draw)
            pool = carried if loop_carried else earlier
            if not pool:
                continue
            deps.append(Dep(_pick(draw, pool), _pick(draw, _KINDS), loop_carried))
        deps_of[inst.name] = _merge_deps(deps)
    return program.map_instructions(lambda inst: replace(inst, deps=deps_of[inst.name]))


def _last_instruction(node: Node) -> str:
    while isinstance(node, Loop):
        node = node.body[-1]
    return node.name


def add_sequential_deps(program: Program, kind: EdgeKind = EdgeKind.ORDERED) -> Program:
    """Make every instance wait on its immediate program-order predecessor instance.

    Requires
        loops with non-empty bodies (the format's loops always have one).
    Guarantees
        for every instance ``Y`` but the first, the resolved waits of ``Y`` include the
        instance just before it in program order, so all instances are totally ordered
        (``E(X) <= T(Y)``) and the program is race-free under rules 1-4.  Existing deps are
        kept (merged with the new ones).

    How: the first node of a body waits on what precedes the body (the node before its loop,
    inherited outwards) and, loop-carried, on the last instruction of each loop it opens (the
    previous iteration's last instance, ``[i-1, last]`` included); any other node waits on
    the last instruction of its previous sibling (a fan-in when that sibling is a loop).
    """
    added: dict[str, list[Dep]] = {}

    def visit(body: tuple[Node, ...], entry: list[Dep]) -> None:
        for index, node in enumerate(body):
            waits = entry if index == 0 else [Dep(_last_instruction(body[index - 1]), kind)]
            if isinstance(node, Loop):
                visit(node.body, [*waits, Dep(_last_instruction(node), kind, True)])
            else:
                added[node.name] = waits

    visit(program.body, [])
    return program.map_instructions(lambda inst: replace(inst, deps=_merge_deps([*inst.deps, *added[inst.name]])))


def strip_deps(program: Program) -> Program:
    """The same program without any dep (what the dependence passes start from)."""
    return program.map_instructions(lambda inst: replace(inst, deps=()) if inst.deps else inst)


@st.composite
def _programs(draw, cfg: _Config) -> Program:
    machine = cfg.machine or _pick(draw, sorted(PRESETS))
    spec = PRESETS[machine]
    tensors = _tensor_pool(draw, cfg)
    program = Program(frozen_mapping(tensors), _body(draw, cfg, tensors, spec), machine)
    if cfg.deps == "random":
        return _random_deps(draw, program)
    if cfg.deps == "sequential":
        return add_sequential_deps(program)
    return program


def _check_int(value, name: str, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidArgument(f"{name}={value!r} must be an integer")
    if value < minimum:
        raise InvalidArgument(f"{name}={value!r} must be at least {minimum}")


def programs(
    *,
    min_instructions: int = 1,
    max_instructions: int = 12,
    max_loops: int = 2,
    max_depth: int = 2,
    max_trip: int = 3,
    placed: bool = True,
    virtual: bool = False,
    alias_groups: bool = True,
    dma: bool = True,
    psum_accumulation: bool = True,
    rng: bool = True,
    strides: bool = True,
    opaque: bool = True,
    deps: str = "random",
    machine: str | None = "trn1",
) -> st.SearchStrategy[Program]:
    """Well-formed programs that :func:`~machine.validate.validate_program` accepts.

    Parameters
    ----------
    min_instructions, max_instructions:
        Number of instructions (not instances).
    max_loops, max_depth, max_trip:
        At most ``max_loops`` loops, nested at most ``max_depth`` deep, each of trip count
        ``1..max_trip``.
    placed, virtual:
        Which tensors may appear: placed ones, virtual ones (no placement, for the
        allocation passes), or a mix when both are true.  Virtual SBUF / PSUM tensors are
        accessed as if placed at partition 0 (the partition-start rule then holds).
        Alias-group DRAM tensors are always placed (an alias is a placement).
    alias_groups, dma, psum_accumulation, rng, strides, opaque:
        Allow DRAM alias groups (needs ``dma``), DMA ops (and DRAM tensors), accumulating
        matmuls, ``set_rand_state`` / ``random``, strided and multi-dimensional patterns,
        ops unknown to the op table.
    deps:
        ``"none"``, ``"random"`` or ``"sequential"`` (see the module documentation for what
        each guarantees).
    machine:
        A preset name, or None to draw one.

    Raises
    ------
    hypothesis.errors.InvalidArgument
        on an argument of the wrong type or range, ``min_instructions > max_instructions``,
        or ``placed`` and ``virtual`` both false (no tensor could exist).  The feature flags
        allow a feature, they do not force it, so no other combination is impossible.
    """
    _check_int(min_instructions, "min_instructions", 1)
    _check_int(max_instructions, "max_instructions", 1)
    _check_int(max_loops, "max_loops", 0)
    _check_int(max_depth, "max_depth", 0)
    _check_int(max_trip, "max_trip", 1)
    if min_instructions > max_instructions:
        raise InvalidArgument(f"min_instructions={min_instructions} is greater than max_instructions={max_instructions}")
    flags = dict(placed=placed, virtual=virtual, alias_groups=alias_groups, dma=dma,
                 psum_accumulation=psum_accumulation, rng=rng, strides=strides, opaque=opaque)
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise InvalidArgument(f"{key}={value!r} must be a bool")
    if not placed and not virtual:
        raise InvalidArgument("placed=False and virtual=False leave no way to place a tensor")
    if deps not in DEPS_MODES:
        raise InvalidArgument(f"deps={deps!r} must be one of {DEPS_MODES}")
    if machine is not None and machine not in PRESETS:
        raise InvalidArgument(f"machine={machine!r} must be None or one of {sorted(PRESETS)}")
    cfg = _Config(max_instructions, min_instructions, max_loops, max_depth, max_trip, deps=deps,
                  machine=machine, **flags)
    return _programs(cfg)


# -- geometry helpers -------------------------------------------------------------------
@st.composite
def tensors_and_access(draw, *, memory: str | None = None, max_trip: int = 3):
    """``(tensor, access, loops)``: one placed tensor and an access that stays inside it for
    every index of ``loops`` (a tuple of ``(name, trip_count)``)."""
    loops = tuple((name, _int(draw, 1, max_trip)) for name in ("i", "j")[: _int(draw, 0, 2)])
    memory = memory or _pick(draw, ("sbuf", "psum", "dram", "alias"))
    if memory in ("sbuf", "psum"):
        kind = MemoryKind.SBUF if memory == "sbuf" else MemoryKind.PSUM
        tensor = _onchip_tensor(draw, "t", kind, False)
    else:
        group = _pick(draw, ("g0", "g1")) if memory == "alias" else None
        tensor = _dram_tensor(draw, "t", False, group)
    compute = bool(_compute_starts(tensor)) and _flag(draw)
    return tensor, _access(draw, tensor, loops, compute=compute), loops


def _iteration(draw, loops) -> dict[str, int]:
    return {name: _int(draw, 0, trip - 1) for name, trip in loops}


@st.composite
def access_pairs(draw, *, max_trip: int = 3):
    """``(tensor_a, access_a, iteration_a, tensor_b, access_b, iteration_b)`` for geometry tests.

    Both tensors are placed.  ``b`` is the same tensor as ``a``, another tensor of the same
    memory (overlapping placements are likely: every placement falls in a small region), or
    a tensor of another memory (never sharing a byte).  Accesses use partition steps,
    strides, offsets and per-iteration shifts; the iterations are loop index maps.
    """
    tensor_a, access_a, loops_a = draw(tensors_and_access(max_trip=max_trip))
    how = _pick(draw, ("same", "sibling", "sibling", "other"))
    if how == "same":
        tensor_b, loops_b = tensor_a, loops_a
        access_b = _access(draw, tensor_a, loops_a, compute=False)
    else:
        if tensor_a.memory == MemoryKind.DRAM:
            memory = "alias" if tensor_a.alias is not None else "dram"
        else:
            memory = tensor_a.memory.name.lower()
        if how == "other":
            memory = _pick(draw, ("sbuf", "psum", "dram", "alias"))
        tensor_b, access_b, loops_b = draw(tensors_and_access(memory=memory, max_trip=max_trip))
        tensor_b = replace(tensor_b, name="u")
        access_b = replace(access_b, tensor="u")
    return tensor_a, access_a, _iteration(draw, loops_a), tensor_b, access_b, _iteration(draw, loops_b)
