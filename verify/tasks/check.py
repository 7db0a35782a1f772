"""The task race checker: unordered task instances that share a byte, one of them writing.

Two task instances *race* when their accessed regions share a byte (same root instance, or
roots a MemRef places in one allocation: byte-exact, :mod:`neuronsim.machine.tasks.task_geometry`), at least
one of the two writes it (what the *kernel* does, whatever the directions tell the runtime),
and no chain of edges orders them.  The edges are the runtime's: TensorMap lookups, creator
edges and explicit deps (user and compiler).  Worker order is scheduling, not ordering, and
never counts.  Happens-before is :class:`neuronsim.machine.order.hb.DagHappensBefore` (vector clocks over
chains, exact), the project's one construction.

* :func:`check_task_program`: statically, over the unrolled task graph (the orchestrator's
  walk and the TensorMap, no timing: the edges every run records);
* :func:`check_task_trace`: over a simulated run, with the edges it recorded; it also checks
  the run kept them (:func:`trace_violations`) and marks each race *witnessed* when the two
  tasks' executions overlapped or ran in the reverse of submission order in that run.

Every race is reported with both instances, the bytes, the kind (RAW / WAR / WAW, the earlier
instance's access against the later's) and the dep that fixes it (:class:`TaskFix`).  The
runtime itself races when a later ``output_existing`` writer follows readers (TensorMap keeps
producers only): such a WAR is reported like any other.

Algorithm: instances in submission order (a topological order); per storage space, a shadow
of the earlier accesses.  A write that covers earlier accesses ordered before it takes them
under it: any later access ordered after the write is ordered after them too, so they are
consulted only when the write itself is unordered.  Every unordered conflicting pair is found,
and a race-free stream of writes to one tile costs one comparison per access.  The shadow is
indexed by byte range (:class:`neuronsim.machine.order.spans.SpanIndex`), so an access meets only the earlier accesses
whose byte ranges meet its own: thousands of disjoint tiles of one output cost a lookup each,
not a scan of all of them.

Examples
--------
>>> from neuronsim.machine.tasks.task_builder import In, Out, TaskBuilder
>>> tb = TaskBuilder("war")
>>> read = tb.kernel("read", In("x"), cost=10)
>>> write = tb.kernel("write", Out("x"), returns="x", cost=10)
>>> x = tb.param("x", (8, 8))
>>> _ = tb.submit(read, [x], name="reader", directions=["input"])
>>> _ = tb.submit(write, [x], name="writer", directions=["output_existing"])
>>> report = check_task_program(tb.program())
>>> [(r.kind, r.first_name, r.second_name, r.fix.text()) for r in report.races]
[('WAR', 'reader', 'writer', 'writer: deps=[reader_tid]')]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from neuronsim.machine.ir.collector import collector_paused
from neuronsim.machine.order.hb import DagHappensBefore
from neuronsim.machine.sim.task_trace import TaskTrace
from neuronsim.machine.order.spans import SpanIndex
from neuronsim.machine.sim.tensormap import task_graph
from neuronsim.machine.tasks.task_geometry import covers, overlaps, shared_bytes
from neuronsim.machine.tasks.ir import TaskProgram
from neuronsim.machine.tasks.orchestrator import ArgAccess, unroll_task_program

__all__ = ["TaskFix", "TaskRace", "TaskRaceReport", "find_task_races", "check_task_program", "check_task_trace",
           "trace_violations", "DEFAULT_MAX_TASK_RACES"]

DEFAULT_MAX_TASK_RACES = 1000


@dataclass(frozen=True, slots=True)
class TaskFix:
    """The dep that orders a race: ``call`` waits for the instance named ``var`` (``on``'s TaskId);
    ``carried`` names the loop through which the earlier instance's TaskId must be carried when
    it was submitted in an earlier iteration of a loop around both."""

    call: str
    on: str
    var: str | None
    carried: str | None = None

    def text(self) -> str:
        name = self.var or f"<a TaskId of {self.on}>"
        if self.carried:
            return f"{self.call}: deps=[{name} of the previous iteration, carried through loop {self.carried}]"
        return f"{self.call}: deps=[{name}]"

    def to_json(self) -> dict[str, Any]:
        return {"call": self.call, "on": self.on, "var": self.var, "carried": self.carried, "text": self.text()}


@dataclass(frozen=True, slots=True)
class TaskRace:
    kind: str
    first: int
    second: int
    first_name: str
    second_name: str
    first_arg: int
    second_arg: int
    first_var: str
    second_var: str
    storage: str
    bytes: tuple[tuple[int, int], ...]
    """Shared bytes in the storage (the first few runs)."""
    fix: TaskFix
    witnessed: bool | None = None
    """Over a trace: the two ran overlapping or in reverse order in that run (None: static)."""

    def describe(self) -> str:
        lo, hi = self.bytes[0] if self.bytes else (0, 0)
        seen = {True: "; witnessed in this run", False: "", None: ""}[self.witnessed]
        return (f"{self.kind} {self.first_name} arg {self.first_arg} ({self.first_var}) / {self.second_name} arg "
                f"{self.second_arg} ({self.second_var}) on {self.storage} bytes [{lo}, {hi}){seen}; fix: "
                f"{self.fix.text()}")

    def to_json(self) -> dict[str, Any]:
        out = {"kind": self.kind, "first": {"id": self.first, "name": self.first_name, "arg": self.first_arg,
                                            "var": self.first_var},
               "second": {"id": self.second, "name": self.second_name, "arg": self.second_arg, "var": self.second_var},
               "storage": self.storage, "bytes": [list(b) for b in self.bytes], "fix": self.fix.to_json()}
        if self.witnessed is not None:
            out["witnessed"] = self.witnessed
        return out


@dataclass(frozen=True, slots=True)
class TaskRaceReport:
    races: tuple[TaskRace, ...]
    tasks: int
    total_races: int
    edges: int

    @property
    def race_free(self) -> bool:
        return self.total_races == 0

    def pairs(self) -> set[tuple[int, int]]:
        return {(r.first, r.second) for r in self.races}

    def to_json(self) -> dict[str, Any]:
        return {"format": "neuronsim.task-races/1", "tasks": self.tasks, "edges": self.edges,
                "race_free": self.race_free, "total_races": self.total_races,
                "races": [r.to_json() for r in self.races]}


@dataclass(frozen=True, slots=True)
class _Task:
    """What the checker needs of one instance (from the unrolled graph or a trace record)."""

    index: int
    name: str
    call: str
    accesses: tuple[ArgAccess, ...]
    task_var: str | None
    iteration: tuple[tuple[str, int], ...]


@dataclass(slots=True)
class _Entry:
    task: int
    access: ArgAccess
    covered: list[_Entry] = field(default_factory=list)


def _storage(space: Any) -> str:
    if isinstance(space, tuple) and len(space) == 2 and space[0] == "memref":
        return f"allocation {space[1]}"
    if isinstance(space, tuple) and len(space) == 2:
        return str(space[0])
    return str(space)


def _fix(first: _Task, second: _Task) -> TaskFix:
    common = 0
    a, b = first.iteration, second.iteration
    while common < len(a) and common < len(b) and a[common][0] == b[common][0]:
        common += 1
    carried = next((a[k][0] for k in range(common) if a[k][1] != b[k][1]), None)
    return TaskFix(second.call, first.call, first.task_var, carried)


def _kind(first_writes: bool, second_writes: bool) -> str:
    return "WAW" if first_writes and second_writes else ("RAW" if first_writes else "WAR")


def find_task_races(tasks: Sequence[_Task], preds: Sequence[Sequence[int]], *,
                    max_races: int = DEFAULT_MAX_TASK_RACES,
                    witness: Mapping[int, tuple[float, float]] | None = None) -> TaskRaceReport:
    """Every unordered conflicting pair of ``tasks`` under the edges ``preds`` (see the module doc)."""
    hb = DagHappensBefore(preds)
    live: dict[Any, tuple[SpanIndex, SpanIndex]] = {}  # space -> (writes, reads) not covered
    races: list[TaskRace] = []
    total = 0
    seq = 0
    for task, clock in zip(tasks, hb.clocks()):
        b = task.index
        found: dict[int, tuple[_Entry, ArgAccess]] = {}

        # this task's index, clock and findings bound as defaults (visit runs only within the iteration)
        def visit(entry: _Entry, x: ArgAccess, b: int = b, clock: Any = clock,
                  found: dict[int, tuple[_Entry, ArgAccess]] = found) -> None:
            stack = [entry]
            while stack:
                e = stack.pop()
                if e.task == b or not (e.access.writes or x.writes):
                    continue
                if not overlaps(e.access.region, x.region):
                    continue
                if hb.ordered(e.task, clock):
                    continue  # and so is everything it covers
                found.setdefault(e.task, (e, x))
                stack.extend(e.covered)

        ranges = [x.region.byte_range for x in task.accesses]
        for x, (lo, hi) in zip(task.accesses, ranges):
            if x.region.space not in live or lo == hi:  # an empty region touches nothing
                continue
            writes, reads = live[x.region.space]
            for _, e in writes.meeting(lo, hi):
                visit(e, x)
            if x.writes:
                for _, e in reads.meeting(lo, hi):
                    visit(e, x)
        for a, (e, x) in sorted(found.items()):
            total += 1
            if len(races) < max_races:
                first = tasks[a]
                seen = None
                if witness is not None:
                    (sa, ea), (sb, eb) = witness[a], witness[b]
                    seen = (sa < eb and sb < ea) or eb <= sa
                races.append(TaskRace(_kind(e.access.writes, x.writes), a, b, first.name, task.name, e.access.arg,
                                      x.arg,
                                      e.access.var, x.var, _storage(x.region.space),
                                      shared_bytes(e.access.region, x.region)[:4], _fix(first, task), seen))
        for x, (lo, hi) in zip(task.accesses, ranges):
            if lo == hi:
                continue
            writes, reads = live.setdefault(x.region.space, (SpanIndex(), SpanIndex()))
            entry = _Entry(b, x)
            seq += 1  # the order the index answers in: a scan of the shadow's
            if x.writes:
                for bucket in (writes, reads):
                    for at, e in bucket.meeting(lo, hi):
                        if e.task != b and covers(x.region, e.access.region) and hb.ordered(e.task, clock):
                            entry.covered.append(e)
                            bucket.remove(at)
                writes.add(lo, hi, seq, entry)
            else:
                reads.add(lo, hi, seq, entry)
    return TaskRaceReport(tuple(races), len(tasks), total, sum(len(p) for p in preds))


def check_task_program(program: TaskProgram, scalars: Mapping[str, int] | None = None, *,
                       max_races: int = DEFAULT_MAX_TASK_RACES, exact_overlap: bool = False,
                       max_instances: int | None = None) -> TaskRaceReport:
    """Races of one run of ``program`` (calls must carry directions), statically: the unrolled
    instances under the edges the runtime gives them."""
    with collector_paused():
        instances = unroll_task_program(program, scalars, max_instances=max_instances)
        graph = task_graph(instances, exact=exact_overlap)
        tasks = [_Task(t.index, t.name, t.call, t.accesses, t.task_var, t.iteration) for t in instances]
        return find_task_races(tasks, [g.fan_in for g in graph], max_races=max_races)


def trace_violations(trace: TaskTrace) -> list[str]:
    """What a run broke: a task started before a task it waits for ended, before it was
    submitted, or on a worker still busy with another."""
    out: list[str] = []
    records = trace.records
    eps = 1e-6
    busy: dict[int, list[tuple[float, float, str]]] = {}
    for r in records:
        if not (r.submitted - eps <= r.ready <= r.start + eps and r.start <= r.end + eps):
            out.append(f"{r.name}: submitted {r.submitted}, ready {r.ready}, start {r.start}, end {r.end} out of order")
        for e in r.waits:
            if records[e.on].end > r.start + eps:
                out.append(f"{r.name} started at {r.start} before {records[e.on].name} ended at {records[e.on].end} "
                           f"({e.origin.value} edge)")
        if r.worker is not None:
            busy.setdefault(r.worker, []).append((r.start, r.end, r.name))
    for worker, spans in busy.items():
        spans.sort()
        for (_s0, e0, n0), (s1, _e1, n1) in zip(spans, spans[1:]):
            if s1 < e0 - eps:
                out.append(f"worker {worker} ran {n1} from {s1} while {n0} ran until {e0}")
    return out


def check_task_trace(trace: TaskTrace, *, max_races: int = DEFAULT_MAX_TASK_RACES) -> TaskRaceReport:
    """Races of a simulated run under the edges it recorded, each marked witnessed or not."""
    with collector_paused():
        tasks = [_Task(r.index, r.name, r.call, r.accesses, r.task_var, r.iteration) for r in trace.records]
        preds = [tuple(dict.fromkeys(e.on for e in r.waits)) for r in trace.records]
        witness = {r.index: (r.start, r.end) for r in trace.records}
        return find_task_races(tasks, preds, max_races=max_races, witness=witness)

