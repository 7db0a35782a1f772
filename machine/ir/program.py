"""Program IR: tensors, accesses, instructions, loops (scheduling units) and programs.

Value objects are immutable (``frozen=True, slots=True``); a pass that changes a program
returns a new one (:func:`dataclasses.replace` is the tool).  The IR imports nothing else of
ours, so every other module can depend on it.

Names follow the program format (``docs/program-format.md``): an instruction waits
for its ``deps``; a :class:`Loop` is a scheduling unit (opcode 105) whose instance semantics
is its body unrolled ``trip_count`` times.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from math import prod
from types import MappingProxyType
from typing import Any, Union

from neuronsim.machine.ir.dtypes import itemsize
from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.fast_dataclasses import quick_init

__all__ = [
    "MemoryKind",
    "MEMORY_NAMES",
    "SEQUENCERS",
    "OPCODE_LOOP",
    "Tensor",
    "Rotation",
    "Access",
    "Dep",
    "Instruction",
    "Loop",
    "Node",
    "Program",
    "PSUM_BANK_BYTES",
    "is_dma_op",
    "frozen_mapping",
    "loop_nest",
]


class MemoryKind(IntEnum):
    """Memory types, numbered as in the seeds (``MemoryType``)."""

    DRAM = 8
    SBUF = 16
    PSUM = 32


MEMORY_NAMES: dict[str, MemoryKind] = {"dram": MemoryKind.DRAM, "sbuf": MemoryKind.SBUF, "psum": MemoryKind.PSUM}

#: The five instruction sequencers, in the order their clock components are numbered.
SEQUENCERS: tuple[str, ...] = ("pe", "act", "dve", "pool", "sp")

#: Opcode of a scheduling unit / loop (BIR ``InstLoop``, 0x69).
OPCODE_LOOP = 105

#: Bytes per PSUM bank in each partition (both presets).
PSUM_BANK_BYTES = 2048

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def frozen_mapping(values: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A read-only view of a copy of ``values`` (shared empty mapping for none)."""
    return MappingProxyType(dict(values)) if values else _EMPTY


def is_dma_op(op: str) -> bool:
    """DMA operations are the ops whose name starts with ``dma``."""
    return op.startswith("dma")


def queue_problem(op: str, queue: Any, queue_names: tuple[str, ...]) -> str | None:
    """What is wrong with instruction ``op``'s DMA ``queue`` on a machine with ``queue_names``
    (None: nothing): only a DMA op has one, and it is one of the machine's.  The JSON loader
    and the validation of a program built in code say it alike.

    >>> queue_problem("matmul", "dma0", ("dma0",))
    "only DMA ops (op names starting with 'dma') have a queue; 'matmul' is not one"
    >>> queue_problem("dma_copy", "dma7", ("dma0", "dma1")), queue_problem("dma_copy", "dma1", ("dma0", "dma1"))
    ("unknown DMA queue 'dma7'; expected one of ['dma0', 'dma1']", None)
    """
    if not is_dma_op(op):
        return f"only DMA ops (op names starting with 'dma') have a queue; {op!r} is not one"
    if not isinstance(queue, str) or queue not in queue_names:
        return f"unknown DMA queue {queue!r}; expected one of {list(queue_names)}"
    return None


#: Ops a sequencer performs on one element, not a compute engine's access pattern: reading a
#: value into a register (``nisa.register_load``, ``scalar_load``).  nki-library's MoE block
#: kernel loads index registers from partitions 1 to 3, so the partition-start rule of compute
#: accesses does not bind them.
REGISTER_OPS = frozenset({"register_load", "register_store"})


def keeps_partition_start(op: str) -> bool:
    """Whether ``op``'s on-chip accesses are bound by the partition-start rule: compute ops
    are, DMA transfers and register ops are not."""
    return not is_dma_op(op) and op not in REGISTER_OPS


@dataclass(frozen=True, slots=True)
class Rotation:
    """``{"loop": L, "slots": n, "stride": BYTES}``: slot ``i mod n`` of loop ``L``'s index ``i``,
    ``stride`` bytes apart (within each partition for SBUF / PSUM, addresses for DRAM)."""

    loop: str
    slots: int
    stride: int

    def delta(self, index: int) -> int:
        """Bytes the tensor moves at loop index ``index``.

        >>> Rotation("i", 2, 512).delta(3)
        512
        """
        return (index % self.slots) * self.stride


@quick_init
@dataclass(frozen=True, slots=True)
class Tensor:
    """A named tensor and, unless virtual, its placement.

    SBUF / PSUM: the first dimension is the partition dimension.  ``offset`` is a byte offset
    inside each partition (for PSUM, from the start of ``bank``).  DRAM: ``address`` is a byte
    address, or ``alias`` names a group of tensors that may alias each other.
    """

    name: str
    memory: MemoryKind
    dtype: str
    shape: tuple[int, ...]
    partition: int | None = None
    offset: int | None = None
    bank: int | None = None
    address: int | None = None
    alias: str | None = None
    role: str = "internal"
    extras: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, hash=False)
    """``x-…`` keys carried through load and save untouched."""
    rotate: Rotation | None = None
    """Rotating placement (``x-rotate``): inside loop ``rotate.loop`` the tensor sits
    ``(i mod rotate.slots) * rotate.stride`` bytes after its base, a fresh slot per
    iteration (multi-buffering).  None: one fixed placement."""

    @property
    def itemsize(self) -> int:
        return itemsize(self.dtype)

    @property
    def is_virtual(self) -> bool:
        """True when the allocation passes still have to place this tensor."""
        if self.memory == MemoryKind.DRAM:
            return self.address is None and self.alias is None
        return self.partition is None

    @property
    def num_partitions(self) -> int:
        """Partitions the tensor spans (1 for DRAM, which has no partition axis)."""
        return 1 if self.memory == MemoryKind.DRAM else self.shape[0]

    @property
    def free_elements(self) -> int:
        """Elements per partition (SBUF/PSUM) or in all (DRAM): the flat index range."""
        if self.memory == MemoryKind.DRAM:
            return prod(self.shape)
        return prod(self.shape[1:])

    @property
    def bytes_per_partition(self) -> int:
        return self.free_elements * self.itemsize

    @property
    def byte_base(self) -> int:
        """First byte: inside each partition for SBUF/PSUM, an address for DRAM (0 for alias)."""
        if self.memory == MemoryKind.PSUM:
            return (self.bank or 0) * PSUM_BANK_BYTES + (self.offset or 0)
        if self.memory == MemoryKind.SBUF:
            return self.offset or 0
        return self.address or 0


@quick_init
@dataclass(frozen=True, slots=True)
class Access:
    """A footprint inside one tensor, as the format writes it (all fields in elements).

    ``partitions`` is ``(start, count, step)`` relative to the tensor's first partition, or
    None for all of them.  ``pattern`` is ``((stride, count), ...)`` outermost first, or None
    for the default contiguous run.  ``per_iteration`` maps a loop name to an element shift.
    """

    tensor: str
    partitions: tuple[int, int, int] | None = None
    offset: int | None = None
    pattern: tuple[tuple[int, int], ...] | None = None
    per_iteration: tuple[tuple[str, int], ...] = ()
    extras: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, hash=False)
    partitions_per_iteration: tuple[tuple[str, int], ...] = ()
    """``x-partitions_per_iteration``: inside loop LOOP the first partition moves by this many
    partitions per iteration."""

    @property
    def moves(self) -> bool:
        """True when the footprint depends on loop indices (shifts of bytes or partitions)."""
        return bool(self.per_iteration or self.partitions_per_iteration)


@quick_init
@dataclass(frozen=True, slots=True)
class Dep:
    """``{"on": B, "kind": ..., "loop_carried": ...}``: the instruction waits for B.

    Two extensions (``x-`` keys of the format; a tool that ignores them waits more, never
    less): ``distance`` (``x-distance``, loop-carried deps only) waits on the instances of B
    ``distance`` iterations back in the loops enclosing both instead of one; ``iterations``
    (``x-iterations``) restricts the dep to the instances whose index on each named loop lies
    in ``[lo, hi)``.
    """

    on: str
    kind: EdgeKind = EdgeKind.ORDERED
    loop_carried: bool = False
    extras: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, hash=False)
    """``x-…`` keys carried through load and save untouched."""
    distance: int = 1
    """Iterations back (loop-carried deps); 1 is the format's plain ``loop_carried``."""
    iterations: tuple[tuple[str, int, int], ...] = ()
    """``((loop, lo, hi), ...)``: the dep applies where each loop's index is in ``[lo, hi)``."""

    @property
    def key(self) -> tuple[str, bool, int, tuple[tuple[str, int, int], ...]]:
        """What two deps must share to merge (into the stronger kind)."""
        return self.on, self.loop_carried, self.distance if self.loop_carried else 0, self.iterations


@quick_init
@dataclass(frozen=True, slots=True)
class Instruction:
    """One instruction of the program (a leaf node)."""

    name: str
    engine: str
    op: str
    reads: tuple[Access, ...] = ()
    writes: tuple[Access, ...] = ()
    attrs: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, hash=False)
    deps: tuple[Dep, ...] = ()
    queue: str | None = None
    extras: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, hash=False)

    @property
    def is_dma(self) -> bool:
        return is_dma_op(self.op)

    @property
    def accesses(self) -> Iterator[tuple[Access, bool]]:
        """``(access, is_write)`` for every read then every write."""
        for access in self.reads:
            yield access, False
        for access in self.writes:
            yield access, True


@quick_init
@dataclass(frozen=True, slots=True)
class Loop:
    """A scheduling unit (opcode 105): ``body`` runs ``trip_count`` times in order."""

    name: str
    trip_count: int
    body: tuple[Node, ...]
    extras: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, hash=False)

    opcode = OPCODE_LOOP


Node = Union[Instruction, Loop]


def loop_nest(loops: tuple[Loop, ...]) -> tuple[tuple[str, int], ...]:
    """``(name, trip count)`` of each loop of a nest, outermost first: what instructions in
    loops of two programs must share to run the same instances.

    >>> loop_nest((Loop("i", 4, ()), Loop("j", 2, ())))
    (('i', 4), ('j', 2))
    """
    return tuple((loop.name, loop.trip_count) for loop in loops)


@dataclass(frozen=True, slots=True, weakref_slot=True)  # weakly held: the validated programs
class Program:
    """A whole program: machine description, tensors and body.

    ``machine`` is the raw format value (a preset name or an override object); resolve it
    with :func:`neuronsim.machine.model.presets.resolve_machine`.
    """

    tensors: Mapping[str, Tensor] = field(hash=False)
    body: tuple[Node, ...] = ()
    machine: Any = field(default="trn1", hash=False)
    extras: Mapping[str, Any] = field(default_factory=lambda: _EMPTY, hash=False)

    def walk(self) -> Iterator[tuple[Node, tuple[Loop, ...]]]:
        """Every node in program order with the loops that enclose it (outermost first)."""
        stack: list[tuple[Iterator[Node], tuple[Loop, ...]]] = [(iter(self.body), ())]
        while stack:
            nodes, loops = stack[-1]
            node = next(nodes, None)
            if node is None:
                stack.pop()
                continue
            yield node, loops
            if isinstance(node, Loop):
                stack.append((iter(node.body), (*loops, node)))

    def instructions(self) -> Iterator[tuple[Instruction, tuple[Loop, ...]]]:
        """Leaf instructions in program order with their enclosing loops."""
        # one generator per loop body, not walk()'s two levels per node: the passes and checks
        # walk an unrolled kernel's 1e5 instructions a score of times (half the cost)
        def visit(nodes: tuple[Node, ...], loops: tuple[Loop, ...]) -> Iterator[tuple[Instruction, tuple[Loop, ...]]]:
            for node in nodes:
                if isinstance(node, Loop):
                    yield from visit(node.body, (*loops, node))
                else:
                    yield node, loops

        return visit(self.body, ())

    def instruction_map(self) -> dict[str, Instruction]:
        return {inst.name: inst for inst, _ in self.instructions()}

    @property
    def has_virtual_tensors(self) -> bool:
        return any(t.is_virtual for t in self.tensors.values())

    def with_body(self, body: tuple[Node, ...]) -> Program:
        return Program(self.tensors, tuple(body), self.machine, self.extras)

    def with_tensors(self, tensors: Mapping[str, Tensor]) -> Program:
        return Program(frozen_mapping(tensors), self.body, self.machine, self.extras)

    def map_instructions(self, fn) -> Program:
        """A program whose every instruction is replaced by ``fn(instruction)``."""

        def rebuild(nodes: tuple[Node, ...]) -> tuple[Node, ...]:
            out = []
            for node in nodes:
                if isinstance(node, Loop):
                    out.append(Loop(node.name, node.trip_count, rebuild(node.body), node.extras))
                else:
                    out.append(fn(node))
            return tuple(out)

        return self.with_body(rebuild(self.body))

    def replace_node(self, old: Node, new: tuple[Node, ...]) -> Program:
        """A program with the node ``old`` (found by identity, at any depth) replaced by the
        nodes ``new``; every other node is kept as it is."""

        def rebuild(nodes: tuple[Node, ...]) -> tuple[Node, ...]:
            out: list[Node] = []
            for node in nodes:
                if node is old:
                    out.extend(new)
                elif isinstance(node, Loop):
                    out.append(Loop(node.name, node.trip_count, rebuild(node.body), node.extras))
                else:
                    out.append(node)
            return tuple(out)

        return self.with_body(rebuild(self.body))
