"""The race checker over a simulator trace.

The simulator (``neuronsim.machine.sim.simulator``) knows nothing of races; it records, per instance, its
trigger / start / end times and the semaphore waits it met (producer, semaphore, threshold,
time).  :func:`check_trace` rebuilds happens-before from what the trace *records*:

* the order rules 1-3 give (a sequencer's stream and a queue's stream, as executed);
* each recorded wait that was really met before the waiter was triggered (rule 4).

It reports two kinds of finding:

* :class:`TraceViolation` - the trace breaks a rule: an instruction triggered before a wait it
  records was met, a completion recorded after the waiter started, a queue starting a
  transfer before the previous one ended, a sequencer running ahead of its previous
  instruction, ``T <= S <= E`` broken.  A wait that was not honoured gives no order;
* races, exactly as the static checker computes them (:func:`neuronsim.verify.racecheck.check_waits`)
  under the honoured waits - on a faithful trace of a program they equal the static report.
"""

from __future__ import annotations

from dataclasses import dataclass

from neuronsim.machine.ir.program import Program
from neuronsim.machine.order.unroll import unroll

from neuronsim.verify.racecheck import RaceReport, check_waits

__all__ = ["TraceViolation", "TraceCheck", "check_trace"]

_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class TraceViolation:
    """A rule the trace breaks, located at one instance (and the other one involved)."""

    instance: str
    other: str | None
    rule: str
    message: str


@dataclass(frozen=True, slots=True)
class TraceCheck:
    """Violations of the rules, and the races under the waits the trace honoured."""

    violations: tuple[TraceViolation, ...]
    report: RaceReport

    @property
    def ok(self) -> bool:
        return not self.violations and self.report.race_free


def check_trace(program: Program, trace) -> TraceCheck:
    """Check ``trace`` (a :class:`neuronsim.machine.sim.trace.Trace` of ``program``)."""
    unrolled = unroll(program)
    records = trace.records
    if len(records) != len(unrolled):
        raise ValueError(f"trace has {len(records)} instances, the program {len(unrolled)}")
    violations: list[TraceViolation] = []
    waits: list[tuple[int, ...]] = []
    last_on_seq: dict[str, object] = {}
    last_on_queue: dict[str, object] = {}
    for rec in records:
        if not rec.trigger <= rec.start + _EPS or not rec.start <= rec.end + _EPS:
            violations.append(TraceViolation(rec.name, None, "T<=S<=E",
                                             f"trigger {rec.trigger}, start {rec.start}, end {rec.end}"))
        prev = last_on_seq.get(rec.engine)
        if prev is not None:
            floor = prev.trigger if prev.is_dma else prev.end
            rule = "rule 2" if prev.is_dma else "rule 1"
            if rec.trigger + _EPS < floor:
                done = "was triggered" if prev.is_dma else "completed"
                violations.append(TraceViolation(rec.name, prev.name, rule,
                                                 f"triggered at {rec.trigger} before {prev.name} {done} at {floor}"))
        last_on_seq[rec.engine] = rec
        if rec.queue is not None:
            prev = last_on_queue.get(rec.queue)
            if prev is not None and rec.start + _EPS < prev.end:
                violations.append(TraceViolation(
                    rec.name, prev.name, "rule 3",
                    f"transfer started at {rec.start} before {prev.name} on {rec.queue} ended at {prev.end}"))
            last_on_queue[rec.queue] = rec
        honoured = []
        for wait in rec.waits_met:
            producer = records[wait.producer]
            if wait.producer >= rec.id:
                violations.append(TraceViolation(rec.name, producer.name, "rule 4",
                                                 "waits on an instance that does not precede it"))
                continue
            if wait.time > rec.trigger + _EPS or producer.end > rec.trigger + _EPS:
                violations.append(TraceViolation(
                    rec.name, producer.name, "rule 4",
                    f"triggered at {rec.trigger} before its wait on {producer.name} was met "
                    f"({wait.semaphore} >= {wait.value} at {max(wait.time, producer.end)})"))
                continue
            honoured.append(wait.producer)
        waits.append(tuple(honoured))
    report = check_waits(program, waits, unrolled)
    return TraceCheck(tuple(violations), report)
