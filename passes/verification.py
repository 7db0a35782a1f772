"""Verification between passes: what a pass changed, checked before the next pass runs.

A pass's result is a :class:`~neuronsim.passes.state.PipelineState` whose ``changed`` says what
differs from its input; everything else was checked on the input and is left alone:

``structure``
    the whole program (:func:`neuronsim.machine.formats.validate.validate_program`) and its deps;
``placements``
    the new placements and the rules they touch, once per distinct access
    (:func:`neuronsim.machine.formats.validate.validate_placement_change`);
``deps``
    the deps: each points backwards (a non-loop-carried dep on an instruction earlier in
    document order, a loop-carried one inside a common loop, iteration ranges inside loops
    enclosing the waiter), which makes the instruction-level edge set acyclic.

After a pass that places (``Pass.places``) no tensor may be virtual.  Errors are located
ProgramErrors naming the pass (``after pass 'NAME': ...``).
"""

from __future__ import annotations

import numpy as np

from neuronsim.machine.formats.validate import validate_placement_change, validate_program
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import Program
from neuronsim.machine.model.presets import MachineSpec

from neuronsim.passes.state import DEPS, PLACEMENTS, STRUCTURE, PipelineState

__all__ = ["verify_state", "verify_program"]


def verify_state(state: PipelineState, before: PipelineState | None, *, placed: bool, after: str) -> None:
    """Check what ``state`` changed from ``before`` (everything when ``before`` is None)."""
    changed = state.changed if before is not None else frozenset({STRUCTURE, PLACEMENTS, DEPS})
    try:
        if STRUCTURE in changed:  # what the pass kept of its input was checked there
            validate_program(state.structure, state.spec, checked=before.structure if before is not None else None)
        elif PLACEMENTS in changed:
            validate_placement_change(state.structure, before.structure, state.spec, before.stream)
    except ProgramError as err:
        raise ProgramError(err.path, f"after pass {after!r}: {err.message}") from None
    if placed:
        for name, tensor in state.structure.tensors.items():
            if tensor.is_virtual:
                raise ProgramError(f"tensors.{name}", f"after pass {after!r}: still virtual")
    if STRUCTURE in changed or DEPS in changed:
        try:
            _verify_deps(state, after)
        except ProgramError as err:
            raise ProgramError(err.path, err.message if err.message.startswith("after pass") else
                               f"after pass {after!r}: {err.message}") from None


def verify_program(program: Program, spec: MachineSpec, *, placed: bool = False, after: str = "input") -> None:
    """Check a whole program (one built in memory, say) as after a pass named ``after``."""
    verify_state(PipelineState.of(program, spec), None, placed=placed, after=after)


def _verify_deps(state: PipelineState, after: str) -> None:
    """The deps rules of the module doc on the state's table, vectorised."""
    table = state.deps
    stream = state.stream
    names = stream.names
    plain = table.distance == 0
    bad = np.flatnonzero(plain & (table.former >= table.waiter))
    if len(bad):
        r = int(bad[0])
        raise ProgramError(f"{names[table.waiter[r]]}.deps",
                           f"after pass {after!r}: waits on {names[table.former[r]]!r}, which is not earlier")
    for r in np.flatnonzero(~plain | (table.when >= 0)).tolist():
        y, x = int(table.waiter[r]), int(table.former[r])
        if table.distance[r] and not stream.common(x, y):
            raise ProgramError(f"{names[y]}.deps",
                               f"after pass {after!r}: loop-carried dep on {names[x]!r} outside any common loop")
        loops = {loop.name: loop.trip_count for loop in stream.loops_of[y]}
        for loop, lo, hi in table.iterations(r):
            if loop not in loops or hi > loops[loop] or lo >= hi:
                raise ProgramError(f"{names[y]}.deps", f"after pass {after!r}: iteration range {loop} [{lo}, {hi}) "
                                                      "does not lie in a loop enclosing the waiter")
