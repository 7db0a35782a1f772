"""Semantic checks of a parsed program: names, placement, op table, footprints, deps.

:func:`validate_program` raises a located :class:`~neuronsim.machine.ir.errors.ProgramError` on the first
problem, in document order.  It needs no unrolling: footprint bounds are checked on the
extreme iterations of each access (the footprint is monotone in every loop index), and dep
order on the positions of the two instructions inside their innermost common loop.
"""

from __future__ import annotations

from neuronsim.machine.formats.inputs import describe_size
from neuronsim.machine.ir.dtypes import DTYPES, READ_AS_KEY, itemsize
from neuronsim.machine.ir.errors import LazyPath, ProgramError, join_path
from neuronsim.machine.ir.identity import WhileAlive
from neuronsim.machine.ir.program import (Access, Instruction, Loop, MemoryKind, Node, Program, Tensor,
                                          is_dma_op, keeps_partition_start, loop_nest, queue_problem)
from neuronsim.machine.model.geometry import access_extent, sorted_distinct
from neuronsim.machine.model.optable import COMMON_ATTRS, op_spec
from neuronsim.machine.model.oprules import check_op_rules
from neuronsim.machine.model.presets import MachineSpec, resolve_machine
from neuronsim.machine.order.stream import InstanceStream

__all__ = ["validate_program", "validate_placement_change", "check_placement", "check_instruction", "access_elements"]

_MEM = {MemoryKind.DRAM: "dram", MemoryKind.SBUF: "sbuf", MemoryKind.PSUM: "psum"}


#: Dimensions a tensor may have: numpy's own limit (its arrays hold every tensor's values).
MAX_DIMENSIONS = 32


def check_placement(tensor: Tensor, spec: MachineSpec, path: str) -> None:
    """Shape and placement of one tensor against the machine."""
    if len(tensor.shape) > MAX_DIMENSIONS:  # numpy's limit, which every tensor's values pass through
        raise ProgramError(join_path(path, "shape"),
                           f"{len(tensor.shape)} dimensions; a tensor has at most {MAX_DIMENSIONS}")
    if tensor.memory != MemoryKind.DRAM:
        limit = spec.sbuf_partitions
        if tensor.shape[0] > limit:
            raise ProgramError(join_path(join_path(path, "shape"), 0),
                               f"{tensor.shape[0]} partitions; at most {limit} exist")
        if tensor.partition is not None and tensor.partition + tensor.shape[0] > limit:
            raise ProgramError(join_path(path, "partition"),
                               f"partitions [{tensor.partition}, {tensor.partition + tensor.shape[0]}) run past "
                               f"partition {limit}")
    nbytes = tensor.bytes_per_partition
    if tensor.memory == MemoryKind.SBUF:
        if nbytes > spec.sbuf_partition_bytes:
            raise ProgramError(join_path(path, "shape"),
                               f"{nbytes} bytes per partition; an SBUF partition holds {spec.sbuf_partition_bytes}")
        if tensor.offset is not None and tensor.offset + nbytes > spec.sbuf_partition_bytes:
            raise ProgramError(join_path(path, "offset"),
                               f"bytes [{tensor.offset}, {tensor.offset + nbytes}) overlap the end of SBUF "
                               f"({spec.sbuf_partition_bytes} bytes per partition)")
    elif tensor.memory == MemoryKind.PSUM:
        # one bank, or whole banks side by side from a bank's first byte (NKI 0.4 on:
        # tile_size.psum_bank_fmax is per bank; a tensor may span banks, as PSUM spans eight)
        if nbytes > spec.psum_banks * spec.psum_bank_bytes:
            raise ProgramError(join_path(path, "shape"),
                               f"{nbytes} bytes per partition; PSUM holds {spec.psum_banks} banks of "
                               f"{spec.psum_bank_bytes} bytes")
        if tensor.bank is not None:
            if tensor.bank >= spec.psum_banks:
                raise ProgramError(join_path(path, "bank"), f"bank {tensor.bank}; banks are 0..{spec.psum_banks - 1}")
            offset, end = tensor.offset or 0, (tensor.offset or 0) + nbytes
            if (end > spec.psum_bank_bytes and offset) or tensor.bank * spec.psum_bank_bytes + end > \
                    spec.psum_banks * spec.psum_bank_bytes:
                raise ProgramError(join_path(path, "offset"),
                                   f"bytes [{tensor.offset}, {(tensor.offset or 0) + nbytes}) cross the end of bank "
                                   f"{tensor.bank} ({spec.psum_bank_bytes} bytes); a tensor over several banks "
                                   "starts at a bank's first byte and ends inside PSUM")
    elif nbytes > spec.dram_bytes:
        raise ProgramError(join_path(path, "shape"), f"{nbytes} bytes; the DRAM of {spec.name} holds {spec.dram_bytes}")
    elif tensor.address is not None and tensor.address + nbytes > spec.dram_bytes:
        raise ProgramError(join_path(path, "address"),
                           f"bytes [{tensor.address}, {tensor.address + nbytes}) run past the end of DRAM "
                           f"({spec.dram_bytes} bytes)")
    if tensor.rotate is not None:
        _check_rotation(tensor, spec, join_path(path, "x-rotate"))


def _one_bank(tensor: Tensor, access: Access, bank_bytes: int, path: LazyPath) -> None:
    """A PE write into a PSUM tensor over several banks stays in one bank (the matmul
    accumulates in a bank; the tensor starts at a bank's first byte): ``bank_bytes`` are the
    bytes one PE instruction may write (the machine's ``pe_write_banks`` banks: all of PSUM
    from v4).  Checked where the access starts: a write that moves with a loop
    (``per_iteration``) is checked at iteration 0."""
    offset, pattern = access_extent(tensor, access)
    low = offset + sum(stride * (count - 1) for stride, count in pattern if stride < 0)
    high = offset + sum(stride * (count - 1) for stride, count in pattern if stride > 0)
    lo, hi = low * tensor.itemsize, (high + 1) * tensor.itemsize
    if lo // bank_bytes != (hi - 1) // bank_bytes:
        raise ProgramError(path, f"PE writes bytes [{lo}, {hi}) of {access.tensor!r} a partition, across the "
                                 f"{bank_bytes}-byte PSUM bank at {lo // bank_bytes * bank_bytes + bank_bytes}; a "
                                 "matmul accumulates within one bank")


def _check_rotation(tensor: Tensor, spec: MachineSpec, path: str) -> None:
    """Every slot of a rotating tensor fits where slot 0 does (PSUM: inside one bank, or whole banks
    from a bank's first byte)."""
    rot = tensor.rotate
    span = (rot.slots - 1) * rot.stride
    nbytes = tensor.bytes_per_partition
    first = tensor.byte_base
    end = first + span + nbytes
    if tensor.memory == MemoryKind.SBUF and end > spec.sbuf_partition_bytes:
        raise ProgramError(path,
                           f"slot {rot.slots - 1} ends at byte {end}; an SBUF partition holds "
                           f"{spec.sbuf_partition_bytes}")
    if tensor.memory == MemoryKind.DRAM and end > spec.dram_bytes:
        raise ProgramError(path, f"slot {rot.slots - 1} ends at address {end}, past the end of DRAM "
                                 f"({spec.dram_bytes} bytes)")
    if tensor.memory == MemoryKind.PSUM:
        bank_bytes = spec.psum_bank_bytes
        for slot in range(rot.slots):
            lo = first + slot * rot.stride
            # within one bank, or (NKI 0.4 on) whole banks side by side from a bank's first byte
            crosses = lo // bank_bytes != (lo + nbytes - 1) // bank_bytes
            if (crosses and lo % bank_bytes) or lo + nbytes > spec.psum_banks * bank_bytes:
                raise ProgramError(path,
                                   f"slot {slot} (bytes [{lo}, {lo + nbytes}) of the partition) crosses a PSUM bank "
                                   f"boundary or the end of PSUM; a PSUM tensor fits one {bank_bytes}-byte bank, "
                                   "or starts at a bank's first byte")


def _check_read_as(access: Access, tensor: Tensor, path: str) -> None:
    """``x-read-as`` (an engine reads the bytes as that dtype, machine/sim/memory.py) names a
    dtype, and the innermost run is contiguous and holds whole elements of it."""
    read_as = access.extras.get(READ_AS_KEY)
    if read_as is None:
        return
    if not isinstance(read_as, str) or read_as not in DTYPES:
        raise ProgramError(join_path(path, READ_AS_KEY), f"unknown dtype {read_as!r}")
    stride, count = access_extent(tensor, access)[1][-1]
    if itemsize(read_as) != tensor.itemsize and ((count > 1 and stride != 1) or count * tensor.itemsize
                                                 % itemsize(read_as)):
        raise ProgramError(join_path(path, READ_AS_KEY),
                           f"reading {tensor.dtype} as {read_as} needs a contiguous innermost run of whole "
                           f"{read_as} elements, not {count} elements with stride {stride}")


def _check_access(access: Access, tensor: Tensor, loops: dict[str, Loop], path: str) -> None:
    """The footprint stays inside its tensor in every instance."""
    _check_read_as(access, tensor, path)
    for key, shifts in (("per_iteration", access.per_iteration),
                        ("x-partitions_per_iteration", access.partitions_per_iteration)):
        for loop_name, _shift in shifts:
            if loop_name not in loops:
                raise ProgramError(join_path(join_path(path, key), loop_name),
                                   "this loop does not enclose the instruction")
    if tensor.rotate is not None and tensor.rotate.loop not in loops:
        raise ProgramError(join_path(path, "tensor"),
                           f"tensor {tensor.name!r} rotates with loop {tensor.rotate.loop!r}, "
                           "which does not enclose this instruction")
    offset = access.offset or 0
    size = tensor.free_elements
    if access.pattern is None:
        if offset >= size:
            raise ProgramError(join_path(path, "offset"), f"offset {offset} leaves the tensor ({size} elements)")
        lowest, highest = offset, size - 1
    else:
        # a negative stride walks down from the offset (a reversed read, t[i_p, n - 1 - i_f])
        steps = [stride * (count - 1) for stride, count in access.pattern]
        lowest, highest = offset + sum(min(0, s) for s in steps), offset + sum(max(0, s) for s in steps)
    unmoved_lowest, unmoved_highest = lowest, highest
    for loop_name, shift in access.per_iteration:
        moved = shift * (loops[loop_name].trip_count - 1)
        lowest, highest = lowest + min(0, moved), highest + max(0, moved)
    if lowest < 0 or highest >= size:
        # Name what breaks the bound: the offset or pattern already at iteration 0, else the shifts.
        if unmoved_highest >= size or unmoved_lowest < 0:
            where = "offset" if offset >= size else "pattern"
        else:
            where = "per_iteration"
        raise ProgramError(join_path(path, where),
                           f"footprint reaches elements [{lowest}, {highest}] in some instance; tensor {tensor.name!r} "
                           f"has elements [0, {size - 1}]")
    if tensor.memory == MemoryKind.DRAM:
        for key, present in (("partitions", access.partitions is not None),
                             ("x-partitions_per_iteration", bool(access.partitions_per_iteration))):
            if present:
                raise ProgramError(join_path(path, key), "a dram access has no partitions")
    if tensor.memory != MemoryKind.DRAM:
        start, count, step = access.partitions or (0, tensor.shape[0], 1)
        first, last = start, start + (count - 1) * step
        for loop_name, pshift in access.partitions_per_iteration:
            moved = pshift * (loops[loop_name].trip_count - 1)
            first, last = first + min(0, moved), last + max(0, moved)
        if first < 0 or last >= tensor.shape[0]:
            if not access.partitions_per_iteration:
                raise ProgramError(join_path(path, "partitions"),
                                   f"reaches partition {last} of a tensor with {tensor.shape[0]}")
            raise ProgramError(join_path(path, "x-partitions_per_iteration"),
                               f"reaches partitions [{first}, {last}] in "
                               f"some instance; tensor {tensor.name!r} has partitions [0, {tensor.shape[0] - 1}]")


def validate_placement_change(program: Program, before: Program, spec: MachineSpec | None = None,
                              stream: InstanceStream | None = None) -> None:
    """Check ``program`` where it differs from the valid ``before`` only in its tensors'
    placements (the body is the very same objects, as after an allocation pass): the
    placements themselves, and the rules that depend on them (partition starts, rotating
    tensors inside their loop).  Everything else was checked on ``before``.

    The rules are checked once per distinct access over the access slots of ``before``'s
    :class:`~neuronsim.machine.order.stream.InstanceStream` (``stream``, built when not given)."""
    spec = spec or resolve_machine(program.machine)
    changed = {name for name, t in program.tensors.items() if before.tensors.get(name) is not t}
    for name in changed:
        check_placement(program.tensors[name], spec, join_path("tensors", name))
    if not changed:
        return
    if stream is None:
        stream = InstanceStream(before, spec)
    _placement_rules_by_access(program, changed, stream)


def _placement_rules_by_access(program: Program, changed: set[str], stream: InstanceStream) -> None:
    """The access rules of :func:`validate_placement_change` over the stream's access slots:
    rotation per slot of a rotating tensor, partition starts once per (access, DMA or not)."""
    tensors = program.tensors
    layout = stream.layout  # the slots and their accesses: no footprint compiled
    accesses = layout.accesses
    slot_x, slot_t = stream.slot_x, stream.slot_t

    def where(x: int, access, is_write: bool) -> str:
        inst = stream.instrs[x]
        key, group = ("writes", inst.writes) if is_write else ("reads", inst.reads)
        return f"{inst.name}.{key}[{next(i for i, a in enumerate(group) if a == access)}]"

    rotating = {name for name in changed if tensors[name].rotate is not None}
    if rotating:
        for x, t in zip(slot_x.tolist(), slot_t.tolist()):
            access = accesses[t]
            tensor = tensors[access.tensor]
            if access.tensor in rotating and not any(loop.name == tensor.rotate.loop for loop in stream.loops_of[x]):
                loops = {loop.name: loop for loop in stream.loops_of[x]}
                _check_access(access, tensor, loops, where(x, access, layout.writes[t]))
    compute = ~stream.dma_x[slot_x]
    pairs = sorted_distinct(slot_t[compute])
    for t in pairs.tolist():
        access = accesses[t]
        if access.tensor not in changed:
            continue
        tensor = tensors[access.tensor]
        if tensor.partition is None:
            continue
        start, count, step = access.partitions or (0, tensor.shape[0], 1)
        first, span = tensor.partition + start, (count - 1) * step + 1
        if not _partition_start_ok(first, span):
            users = slot_x[compute][slot_t[compute] == t].tolist()  # rare: every instruction with this access
            bound = [x for x in users if keeps_partition_start(stream.instrs[x].op)]
            if not bound:
                continue  # register ops only (REGISTER_OPS): not bound by the rule
            x = bound[0]
            raise ProgramError(f"{where(x, access, layout.writes[t])}.partitions", f"an access spanning {span} "
                               f"partitions cannot start at partition {first} (over 64: start 0; 33-64: 0 or 64; up "
                               "to 32: a multiple of 32)")


def _partition_start_ok(first: int, span: int) -> bool:
    if span > 64:
        return first == 0
    if span > 32:
        return first in (0, 64)
    return first % 32 == 0


def check_instruction(inst: Instruction, tensors: dict[str, Tensor], spec: MachineSpec, path: str) -> None:
    """Op table, attributes and hardware constraints of one instruction."""
    table = op_spec(inst.op)
    if inst.engine not in table.engines:
        raise ProgramError(join_path(path, "engine"),
                           f"op {inst.op!r} cannot run on {inst.engine!r}; it runs on {list(table.engines)}")
    for key, (lo, hi), group in (("reads", table.reads, inst.reads), ("writes", table.writes, inst.writes)):
        if not lo <= len(group) <= hi:
            raise ProgramError(join_path(path, key), f"op {inst.op!r} takes {lo}..{hi} {key}, got {len(group)}")
    if not table.opaque:
        for key, value in inst.attrs.items():
            if key.startswith("x-"):  # extension keys are allowed everywhere (spec, "Document")
                continue
            check = table.attr_validator(key)
            if check is None:
                raise ProgramError(join_path(join_path(path, "attrs"), key),
                                   f"unknown attribute of op {inst.op!r}; expected one of "
                                   f"{sorted(table.attrs) + ['cycles']}")
            if not check(value):
                shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
                raise ProgramError(join_path(join_path(path, "attrs"), key), f"expected {check.__doc__}, got {shown}")
    elif "cycles" in inst.attrs and not COMMON_ATTRS["cycles"](inst.attrs["cycles"]):  # not a bool either
        raise ProgramError(join_path(join_path(path, "attrs"), "cycles"), "expected a non-negative integer")
    psum_writes = set()
    psum_reads = 0
    is_dma = inst.is_dma
    engine = inst.engine
    bound = not is_dma and keeps_partition_start(inst.op)
    for key, group in (("reads", inst.reads), ("writes", inst.writes)):
        for i, access in enumerate(group):
            tensor = tensors[access.tensor]
            mem = tensor.memory
            if is_dma:
                if mem == MemoryKind.PSUM:
                    raise ProgramError(LazyPath(path, key, i, "tensor"), "DMA ops never touch PSUM")
                continue
            if mem == MemoryKind.DRAM:
                raise ProgramError(LazyPath(path, key, i, "tensor"),
                                   f"only DMA ops touch DRAM; {inst.op!r} on {engine!r} is a compute op")
            if engine == "pool" and mem == MemoryKind.PSUM:
                raise ProgramError(LazyPath(path, key, i, "tensor"), "POOL never touches PSUM")
            if engine == "pe" and key == "writes":
                if mem != MemoryKind.PSUM:
                    raise ProgramError(LazyPath(path, key, i, "tensor"), "PE writes only PSUM")
                psum_writes.add(access.tensor)
                if tensor.bytes_per_partition > spec.psum_bank_bytes * spec.pe_write_banks:  # over banks (NKI 0.4 on)
                    _one_bank(tensor, access, spec.psum_bank_bytes * spec.pe_write_banks, LazyPath(path, key, i))
            if key == "reads" and mem == MemoryKind.PSUM:
                psum_reads += 1
            if bound and tensor.partition is not None:
                start, count, step = access.partitions or (0, tensor.shape[0], 1)
                first = tensor.partition + start
                span = (count - 1) * step + 1
                if not _partition_start_ok(first, span):
                    raise ProgramError(LazyPath(path, key, i, "partitions"),
                                       f"an access spanning {span} partitions cannot start at partition {first} (over "
                                       "64: start 0; 33-64: 0 or 64; up to 32: a multiple of 32)")
    if inst.engine == "pe":
        for i, access in enumerate(inst.reads):
            if tensors[access.tensor].memory == MemoryKind.PSUM and access.tensor not in psum_writes:
                raise ProgramError(join_path(join_path(path, "reads"), i),
                                   "PE reads SBUF, plus only the PSUM tile it accumulates into (a tensor it also "
                                   "writes)")
    if inst.op == "tensor_tensor" and psum_reads > 1:
        raise ProgramError(join_path(path, "reads"), "tensor_tensor reads at most one PSUM operand")
    check_op_rules(inst, tensors, path)
    if inst.op == "dma_copy":
        _check_copy_counts(inst, tensors, path)
    if is_dma:
        dge = inst.attrs.get("dge", "none")
        if dge == "swdge" and inst.engine != "pool":
            raise ProgramError(join_path(path, "engine"),
                               "software DGE descriptors are generated by POOL; trigger a 'swdge' DMA from 'pool'")
        if dge == "hwdge":
            if not spec.has_hwdge:
                raise ProgramError(join_path(join_path(path, "attrs"), "dge"),
                                   f"hardware DGE does not exist on {spec.name}")
            if inst.engine not in ("sp", "act"):
                raise ProgramError(join_path(path, "engine"), "hardware DGE is commanded by SP or ACT")


def access_elements(tensor: Tensor, access: Access) -> int:
    """Elements one instance of ``access`` names: partitions x the pattern's counts.

    >>> t = Tensor("t", MemoryKind.SBUF, "float32", (128, 64), partition=0, offset=0)
    >>> access_elements(t, Access("t")), access_elements(t, Access("t", partitions=(0, 4, 1), pattern=((8, 2), (1, 3))))
    (8192, 24)
    """
    count = 1
    if tensor.memory != MemoryKind.DRAM:
        count = access.partitions[1] if access.partitions is not None else tensor.shape[0]
    if access.pattern is None:
        return count * max(tensor.free_elements - (access.offset or 0), 1)
    for _stride, n in access.pattern:
        count *= n
    return count


def _check_access_size(access: Access, tensor: Tensor, spec: MachineSpec, path: str) -> None:
    """An access names at most as many bytes as the machine's largest memory (its DRAM) holds.
    No rule of the op table bounds an access's elements (an input that should match the output
    is repeated or truncated to fill it), but a stride-0 pattern repeats an element as often as
    it likes, and each instance's values are one array in the simulator: 128 partitions of a
    2**40-element pattern passed every check and then needed 512 TiB."""
    elements = access_elements(tensor, access)
    if elements * tensor.itemsize <= spec.dram_bytes:
        return
    partitions = "" if tensor.memory == MemoryKind.DRAM else \
        f" ({access.partitions[1] if access.partitions is not None else tensor.shape[0]} partitions)"
    raise ProgramError(join_path(path, "pattern" if access.pattern is not None else "offset"),
                       f"the access names {elements:,} elements{partitions} of {tensor.itemsize} bytes, "
                       f"{describe_size(elements * tensor.itemsize)}: more than {spec.name}'s largest memory holds "
                       f"({describe_size(spec.dram_bytes)} of DRAM); the simulator holds an access's values whole")


def _elements_read_as(access: Access, tensor: Tensor) -> int:
    """The access's element count in the dtype it is read as (``x-read-as``: whole elements of
    it in each contiguous innermost run, :func:`_check_read_as`), else in the tensor's own."""
    elements = access_elements(tensor, access)
    read_as = access.extras.get(READ_AS_KEY) if access.extras else None
    return elements if read_as is None else elements * tensor.itemsize // itemsize(read_as)


def _check_copy_counts(inst: Instruction, tensors: dict[str, Tensor], path: str) -> None:
    """A copy moves each element it reads to one it writes: the counts agree (the spec's
    ``dma_copy``; a transfer of unequal sides is a descriptor bug, not a pad or a cut)."""
    if len(inst.reads) != 1 or len(inst.writes) != 1:
        return
    read, write = inst.reads[0], inst.writes[0]
    n_read, n_write = _elements_read_as(read, tensors[read.tensor]), _elements_read_as(write, tensors[write.tensor])
    if inst.attrs.get("bitcast", False):  # bytes as they are: the byte counts agree
        n_read, n_write = n_read * tensors[read.tensor].itemsize, n_write * tensors[write.tensor].itemsize
        if n_read != n_write:
            raise ProgramError(join_path(join_path(path, "writes"), 0),
                               f"bitcast dma_copy writes {n_write} bytes but reads {n_read} (reads[0] on "
                               f"{read.tensor!r}); the byte counts must agree")
        return
    if n_read != n_write:
        raise ProgramError(join_path(join_path(path, "writes"), 0),
                           f"dma_copy writes {n_write} elements but reads {n_read} (reads[0] on {read.tensor!r}); "
                           "the counts must agree")


#: The deepest loop nest a program may have (64 nested loops stopped the dependence passes on
#: an internal error: numpy's arrays hold 64 dimensions, a probe).
MAX_LOOP_DEPTH = 48


def validate_program(program: Program, spec: MachineSpec | None = None, *, checked: Program | None = None) -> None:
    """Check everything the spec states about a parsed program; raise on the first error.

    ``checked``: a program already validated against ``spec`` (a pass's input).  The tensors
    it holds unchanged (the same objects, or equal ones), and the instructions touching only those whose op,
    engine, attribute and access objects it holds, each in loops of the same names and trip
    counts, are not checked again: a pass that changes a few instructions or tensors, or only
    deps or queues (``dma-place``, ``dep-opt``), costs what it changed.  Names and deps are
    checked throughout.  A program that passed whole is remembered while it lives (programs
    are immutable), and a second call on it returns at once.
    """
    spec = spec or resolve_machine(program.machine)
    if _VALIDATED.get(program) == spec:  # this very program passed: built, loaded, then run
        return
    tensors = dict(program.tensors)
    known, kept = _known_instructions(checked, program)
    for name, tensor in tensors.items():
        if name not in kept:
            check_placement(tensor, spec, LazyPath("tensors", name))
    # Pass 1: names, with each node's path and its position path (child indices), and the
    # instructions in program order.  Paths are spelt out only for an error (LazyPath).
    where: dict[str, tuple[LazyPath, tuple[int, ...], tuple[Loop, ...], bool]] = {}
    order: list[tuple[Instruction, tuple[Loop, ...], LazyPath]] = []

    def collect(nodes: tuple[Node, ...], path: str | LazyPath, pos: tuple[int, ...], loops: tuple[Loop, ...]) -> None:
        for i, node in enumerate(nodes):
            npath = LazyPath(path, i)
            if node.name in where:
                key = "loop" if isinstance(node, Loop) else "name"
                raise ProgramError(join_path(npath, key),
                                   f"duplicate name {node.name!r} (first at {where[node.name][0]})")
            where[node.name] = (npath, (*pos, i), loops, isinstance(node, Loop))
            if isinstance(node, Loop):
                if len(loops) >= MAX_LOOP_DEPTH:
                    raise ProgramError(join_path(npath, "loop"), f"loops nest {len(loops) + 1} deep here; neuronsim "
                                       f"takes {MAX_LOOP_DEPTH} at most (each is a dimension of the numpy arrays "
                                       "that index its instances, which hold 64)")
                collect(node.body, LazyPath(npath, "body"), (*pos, i), (*loops, node))
            else:
                order.append((node, loops, npath))

    collect(program.body, "body", (), ())
    for name, tensor in tensors.items():  # (an access through it would be blamed for the tensor's mistake)
        if tensor.rotate is not None and name not in kept and not where.get(tensor.rotate.loop, (0, 0, 0, False))[3]:
            raise ProgramError(join_path(join_path(LazyPath("tensors", name), "x-rotate"), "loop"),
                               f"no loop {tensor.rotate.loop!r} in the program for the tensor to rotate with")
    # Pass 2: instructions.  An access's bounds depend on the access, its tensor and the loops
    # around it alone, so each distinct one is checked once (a flattened kernel repeats its
    # ring slots' accesses thousands of times; the order of errors is unchanged: the first
    # failing one is its first occurrence).  ``order`` keeps each loop tuple alive, so its id
    # names it for the walk.
    enclosing_of: dict[int, dict[str, Loop]] = {}
    seen: set[tuple[Access, int]] = set()
    queues = frozenset(spec.queue_names)
    for inst, loops, path in order:
        enclosing = enclosing_of.get(id(loops))
        if enclosing is None:
            enclosing = enclosing_of[id(loops)] = {loop.name: loop for loop in loops}
        content = _content(inst, loops)
        if content not in known:  # checked on the pass's input, or at an earlier instance
            for key, group in (("reads", inst.reads), ("writes", inst.writes)):
                for i, access in enumerate(group):
                    tensor = tensors.get(access.tensor)
                    if tensor is None:
                        raise ProgramError(join_path(LazyPath(path, key, i), "tensor"),
                                           f"unknown tensor {access.tensor!r}")
                    if (access, id(loops)) not in seen:
                        _check_access(access, tensor, enclosing, LazyPath(path, key, i))
                        _check_access_size(access, tensor, spec, LazyPath(path, key, i))
                        seen.add((access, id(loops)))
            check_instruction(inst, tensors, spec, path)
            known.add(content)
        if inst.queue is not None and (inst.queue not in queues or not is_dma_op(inst.op)):  # passes move queues
            raise ProgramError(join_path(path, "queue"), queue_problem(inst.op, inst.queue, spec.queue_names))
        for i, dep in enumerate(inst.deps):
            _check_dep(inst.name, dep, where, LazyPath(path, "deps", i))
    _VALIDATED.put(program, spec)


#: The spec of every program alive that passed :func:`validate_program` whole: a traced
#: kernel's program is checked where it is built and again by each command that receives it (a
#: second check of the same object cost a second or more at 85 k instructions).
_VALIDATED: WhileAlive[MachineSpec] = WhileAlive()


def _content(inst: Instruction, loops: tuple[Loop, ...]) -> tuple:
    """What the instruction and access checks read of an instruction, by object identity: its
    op, engine, attributes, accesses and loop nest.  Alike instructions share it: a pass that
    rewrites deps or queues makes new instructions around the same objects, and a flattened
    kernel's instances repeat a few attribute and access objects (its ring slots, banks)."""
    return (inst.op, inst.engine, id(inst.attrs), *map(id, inst.reads), None, *map(id, inst.writes),
            loop_nest(loops))


def _known_instructions(checked: Program | None, program: Program) -> tuple[set[tuple], frozenset[str]]:
    """:func:`_content` of ``checked``'s instructions that touch only tensors ``program``
    holds unchanged (the same objects, or equal ones), and the names of those tensors.  The checks of an
    instruction read its own fields and the tensors its accesses name, nothing else, so a
    pass that replaces some tensors (``load-elim`` drops loads and their tiles) leaves the
    rest checked.  (``checked`` stays alive meanwhile, so an id names one object.)"""
    if checked is None or checked.machine != program.machine:
        return set(), frozenset()
    ours = program.tensors
    if checked.tensors is ours:
        return {_content(inst, loops) for inst, loops in checked.instructions()}, frozenset(ours)
    kept = frozenset(name for name, tensor in checked.tensors.items()
                     if (mine := ours.get(name)) is tensor or mine == tensor)  # (a trace's draft rebuilds them equal)
    return {_content(inst, loops) for inst, loops in checked.instructions()
            if all(a.tensor in kept for a in inst.reads) and all(a.tensor in kept for a in inst.writes)}, kept


def _check_dep(name: str, dep, where, path: str) -> None:
    target = where.get(dep.on)
    if target is None:
        raise ProgramError(join_path(path, "on"), f"unknown instruction {dep.on!r}")
    _, pos_b, loops_b, is_loop = target
    _, pos_y, loops_y, _ = where[name]
    if is_loop:
        raise ProgramError(join_path(path, "on"), f"{dep.on!r} is a loop; deps name instructions")
    common = 0
    while common < len(loops_b) and common < len(loops_y) and loops_b[common] is loops_y[common]:
        common += 1
    for loop_name, _lo, hi in dep.iterations:
        loop = next((lp for lp in loops_y if lp.name == loop_name), None)
        if loop is None:
            raise ProgramError(join_path(join_path(path, "x-iterations"), loop_name),
                               f"loop {loop_name!r} does not enclose {name!r}")
        if hi > loop.trip_count:
            raise ProgramError(join_path(join_path(path, "x-iterations"), loop_name),
                               f"range ends at {hi}; loop {loop_name!r} has {loop.trip_count} iterations")
    if dep.loop_carried:
        if common == 0:
            raise ProgramError(join_path(path, "loop_carried"),
                               f"a loop-carried dep needs a loop enclosing both {name!r} and {dep.on!r}")
        return
    if dep.on == name:
        raise ProgramError(join_path(path, "on"),
                           "an instruction cannot wait on its own instance; did you mean loop_carried?")
    if pos_b[common] > pos_y[common]:
        raise ProgramError(join_path(path, "on"),
                           f"{dep.on!r} comes later in program order: a wait on a later instance (make it loop_carried "
                           "to wait on the previous iteration)")
