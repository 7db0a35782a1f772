"""The discrete-event model (simpy): one process per sequencer and per DMA queue.

Contract
--------
Requires a :class:`~neuronsim.machine.sim.plan.Plan`.  Guarantees, for every run, the spec's rules 1-4
on the recorded times (``docs/program-format.md``, "Happens-before"):

1. a sequencer issues its stream in program order; a compute instruction X occupies it for
   its whole duration, so ``E(X) <= T(next)``;
2. a DMA trigger occupies its sequencer only for the trigger's issue time; the transfer is
   handed to its queue and the sequencer goes on (``T(X) <= T(next)``);
3. a queue carries out its transfers in program order, one after another, each no earlier
   than its trigger has been issued (``E(prev) <= S(X)``, ``T(X) <= S(X)``);
4. a wait "Y waits for B" is a semaphore threshold (see :mod:`neuronsim.machine.sim.plan`): Y's
   sequencer blocks at Y until B's semaphore reaches B's position + 1, i.e. ``E(B) <= T(Y)``.

Nothing else orders instances (rule 5): an :class:`Interleaving` with a seed multiplies every
duration by a factor drawn log-uniformly from ``[1/spread, spread]`` and breaks ties between
simultaneous events in a random order, so repeated runs realise different legal orders; without
a seed durations are nominal and ties go first-come first-served.  Either way a run is a
deterministic function of the plan and the seed.

Functional execution is a hook: at S(X) the run calls ``executor.begin(i)`` (read the inputs,
compute the outputs) and at E(X) ``executor.finish(i, token)`` (write them).

A wait that can never be met leaves its process blocked when the event queue runs dry; the
run then raises :class:`DeadlockError` naming the cycle of blocked components.  Waits that
point backwards in program order (all a valid program has) cannot deadlock.

Speed (``docs/performance-notes.md`` section 2): a semaphore creates an event
only for a threshold someone actually blocks on, a completion costs one counter increment,
and the run keeps times in flat lists with the cyclic GC off.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from simpy import Environment, Event
from simpy.events import NORMAL

from neuronsim.machine.ir.collector import collector_paused
from neuronsim.machine.ir.errors import ProgramError, join_path
from neuronsim.machine.sim.plan import Plan

__all__ = ["Interleaving", "RunTimes", "TimedRun", "DeadlockError", "Blocked", "NOMINAL"]


@dataclass(frozen=True, slots=True)
class Interleaving:
    """The seeded policy that picks one legal order: duration jitter and tie-breaks."""

    seed: int | None = None
    """None: nominal durations, first-come first-served ties."""
    spread: float = 16.0
    """Durations are scaled by ``spread ** u``, ``u`` uniform in ``[-1, 1)``.  Wide on purpose:
    an unordered pair whose nominal durations differ tenfold must still run in either order
    (with 16, a 1420 ns DMA finishes before a concurrent 153 ns memset in ~20 % of seeds;
    with 4, in ~1 %)."""

    def durations(self, plan: Plan) -> tuple[list[float], list[float]]:
        """Per-instance (duration, issue) in ns under this policy."""
        if self.seed is None:
            return plan.duration, plan.issue
        rng = np.random.default_rng([self.seed, 0xD1CE])
        n = len(plan)
        scale = self.spread ** rng.uniform(-1.0, 1.0, size=(2, n))
        return (np.asarray(plan.duration) * scale[0]).tolist(), (np.asarray(plan.issue) * scale[1]).tolist()


NOMINAL = Interleaving()


@dataclass(frozen=True, slots=True)
class RunTimes:
    """What one run recorded, as flat per-instance lists (ns)."""

    ready: list[float]
    """When the sequencer reached the instance (before its waits)."""
    trigger: list[float]
    issued: list[float]
    """End of a DMA trigger on its sequencer (= ``end`` for compute instances)."""
    start: list[float]
    end: list[float]
    semaphore_times: tuple[list[float], ...]
    """Per component, the time its semaphore reached 1, 2, ..."""


@dataclass(frozen=True, slots=True)
class Blocked:
    """One component of a deadlock cycle."""

    component: str
    instance: str
    waits_for: str
    """The producer instance, or for a queue the sequencer that has to trigger ``instance``."""
    semaphore: str | None
    threshold: int | None

    def __str__(self) -> str:
        if self.semaphore is None:
            return f"{self.component} waits at {self.instance} for its trigger on {self.waits_for}"
        return (f"{self.component} blocked at {self.instance} waiting for {self.semaphore} >= {self.threshold} "
                f"({self.waits_for})")


class DeadlockError(ProgramError):
    """A wait that can never be met; ``cycle`` lists the blocked components around it."""

    def __init__(self, path: str, cycle: tuple[Blocked, ...]) -> None:
        super().__init__(path, "deadlock: a wait can never be met: " + "; ".join(map(str, cycle)))
        self.cycle = cycle


class _Hold(Event):
    """A :class:`simpy.Timeout` whose tie-break priority the interleaving chooses."""

    def __init__(self, env: Environment, delay: float, priority: int) -> None:
        self.env = env
        self.callbacks = []
        self._value = None
        self._ok = True
        env.schedule(self, priority, delay)


class _Semaphore:
    """A counting semaphore: completions so far, when each came, and awaited thresholds."""

    __slots__ = ("count", "times", "waiters")

    def __init__(self) -> None:
        self.count = 0
        self.times: list[float] = []
        self.waiters: dict[int, Event] = {}


class TimedRun:
    """One simulated run of a plan under an interleaving (see the module doc)."""

    def __init__(self, plan: Plan, policy: Interleaving = NOMINAL, executor: Any = None) -> None:
        self.plan = plan
        self.policy = policy
        self.executor = executor
        self.env = Environment()
        self.duration, self.issue = policy.durations(plan)
        n = len(plan)
        self.ready = [0.0] * n
        self.trigger = [0.0] * n
        self.issued = [-1.0] * n
        self.start = [0.0] * n
        self.end = [0.0] * n
        self.semaphores = [_Semaphore() for _ in plan.components]
        self.blocked: list[tuple[int, int, int, int] | None] = [None] * len(plan.components)
        self.trigger_events: dict[int, Event] = {}
        self.failure: Exception | None = None
        if policy.seed is None:
            self.hold: Callable[[float], Event] = self.env.timeout
            self.fire: Callable[[Event], Any] = Event.succeed
        else:
            draw = random.Random(policy.seed).getrandbits
            env = self.env
            self.hold = lambda delay: _Hold(env, delay, NORMAL + draw(30))
            self.fire = lambda ev: _fire(ev, NORMAL + draw(30))

    # -- processes ----------------------------------------------------------------------
    def _sequencer(self, c: int, stream: tuple[int, ...]):
        env, plan, fx = self.env, self.plan, self.executor
        sems, waits, is_dma = self.semaphores, plan.waits, plan.is_dma
        duration, issue, hold, fire = self.duration, self.issue, self.hold, self.fire
        ready, trigger, issued, start, end = self.ready, self.trigger, self.issued, self.start, self.end
        own = sems[c]
        for i in stream:
            ready[i] = env.now
            for sc, k, b in waits[i]:
                sem = sems[sc]
                if sem.count < k:
                    self.blocked[c] = (i, sc, k, b)
                    ev = sem.waiters.get(k)
                    if ev is None:
                        ev = sem.waiters[k] = Event(env)
                    yield ev
                    self.blocked[c] = None
            trigger[i] = now = env.now
            if is_dma[i]:
                if issue[i]:
                    yield hold(issue[i])
                issued[i] = env.now
                ev = self.trigger_events.pop(i, None)
                if ev is not None:
                    fire(ev)
                continue
            start[i] = now
            token = None
            if fx is not None:
                try:
                    token = fx.begin(i)
                except Exception as err:  # simpy would re-create it; run() re-raises it as is
                    self.failure = err
                    return
            yield hold(duration[i])
            if fx is not None:
                fx.finish(i, token)
            end[i] = issued[i] = now = env.now
            # Completion: the semaphore increments (inlined here and in _queue: the hot path).
            own.count += 1
            own.times.append(now)
            if own.waiters:
                ev = own.waiters.pop(own.count, None)
                if ev is not None:
                    fire(ev)

    def _queue(self, c: int, stream: tuple[int, ...]):
        env, fx, hold, fire = self.env, self.executor, self.hold, self.fire
        duration, issued, start, end = self.duration, self.issued, self.start, self.end
        own = self.semaphores[c]
        for i in stream:
            if issued[i] < 0:
                self.blocked[c] = (i, -1, -1, i)
                ev = self.trigger_events[i] = Event(env)
                yield ev
                self.blocked[c] = None
            start[i] = env.now
            token = None
            if fx is not None:
                try:
                    token = fx.begin(i)
                except Exception as err:
                    self.failure = err
                    return
            yield hold(duration[i])
            if fx is not None:
                fx.finish(i, token)
            end[i] = now = env.now
            own.count += 1
            own.times.append(now)
            if own.waiters:
                ev = own.waiters.pop(own.count, None)
                if ev is not None:
                    fire(ev)

    # -- driver -------------------------------------------------------------------------
    def run(self) -> RunTimes:
        """Simulate to the end; raise :class:`DeadlockError` if some process stays blocked."""
        plan, env = self.plan, self.env
        nseq = len(plan.components) - plan.spec.dma_queues
        for c, stream in enumerate(plan.streams):
            if stream:
                env.process(self._sequencer(c, stream) if c < nseq else self._queue(c, stream))
        with collector_paused():
            env.run()
        if self.failure is not None:
            raise self.failure
        if any(b is not None for b in self.blocked):
            raise self._deadlock()
        return RunTimes(self.ready, self.trigger, self.issued, self.start, self.end,
                        tuple(s.times for s in self.semaphores))

    def _deadlock(self) -> DeadlockError:
        plan = self.plan
        names = plan.components
        inst = plan.unrolled.instances
        c = next(k for k, b in enumerate(self.blocked) if b is not None)
        seen: list[int] = []
        while c not in seen and self.blocked[c] is not None:
            seen.append(c)
            i, sc, _k, b = self.blocked[c]
            c = plan.sequencer[b] if sc < 0 else sc
        cycle_comps = seen[seen.index(c):] if c in seen else seen
        cycle = []
        for comp in cycle_comps:
            i, sc, k, b = self.blocked[comp]
            if sc < 0:
                cycle.append(Blocked(names[comp], inst[i].name, names[plan.sequencer[i]], None, None))
            else:
                cycle.append(Blocked(names[comp], inst[i].name, inst[b].name, names[sc], k))
        first = self.blocked[cycle_comps[0]][0]
        return DeadlockError(join_path(plan.paths[inst[first].instr.name], "deps"), tuple(cycle))


def _fire(ev: Event, priority: int) -> None:
    """Trigger ``ev`` (like :meth:`Event.succeed`) with a chosen tie-break priority."""
    ev._ok = True
    ev._value = None
    ev.env.schedule(ev, priority)
