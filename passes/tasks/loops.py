"""What happens to a loop's prior accesses when the loop exits (``docs/task-rules.md`` section 3 item 7).

* a static single-trip loop is transparent; its accesses whose TaskId flows into a return var
  are renamed to that return var;
* a static loop with a positive trip count re-binds each of its accesses whose TaskId flows
  through a yield or an iter_arg, or whose storage overlaps a tensor return var, to that return
  var: a later edge names the return var and means every instance of the producer in the loop's
  last execution (a *loop fan-in*);
* an outermost (depth 1) dynamic ``parallel`` loop summarises the same way (a barrier over all
  iterations); other dynamic loops and ``while`` loops re-bind nothing.

The seed re-binds every loop producer of the region, wherever it came from, and (with no
yield) nothing at all; the sound analysis re-binds only the accesses whose innermost
unsummarised loop is the one exiting, and renames single-trip accesses only through a yield
(an iter_arg's final value is not the return var when the yield carries something else).
"""

from __future__ import annotations

from collections.abc import Callable

from neuronsim.machine.tasks.ir import For, While
from neuronsim.passes.tasks.lineage import Lineage, Status
from neuronsim.passes.tasks.records import LoopCtx, Record
from neuronsim.passes.tasks.regions import regions_may_overlap

__all__ = ["carry_remap", "return_var_for", "rename_single_trip", "rebind_fixed_trip", "summarise_parallel"]


def carry_remap(loop: For | While, is_task: Callable[[str], bool], canonical_of: Callable[[str], str | None], *,
                iter_args: bool) -> dict[str, tuple[str, bool]]:
    """PyPTO ``BuildLoopCarryTaskIdRemap``: source variable -> (return var, direct TaskId?)."""
    remap: dict[str, tuple[str, bool]] = {}

    def add(source: str, target: str) -> None:
        direct = is_task(source) or is_task(target)
        for key in (source, canonical_of(source)):
            if key is None:
                continue
            old = remap.get(key)
            if old is not None and old[1] and not direct:
                continue
            remap[key] = (target, direct)

    for value, ret in zip(loop.yields, loop.returns):
        if isinstance(value, str):
            add(value, ret)
    if iter_args:
        for arg, ret in zip(loop.iter_args, loop.returns):
            add(arg.name, ret)
    return remap


def return_var_for(loop: For | While, record: Record, lineage: Lineage) -> str | None:
    """The first return var whose storage may overlap the record's (PyPTO ``LoopReturnVarForAccess``)."""
    for ret in loop.returns:
        status, location = lineage.resolve(ret)
        if status != Status.KNOWN:
            continue
        for alt in location:
            if lineage.may_alias(record.root, alt.root) and regions_may_overlap(record.region, alt.region):
                return ret
    return None


def rename_single_trip(records: list[Record], remap: dict[str, tuple[str, bool]]) -> None:
    for i, r in enumerate(records):
        if r.task is not None and r.task in remap:
            target, direct = remap[r.task]
            records[i] = r._replace(task=target, direct=direct)


def rebind_fixed_trip(records: list[Record], loop: For, ctx: LoopCtx, remap: dict[str, tuple[str, bool]],
                      lineage: Lineage, *, faithful: bool) -> None:
    """Re-bind accesses of an exited static loop (positive trip count) to its return vars."""
    for i, r in enumerate(records):
        if r.task is None:
            continue
        if faithful:
            if not r.loop_producer:
                continue
        elif not r.loops or r.loops[-1] != ctx.id:
            continue
        if r.task in remap:
            target, direct = remap[r.task]
            keep = not direct and r.dyn_depth > ctx.depth
        else:
            found = return_var_for(loop, r, lineage)
            if found is None:
                continue
            target, direct, keep = found, False, r.dyn_depth > ctx.depth
        records[i] = r._replace(task=target, direct=direct, loop_producer=keep if faithful else False,
                                fan_in=(ctx.label, target), loops=r.loops if faithful else r.loops[:-1])


def summarise_parallel(records: list[Record], loop: For, ctx: LoopCtx, lineage: Lineage, *, faithful: bool) -> None:
    """The outermost dynamic parallel loop: accesses overlapping a return var become its fan-in."""
    for i, r in enumerate(records):
        if r.task is None or (not r.loop_producer if faithful else (not r.loops or r.loops[-1] != ctx.id)):
            continue
        found = return_var_for(loop, r, lineage)
        if found is None:
            continue
        records[i] = r._replace(task=found, direct=False, loop_producer=False, dyn_depth=0, dyn_id=0,
                                fan_in=(ctx.label, found), loops=r.loops if faithful else r.loops[:-1])
