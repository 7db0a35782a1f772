"""Simulate a program: timed runs under seeded interleavings, checked against a sequential run.

Contract
--------
:func:`simulate` requires a placed program (virtual tensors raise
:class:`~neuronsim.machine.ir.errors.ProgramError`).  It guarantees:

* each run's :class:`~neuronsim.machine.sim.trace.Trace` obeys rules 1-4 of the spec (see
  :mod:`neuronsim.machine.sim.engine`) and is a deterministic function of the program, the data seed /
  inputs and the run's interleaving seed;
* with ``functional=True`` (the default) every instance computes its result with numpy
  (:mod:`neuronsim.machine.model.semantics`) on the memories of
  :mod:`neuronsim.machine.sim.memory`: it reads its inputs at its start S(X) and writes its
  outputs at its completion E(X).  The *sequential reference*
  executes the instances one at a time in program order from the same initial memory.  For a
  race-free program every run's ``output`` tensors (with ``compare="all"``: every tensor's
  final contents) equal the reference's byte for byte; a difference is a witness of a race,
  reported per tensor with the differing byte ranges.  Every program that validates
  simulates (the op semantics are total);
* a wait that can never be met raises :class:`~neuronsim.machine.sim.engine.DeadlockError` (never a
  hang).

Examples
--------
>>> from neuronsim.machine.formats.program_json import load_program
>>> sim = simulate(load_program("examples/matmul_k_loop.json"), seeds=[None, 0, 1])
>>> sim.differs, len(sim.runs), round(sim.trace.makespan, 1)   # the first run is the nominal one
(False, 3, 7860.3)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from neuronsim.machine.ir.dtypes import numpy_dtype
from neuronsim.machine.ir.program import MemoryKind, Program
from neuronsim.machine.ir.collector import collector_paused
from neuronsim.machine.sim.blas import blas_limited
from neuronsim.machine.sim.memory import Memory, initial_memory
from neuronsim.machine.sim.tolerance import NO_ERROR, LargestErrors, beyond, largest_errors, plain_number
from neuronsim.machine.model.execute import execute_quietly
from neuronsim.machine.sim.engine import Interleaving, RunTimes, TimedRun
from neuronsim.machine.order.unroll import Instance
from neuronsim.machine.sim.plan import Plan, build_plan
from neuronsim.machine.sim.trace import InstanceRecord, Trace, WaitMet, makespan_of
from neuronsim.machine.sim.instance_views import InstanceViews
from neuronsim.machine.ir.source import SourceRef, source_of
from neuronsim.machine.formats.validate import validate_program

__all__ = ["simulate", "Simulation", "OutsideInput", "RunResult", "TensorDiff", "Executor", "run_sequential",
           "make_trace", "compare_tensors", "output_arrays", "instance_sources"]

#: At most this many differing byte ranges are listed per tensor.
MAX_RANGES = 8


class Executor:
    """Functional execution hook for :class:`~neuronsim.machine.sim.engine.TimedRun` (and the reference).

    Its callers hold ``np.errstate(all="ignore")`` around a whole run (:func:`simulate`,
    :func:`run_sequential`): the ops' arithmetic overflows and makes NaN as the engines do."""

    def __init__(self, plan: Plan, memory: Memory, *, copy_reads: bool = True) -> None:
        self.plan = plan
        self.memory = memory
        # A timed run writes an instance's outputs at E(i), long after it read them at S(i), so
        # it reads copies.  The sequential run writes right after reading: an instance with one
        # write may compute from live views (numpy's assignment buffers an overlapping source);
        # with several, an earlier write could change what a later value still views.
        self.copy_reads = copy_reads
        self.views = InstanceViews(plan, memory.dram_layout)

    def begin(self, i: int):
        """Read the inputs of instance ``i`` and compute its outputs (at S(i))."""
        plan, memory = self.plan, self.memory
        reads, writes = self.views.of(i)
        outs = [memory.view(w) for w in writes]
        instr = plan.unrolled[i].instr
        memory.current = i
        if self.copy_reads or len(writes) > 1:
            values = [memory.read(r) for r in reads]
        elif instr.is_dma:  # a transfer moves bytes in any order: a strided source is read in place too
            values = [_unshared(memory.view(r), r, outs, writes) for r in reads]
        else:  # an accumulator (the read is the write's own region) is read in place: no op reduces over it
            own = writes[0] if writes else None
            values = [memory.view(r) if r == own else _unshared(self._live(r), r, outs, writes) for r in reads]
        values = execute_quietly(instr.op, instr.attrs, instr.engine, values, outs, memory)
        return outs, values

    def _live(self, region):
        """A read as a live view where that changes no bit of a result: numpy reduces a strided
        float32 array in another order than the contiguous copy a timed run reads (the last
        bits of a sum differ), so such a region is copied here too.  Every other dtype is
        either converted to a fresh contiguous float32 array before any arithmetic (the
        engines compute in float32) or integer, whose sums do not depend on the order: its
        strided view is read in place (a bf16 matmul's two operand tiles, issue 31)."""
        view = self.memory.view(region)
        return view if view.flags.c_contiguous or view.dtype != np.float32 else view.copy()

    @staticmethod
    def finish(i: int, token) -> None:
        """Write the outputs computed by :meth:`begin` (at E(i))."""
        outs, values = token
        for out, value in zip(outs, values):
            out[...] = value


def _unshared(value: np.ndarray, region, outs, writes) -> np.ndarray:
    """``value``, a read of ``region``, or a copy of it where it may share bytes with a write of
    the same instance.  numpy's assignment buffers an overlapping source only where its own
    element order could go wrong, and a destination of stride 0 (one element written several
    times) is not among those: a transfer from ``x[0:2]`` to ``x[1]`` twice, read in place,
    wrote ``x[0]`` into ``x[1]`` and then that again, where the timed run, which reads copies,
    wrote the old ``x[1]`` last (the fuzzer blamed a user's pass for the difference)."""
    for out, where in zip(outs, writes):
        if where.space == region.space and np.may_share_memory(value, out):
            return value.copy()
    return value


def run_sequential(plan: Plan, memory: Memory) -> Memory:
    """The sequential reference: every instance in program order, one at a time, no timing;
    BLAS at :func:`~neuronsim.machine.sim.blas.blas_threads` threads, as in :func:`simulate`
    (a trace reading device values runs it per read, the NKI findings' confirming runs too:
    with the default threads a grid-2 kernel's trace and findings took 9.1 s, 1.2 s pinned)."""
    executor = Executor(plan, memory, copy_reads=False)
    begin, finish = executor.begin, executor.finish
    with blas_limited(), np.errstate(all="ignore"):  # the engines' arithmetic saturates and makes NaN silently
        for i in range(len(plan)):
            finish(i, begin(i))
    return memory


def instance_sources(plan: Plan) -> list[str | None]:
    """Per instance, its kernel line (:func:`~neuronsim.machine.ir.source.source_text`), or None.

    The same for every run of a plan: :func:`simulate` computes it once for all its traces
    (the text is built per instance: 0.13 ms each, issue 31's profile)."""
    refs: dict[int, SourceRef | None] = {}
    out: list[str | None] = []
    for inst in plan.unrolled:
        instr = inst.instr
        if not instr.extras:
            out.append(None)
            continue
        key = id(instr)
        if key not in refs:
            refs[key] = source_of(instr)
        ref = refs[key]
        out.append(None if ref is None else ref.text(inst.iteration))
    return out


@collector_paused()  # a record per instance, no cycles
def make_trace(plan: Plan, times: RunTimes, seed: int | None, sources: Sequence[str | None] | None = None) -> Trace:
    """The :class:`Trace` of one run (``sources``: :func:`instance_sources` of ``plan``, when known)."""
    comps = plan.components
    sem_times = times.semaphore_times
    if sources is None:
        sources = instance_sources(plan)
    ready, trigger, issued, start, end = times.ready, times.trigger, times.issued, times.start, times.end
    span_end = times.span_end or end
    is_dma, queue, nbytes, plan_waits = plan.is_dma, plan.queue, plan.nbytes, plan.waits
    records = []
    append = records.append
    for inst in plan.unrolled:
        i = inst.id
        row = plan_waits[i]
        waits = tuple([WaitMet(b, comps[sc], k, sem_times[sc][k - 1]) for sc, k, b in row]) if row else ()
        instr = inst.instr
        dma = is_dma[i]
        append(InstanceRecord(
            i, inst.name, instr.op, instr.engine, comps[queue[i]] if dma else None, dma,
            ready[i], trigger[i], issued[i], start[i], end[i], waits, nbytes[i], sources[i],
            None if dma else span_end[i]))
    return Trace(tuple(records), comps, tuple(tuple(t) for t in sem_times), plan.spec.name, seed)


@dataclass(frozen=True, slots=True)
class TensorDiff:
    """Where one output tensor differs from the sequential reference."""

    tensor: str
    differing_bytes: int
    """Bytes of the differing elements."""
    total_bytes: int
    ranges: tuple[tuple[int, int], ...]
    """Differing byte ranges (offsets within the tensor, half-open), the first :data:`MAX_RANGES`."""
    first_index: tuple[int, ...]
    """Element index of the first differing element."""
    expected: float
    actual: float

    def __str__(self) -> str:
        shown = ", ".join(f"[{lo}, {hi})" for lo, hi in self.ranges)
        more = " ..." if self.differing_bytes > sum(hi - lo for lo, hi in self.ranges) else ""
        return (f"{self.tensor}: {self.differing_bytes} of {self.total_bytes} bytes differ, in {shown}{more}; "
                f"first at {list(self.first_index)}: reference {plain_number(self.expected)}, "
                f"this run {plain_number(self.actual)}")

    def to_json(self) -> dict:
        return {"tensor": self.tensor, "differing_bytes": self.differing_bytes, "total_bytes": self.total_bytes,
                "ranges": [list(r) for r in self.ranges], "first_index": list(self.first_index),
                "expected": self.expected, "actual": self.actual}


def _ranges(mask: np.ndarray, scale: int) -> tuple[tuple[int, int], ...]:
    """Half-open runs of True in ``mask``, scaled to bytes, the first :data:`MAX_RANGES`."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.astype(np.int8), [0]))))
    pairs = edges.reshape(-1, 2)[:MAX_RANGES]
    return tuple((int(lo) * scale, int(hi) * scale) for lo, hi in pairs)


def compare_tensors(program: Program, reference: Mapping[str, bytes], actual: Mapping[str, bytes], *,
                    rtol: float = 0.0, atol: float = 0.0) -> tuple[tuple[TensorDiff, ...], LargestErrors]:
    """Per compared tensor, where ``actual`` differs from ``reference``; and the largest error
    over them all (:mod:`neuronsim.machine.sim.tolerance`).

    Bytes are compared exactly; an element differs when any of its bytes does (and, with a
    tolerance, its value is beyond ``rtol`` / ``atol``), and ranges cover whole differing
    elements.
    """
    diffs, errors = [], NO_ERROR
    for name in sorted(reference):
        want, got = reference[name], actual[name]
        if want == got:
            continue
        tensor = program.tensors[name]
        size = tensor.itemsize
        dtype = numpy_dtype(tensor.dtype)
        expected, value = np.frombuffer(want, dtype), np.frombuffer(got, dtype)
        errors = errors.worst(largest_errors(value, expected))
        mask = (np.frombuffer(want, np.uint8) != np.frombuffer(got, np.uint8)).reshape(-1, size).any(axis=1)
        if rtol or atol:
            mask &= beyond(value, expected, rtol=rtol, atol=atol)
            if not mask.any():
                continue
        first = int(np.argmax(mask))
        index = tuple(int(x) for x in np.unravel_index(first, tensor.shape))
        diffs.append(TensorDiff(name, int(mask.sum()) * size, len(want), _ranges(mask, size), index,
                                float(expected[first].item()), float(value[first].item())))
    return tuple(diffs), errors


class _TraceOf:
    """The :class:`Trace` of one run, made the first time it is asked for: a seeded run is
    mostly read for its makespan, and its records cost 5 us an instance (issue 31's profile)."""

    __slots__ = ("_made", "_parts")

    def __init__(self, plan: Plan, times: RunTimes, seed: int | None,
                 sources: Callable[[], Sequence[str | None]]) -> None:
        self._parts: tuple | None = (plan, times, seed, sources)
        self._made: Trace | None = None

    def __call__(self) -> Trace:
        if self._made is None:
            plan, times, seed, sources = self._parts
            self._made = make_trace(plan, times, seed, sources())
            self._parts = None  # the records hold what the times said
        return self._made


@dataclass(frozen=True, slots=True)
class RunResult:
    """One timed run: its trace and how its outputs compare with the sequential reference."""

    seed: int | None
    makespan: float
    """The run's :attr:`Trace.makespan`, known without making the trace."""
    trace_of: Callable[[], Trace] = field(repr=False, hash=False, compare=False)
    diffs: tuple[TensorDiff, ...] = ()
    outputs: Mapping[str, np.ndarray] = field(default_factory=dict, hash=False, compare=False)
    """The ``output`` DRAM tensors as this run left them (functional runs; empty otherwise)."""

    errors: LargestErrors = NO_ERROR
    """The largest error of this run's compared tensors against the sequential reference."""

    @property
    def trace(self) -> Trace:
        """The run's trace (made on first use)."""
        return self.trace_of()

    @property
    def differs(self) -> bool:
        return bool(self.diffs)


@dataclass(frozen=True, slots=True)
class OutsideInput:
    """An instance whose activation got inputs outside the function's valid range, where the
    device computes an invalid result (:data:`~neuronsim.machine.model.elementwise.VALID_INPUT`)."""

    instance: Instance
    func: str
    count: int
    """How many of its inputs lie outside."""
    first: float
    """The first of them, in row-major order."""


@dataclass(frozen=True, slots=True)
class Simulation:
    """Every run of one :func:`simulate` call."""

    runs: tuple[RunResult, ...]
    functional: bool
    outputs: tuple[str, ...]
    """The compared tensors (the ``output`` ones unless ``compare="all"``)."""
    timed_values: bool = True
    """The timed runs computed values and were compared; False: only the sequential reference
    did (``simulate(timed_values=False)``), each run is a schedule and carries its outputs."""
    outside_inputs: tuple[OutsideInput, ...] = ()
    """The sequential reference's activations given inputs outside their valid range."""

    @property
    def trace(self) -> Trace:
        """The first run's trace."""
        return self.runs[0].trace

    @property
    def differs(self) -> bool:
        """Some run's outputs differ from the sequential reference (a race witness)."""
        return any(run.differs for run in self.runs)

    @property
    def first_difference(self) -> RunResult | None:
        return next((run for run in self.runs if run.differs), None)

    @property
    def errors(self) -> LargestErrors:
        """The largest error of any run against the sequential reference."""
        worst = NO_ERROR
        for run in self.runs:
            worst = worst.worst(run.errors)
        return worst


def output_arrays(program: Program, memory: Memory, copy: bool = True) -> dict[str, np.ndarray]:
    """The ``output`` DRAM tensors of ``memory`` as arrays of their dtype and shape (views of
    ``memory`` with ``copy=False``: for a memory no run writes any more)."""
    out = {}
    for name, tensor in program.tensors.items():
        if tensor.memory == MemoryKind.DRAM and tensor.role == "output":
            out[name] = memory.dram_array(tensor, copy)
    return out


def _compared_names(program: Program, compare: str) -> list[str]:
    if compare not in ("outputs", "all"):
        raise ValueError(f"compare must be 'outputs' or 'all', not {compare!r}")
    return [name for name, t in program.tensors.items()
            if compare == "all" or (t.memory == MemoryKind.DRAM and t.role == "output")]


def _compared(program: Program, memory: Memory, compare: str) -> dict[str, bytes]:
    return {name: memory.tensor_bytes(program.tensors[name]) for name in _compared_names(program, compare)}


def simulate(program: Program, *, seed: int | None = None, seeds: Iterable[int | None] | None = None,
             data_seed: int = 0, inputs: Mapping[str, np.ndarray] | None = None, functional: bool = True,
             waits: Sequence[Iterable[int]] | None = None, spread: float = 16.0, compare: str = "outputs",
             validate: bool = True, progress: Callable[[int, int], None] | None = None, rtol: float = 0.0,
             atol: float = 0.0, timed_values: bool = True) -> Simulation:
    """Simulate ``program`` once per interleaving seed and compare each run with the reference.

    Parameters
    ----------
    seed, seeds:
        Interleaving seeds: ``seeds`` if given, else ``[seed]``.  ``None`` means nominal
        durations and first-come first-served ties (the cost model's own schedule).
    data_seed, inputs:
        Initial memory (see :mod:`neuronsim.machine.sim.memory`): ``inputs`` maps ``input`` tensor names to
        arrays; the rest is seeded.  Every run, and the reference, starts from the same bytes.
    functional:
        False runs timing only (no memory, no comparison).
    waits:
        Replaces the program's resolved waits (``waits[i]``: ids instance ``i`` waits for).
    spread:
        Jitter range of seeded runs (durations scaled within ``[1/spread, spread]``).
    compare:
        ``"outputs"`` compares the ``output`` DRAM tensors (the spec's check); ``"all"``
        compares the final contents of every tensor, a finer race witness.
    progress:
        ``progress(done, total)`` after the sequential reference and after each run (steps
        of the whole simulation: the reference, when ``functional``, then one per seed).
    rtol, atol:
        A run differs where a compared element is beyond them (default 0 / 0: any differing
        byte); each run records its largest error either way.
    timed_values:
        False computes values in the sequential reference alone and times the runs without
        them: for a program the race check found race-free, whose every legal order computes
        the reference's bytes, the runs' numerics would repeat the reference's (issue 31: a
        matmul-bound kernel paid its arithmetic once per run).  Each run then carries the
        reference's outputs and no difference.

    BLAS runs with :func:`~neuronsim.machine.sim.blas.blas_threads` threads meanwhile.
    """
    if validate:
        validate_program(program)
    # one instruction's numerics never start a BLAS thread pool (machine/sim/blas.py); records
    # and views by the hundred thousand, no cycles: the collector waits (performance notes, section 0)
    with blas_limited(), collector_paused(), np.errstate(all="ignore"):  # errstate: Executor.begin's ops
        return _simulate(program, seeds if seeds is not None else [seed], data_seed, inputs, functional, waits,
                         spread, compare, progress, rtol, atol, timed_values)


def _simulate(program: Program, seeds: Iterable[int | None], data_seed: int, inputs: Mapping[str, np.ndarray] | None,
              functional: bool, waits: Sequence[Iterable[int]] | None, spread: float, compare: str,
              progress: Callable[[int, int], None] | None, rtol: float, atol: float,
              timed_values: bool) -> Simulation:
    plan = build_plan(program, waits)
    policies = [Interleaving(s, spread) for s in list(seeds)]
    if not policies:
        raise ValueError("no seeds to run")
    start = reference = None
    reference_outputs: dict[str, np.ndarray] = {}
    outside: tuple[OutsideInput, ...] = ()
    steps = len(policies) + functional
    if functional:
        start = initial_memory(program, plan.spec, data_seed, inputs)
        done = run_sequential(plan, start.copy() if timed_values else start)
        # the bytes only where a timed run's are compared with them; else the names alone
        reference = _compared(program, done, compare) if timed_values else _compared_names(program, compare)
        # views: the reference's memory is never written again (a 4096^2 output's copy was 32 MB
        # of pages touched afresh, issue 31)
        reference_outputs = output_arrays(program, done, copy=False)
        outside = tuple(OutsideInput(plan.unrolled[i], func, count, first) for i, func, count, first in done.outside)
        if progress is not None:
            progress(1, steps)
    runs = []
    sources = functools.cache(lambda: instance_sources(plan))  # the kernel lines, once for every trace made
    for policy in policies:
        memory = start.copy() if start is not None and timed_values else None
        executor = Executor(plan, memory) if memory is not None else None
        times = TimedRun(plan, policy, executor).run()
        diffs, errors = (compare_tensors(program, reference, _compared(program, memory, compare), rtol=rtol, atol=atol)
                         if memory is not None else ((), NO_ERROR))
        outputs = output_arrays(program, memory) if memory is not None else reference_outputs
        makespan = makespan_of(times.end, times.issued, times.span_end or ())
        runs.append(RunResult(seed=policy.seed, makespan=makespan, trace_of=_TraceOf(plan, times, policy.seed, sources),
                              diffs=diffs, outputs=outputs, errors=errors))
        if progress is not None:
            progress(len(runs) + functional, steps)
    return Simulation(tuple(runs), functional, tuple(sorted(reference or ())),
                      timed_values=functional and timed_values, outside_inputs=outside)
