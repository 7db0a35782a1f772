"""Hypothesis strategies for well-formed, conflict-rich neuronsim programs.

Every program :func:`programs` draws passes :func:`neuronsim.machine.formats.validate.validate_program`: it is
built valid by construction (no ``filter``), following the op table and every hardware rule
of :mod:`neuronsim.machine.formats.validate` (engines per op, POOL never touches PSUM, only DMAs touch DRAM,
DMAs never touch PSUM, PE writes only PSUM, the partition-start rule of compute accesses,
PSUM tensors inside one bank, at most one PSUM operand of ``tensor_tensor`` and of a scan's data,
per-partition operand tiles named by their read, ``bn_aggr`` triples, ``tensor_reduce`` axes, DGE triggers).

The programs are small but crowded: a few small tensors placed on purpose over the same
partitions and bytes (storage reuse), accesses with partition ranges and steps, strided and
multi-dimensional patterns, ``per_iteration`` offsets that stay inside their tensor in every
instance, nested loops, DMAs triggered by several sequencers onto several queues, PSUM
accumulation, DRAM alias groups, RNG ops and opaque ops.  With virtual tensors, half the
programs also get a *reuse family*: three or four virtual SBUF tensors of one shape class,
each used only inside its own window of consecutive instructions, so that their live ranges
follow each other and the ``alloc`` pass puts them on shared bytes (storage reuse the
allocator creates, which is what makes anti and output dependences appear after allocation;
:func:`allocator_reuse` finds it).  The pieces (tensors, accesses,
attributes) come from :mod:`neuronsim.verify.draws`; this module assembles them into programs.
A quarter of the programs with DMAs also get a *fan-in of loads*: two transfers on different
queues into one SBUF tensor, then an instruction that reads it (see :func:`_fan_in_start`).

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
>>> from neuronsim.machine.ir.program import Dep, Instruction, Loop, Program
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
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.program import (SEQUENCERS, Access, Dep, Instruction, Loop, MemoryKind, Node, Program, Tensor,
                                          frozen_mapping)
from neuronsim.machine.model.optable import OP_TABLE
from neuronsim.machine.model.presets import PRESETS, MachineSpec
from neuronsim.machine.formats.validate import access_elements

from neuronsim.verify.draws import (
    OPAQUE_DMA_OPS,
    OPAQUE_OPS,
    compute_reachable,
    compute_starts,
    draw_access,
    draw_attrs,
    draw_axis,
    draw_dram_tensor,
    draw_flag,
    draw_int,
    draw_onchip_tensor,
    draw_operand_tiles,
    draw_pick,
    draw_triples_access,
    no_source_constants,
    operand_tensors,
    partition_start_ok,
)

__all__ = [
    "programs",
    "access_pairs",
    "tensors_and_access",
    "strip_deps",
    "add_sequential_deps",
    "DEPS_MODES",
    "partition_start_ok",
    "allocator_reuse",
]

DEPS_MODES = ("none", "random", "sequential")



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
    reuse: bool
    deps: str
    machine: str | None


def _tensor_pool(draw, cfg: _Config) -> dict[str, Tensor]:
    """A few small tensors, often placed right on top of an earlier one (storage reuse)."""
    tensors: dict[str, Tensor] = {}

    def is_virtual() -> bool:
        return not cfg.placed or (cfg.virtual and draw_flag(draw))

    def near(memory: MemoryKind) -> Tensor | None:
        earlier = [t for t in tensors.values() if t.memory == memory and not t.is_virtual and t.alias is None]
        return draw_pick(draw, earlier) if earlier and draw_flag(draw) else None

    for i in range(draw_int(draw, 1, 3)):
        # The first SBUF tensor sits on a partition every compute access can start from.
        virtual = is_virtual()
        tensors[f"sb{i}"] = draw_onchip_tensor(
            draw, f"sb{i}", MemoryKind.SBUF, virtual, aligned=i == 0, near=None if virtual else near(MemoryKind.SBUF))
    for i in range(draw_int(draw, 0, 2)):
        virtual = is_virtual()
        tensors[f"ps{i}"] = draw_onchip_tensor(
            draw, f"ps{i}", MemoryKind.PSUM, virtual, aligned=True, near=None if virtual else near(MemoryKind.PSUM))
    if cfg.dma:
        for i in range(draw_int(draw, 1, 2)):
            virtual = is_virtual()
            address = None if virtual else near(MemoryKind.DRAM)
            tensors[f"dr{i}"] = draw_dram_tensor(draw, f"dr{i}", virtual, None, address)
        if cfg.alias_groups:
            for i in range(draw_int(draw, 0, 3)):
                tensors[f"al{i}"] = draw_dram_tensor(draw, f"al{i}", False, draw_pick(draw, ("g0", "g1")))
    return tensors


def _reuse_family(draw, cfg: _Config, tensors: dict[str, Tensor], count: int) -> tuple[str, ...]:
    """Virtual SBUF tensors of one shape class (``rs0``, ``rs1``, ...) added to ``tensors``,
    meant to be used one after another by a body of ``count`` instructions (see
    :func:`_visible`), or none.  Three members at least: ``alloc`` rotates two buffers per
    class, so the third is the first to land on reused bytes."""
    if not (cfg.virtual and cfg.reuse) or count < 3 or not draw_flag(draw):
        return ()
    template = draw_onchip_tensor(draw, "rs0", MemoryKind.SBUF, True)
    names = tuple(f"rs{i}" for i in range(draw_int(draw, 3, min(4, count))))
    for name in names:
        tensors[name] = replace(template, name=name)
    return names


def _visible(tensors: dict[str, Tensor], family: tuple[str, ...], k: int, count: int):
    """The tensors instruction ``k`` of ``count`` may use: every tensor but the family members
    outside their window (member ``j`` owns the ``j``-th of ``len(family)`` equal windows), and
    the member whose window it is."""
    if not family:
        return tensors, None
    active = family[k * len(family) // count]
    return {name: t for name, t in tensors.items() if name not in family or name == active}, active


def _menu(cfg: _Config, tensors: Mapping[str, Tensor]) -> list[tuple[str, tuple[str, ...]]]:
    """``(op, engines)`` the program's tensors can feed; an op listed twice is drawn twice as often."""
    has_psum = bool(compute_reachable(tensors, MemoryKind.PSUM))
    ops = ["transpose", "activation", "tensor_tensor", "tensor_scalar", "tensor_tensor_scan", "tensor_reduce",
           "bn_stats", "bn_aggr", "tensor_copy", "memset", "iota"]
    if has_psum:
        ops += ["matmul", "matmul"]
    if cfg.rng:
        ops += ["set_rand_state", "random"]
    menu = [(op, OP_TABLE[op].engines) for op in ops]
    if cfg.opaque:
        menu += [(op, SEQUENCERS) for op in OPAQUE_OPS]
    if cfg.dma:
        menu += [("dma_copy", SEQUENCERS)] * 3
        if cfg.opaque:
            menu += [(op, SEQUENCERS) for op in OPAQUE_DMA_OPS]
    # PE writes only PSUM: without a PSUM tensor it has nothing to do.
    return [(op, tuple(e for e in engines if e != "pe" or has_psum)) for op, engines in menu]


def _pick_tensor(draw, choices: list[Tensor], prefer: str | None) -> Tensor:
    """One of ``choices``; the reuse family's active member half the time it is one of them."""
    favourite = [t for t in choices if t.name == prefer]
    return favourite[0] if favourite and draw_flag(draw) else draw_pick(draw, choices)


def _compute_instruction(draw, cfg: _Config, tensors, name: str, op: str, engine: str, loops,
                         prefer: str | None = None) -> Instruction:
    def operand(write: bool, *, sbuf_only: bool = False) -> Access:
        choices = operand_tensors(tensors, engine, write)
        if sbuf_only:
            choices = [t for t in choices if t.memory == MemoryKind.SBUF]
        tensor = _pick_tensor(draw, choices, prefer)
        return draw_access(draw, tensor, loops, compute=True, strides=cfg.strides)

    attrs = draw_attrs(draw, op)
    if op == "matmul":
        out = operand(True)
        reads = [operand(False), operand(False)]
        accumulate = cfg.psum_accumulation and draw_flag(draw)
        if accumulate:
            reads.append(out)  # an accumulating matmul lists its PSUM tile in both
        if draw_flag(draw):
            attrs["accumulate"] = accumulate
        if draw_flag(draw):
            attrs["group"] = f"acc_{out.tensor}"
        return Instruction(name=name, engine=engine, op=op, reads=tuple(reads), writes=(out,),
                           attrs=frozen_mapping(attrs))
    spec = OP_TABLE.get(op)
    if spec is None:  # opaque compute op: any operands its engine may touch
        writes = [operand(True) for _ in range(draw_int(draw, 0, 2))]
        reads = [operand(False) for _ in range(draw_int(draw, 0, 2))]
        if engine == "pe" and writes and cfg.psum_accumulation and draw_flag(draw):
            reads.append(writes[0])  # PE reads SBUF, plus the PSUM tile it accumulates into
        return Instruction(name=name, engine=engine, op=op, reads=tuple(reads), writes=tuple(writes),
                           attrs=frozen_mapping(attrs))
    if spec.operands:
        return _operand_instruction(draw, tensors, name, op, engine, attrs, operand)
    reads = [operand(False) for _ in range(draw_int(draw, *spec.reads))]
    if op == "tensor_tensor" and tensors[reads[0].tensor].memory == MemoryKind.PSUM:
        reads[1] = operand(False, sbuf_only=True)  # at most one PSUM operand
    if op == "tensor_reduce" and draw_flag(draw):
        attrs["axis"] = draw_axis(draw, tensors[reads[0].tensor], reads[0])
        if draw_flag(draw):
            attrs["keepdims"] = draw_flag(draw)
    if op == "bn_aggr":
        triples = draw_triples_access(draw, tensors[reads[0].tensor], reads[0], broadcast=cfg.strides)
        reads[0], op = (triples, op) if triples is not None else (reads[0], "bn_stats")
    writes = [operand(True) for _ in range(spec.writes[0])]
    return Instruction(name=name, engine=engine, op=op, reads=tuple(reads), writes=tuple(writes),
                       attrs=frozen_mapping(attrs))


def _operand_instruction(draw, tensors, name: str, op: str, engine: str, attrs: dict, operand) -> Instruction:
    """An op with per-partition operands (activation, tensor_scalar, tensor_tensor_scan)."""
    spec = OP_TABLE[op]
    reads = [operand(False) for _ in range(spec.data_reads)]
    if op == "tensor_tensor_scan" and tensors[reads[0].tensor].memory == MemoryKind.PSUM:
        reads[1] = operand(False, sbuf_only=True)  # data0 and data1 not both in PSUM
    reads += draw_operand_tiles(draw, spec, attrs, len(reads), lambda: operand(False))
    writes = [operand(True)]
    if op == "activation" and draw_flag(draw):
        attrs["reduce_op"] = "add"
        writes.append(operand(True))  # the reduce_res tile
    return Instruction(name=name, engine=engine, op=op, reads=tuple(reads), writes=tuple(writes),
                       attrs=frozen_mapping(attrs))


def _dma_instruction(draw, cfg: _Config, tensors, spec: MachineSpec, name: str, op: str, engine: str, loops,
                     prefer: str | None = None) -> Instruction:
    endpoints = [t for t in tensors.values() if t.memory != MemoryKind.PSUM]

    def side() -> Access:
        return draw_access(draw, _pick_tensor(draw, endpoints, prefer), loops, compute=False, strides=cfg.strides)

    if op == "dma_copy":
        reads, writes = [side()], [side()]
        attrs = {}
        modes = (["none"] + (["swdge"] if engine == "pool" else [])
                 + (["hwdge"] if spec.has_hwdge and engine in ("sp", "act") else []))
        if draw_flag(draw):
            attrs["dge"] = draw_pick(draw, modes)
    else:
        reads = [side() for _ in range(draw_int(draw, 1, 2))]
        writes = [side()]
        attrs = draw_attrs(draw, op)
    queue = draw_pick(draw, spec.queue_names)
    if op == "dma_copy" and access_elements(tensors[reads[0].tensor], reads[0]) != \
            access_elements(tensors[writes[0].tensor], writes[0]):
        op = OPAQUE_DMA_OPS[0]  # a copy moves as many elements as it reads; an opaque DMA may differ
    return Instruction(name=name, engine=engine, op=op, reads=tuple(reads), writes=tuple(writes),
                       attrs=frozen_mapping(attrs), queue=queue)


def _fan_in_start(draw, cfg: _Config, spec: MachineSpec, count: int) -> int | None:
    """Where a *fan-in of loads* starts in a body of ``count`` instructions, or None (three
    programs in four).  Two loads on different queues write one SBUF tensor and the
    instruction after them reads it: its waits on the two are what a reduction that takes the
    queues for one FIFO gets wrong (the second load does not complete after the first).  The
    random menu rarely builds this on its own (probe_y F4: such a pass survived 2,000 examples)."""
    if not cfg.dma or count < 3 or len(spec.queue_names) < 2 or not (draw_flag(draw) and draw_flag(draw)):
        return None
    return draw_int(draw, 0, count - 3)


def _load_into(draw, cfg: _Config, tensors, spec: MachineSpec, name: str, loops, target: Tensor,
               taken: list[str]) -> Instruction:
    """A transfer from a DRAM tensor into ``target`` on a queue not in ``taken``."""
    sources = [t for t in tensors.values() if t.memory == MemoryKind.DRAM]
    read = draw_access(draw, draw_pick(draw, sources), loops, compute=False, strides=cfg.strides)
    write = draw_access(draw, target, loops, compute=False, strides=cfg.strides)
    same = access_elements(tensors[read.tensor], read) == access_elements(target, write)
    return Instruction(name=name, engine=draw_pick(draw, SEQUENCERS), op="dma_copy" if same else OPAQUE_DMA_OPS[0],
                       reads=(read,), writes=(write,),
                       queue=draw_pick(draw, [q for q in spec.queue_names if q not in taken]))


# -- structure and deps -----------------------------------------------------------------
def _body(draw, cfg: _Config, tensors, spec: MachineSpec, count: int, family: tuple[str, ...] = ()) -> tuple[Node, ...]:
    """``count`` instructions with loops opened and closed around them; bodies are never empty."""
    menu = _menu(cfg, {n: t for n, t in tensors.items() if n not in family})
    bodies: list[list[Node]] = [[]]
    open_loops: list[tuple[str, int]] = []
    loops_made = 0

    def close() -> None:
        name, trip = open_loops.pop()
        body = bodies.pop()
        bodies[-1].append(Loop(name, trip, tuple(body)))

    fan_in = _fan_in_start(draw, cfg, spec, count)
    target, queues_used = None, []
    for k in range(count):
        while open_loops and bodies[-1] and draw_flag(draw):
            close()
        while loops_made < cfg.max_loops and len(open_loops) < cfg.max_depth and draw_flag(draw):
            open_loops.append((f"L{loops_made}", draw_int(draw, 1, cfg.max_trip)))
            bodies.append([])
            loops_made += 1
        visible, active = _visible(tensors, family, k, count)
        if fan_in is not None and k - fan_in in (0, 1):
            if target is None:
                target = _pick_tensor(draw, [t for t in visible.values() if t.memory == MemoryKind.SBUF], active)
            inst = _load_into(draw, cfg, visible, spec, f"load{k}", tuple(open_loops), target, queues_used)
            queues_used.append(inst.queue)
            bodies[-1].append(inst)
            continue
        reader = fan_in is not None and k == fan_in + 2
        op, engines = draw_pick(draw, [entry for entry in menu if not entry[0].startswith("dma")] if reader else menu)
        engine = draw_pick(draw, engines)
        name = f"{op}{k}"
        if reader:  # it reads the loads' target half the time it picks an operand
            visible, active = {**visible, target.name: target}, target.name
        if op.startswith("dma"):
            inst = _dma_instruction(draw, cfg, visible, spec, name, op, engine, tuple(open_loops), active)
        else:
            inst = _compute_instruction(draw, cfg, visible, name, op, engine, tuple(open_loops), active)
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
    """Up to two valid deps per instruction, of random kinds: on an earlier instruction
    (which makes fan-ins and waits on instructions before a loop), or loop-carried on any
    instruction sharing a loop (itself and later ones included)."""
    placed = list(program.instructions())
    deps_of: dict[str, tuple[Dep, ...]] = {}
    for position, (inst, loops) in enumerate(placed):
        earlier = [other.name for other, _ in placed[:position]]
        mine = {loop.name for loop in loops}
        # Loop-carried targets share a loop with inst: any of them, later ones and itself too.
        carried = [other.name for other, theirs in placed if mine & {loop.name for loop in theirs}]
        deps = []
        for _ in range(draw_int(draw, 0, 2)):
            loop_carried = bool(carried) and draw_flag(draw)
            pool = carried if loop_carried else earlier
            if not pool:
                continue
            deps.append(Dep(draw_pick(draw, pool), draw_pick(draw, _KINDS), loop_carried))
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
    with no_source_constants():  # the program depends on the seed alone, not on what is imported
        return _program(draw, cfg)


def _program(draw, cfg: _Config) -> Program:
    machine = cfg.machine or draw_pick(draw, sorted(PRESETS))
    spec = PRESETS[machine]
    tensors = _tensor_pool(draw, cfg)
    count = draw_int(draw, cfg.min_instructions, cfg.max_instructions)
    family = _reuse_family(draw, cfg, tensors, count)
    program = Program(frozen_mapping(tensors), _body(draw, cfg, tensors, spec, count, family), machine)
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
    reuse: bool = True,
    deps: str = "random",
    machine: str | None = "trn1",
) -> st.SearchStrategy[Program]:
    """Well-formed programs that :func:`~neuronsim.machine.formats.validate.validate_program` accepts.

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
    alias_groups, dma, psum_accumulation, rng, strides, opaque, reuse:
        Allow DRAM alias groups (needs ``dma``), DMA ops (and DRAM tensors), accumulating
        matmuls, ``set_rand_state`` / ``random``, strided and multi-dimensional patterns,
        ops unknown to the op table, and (with ``virtual``) a reuse family of virtual
        tensors with successive live ranges for the allocator to overlap.
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
        raise InvalidArgument(f"min_instructions={min_instructions} is greater than "
                              f"max_instructions={max_instructions}")
    flags = dict(placed=placed, virtual=virtual, alias_groups=alias_groups, dma=dma,
                 psum_accumulation=psum_accumulation, rng=rng, strides=strides, opaque=opaque, reuse=reuse)
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


def allocator_reuse(program: Program) -> tuple[tuple[str, str], ...]:
    """Pairs of tensors that are virtual in ``program``, both accessed, and that the
    ``alloc`` pass places on shared bytes: storage reuse the allocator creates.

    >>> from neuronsim.machine.ir.program import Tensor
    >>> t = lambda name: Tensor(name, MemoryKind.SBUF, "float32", (4, 8))
    >>> use = lambda k, name: Instruction(f"m{k}", "dve", "memset", writes=(Access(name),))
    >>> body = tuple(use(k, name) for k, name in enumerate(["a", "b", "c"]))
    >>> allocator_reuse(Program({n: t(n) for n in "abc"}, body))      # two slots rotate: a, b, a
    (('a', 'c'),)
    """
    from neuronsim.machine.model.geometry import base_footprint, overlap
    from neuronsim.passes import run_pipeline

    virtual = [name for name, t in program.tensors.items() if t.is_virtual]
    if len(virtual) < 2:
        return ()
    used = {a.tensor for instr, _ in program.instructions() for a, _ in instr.accesses}
    placed = run_pipeline(program, "alloc").tensors
    whole = {name: base_footprint(placed[name], Access(name)) for name in virtual if name in used}
    names = sorted(whole)
    return tuple((a, b) for i, a in enumerate(names) for b in names[i + 1:] if overlap(whole[a], whole[b]))


# -- geometry helpers -------------------------------------------------------------------
_MEMORIES = ("sbuf", "psum", "dram", "alias")


def _placed_tensor(draw, name: str, memory: str, near: Tensor | None = None) -> Tensor:
    if memory in ("sbuf", "psum"):
        kind = MemoryKind.SBUF if memory == "sbuf" else MemoryKind.PSUM
        return draw_onchip_tensor(draw, name, kind, False, near=near)
    if memory == "alias":
        group = near.alias if near is not None else draw_pick(draw, ("g0", "g1"))
        return draw_dram_tensor(draw, name, False, group)
    return draw_dram_tensor(draw, name, False, None, near)


def _loops(draw, max_trip: int) -> tuple[tuple[str, int], ...]:
    return tuple((name, draw_int(draw, 1, max_trip)) for name in ("i", "j")[: draw_int(draw, 0, 2)])


def _any_access(draw, tensor: Tensor, loops) -> Access:
    """A compute-style (partition-start rule) or DMA-style access to ``tensor``."""
    compute = bool(compute_starts(tensor)) and draw_flag(draw)
    return draw_access(draw, tensor, loops, compute=compute)


@st.composite
def tensors_and_access(draw, *, memory: str | None = None, max_trip: int = 3):
    """``(tensor, access, loops)``: one placed tensor of ``memory`` (``"sbuf"``, ``"psum"``,
    ``"dram"``, ``"alias"``; drawn when None) and an access that stays inside it for every
    index of ``loops``, a tuple of ``(name, trip_count)``."""
    if memory is not None and memory not in _MEMORIES:
        raise InvalidArgument(f"memory={memory!r} must be None or one of {_MEMORIES}")
    _check_int(max_trip, "max_trip", 1)
    with no_source_constants():
        loops = _loops(draw, max_trip)
        tensor = _placed_tensor(draw, "t", memory or draw_pick(draw, _MEMORIES))
        return tensor, _any_access(draw, tensor, loops), loops


def _iteration(draw, loops) -> dict[str, int]:
    return {name: draw_int(draw, 0, trip - 1) for name, trip in loops}


@st.composite
def access_pairs(draw, *, max_trip: int = 3):
    """``(tensor_a, access_a, iteration_a, tensor_b, access_b, iteration_b)`` for geometry tests.

    Both tensors are placed.  ``b`` is the same tensor as ``a`` (``"t"``), another tensor
    ``"u"`` of the same memory (half the time placed on ``a``'s first partition and bytes, or
    in ``a``'s alias group), or a tensor of another memory.  Accesses use partition ranges
    and steps, strides, offsets and per-iteration shifts; iterations are loop index maps.
    """
    _check_int(max_trip, "max_trip", 1)
    with no_source_constants():
        return _access_pair(draw, max_trip)


def _access_pair(draw, max_trip: int):
    memory_a = draw_pick(draw, _MEMORIES)
    loops_a, loops_b = _loops(draw, max_trip), _loops(draw, max_trip)
    tensor_a = _placed_tensor(draw, "t", memory_a)
    how = draw_pick(draw, ("same", "sibling", "sibling", "other"))
    if how == "same":
        tensor_b, loops_b = tensor_a, loops_a
    elif how == "sibling":
        tensor_b = _placed_tensor(draw, "u", memory_a, tensor_a if draw_flag(draw) else None)
    else:
        tensor_b = _placed_tensor(draw, "u", draw_pick(draw, _MEMORIES))
    access_a, access_b = _any_access(draw, tensor_a, loops_a), _any_access(draw, tensor_b, loops_b)
    return tensor_a, access_a, _iteration(draw, loops_a), tensor_b, access_b, _iteration(draw, loops_b)
