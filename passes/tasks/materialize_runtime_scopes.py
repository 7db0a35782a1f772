"""``materialize-runtime-scopes``: place the runtime scopes of a default-mode function (PyPTO pass of that name).

For an ``auto_scope=true`` function (``docs/task-rules.md`` section 3 item 11):

* with the whole-layer marker (``manual_layer_candidate``, set by the dependence pass when
  the virtual whole-body region was analysed without fallback), the body becomes one
  compiler-owned MANUAL scope;
* otherwise every ``for`` body and every ``if`` branch (not ``while`` bodies, as upstream;
  not inside a MANUAL scope; not when it already is one AUTO scope) is wrapped, innermost
  first, in a compiler-owned scope that is MANUAL when every task call in it carries the
  MANUAL-candidate marker (at least one, and no nested scope), AUTO otherwise; then the body
  is wrapped in an AUTO scope unless it already is one.

The markers are removed and the function becomes ``auto_scope=false`` (the pass is
idempotent).  Functions already ``auto_scope=false`` keep their scopes; only the markers go.

Contract
    requires: a valid task program.
    guarantees: only scopes are added (owner ``compiler``) and markers cleared; calls,
    deps and directions are unchanged; no AUTO scope is placed inside a MANUAL one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from neuronsim.machine.tasks.ir import (Call, For, If, RuntimeScope, Stmt, TaskProgram, bodies, map_calls, walk,
                                        with_bodies)
from neuronsim.passes.pipeline import Pass, PassContext

__all__ = ["MaterializeRuntimeScopes", "materialize_scopes", "ScopeDecision"]


@dataclass(frozen=True, slots=True)
class ScopeDecision:
    """One scope the pass placed: where, MANUAL or AUTO, and why."""

    where: str
    manual: bool
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"where": self.where, "mode": "manual" if self.manual else "auto", "reason": self.reason}


def _manual_reason(body: tuple[Stmt, ...]) -> tuple[bool, str]:
    """Should a compiler scope around ``body`` be MANUAL (PyPTO ``CompilerAutoManualScopeScanner``)?"""
    calls = []
    for stmt, _ in walk(body):
        if isinstance(stmt, RuntimeScope):
            return False, "contains a nested runtime scope"
        if isinstance(stmt, Call):
            calls.append(stmt)
    if not calls:
        return False, "no task call"
    unmarked = [c.name for c in calls if not c.manual_candidate]
    if unmarked:
        return False, f"call {unmarked[0]} carries no compiler-derived deps"
    return True, f"all {len(calls)} task calls carry compiler-derived deps"


def _is_auto_scope(body: tuple[Stmt, ...]) -> bool:
    return len(body) == 1 and isinstance(body[0], RuntimeScope) and not body[0].manual


def _insert(body: tuple[Stmt, ...], manual_depth: int, decisions: list[ScopeDecision]) -> tuple[Stmt, ...]:
    out = []
    for stmt in body:
        depth = manual_depth + (1 if isinstance(stmt, RuntimeScope) and stmt.manual else 0)
        inner = tuple(_insert(b, depth, decisions) for b in bodies(stmt))
        new = with_bodies(stmt, inner) if inner else stmt
        if depth == 0 and isinstance(new, (For, If)):
            wrapped = []
            for side, b in zip(("body",) if isinstance(new, For) else ("then", "else"), bodies(new)):
                if _is_auto_scope(b):
                    wrapped.append(b)
                    continue
                manual, reason = _manual_reason(b)
                label = new.name or "if"
                decisions.append(ScopeDecision(f"{label}.{side}", manual, reason))
                wrapped.append((RuntimeScope(b, manual, owner="compiler"),))
            new = with_bodies(new, tuple(wrapped))
        out.append(new)
    return tuple(out)


def materialize_scopes(program: TaskProgram) -> tuple[TaskProgram, list[ScopeDecision]]:
    """The program with its scopes placed, and the decisions taken."""
    function = program.function
    decisions: list[ScopeDecision] = []
    clear = map_calls(function.body, lambda c: replace(c, manual_candidate=False) if c.manual_candidate else c)
    if not function.auto_scope:
        if clear is function.body and not function.manual_layer_candidate:
            return program, decisions
        return program.with_body(clear, manual_layer_candidate=False), decisions
    if function.manual_layer_candidate:
        decisions.append(ScopeDecision(function.name, True, "the whole body was analysed without fallback"))
        body: tuple[Stmt, ...] = (RuntimeScope(function.body, True, owner="compiler"),)
    else:
        body = _insert(function.body, 0, decisions)
        if not _is_auto_scope(body):
            decisions.append(ScopeDecision(function.name, False, "outermost scope of a default-mode function"))
            body = (RuntimeScope(body, False, owner="compiler"),)
    body = map_calls(body, lambda c: replace(c, manual_candidate=False) if c.manual_candidate else c)
    return program.with_body(body, auto_scope=False, manual_layer_candidate=False), decisions


@dataclass(frozen=True, slots=True)
class MaterializeRuntimeScopes(Pass):
    """See the module docstring (contract included)."""

    name: ClassVar[str] = "materialize-runtime-scopes"

    def apply(self, program: TaskProgram, ctx: PassContext) -> TaskProgram:  # type: ignore[override]
        out, decisions = materialize_scopes(program)
        ctx.count(self.name, "manual_scopes", sum(d.manual for d in decisions))
        ctx.count(self.name, "auto_scopes", sum(not d.manual for d in decisions))
        return out

