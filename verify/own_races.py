"""The race check of a program as given, under its own deps: ``footprint``'s warning.

``neuronsim footprint`` measures the waits a program executes against the spec's minimum.
Those figures are only meaningful for a program whose deps order every conflict: a racy
program executes fewer waits than it needs, and its ratio can look fine (the racy example
``examples/matmul_k_loop_racy.json`` executes 18 waits against a minimum of 16).  So the
stage "as given" is race-checked under its own deps (:func:`neuronsim.verify.racecheck.check_program`,
whose fast path recognises a race-free program by one sort) and the races are reported as a
warning: how many, and the first ones located (both instances, memory, partitions, bytes,
kind) with the dep that orders each (the ``check`` command's fix: the later instruction waits
for the earlier one, loop-carried when they sit in different iterations of their common loops).
The reads no write reaches are dropped first (:mod:`neuronsim.machine.order.reach`: the same races, a
fraction of the events on loop kernels), and the walk stops at :data:`STOP_AFTER` races, so a
badly racy program costs about as much as a race-free one (the count is then a lower bound).

What the figures then mean: the minimum (:func:`neuronsim.verify.sync_counts.minimum_sync`) is computed
from rules 1-3 and the conflicts alone, never from the deps, so it is the same with or without
races and already orders every racing pair: it counts the waits a race-free program needs,
these pairs included.  The stage's own waits do not order them, and ``dep-reduction`` keeps
exactly the order the deps give, so its output has the same races.

Only the input is checked: the passes' outputs are verified elsewhere (their contracts, by
the tests and the fuzzer), and the check is cheap on a race-free input.  Not checked
(``checked`` false, with the reason): a program with virtual tensors (its conflicts depend on
the placement still to come) and a program without deps (it is input to the dependence
builders: every cross-engine conflict is unordered by design, and the pipeline's stages say
what it needs).

Examples
--------
>>> from neuronsim.machine.formats.program_json import load_program
>>> found = own_races(load_program("examples/matmul_k_loop_racy.json"))
>>> found.total_races, found.races[0].kind, found.races[0].first, found.races[0].second
(3, 'WAR', 'mm[0]', 'ld_x[1]')
>>> found.fixes[0]
('ld_x', 'mm', True)
>>> own_races(load_program("examples/matmul_k_loop.json")).to_json()
{'stage': 'given', 'checked': True, 'total_races': 0, 'races': []}
"""

from __future__ import annotations

from dataclasses import dataclass

from neuronsim.machine.formats.jsonio import dumps_strict
from neuronsim.machine.order.conflicts import fold_distance
from neuronsim.machine.ir.program import Program
from neuronsim.machine.ir.source import instance_source
from neuronsim.machine.order.stream import stream_of

from neuronsim.verify.racecheck import Race, check_program
from neuronsim.verify.race_report import describe_race
from neuronsim.machine.order.reach import without_unreached_reads

__all__ = ["OwnRaces", "own_races", "LISTED", "STOP_AFTER"]

#: Races listed (all are counted): the warning shows the first, the JSON document these.
LISTED = 3
#: The count at which the check stops: a deps set missing one wait in a pipelined loop can leave
#: a race between nearly every pair of instances (hundreds of millions at 1e5 instances, minutes
#: to count), and the warning needs only that there are races, and the first ones.
STOP_AFTER = 10_000

Fix = tuple[str, str, bool]
"""``(waiter, on, loop_carried)``: ``waiter`` waits for ``on`` (previous iteration when carried)."""


@dataclass(frozen=True, slots=True)
class OwnRaces:
    """The races of the program as given under its own deps (``checked`` false: not checked)."""

    checked: bool
    reason: str = ""
    """Why it was not checked."""
    total_races: int = 0
    races: tuple[Race, ...] = ()
    """The first :data:`LISTED` races in the checker's order."""
    fixes: tuple[Fix, ...] = ()
    """The dep that orders each listed race."""
    instances: int = 0
    checked_instances: int = 0
    """Fewer than ``instances`` when the check stopped at :data:`STOP_AFTER` races: then
    ``total_races`` counts the races of the instances checked only (a lower bound)."""
    sources: tuple[tuple[str | None, str | None], ...] = ()
    """Per listed race, the kernel locations of its two instances (``x-source``; None where
    the instruction has none)."""

    @property
    def racy(self) -> bool:
        return self.total_races > 0

    @property
    def complete(self) -> bool:
        return self.checked_instances >= self.instances

    def to_json(self) -> dict:
        if not self.checked:
            return {"stage": "given", "checked": False, "reason": self.reason}
        races = [{**race.to_json(), "fix": {"waiter": waiter, "dep": _dep_json(on, carried)}}
                 for race, (waiter, on, carried) in zip(self.races, self.fixes)]
        for entry, (first, second) in zip(races, self.sources):
            entry.update({k: v for k, v in (("first_source", first), ("second_source", second)) if v})
        out = {"stage": "given", "checked": True, "total_races": self.total_races, "races": races}
        if not self.complete:
            out.update(complete=False, instances_checked=self.checked_instances, instances=self.instances)
        return out

    def warning(self) -> list[str]:
        """The warning's lines (none for a race-free or unchecked program)."""
        if not self.racy:
            return []
        race, (waiter, on, carried) = self.races[0], self.fixes[0]
        more = f" ({self.total_races - 1} more: neuronsim check lists them)" if self.total_races > 1 else ""
        count = f"{self.total_races} race(s)"
        if not self.complete:
            count = (f"at least {self.total_races:,} race(s) (the check stopped after {self.checked_instances:,} of "
                     f"{self.instances:,} instances)")
            more = " (neuronsim check counts them all)"
        first = describe_race(race)
        if self.sources and any(self.sources[0]):
            where = [s or n for s, n in zip(self.sources[0], (race.first, race.second))]
            first = f"{race.kind}: {where[0]} / {where[1]}, {first.split('  ', 1)[1]}"
        return [f"warning: the program's own deps leave {count}; the first: {first}{more}",
                f"  fix: {_named(waiter, self.sources, 1)} waits for {_named(on, self.sources, 0)}"
                f"{' (previous iteration)' if carried else ''}: add "
                f"{dumps_strict(_dep_json(on, carried))} to its deps",
                "  the minimum already orders these pairs (it is computed from rules 1-3 and the conflicts, "
                "not from the deps), so it counts the waits a race-free program needs; the given stage's "
                "waits leave them unordered, and so do dep-reduction's (it keeps the order the deps give)"]


def _named(instr: str, sources: tuple, side: int) -> str:
    """``instr``, with the kernel line of the first race's instance on ``side`` when known."""
    where = sources[0][side] if sources else None
    return f"{instr} ({where.split(' [')[0]})" if where else instr


def _dep_json(on: str, carried: bool) -> dict:
    return {"on": on, **({"loop_carried": True} if carried else {})}


def own_races(program: Program, *, listed: int = LISTED, stop_after: int | None = STOP_AFTER) -> OwnRaces:
    """Race-check ``program`` under its own deps, listing the first ``listed`` races, stopping
    after the instance that brings the count to ``stop_after`` (None: count them all)."""
    if not any(instr.deps for instr, _ in program.instructions()):
        return OwnRaces(False, "the program has no deps (input to the dependence builders)")
    if program.has_virtual_tensors:
        return OwnRaces(False, "some tensors are virtual (their conflicts depend on the placement)")
    stream = stream_of(program)
    report = check_program(without_unreached_reads(program), max_races=listed,  # the same races, fewer events
                           stop_after=stop_after)
    if report.race_free:
        return OwnRaces(True, instances=len(stream), checked_instances=report.instances)
    fixes = tuple((stream.names[int(stream.instr[r.second_id])], stream.names[int(stream.instr[r.first_id])],
                   fold_distance(stream, r.first_id, r.second_id) > 0) for r in report.races)
    sources = tuple((instance_source(stream, r.first_id), instance_source(stream, r.second_id)) for r in report.races)
    return OwnRaces(True, "", report.total_races, report.races, fixes, len(stream), report.instances, sources)
