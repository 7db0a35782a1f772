"""The discrete-event model (simpy): one process per sequencer and per DMA queue.

Contract
--------
Requires a :class:`~neuronsim.machine.sim.plan.Plan`.  Guarantees, for every run, the spec's rules 1-4
on the recorded times (``docs/program-format.md``, "Happens-before"):

1. a sequencer issues its stream in program order; a compute instruction X occupies it for
   its occupancy (:mod:`neuronsim.machine.model.cost`), so ``E(X) <= T(next)``;
2. a DMA trigger occupies its sequencer only for the trigger's issue time; the transfer is
   handed to its queue and the sequencer goes on (``T(X) <= T(next)``);
3. a queue carries out its transfers in program order, one after another, each no earlier
   than its trigger has been issued (``E(prev) <= S(X)``, ``T(X) <= S(X)``);
4. a wait "Y waits for B" is a semaphore threshold (see :mod:`neuronsim.machine.sim.plan`): Y's
   sequencer blocks at Y until B's semaphore reaches B's position + 1, i.e. ``E(B) <= T(Y)``.

Timing beyond the rules (it only ever delays): an instance also waits until the results of
its producers (``plan.after``) exist: a compute producer's ``S + result``, a DMA's ``E``.  A
transfer's data moves no sooner than ``latency`` after its trigger was issued (the latency of
the next transfer of a queue thus overlaps the data of the current one) and then on the DMA
engines its shares name: each engine carries one share at a time, first come first served;
requests of one instant are granted in queue order (``dma0`` first: round robin), after every
other event of that instant, so the grant order never depends on event tie-breaks.

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
from neuronsim.machine.sim.simpy_events import HeldTimeout, fire, fire_later

__all__ = ["Interleaving", "RunTimes", "TimedRun", "DeadlockError", "Blocked", "NOMINAL", "ARBITER"]

#: Priority of the DMA-engine arbiter: after every other event of its instant (seeded runs
#: draw event priorities up to ``NORMAL + 2**30``).
ARBITER = 2**31


@dataclass(frozen=True, slots=True)
class Interleaving:
    """The seeded policy that picks one legal order: duration jitter and tie-breaks."""

    seed: int | None = None
    """None: nominal durations, first-come first-served ties."""
    spread: float = 16.0
    """Durations are scaled by ``spread ** u``, ``u`` uniform in ``[-1, 1)``.  Wide on purpose:
    an unordered pair whose nominal durations differ tenfold must still run in either order
    (with 16, a transfer nine times as long as a concurrent memset finishes first in ~20 % of
    seeds; with 4, in ~1 %).  A DMA's latency and its shares' times scale with its factor."""

    def durations(self, plan: Plan) -> tuple[list[float], list[float]]:
        """Per-instance (duration, issue) in ns under this policy."""
        timing = self.timing(plan)
        return timing[0], timing[1]

    def timing(self, plan: Plan) -> tuple[list[float], list[float], list[float], list[float], list[float] | None]:
        """Per-instance (duration, issue, result, latency, scale) under this policy: ``scale``
        multiplies the instance's other times too (its DMA shares), None when nominal."""
        if self.seed is None:
            return plan.duration, plan.issue, plan.result, plan.latency, None
        rng = np.random.default_rng([self.seed, 0xD1CE])
        n = len(plan)
        scale = self.spread ** rng.uniform(-1.0, 1.0, size=(2, n))
        own = scale[0]
        return ((np.asarray(plan.duration) * own).tolist(), (np.asarray(plan.issue) * scale[1]).tolist(),
                (np.asarray(plan.result) * own).tolist(), (np.asarray(plan.latency) * own).tolist(), own.tolist())


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
    span_end: list[float] | None = None
    """A compute instance's ``start`` plus its whole duration (its result time less the
    hand-off latency): :attr:`neuronsim.machine.sim.trace.InstanceRecord.span_end`."""


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
        self.duration, self.issue, self.result, self.latency, self.scale = policy.timing(plan)
        n = len(plan)
        self.res = [0.0] * n
        self.stop = [0.0] * n
        self.dma_free = [0.0] * plan.spec.dma_engines
        self.queue_ready = [0.0] * len(plan.components)  # (machines pacing descriptors by queue)
        self.pending: list[tuple[int, int, Event]] = []
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
            self.priority: Callable[[], int] = lambda: NORMAL
        else:
            draw = random.Random(policy.seed).getrandbits
            env = self.env
            self.hold = lambda delay: HeldTimeout(env, delay, NORMAL + draw(30))
            self.fire = lambda ev: fire(ev, NORMAL + draw(30))
            self.priority = lambda: NORMAL + draw(30)

    # -- processes ----------------------------------------------------------------------
    def _sequencer(self, c: int, stream: tuple[int, ...]):
        env, plan, fx = self.env, self.plan, self.executor
        sems, waits, is_dma, after = self.semaphores, plan.waits, plan.is_dma, plan.after
        duration, issue, hold, fire = self.duration, self.issue, self.hold, self.fire
        result, res = self.result, self.res
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
            if after[i]:  # the producers' results (plan module doc)
                t = now = env.now
                for b in after[i]:
                    if res[b] > t:
                        t = res[b]
                if t > now:
                    yield hold(t - now)
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
            res[i] = now + result[i]
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
        env, fx, hold = self.env, self.executor, self.hold
        duration, latency, shares, fire = self.duration, self.latency, self.plan.shares, self.fire
        issued, start, end, res, stop = self.issued, self.start, self.end, self.res, self.stop
        own = self.semaphores[c]
        for i in stream:
            if issued[i] < 0:
                self.blocked[c] = (i, -1, -1, i)
                ev = self.trigger_events[i] = Event(env)
                yield ev
                self.blocked[c] = None
            now = env.now
            t = issued[i] + latency[i]
            if t > now:
                yield hold(t - now)
            if shares[i]:
                ev = Event(env)
                if not self.pending:
                    fire_later(self._arbiter_event(), ARBITER, 0.0)
                self.pending.append((c, i, ev))
                yield ev  # the arbiter resumes it when its first share starts
                done = stop[i]
            else:  # no DMA engine: a stand-in transfer of its (override) duration
                done = env.now + (duration[i] - latency[i])
            start[i] = now = env.now
            token = None
            if fx is not None:
                try:
                    token = fx.begin(i)
                except Exception as err:
                    self.failure = err
                    return
            if done > now:
                yield hold(done - now)
            if fx is not None:
                fx.finish(i, token)
            end[i] = res[i] = now = env.now
            own.count += 1
            own.times.append(now)
            if own.waiters:
                ev = own.waiters.pop(own.count, None)
                if ev is not None:
                    fire(ev)

    def _arbiter_event(self) -> Event:
        ev = Event(self.env)
        ev.callbacks.append(self._arbitrate)
        return ev

    def _arbitrate(self, _event: Event) -> None:
        """Grant this instant's requests for DMA engines, in queue order (see the module doc)."""
        now, free, scale, shares, stop = self.env.now, self.dma_free, self.scale, self.plan.shares, self.stop
        pending, self.pending = sorted(self.pending, key=_first), []
        by_queue, ready = self.plan.spec.dma_paced_by_queue, self.queue_ready
        for c, i, ev in pending:
            k = 1.0 if scale is None else scale[i]
            first = last = None
            gap = 0.0
            floor = ready[c] if by_queue and ready[c] > now else now
            for e, data, keep in shares[i]:
                f = free[e]
                s = f if f > floor else floor
                free[e] = s + (data if by_queue else keep) * k
                if keep > gap:
                    gap = keep
                d = s + data * k
                if first is None or s < first:
                    first = s
                if last is None or d > last:
                    last = d
            if by_queue:  # the descriptor rate paces the queue, not the engines
                ready[c] = first + gap * k
            stop[i] = last
            fire_later(ev, self.priority(), first - now)

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
        hand_off = plan.spec.result_latency_ns * (np.asarray(self.scale) if self.scale is not None else 1.0)
        span_end = (np.asarray(self.start) + np.asarray(self.result) - hand_off).tolist()
        return RunTimes(self.ready, self.trigger, self.issued, self.start, self.end,
                        tuple(s.times for s in self.semaphores), span_end)

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


def _first(item: tuple) -> int:
    return item[0]
