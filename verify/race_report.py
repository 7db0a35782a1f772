"""Race reports for people: grouped per instruction pair, each with the wait that fixes it.

The JSON report (``neuronsim.report/1``) lists races per instance pair; people think in
instructions.  :func:`group_races` folds the instance pairs of one (first instruction, second
instruction) pair together and :func:`suggest_fix` names the dep that orders all of them:
``second`` waits for ``first``, loop-carried when the first instance sits in an earlier
iteration of the loops enclosing both (a wait on the previous iteration also covers older
ones, because the instances of one instruction complete in order on one engine).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from neuronsim.machine.formats.jsonio import dumps_strict
from neuronsim.machine.ir.program import Dep, Program
from neuronsim.machine.ir.source import instance_source, source_line
from neuronsim.machine.order.unroll import Unrolled

from neuronsim.verify.racecheck import Race, RaceReport

__all__ = ["RaceGroup", "group_races", "suggest_fix", "render_report", "add_fixes", "describe_race", "located_race",
           "fix_text"]


@dataclass(frozen=True, slots=True)
class RaceGroup:
    """All races between two instructions, with the dep that removes them."""

    first: str
    second: str
    kinds: tuple[str, ...]
    races: tuple[Race, ...]
    fix: Dep


def suggest_fix(race: Race, unrolled: Unrolled) -> tuple[str, Dep]:
    """``(waiter instruction, dep)`` that orders the pair of ``race``."""
    first, second = unrolled[race.first_id], unrolled[race.second_id]
    common = 0
    while (common < len(first.loops) and common < len(second.loops)
           and first.loops[common] is second.loops[common]):
        common += 1
    carried = first.index[:common] != second.index[:common]
    return second.instr.name, Dep(first.instr.name, loop_carried=carried)


def group_races(report: RaceReport, unrolled: Unrolled) -> list[RaceGroup]:
    """Races grouped per instruction pair, in program order of the first race of each."""
    groups: dict[tuple[str, str, bool], list[Race]] = {}
    fixes: dict[tuple[str, str, bool], Dep] = {}
    for race in report.races:
        waiter, dep = suggest_fix(race, unrolled)
        key = (dep.on, waiter, dep.loop_carried)
        groups.setdefault(key, []).append(race)
        fixes[key] = dep
    out = []
    for key, races in groups.items():
        kinds = tuple(k for k in ("RAW", "WAW", "WAR") if any(r.kind == k for r in races))
        out.append(RaceGroup(key[0], key[1], kinds, tuple(races), fixes[key]))
    return out


def _where(race: Race) -> str:
    if race.memory == "dram":
        prefix = f"alias {race.alias} offsets" if race.alias else "dram"
        return f"{prefix} [{race.bytes[0]},{race.bytes[1]})"
    return f"{race.memory} p[{race.partitions[0]},{race.partitions[1]}) b[{race.bytes[0]},{race.bytes[1]})"


def describe_race(race: Race, stream=None) -> str:
    """One race on one line: kind, both instances, where.  Given the program's instance
    stream (or an :class:`~neuronsim.machine.order.unroll.Unrolled`), instructions traced from a kernel
    (``x-source``) are named by their kernel line and loop indices (:func:`located_race`).

    >>> describe_race(Race("WAW", "load", "fill", "sbuf", (0, 32), (0, 256)))
    'WAW load / fill  sbuf p[0,32) b[0,256)'
    """
    located = located_race(race, stream) if stream is not None else None
    return located or f"{race.kind} {race.first} / {race.second}  {_where(race)}"


def located_race(race: Race, stream, fix: Dep | None = None, waiter: str | None = None) -> str | None:
    """``WAR: nisa.nc_matmul at attention.py:88 [i=3] / nl.load at attention.py:61 [i=4], sbuf
    p[0,128) b[0,512)`` (with ``; fix: ...`` when ``fix`` is given), or None when neither
    instance has an ``x-source``."""
    stream = getattr(stream, "stream", stream)
    if race.first_id < 0 or race.second_id < 0:
        return None
    first, second = instance_source(stream, race.first_id), instance_source(stream, race.second_id)
    if first is None and second is None:
        return None
    text = f"{race.kind}: {first or race.first} / {second or race.second}, {_where(race)}"
    if fix is not None:
        text += f"; fix: {fix_text(stream, waiter or race.second.split('[')[0], fix)}"
    return text


def fix_text(stream, waiter: str, fix: Dep) -> str:
    """``B waits for A (previous iteration)``, each named by its kernel line when known."""
    stream = getattr(stream, "stream", stream)
    by_name = {inst.name: inst for inst in stream.instrs} if stream is not None else {}

    def name(instr: str) -> str:
        inst = by_name.get(instr)
        where = source_line(inst) if inst is not None else None
        return f"{instr} ({inst.extras['x-source'].get('call') or 'line'} at {where})" if where else instr

    carried = " (previous iteration)" if fix.loop_carried else ""
    return f"{name(waiter)} waits for {name(fix.on)}{carried}"


def render_report(report: RaceReport, unrolled: Unrolled, *, limit: int = 6) -> str:
    """The human-readable report."""
    if report.race_free:
        return f"race-free: {report.instances} instances, {report.access_events} access events checked"
    groups = group_races(report, unrolled)
    if report.capped and not report.races:
        lines = [f"{report.total_races} race(s), none listed (--max-races 0) ({report.instances} instances checked)"]
    elif report.capped:
        lines = [f"{report.total_races} race(s); the first {len(report.races)} listed (--max-races), between "
                 f"{len(groups)} instruction pair(s) ({report.instances} instances checked)"]
    else:
        lines = [f"{len(report.races)} race(s) between {len(groups)} instruction pair(s) "
                 f"({report.instances} instances checked)"]
    stream = unrolled.stream
    for group in groups:
        lines.append(f"{'/'.join(group.kinds)}  {group.first} -> {group.second}: {len(group.races)} instance pair(s)")
        for race in group.races[:limit]:
            lines.append(f"    {describe_race(race, stream)}")
        if len(group.races) > limit:
            lines.append(f"    ... {len(group.races) - limit} more")
        dep = {"on": group.first, **({"loop_carried": True} if group.fix.loop_carried else {})}
        lines.append(f"    fix: {fix_text(stream, group.second, group.fix)}: add {dumps_strict(dep)} to its deps")
    return "\n".join(lines)


def add_fixes(program: Program, groups: Iterable[RaceGroup]) -> Program:
    """``program`` with every group's fix added to its waiter's deps."""
    extra: dict[str, list[Dep]] = {}
    for group in groups:
        extra.setdefault(group.second, []).append(group.fix)

    def patch(inst):
        if inst.name not in extra:
            return inst
        from dataclasses import replace

        return replace(inst, deps=inst.deps + tuple(extra[inst.name]))

    return program.map_instructions(patch)
