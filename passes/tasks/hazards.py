"""What one hazard on one prior access becomes: covered by a user dep, a compiler edge, or a fallback.

``docs/task-rules.md`` section 3 items 4, 7, 8 and 10 (the per-call walk, loop producers, user-dep
coverage, fallback triggers).  :func:`classify_seed` is the seed's decision (``faithful=true``);
:func:`classify_sound` is the default, which differs where the seed can lose an order once
runtime tracking is off:

* a TaskId variable names the *latest* instance of its call.  An edge to a producer inside a
  loop that is still running is sound (with the loop back-edges the walk adds, earlier
  instances are ordered before the latest one), for static loops as for dynamic ones.  A
  producer whose loop has exited needs the loop fan-in it was re-bound to, or must be
  *chained* (it writes, so the back-edge on its own write has ordered all its instances and
  the latest stands for them), else fallback;
* a user dep covers a hazard only when it names those instances: an iter_arg names the
  previous iteration's TaskId, not the current one; a loop return var or a plain in-loop
  TaskId after the loop names the last instance, which covers all of them only if the
  producer's instances are ordered among themselves (it writes); the seed's "windowed temp"
  rule (any non-submit TaskId in the deps covers every loop producer) is not used;
* a writer that may skip iterations of a loop cannot stand behind read-only instances of that
  loop: several of them may be pending, and one TaskId names only the last;
* a region that fell back still exports its accesses, as *tracked* (the seed exports nothing,
  so a later call of the parent saw no hazard and could be demoted or made MANUAL while only
  the runtime's lookup ordered it): a hazard on one keeps the consumer's lookup and scope.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from neuronsim.machine.tasks.ir import CompilerDep
from neuronsim.passes.tasks.records import Access, Fallback, Record
from neuronsim.passes.tasks.regions import AccessKind
from neuronsim.passes.tasks.taskids import UserDeps

__all__ = ["Verdict", "classify_seed", "classify_sound", "edge_of"]


@dataclass(frozen=True, slots=True)
class Verdict:
    outcome: str
    """``user`` (covered by a user dep), ``edge`` (compiler edge ``dep``), ``fallback``, or
    ``runtime`` (the prior is ordered by runtime tracking only: keep the lookup, stay AUTO)."""
    dep: CompilerDep | None = None
    fallback: Fallback | None = None
    block: bool = False
    """The hazard blocks NoDep / OutputExisting demotion of the argument."""


def edge_of(prior: Record, on: str) -> CompilerDep:
    """The compiler dep naming ``on``: a loop fan-in when ``on`` is the return var ``prior`` was re-bound to."""
    if prior.fan_in is not None and prior.fan_in[1] == on:
        return CompilerDep(on, prior.fan_in[0], (prior.call,))
    return CompilerDep(on)


def classify_seed(access: Access, prior: Record, user: UserDeps, call: str, *,
                  canonical_of: Callable[[str | None], str | None], active_dynamic: Sequence[int],
                  loop_label: Mapping[int, str]) -> Verdict:
    """PyPTO's decision, condition for condition."""
    on = prior.task if prior.direct else (canonical_of(prior.task) or prior.task)
    active = prior.loop_producer and prior.dyn_id != 0 and prior.dyn_id in active_dynamic
    inactive = prior.dyn_id != 0 and prior.dyn_id not in active_dynamic
    complete = prior.loop_producer and on is not None and (on in user.complete_dynamic or on in user.complete_arrays)
    covered = (on is not None and on in user.canonical
               and not (prior.loop_producer and on in user.incomplete_dynamic)) \
        or (prior.loop_producer and (complete or user.windowed))
    block = prior.loop_producer and not active and not inactive and not complete
    if covered:
        return Verdict("user", block=block)
    where = dict(call=call, arg=access.arg, prior=prior.call)
    if inactive:
        return Verdict("fallback", fallback=Fallback("exited-dynamic-loop", loop=loop_label.get(prior.dyn_id), **where),
                       block=block)
    if prior.loop_producer and not active:
        return Verdict("fallback", fallback=Fallback("loop-producer", **where), block=block)
    if prior.task is None:
        return Verdict("fallback", fallback=Fallback("missing-task-id", **where), block=block)
    return Verdict("edge", dep=edge_of(prior, on), block=block)  # type: ignore[arg-type]


def _innermost_common(prior: Record, active: Sequence[int]) -> int | None:
    for loop in reversed(prior.enclosing):
        if loop in active:
            return loop
    return None


def classify_sound(access: Access, prior: Record, user: UserDeps, call: str, *, active_loops: Sequence[int],
                   skips_after: Callable[[int], bool], loop_label: Mapping[int, str]) -> Verdict:
    """The default decision (see the module docstring)."""
    if prior.tracked:
        return Verdict("runtime", block=True)
    on = prior.task
    exited = [loop for loop in prior.loops if loop not in active_loops]
    # the latest instance stands for all only if no exited loop's iterations left the chain
    chained = prior.chained and not any(loop in prior.breaks for loop in exited)
    several = bool(exited) or prior.fan_in is not None
    complete = on is not None and (on in user.complete_dynamic or on in user.complete_arrays)
    if on is None:
        covered = False
    elif prior.prev_of is not None:  # the previous iteration: a carried TaskId, or the latest of a chained producer
        covered = on in user.carried.get(loop_label[prior.prev_of], ()) or (chained and on in user.direct)
    elif several:
        covered = chained and (on in user.direct or complete)
    else:
        covered = on in user.direct
    block = bool(exited) and not complete
    if covered:
        return Verdict("user", block=block)
    where = dict(call=call, arg=access.arg, prior=prior.call)
    if exited and not chained:
        return Verdict("fallback", fallback=Fallback("stale-loop-producer", loop=loop_label.get(exited[-1]), **where),
                       block=block)
    if on is None:
        return Verdict("fallback", fallback=Fallback("missing-task-id", **where), block=block)
    if access.kind != AccessKind.READ and not chained:
        common = _innermost_common(prior, active_loops)
        if common is not None and skips_after(common):
            return Verdict("fallback", fallback=Fallback("conditional-writer", loop=loop_label.get(common), **where),
                           block=block)
    return Verdict("edge", dep=edge_of(prior, on), block=block)
