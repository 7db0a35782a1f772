"""What a fuzz failure tells the author of the pass: its input, its output, the race, the fix.

:class:`PassStage` captures, while the pipeline runs, the program given to the pass under test
and the program it returned (with no pass of yours, the whole pipeline is "the pass": the
stripped program in, the compiled one out).  :func:`explain_race` turns the first race of a
failure into the line a pass author needs:

    your pass dropped `ld_x` waits for `mm`, needed for this WAR

when the pass the user's replaced (or, for an appended pass, its own input) has that wait and
the user's output has not; otherwise it names the wait to add.

:func:`pass_effect` says what the pass under test did in its slot on one example (deps it
dropped and added, whether it changed anything), which the fuzzer adds up: a pass that never
changed its input was never tested, however many examples ran.

>>> from neuronsim.machine.ir.program import Dep, Instruction, Program
>>> given = Program({}, (Instruction("mm", "pe", "matmul"), Instruction("ld_x", "sp", "dma_copy", deps=(Dep("mm"),))))
>>> got = Program({}, (Instruction("mm", "pe", "matmul"), Instruction("ld_x", "sp", "dma_copy")))
>>> fix_text("WAR", "ld_x", "mm", got, given)
'your pass dropped `ld_x` waits for `mm`, needed for this WAR'
>>> fix_text("RAW", "ld_x", "mm", got, got)
'your pass leaves `ld_x` unordered after `mm`: add {"on": "mm"} to its deps, needed for this RAW'
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from neuronsim.machine.formats.jsonio import dumps_strict
from neuronsim.machine.ir.program import Program
from neuronsim.passes import PassContext, parse_pipeline
from neuronsim.passes.pipeline import Pass

__all__ = ["PassStage", "PassEffect", "pass_effect", "fix_text", "explain_race", "user_slot"]


def user_slot(passes: list[Pass], user: Any, replace: str | None) -> int | None:
    """The index the user's pass takes in the pipeline ``passes`` (which does not hold it yet):
    the slot it replaces, or, appended, the one after the last (None: no pass of the user's).
    (``len - 1`` took the last built-in pass for the user's: an identity pass appended was said
    to drop deps, ``dep-reduction``'s: a probe.)

    >>> from neuronsim.passes import parse_pipeline
    >>> passes = parse_pipeline("alloc,build-fdeps,dep-reduction")
    >>> user_slot(passes, print, None), user_slot(passes, print, "build-fdeps"), user_slot(passes, None, None)
    (3, 1, None)
    """
    if user is None:
        return None
    if replace is None:
        return len(passes)
    return [p.name for p in passes].index(replace)


@dataclass
class PassStage:
    """The program given to the pass under test and the one it returned (filled by :meth:`hook`)."""

    slot: int | None
    given: Program
    returned: Program | None = None
    _before: Program | None = None
    _seen: int = 0

    def hook(self, stage: Pass, program: Program, ctx: PassContext) -> None:
        """The ``after_pass`` hook: remembers the input and output of the pass in ``slot``."""
        before = self.given if self._seen == 0 else self._before
        if self._seen == self.slot:
            self.given, self.returned = before, program  # type: ignore[assignment]
        self._before = program
        self._seen += 1


@dataclass(frozen=True, slots=True)
class PassEffect:
    """What the pass under test did to its input on one example."""

    changed: bool
    """Its output differs from its input in anything (deps, instructions, tensors)."""
    dropped: int
    """Deps of its input missing from its output (counted per waiting instruction)."""
    added: int
    """Deps of its output its input did not have."""


def _deps(program: Program) -> Counter:
    return Counter((inst.name, dep) for inst, _ in program.instructions() for dep in inst.deps)


def pass_effect(stage: PassStage) -> PassEffect | None:
    """The effect of the pass in ``stage``'s slot (None: no pass of the user's, or it never ran).

    >>> from neuronsim.machine.ir.program import Dep, Instruction, Program
    >>> given = Program({}, (Instruction("mm", "pe", "matmul"), Instruction("ld", "sp", "dma_copy", deps=(Dep("mm"),))))
    >>> stage = PassStage(0, given)
    >>> stage.returned = Program({}, (Instruction("mm", "pe", "matmul"), Instruction("ld", "sp", "dma_copy")))
    >>> pass_effect(stage)
    PassEffect(changed=True, dropped=1, added=0)
    """
    if stage.slot is None or stage.returned is None:
        return None
    before, after = _deps(stage.given), _deps(stage.returned)
    return PassEffect(changed=stage.returned != stage.given, dropped=sum((before - after).values()),
                      added=sum((after - before).values()))


def _wait_of(program: Program | None, waiter: str, on: str, carried: bool):
    """The deps of ``waiter`` on ``on`` in ``program`` (loop-carried or not, as ``carried``)."""
    if program is None:
        return []
    return [d for i, _ in program.instructions() if i.name == waiter for d in i.deps
            if d.on == on and d.loop_carried == carried]


def fix_text(kind: str, waiter: str, on: str, returned: Program | None, reference: Program | None,
             who: str = "your pass", loop_carried: bool = False) -> str:
    """The fix line of a ``kind`` race between ``on`` (earlier) and ``waiter``; ``loop_carried``:
    the race is between iterations (the dep to add says so: without it the loader refuses a
    wait on a later instruction, and the line advised that, a probe).

    >>> fix_text("WAR", "b", "a", None, None, loop_carried=True).partition(": ")[2]
    'add {"on": "a", "loop_carried": true} to its deps, needed for this WAR'
    """
    kept = _wait_of(returned, waiter, on, loop_carried)
    when = " (previous iteration)" if loop_carried else ""
    if _wait_of(reference, waiter, on, loop_carried) and not kept:
        return f"{who} dropped `{waiter}` waits for `{on}`{when}, needed for this {kind}"
    if kept and all(d.iterations for d in kept):  # (it said to add the dep the output had, limited)
        return (f"{who} limits `{waiter}`'s wait for `{on}`{when} to some iterations (x-iterations), and this "
                f"{kind} is outside them: widen it")
    dep = dumps_strict({"on": on, **({"loop_carried": True} if loop_carried else {})})
    return f"{who} leaves `{waiter}` unordered after `{on}`{when}: add {dep} to its deps, needed for this {kind}"


def reference_output(stage: PassStage, replace: str | None, pipeline: str) -> Program | None:
    """What a sound pass gives in the user's slot: the replaced pipeline pass run on the same
    input, or (an appended pass) the input itself, which the pipeline made race-free."""
    if stage.slot is None or stage.returned is None:
        return None
    if replace is None:
        return stage.given
    try:
        original = parse_pipeline(pipeline)[stage.slot]
        return original.apply(stage.given, PassContext(verify=False))
    except Exception:  # noqa: BLE001 - an explanation is a courtesy, never a second failure
        return None


def explain_race(race, unrolled, stage: PassStage, replace: str | None, pipeline: str,
                 user: Any) -> tuple[dict, str]:
    """``(race document, fix line)`` for the first race of a failure."""
    from neuronsim.verify.race_report import suggest_fix

    waiter, dep = suggest_fix(race, unrolled)
    who = "your pass" if user is not None else "the pipeline"
    reference = reference_output(stage, replace, pipeline) if user is not None else None
    doc = {**race.to_json(), "waiter": waiter, "on": dep.on, "loop_carried": dep.loop_carried}
    return doc, fix_text(race.kind, waiter, dep.on, stage.returned, reference, who, dep.loop_carried)
