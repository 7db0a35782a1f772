"""Reads of bytes nothing wrote: the ``uninitialised`` finding.

A tile made with ``nl.ndarray`` (or a DRAM tensor the kernel makes for itself) holds whatever
its bytes held before: on the device that is what an earlier kernel or tile left there, not
zeros.  An instruction that reads such bytes before any instruction wrote them computes with
garbage (the simulator's functional runs fill them with a seeded pattern, so the outputs
usually differ from the reference too, but only this finding names the line).  Seen in
public kernels: a tile half written by a load and read whole, an ``acc += x`` into an
``nl.ndarray`` nobody zeroed, an output read back before it was stored.

Found on the traced program with every tensor on bytes of its own (a body-local tile a fresh
slot each iteration, :func:`neuronsim.verify.nki.placement.identity_placement`): the access
events by tensor (:func:`neuronsim.machine.order.events.access_events`) list each byte range's
accesses in program order, and a range whose first access is a read was read before anything
wrote it; a tensor read and never written at all is read so everywhere.  In a program without
loops (an unrolled trace) the events, which need every access compiled, are skipped when each
tensor read is first written whole (the common case), and an output's written bytes come from
its own writes alone.  What starts with
values is left out: the kernel's DRAM inputs, and an output the caller hands in with values
(``inputs``; without them every DRAM tensor but the kernel's own scratch is taken to hold
some).  A matmul accumulating onto PSUM nothing wrote is ``psum-uninitialised``
(:mod:`neuronsim.verify.nki.control_findings`), not reported twice.  One finding per
instruction and tensor, at the first instance that reads so.

Garbage that reaches no output is harmless, and the tutorials rely on it: a masked load of a
tail tile fills the rows the mask keeps, the statistics of the whole tile are computed, and a
masked store writes back only those rows (the layer-norm tutorial).  So a kernel run
(:func:`confirmed_findings`) reports the reads only when the outputs depend on them: the program
on that same placement run in program order three times, the unwritten bytes filled with two
different seeded patterns of normal floats and with NaN (all ones bits,
:func:`neuronsim.machine.sim.memory.initial_memory`), and the outputs that differ from the first
run are named.  The NaN fill finds garbage "cancelled" by a multiply with zero (nki-library's MX
gate / up projection: rows never written, their down-projection weights zero), which any finite
fill hides: on the device a dead int32 tile's -1 there is NaN in bf16, and NaN times 0 is NaN.
Reads of several tensors are then confirmed tile by tile (a tile's copies on a grid or in an
unrolled loop together, :func:`tile_families`), each one's bytes alone NaN: one whose bytes
change no output is not named beside one whose bytes do (an MX matmul's scale access spans each
quadrant's 32 rows, of which its scales use 4).
Above :data:`CONFIRM_LIMIT` bytes of placed memory the runs are not made and the reads are
reported as found, said so.  A warning still, not an error: the SDK's masked
``nc_match_replace8`` test kernel stores a tile a quarter of which the masked instruction wrote,
and its test compares that quarter.

An output the kernel made itself with bytes no instruction writes reaches the caller as
whatever the memory held, and no read shows it: :func:`unwritten_outputs` counts, from the
same access events, the bytes of each such output that some write covers.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace

import numpy as np

from neuronsim.machine.ir.program import PSUM_BANK_BYTES, Access, MemoryKind, Program, Tensor
from neuronsim.machine.ir.source import instance_label
from neuronsim.machine.model.geometry import merged_runs, sorted_distinct
from neuronsim.machine.order.events import access_events
from neuronsim.machine.order.slots import compile_access
from neuronsim.machine.order.stream import InstanceStream, stream_of

from neuronsim.verify.nki.finding import NkiFinding
from neuronsim.verify.nki.placement import identity_placement

__all__ = ["uninitialised_findings", "confirmed_findings", "outputs_reached", "unwritten_outputs", "covered_bytes",
           "tile_families", "CONFIRM_LIMIT", "ATTRIBUTE_LIMIT"]

#: Bytes of on-chip memory (SBUF and PSUM of the identity placement) up to which
#: :func:`confirmed_findings` runs the kernel twice; a kernel of tens of thousands of unrolled
#: tiles, each on bytes of its own, would need gigabytes.
CONFIRM_LIMIT = 1 << 30
#: Tiles read unwritten (each with its copies, :func:`tile_families`) up to which
#: :func:`confirmed_findings` confirms each on its own (a run each).
ATTRIBUTE_LIMIT = 16


def _starts_empty(tensor: Tensor, given: Collection[str] | None) -> bool:
    """Whether ``tensor`` holds nothing the kernel can rely on before it writes it."""
    if tensor.memory != MemoryKind.DRAM:
        return True
    if tensor.role == "internal":
        return True  # the kernel's own scratch in HBM
    return given is not None and tensor.role == "output" and tensor.name not in given


def uninitialised_findings(program: Program, inputs: Collection[str] | None = None,
                           stream: InstanceStream | None = None) -> list[NkiFinding]:
    """The reads of bytes nothing wrote in a traced ``program``, found without running it
    (module doc; :func:`confirmed_findings` keeps those the outputs depend on); ``inputs``
    names the arrays the kernel starts from (outputs among them hold values); ``stream``: that
    of its identity placement, when at hand."""
    stream = stream or stream_of(identity_placement(program))
    if _each_written_whole_first(stream, program, inputs):
        return []  # (without compiling every access: a flat trace's 1e4-1e5 of them, issue 31)
    return _uninitialised_by_events(stream, program, inputs)


def _uninitialised_by_events(stream: InstanceStream, program: Program, inputs: Collection[str] | None
                             ) -> list[NkiFinding]:
    """:func:`uninitialised_findings` from the access events by tensor (module doc)."""
    temps, names = stream.templates, stream.tensor_names
    empty = np.array([_starts_empty(program.tensors[name], inputs) for name in names], bool)
    found: dict[tuple[int, int], int] = {}  # (instruction, tensor) -> its first instance reading unwritten bytes

    def note(instance: int, tensor: int) -> None:
        x = int(stream.instr[instance])
        if _accumulates(stream, x, program, names[tensor]):
            return
        key = (x, tensor)
        if key not in found or instance < found[key]:
            found[key] = instance

    tensor_of = np.fromiter((ca.tensor for ca in temps), np.int64, len(temps))  # per compiled access
    is_write = np.fromiter((ca.is_write for ca in temps), bool, len(temps))
    ev = access_events(stream, "tensor", keep=False)
    if len(ev.seg):
        first = np.ones(len(ev.seg), bool)
        first[1:] = ev.seg[1:] != ev.seg[:-1]
        reads = np.flatnonzero(first & ~ev.write)
        reads = reads[empty[tensor_of[ev.template[reads]]]]
        for k in reads.tolist():
            note(int(ev.inst[k]), int(tensor_of[ev.template[k]]))
    # a tensor never written has no events (nothing to conflict with): each read of it, at the
    # first instance of its instruction
    written = np.zeros(len(names), bool)
    written[tensor_of[is_write]] = True
    slot_t = np.asarray(stream.slot_t, np.int64)
    unwritten = ~is_write[slot_t] & empty[tensor_of[slot_t]] & ~written[tensor_of[slot_t]]
    first_instance = np.asarray(stream.first, np.int64)
    for slot in np.flatnonzero(unwritten).tolist():
        note(int(first_instance[stream.slot_x[slot]]), int(tensor_of[slot_t[slot]]))
    return [NkiFinding(kind="uninitialised", dependence="read", first=instance_label(stream, i), second="",
                       tensors=(names[t],), severity="warning")
            for (_, t), i in sorted(found.items(), key=lambda item: item[1])]


def _whole(access: Access) -> bool:
    """True when ``access`` is all of its tensor: every field the format's default."""
    return (access.partitions is None and access.offset is None and access.pattern is None and not access.moves
            and not access.extras)


def _each_written_whole_first(stream: InstanceStream, program: Program, inputs: Collection[str] | None) -> bool:
    """In a program without loops (an unrolled trace), True when no read can find unwritten
    bytes: every tensor that starts empty and is read somewhere is first touched by an
    instruction that writes all of it and reads none of it.  Instances run in document order
    there, so that instruction's one instance comes before every read.  False says nothing
    (the access events decide)."""
    if stream.has_loops:
        return False
    settled: set[str] = set()  # tensors written whole before any read (or that start with values)
    partial: set[str] = set()  # empty ones whose first write was partial: a read of them is the events' to judge
    for inst in stream.instrs:
        for access in inst.reads:
            name = access.tensor
            if name not in settled and (name in partial or _starts_empty(program.tensors[name], inputs)):
                return False  # read before anything wrote it, by its first writer, or after a partial write
        for access in inst.writes:
            name = access.tensor
            if name not in settled and name not in partial:
                if _whole(access) or not _starts_empty(program.tensors[name], inputs):
                    settled.add(name)
                else:
                    partial.add(name)
    return True


def unwritten_outputs(program: Program, inputs: Collection[str], stream: InstanceStream | None = None,
                      ) -> list[NkiFinding]:
    """The outputs the kernel made (not handed in with ``inputs``) with bytes no instruction
    writes: the caller gets whatever the memory held there (an ``nl.ndarray`` has no values),
    which no read shows, so the ``uninitialised`` reads above never name it.  One warning per
    output, at its declaration, with how many bytes and the first element left so."""
    stream = stream or stream_of(identity_placement(program))
    out = []
    for name, (lo, hi) in _written_bytes(program, inputs, stream).items():
        placed = stream.program.tensors[name]
        size = placed.bytes_per_partition
        covered, gap = covered_bytes(lo, hi, size)
        if gap is None:
            continue
        first = np.unravel_index(gap // placed.itemsize, placed.shape)
        out.append(NkiFinding(kind="uninitialised", dependence="unwritten", first=_declared(program, name),
                              second="", tensors=(name,), severity="warning",
                              note=f"{size - covered:,} of its {size:,} bytes, the first at element "
                                   f"[{', '.join(str(int(i)) for i in first)}]"))
    return out


def _written_bytes(program: Program, inputs: Collection[str], stream: InstanceStream
                   ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per output the kernel made (not handed in with ``inputs``): the byte ranges ``[lo, hi)``
    of it that some instruction writes, from its writes' access events (``stream``: of the
    identity placement)."""
    names = stream.tensor_names
    wanted = [t for t, name in enumerate(names) if program.tensors[name].memory == MemoryKind.DRAM
              and program.tensors[name].role == "output" and program.tensors[name].alias is None
              and name not in inputs]
    if not wanted:
        return {}
    if not stream.has_loops:
        return _written_bytes_flat(stream, {names[t] for t in wanted})
    return _written_bytes_by_events(stream, wanted)


def _written_bytes_by_events(stream: InstanceStream, wanted: list[int]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """:func:`_written_bytes` from the access events of the writes to the ``wanted`` tensor ids."""
    names = stream.tensor_names
    temps = stream.templates
    writes = np.fromiter((ca.is_write and ca.tensor in wanted for ca in temps), bool, len(temps))
    ev = access_events(stream, "tensor", templates=writes, keep=False)  # the outputs' writes alone
    segments = sorted_distinct(ev.seg) if len(ev.seg) else np.zeros(0, np.int64)
    tensor_of_group = np.asarray([key for key, _mask in ev.groups] or [-1], np.int64)
    owner = tensor_of_group[ev.seg_group[segments]] if len(segments) else segments
    out = {}
    for t in wanted:
        placed = stream.program.tensors[names[t]]
        base, size = placed.byte_base, placed.bytes_per_partition
        mine = segments[owner == t]
        out[names[t]] = (np.clip(ev.seg_lo[mine] - base, 0, size), np.clip(ev.seg_lo[mine + 1] - base, 0, size))
    return out


def _written_bytes_flat(stream: InstanceStream, wanted: set[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """:func:`_written_bytes` of a program without loops: only the writes to ``wanted`` are
    compiled, not every access of the kernel (an unrolled trace has tens of thousands, its
    stores a few hundred; issue 31).  Each write's byte runs, relative to its tensor."""
    tensors = stream.program.tensors
    runs: dict[str, list[tuple[int, int]]] = {name: [] for name in wanted}
    for inst in stream.instrs:
        for access in inst.writes:
            if access.tensor in runs:
                tensor = tensors[access.tensor]
                base = tensor.byte_base
                compiled = compile_access(access, True, tensor, stream.tensor_id[access.tensor], ())
                runs[access.tensor].extend((lo - base, hi - base) for lo, hi in compiled.bytes)
    out = {}
    for name, found in runs.items():
        size = tensors[name].bytes_per_partition
        pairs = np.asarray(found, np.int64).reshape(-1, 2)
        out[name] = (np.clip(pairs[:, 0], 0, size), np.clip(pairs[:, 1], 0, size))
    return out


def covered_bytes(lo: np.ndarray, hi: np.ndarray, size: int) -> tuple[int, int | None]:
    """How many bytes of ``[0, size)`` the half-open ranges ``[lo, hi)`` cover together, and
    the first byte none covers (None: every one is): their merged runs
    (:func:`~neuronsim.machine.model.geometry.merged_runs`), so the cost follows the number of
    ranges, not the bytes (a 32 MiB output is thousands of rows).

    >>> covered_bytes(np.array([4, 0, 2]), np.array([6, 3, 5]), 8)
    (6, 6)
    >>> covered_bytes(np.array([0, 4]), np.array([4, 8]), 8)
    (8, None)
    >>> covered_bytes(np.array([2]), np.array([8]), 8)
    (6, 0)
    """
    run_lo, run_hi = merged_runs(lo, hi)
    if not len(run_lo):
        return 0, 0 if size else None
    covered = int((run_hi - run_lo).sum())
    gap = 0 if run_lo[0] > 0 else int(run_hi[0])
    return covered, (gap if gap < size else None)


def _declared(program: Program, name: str) -> str:
    """Where the kernel declared tensor ``name`` (``nl.ndarray at k.py:10``), or its name."""
    source = (program.tensors[name].extras or {}).get("x-source") or {}
    return f"{source['call']} at {source['file']}:{source['line']}" if "file" in source else name


def _accumulates(stream: InstanceStream, x: int, program: Program, tensor: str) -> bool:
    """``tensor`` is the PSUM accumulator of a matmul: its unwritten bytes there are
    ``psum-uninitialised``'s to report.  The matmul's operands are not: a stationary or moving
    tile whose partitions nothing wrote is contracted like any other value (a public kernel's
    masked tail loads left three of four contraction rows unwritten, reported for an add of the
    same tile but not for the matmul)."""
    inst = stream.instrs[x]
    return inst.op == "matmul" and any(a.tensor == tensor and program.tensors[tensor].memory == MemoryKind.PSUM
                                       for a in inst.writes)


def outputs_reached(program: Program, inputs: Mapping[str, np.ndarray],
                    stream: InstanceStream | None = None) -> tuple[str, ...] | None:
    """The outputs whose values change with what the unwritten bytes hold (module doc), or
    None when the identity placement needs more than :data:`CONFIRM_LIMIT` bytes (``stream``:
    that of the identity placement, when at hand)."""
    runs = _Runs.of(program, inputs, stream)
    return None if runs is None else runs.reached()


class _Runs:
    """Sequential runs of a kernel on its identity placement, each from another fill of the
    bytes nothing wrote, and the outputs each changes against the first."""

    def __init__(self, program: Program, inputs: Mapping[str, np.ndarray], stream: InstanceStream) -> None:
        from neuronsim.machine.sim.memory import NORMAL_FLOAT_PATTERN, initial_memory
        from neuronsim.machine.sim.plan import build_plan

        self.placed = stream.program
        self.plan = build_plan(self.placed, timed=False)
        self.inputs = inputs
        # the first fill of normal floats: the default pattern's tiny values made a matmul's
        # subnormals tens of times slower (a flash attention's check took 8.5x its trace)
        self.first = initial_memory(self.placed, self.plan.spec, 0, inputs, NORMAL_FLOAT_PATTERN)
        self.baseline = self._outputs(self.first.copy())
        # an output's bytes no instruction writes hold the fill too, and differ with it: they are
        # unwritten_outputs' to report, not a sign that an unwritten read reached the output
        self.written = {name: _element_mask(self.placed.tensors[name], lo, hi)
                        for name, (lo, hi) in _written_bytes(program, inputs.keys(), stream).items()}

    @classmethod
    def of(cls, program: Program, inputs: Mapping[str, np.ndarray], stream: InstanceStream | None) -> _Runs | None:
        from neuronsim.machine.model.presets import resolve_machine

        stream = stream or stream_of(identity_placement(program))
        spec = resolve_machine(stream.program.machine)
        if (spec.sbuf_partition_bytes + spec.psum_banks * PSUM_BANK_BYTES) * spec.sbuf_partitions > CONFIRM_LIMIT:
            return None
        return cls(program, inputs, stream)

    def _outputs(self, memory) -> dict[str, np.ndarray]:
        from neuronsim.machine.sim.simulator import output_arrays, run_sequential

        return output_arrays(self.placed, run_sequential(self.plan, memory))

    def _changed(self, outputs: dict[str, np.ndarray]) -> set[str]:
        return {name for name, values in self.baseline.items()
                if not np.array_equal(*(v.reshape(-1)[self.written[name]] if name in self.written else v
                                        for v in (values, outputs[name])), equal_nan=values.dtype.kind in "fc")}

    def reached(self) -> tuple[str, ...]:
        """The outputs another fill of normal floats, or NaN everywhere (all ones bits: garbage
        times 0 is 0 for any finite fill, NaN on the device where a dead tile left NaN), changes."""
        from neuronsim.machine.sim.memory import NAN_PATTERN, NORMAL_FLOAT_PATTERN, initial_memory

        changed: set[str] = set()
        for fill, pattern in ((1, NORMAL_FLOAT_PATTERN), (2, NAN_PATTERN)):
            memory = initial_memory(self.placed, self.plan.spec, fill, self.inputs, pattern)
            changed |= self._changed(self._outputs(memory))
        return tuple(name for name in self.baseline if name in changed)

    def reached_from(self, tensors: Collection[str]) -> tuple[str, ...]:
        """The outputs that change when the bytes of ``tensors`` alone hold NaN."""
        memory = self.first.copy()
        for tensor in tensors:
            memory.fill_tensor(self.placed.tensors[tensor], 0xFF)
        changed = self._changed(self._outputs(memory))
        return tuple(name for name in self.baseline if name in changed)


def _element_mask(tensor: Tensor, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per element of ``tensor`` (flat), whether a byte of it lies in one of ``[lo, hi)``."""
    covered = np.zeros(tensor.bytes_per_partition + 1, np.int32)
    run_lo, run_hi = merged_runs(lo, hi)
    np.add.at(covered, run_lo, 1)
    np.add.at(covered, run_hi, -1)
    return np.cumsum(covered[:-1]).reshape(-1, tensor.itemsize).any(axis=1)


def confirmed_findings(program: Program, inputs: Mapping[str, np.ndarray],
                       stream: InstanceStream | None = None) -> list[NkiFinding]:
    """The ``uninitialised`` findings of a kernel about to run on ``inputs`` (every array it
    starts from) whose outputs depend on the bytes read (module doc; ``stream`` as in
    :func:`uninitialised_findings`).  Reads of several tensors are each confirmed on their own
    (up to :data:`ATTRIBUTE_LIMIT` tensors): a tensor whose unwritten bytes alone, NaN, change
    no output is dropped (an MX matmul's scale access spans rows its scales do not use)."""
    stream = stream or stream_of(identity_placement(program))  # one stream for the finding and its confirmation
    found = uninitialised_findings(program, inputs.keys(), stream)
    if not found:
        return []
    runs = _Runs.of(program, inputs, stream)
    if runs is None:
        note = "not checked against the outputs: the kernel's tiles, each on bytes of its own, exceed 1 GiB"
        return [replace(f, note=note) for f in found]
    reached = runs.reached()
    if not reached:
        return []
    families = tile_families({f.tensors[0] for f in found})
    by_family = {family: runs.reached_from(members) for family, members in families.items()} \
        if 1 < len(families) <= ATTRIBUTE_LIMIT else {}
    if any(by_family.values()):  # (else the outputs change only with several at once: every read is named)
        family_of = {name: family for family, members in families.items() for name in members}
        return [replace(f, note=_reached_note(by_family[family_of[f.tensors[0]]])) for f in found
                if by_family[family_of[f.tensors[0]]]]
    return [replace(f, note=_reached_note(reached)) for f in found]


def tile_families(names: Collection[str]) -> dict[str, list[str]]:
    """``names`` by the tile they copy: ``t_12_1`` and ``t_12_2`` (each program's or each
    iteration's copy of tile ``t_12``, :meth:`~neuronsim.machine.nki.tracer.Tracer.unique`)
    with ``t_12`` when it is among them too.  Confirmed a family at a time, a kernel on a grid
    of two has as many families as on one (nki-library's MX MoE at ``--grid 2``: 20 tensors
    read unwritten, 4 tiles; above :data:`ATTRIBUTE_LIMIT` each read was named, one whose
    bytes change no output beside those whose bytes do).

    >>> tile_families(["t_12", "t_12_1", "t_12_2", "scale_107", "u_3_1"])
    {'scale_107': ['scale_107'], 't_12': ['t_12', 't_12_1', 't_12_2'], 'u_3_1': ['u_3_1']}
    """
    present, families = set(names), {}
    for name in sorted(present):
        families.setdefault(_copied_tile(name, present), []).append(name)
    return families


def _copied_tile(name: str, present: set[str]) -> str:
    """``name`` with each copy suffix whose base is present dropped (``t_12_1_1`` -> ``t_12``)."""
    base, _, suffix = name.rpartition("_")
    return _copied_tile(base, present) if suffix.isdigit() and base in present else name


def _reached_note(reached: tuple[str, ...]) -> str:
    many = len(reached) > 1
    return f"the output{'s' * many} {', '.join(reached)} change{'s' * (not many)} with what those bytes hold"
