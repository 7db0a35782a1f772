"""The task runtime, simulated (simpy): one orchestrator thread, N worker cores, TensorMap tracking.

Contract
--------
Requires a valid task program whose calls carry argument directions (run
``derive-call-directions`` first) and values for its runtime scalars.  Guarantees, for every
run (:func:`simulate_tasks`):

1. the orchestrator walks the program (:func:`neuronsim.machine.tasks.orchestrator.iter_task_instances`: real
   trip counts, the branches the scalars select) and submits the instances one after another,
   each costing it :meth:`RuntimePreset.submit_cost` for the tracking work the
   :class:`~neuronsim.machine.sim.tensormap.TensorMap` did for it (explicit deps always; creator edges,
   lookups and inserts in AUTO scopes only);
2. a task becomes ready when it has been submitted and every task of its fan-in has ended;
   ready tasks run on the first free worker in the order they became ready (a ``task_dummy``
   barrier ends when it is ready, on no worker);
3. nothing else orders tasks: with a seed every kernel's duration (its cost) is scaled by a
   factor drawn log-uniformly from ``[1/spread, spread]`` and simultaneous events are taken in
   a random order, so runs realise different legal orders; without a seed durations are
   nominal and ties go first-come first-served.  A run is a deterministic function of the
   program, the scalars, the preset and the seed.

The runtime knows nothing of races: it emits a :class:`~neuronsim.machine.sim.task_trace.TaskTrace`
(every edge with its origin, every access) that :mod:`neuronsim.verify.tasks.check` checks.  Edges only
point to earlier submissions, so a run cannot deadlock.

The tracing hook: ``hook(event, record_index, now)`` is called for ``"submit"``, ``"start"``
and ``"end"`` (progress bars, live views).

Examples
--------
>>> from neuronsim.machine.tasks.task_builder import In, InOut, TaskBuilder
>>> tb = TaskBuilder("acc")
>>> add = tb.kernel("add", In("x"), InOut("acc"), returns="acc", cost=100)
>>> x, acc = tb.param("x", (32, 8)), tb.param("acc", (8, 8), direction="inout")
>>> for i in tb.range(4, name="rows"):
...     _ = tb.submit(add, [x[i * 8: i * 8 + 8, :], acc], name="add", directions=["input", "inout"])
>>> trace = simulate_tasks(tb.program())
>>> [(r.name, r.start, r.end, [e.origin.value for e in r.waits]) for r in trace.records][:2]
[('add[0]', 105.0, 205.0, []), ('add[1]', 210.0, 310.0, ['tensormap'])]
>>> trace.totals()["lookups"], trace.totals()["inserts"]
(8, 4)
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import replace

import numpy as np
from simpy import Environment, Event, Store

from neuronsim.machine.ir.collector import collector_paused
from neuronsim.machine.sim.simpy_events import tied
from neuronsim.machine.sim.task_trace import RuntimePreset, TaskRecord, TaskTrace
from neuronsim.machine.sim.tensormap import TensorMap, Tracking
from neuronsim.machine.tasks.ir import TaskProgram
from neuronsim.machine.tasks.orchestrator import DEFAULT_MAX_ITERATIONS, TaskInstance, iter_task_instances

__all__ = ["simulate_tasks", "RuntimePreset", "preset_for"]

Hook = Callable[[str, int, float], None]


def preset_for(program: TaskProgram, cores: int | None = None, **changes) -> RuntimePreset:
    """The default preset with the program's worker cores (or ``cores``)."""
    return replace(RuntimePreset(), cores=cores or program.runtime.cores, **changes)


class _Run:
    def __init__(self, program: TaskProgram, scalars: Mapping[str, int] | None, preset: RuntimePreset,
                 seed: int | None, hook: Hook | None, exact: bool, max_iterations: int) -> None:
        self.program, self.preset, self.seed, self.hook = program, preset, seed, hook
        self.instances = iter_task_instances(program, scalars, max_iterations=max_iterations)
        self.tmap = TensorMap(exact=exact)
        self.env = Environment()
        self.ready_queue = Store(self.env)
        self.tasks: list[TaskInstance] = []
        self.tracking: list[Tracking] = []
        self.submitted: list[float] = []
        self.ready: list[float] = []
        self.start: list[float] = []
        self.end: list[float] = []
        self.worker: list[int | None] = []
        self.pending: list[int] = []
        self.done: list[bool] = []
        self.successors: list[list[int]] = []
        self.orchestration = 0.0
        if seed is None:
            self.scale: Callable[[], float] = lambda: 1.0
            self.hold: Callable[[float], Event] = self.env.timeout
        else:
            rng = np.random.default_rng([seed, 0x7A5C])
            spread = preset.spread
            self.scale = lambda: float(spread ** rng.uniform(-1.0, 1.0))
            draw = random.Random(seed).getrandbits
            env = self.env
            self.hold = lambda delay: env.timeout(delay) if delay else tied(env, draw(30))

    def _hook(self, event: str, index: int) -> None:
        if self.hook is not None:
            self.hook(event, index, self.env.now)

    def orchestrator(self):
        preset = self.preset
        for task in self.instances:
            tracking = self.tmap.submit(task)
            cost = preset.submit_cost(tracking.lookups, tracking.inserts, tracking.explicit, tracking.creator)
            self.orchestration += cost
            yield self.env.timeout(cost)
            i = task.index
            self.tasks.append(task)
            self.tracking.append(tracking)
            self.submitted.append(self.env.now)
            self.ready.append(-1.0)
            self.start.append(-1.0)
            self.end.append(-1.0)
            self.worker.append(None)
            self.done.append(False)
            self.successors.append([])
            waiting = 0
            for t in tracking.fan_in:
                if not self.done[t]:
                    self.successors[t].append(i)
                    waiting += 1
            self.pending.append(waiting)
            self._hook("submit", i)
            if not waiting:
                self._make_ready(i)

    def _make_ready(self, i: int) -> None:
        self.ready[i] = self.env.now
        if self.tasks[i].kernel is None:  # a barrier: it ends as soon as it is ready
            self.start[i] = self.env.now
            self._finish(i)
        else:
            self.ready_queue.put(i)

    def _finish(self, i: int) -> None:
        self.end[i] = self.env.now
        self.done[i] = True
        self._hook("end", i)
        for s in self.successors[i]:
            self.pending[s] -= 1
            if not self.pending[s]:
                self._make_ready(s)
        self.successors[i] = []

    def core(self, w: int):
        env, queue = self.env, self.ready_queue
        while True:
            i = yield queue.get()
            yield self.hold(0)  # tie-break among cores taking tasks at the same instant
            self.start[i] = env.now
            self.worker[i] = w
            self._hook("start", i)
            yield env.timeout(self.tasks[i].cost * self.scale())
            self._finish(i)

    def run(self) -> TaskTrace:
        env = self.env
        env.process(self.orchestrator())
        for w in range(self.preset.cores):
            env.process(self.core(w))
        with collector_paused():
            env.run()
        records = tuple(
            TaskRecord(t.index, t.call, t.name, t.kernel, t.manual, self.submitted[i], self.ready[i], self.start[i],
                       self.end[i], self.worker[i], tr.edges, tr.lookups, tr.inserts, tr.explicit, tr.creator,
                       tr.no_dep, t.accesses, t.task_var, t.path, t.iteration)
            for i, (t, tr) in enumerate(zip(self.tasks, self.tracking)))
        return TaskTrace(records, self.preset, self.seed, self.orchestration)


def simulate_tasks(program: TaskProgram, scalars: Mapping[str, int] | None = None, *,
                   preset: RuntimePreset | None = None, seed: int | None = None, hook: Hook | None = None,
                   exact_overlap: bool = False, max_iterations: int = DEFAULT_MAX_ITERATIONS) -> TaskTrace:
    """One run of ``program`` on the simulated runtime (see the module doc).

    ``scalars`` override the parameters' values; ``preset`` defaults to :func:`preset_for`;
    ``exact_overlap`` makes the TensorMap decide overlaps on bytes rather than simpler's
    conservative test (:func:`neuronsim.machine.sim.tensormap.relation`).
    """
    preset = preset or preset_for(program)
    return _Run(program, scalars, preset, seed, hook, exact_overlap, max_iterations).run()
