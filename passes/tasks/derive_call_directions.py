"""``derive-call-directions``: the ArgDirection of every argument of every call (PyPTO pass of that name).

Per argument, from the kernel parameter's direction (``docs/task-rules.md`` section 2):

* a scalar parameter -> ``Scalar``; ``In`` -> ``Input``; ``InOut`` -> ``InOut``;
* ``Out`` -> ``OutputExisting``, promoted to ``InOut`` when
  - **R-seq**: a sequential loop (``range`` or ``while``, not ``parallel``) encloses the call;
  - **R-prior**: an earlier writer unit of the same scope wrote the argument's root (loops and
    branches are opaque units: their writes count for the siblings after them; runtime scopes
    are transparent);
  - **InOut-parent**: the root is a function parameter declared ``inout``;
* indices in the call's ``no_dep`` list -> ``NoDep``.

A call that already has ``directions`` keeps them (they are authoritative, as explicit call-site
directions are upstream).  The root of an argument is its storage root when its lineage has a
single alternative.  (Upstream also keeps ``Out`` when the kernel body stores at offsets that
vary with the loop; kernel bodies are opaque here, so that exception does not arise.)

Contract
    requires: a valid task program.
    guarantees: every call has ``directions`` of its argument count, each allowed for its
    parameter; nothing else changes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from neuronsim.machine.tasks.ir import (
    ArgDirection, Call, For, If, ParamDirection, RuntimeScope, Stmt, TaskProgram, TensorParam, While, bodies,
    map_calls,
)
from neuronsim.machine.tasks.task_validate import validate_tasks
from neuronsim.passes.pipeline import Pass, PassContext
from neuronsim.passes.tasks.lineage import Lineage, storage_lineage

__all__ = ["DeriveCallDirections", "derive_directions", "first_writer_roots"]


def _root(lineage: Lineage, arg: object) -> str | None:
    location = lineage.of(arg) if isinstance(arg, str) else ()
    return location[0].root if len(location) == 1 else None


def _written_roots(program: TaskProgram, call: Call, lineage: Lineage) -> list[tuple[int, str, ParamDirection]]:
    kernel = program.kernels[call.kernel]
    out = []
    for i, (arg, p) in enumerate(zip(call.args, kernel.params)):
        if p.direction in (ParamDirection.OUT, ParamDirection.INOUT):
            root = _root(lineage, arg)
            if root is not None:
                out.append((i, root, p.direction))
    return out


def first_writer_roots(program: TaskProgram, lineage: Lineage) -> dict[str, set[str]]:
    """Per call, the roots its ``Out`` arguments write first in their scope (PyPTO ``PriorWriterCollector``)."""
    cache: dict[int, set[str]] = {}

    def written(stmt: Stmt) -> set[str]:
        key = id(stmt)
        if key not in cache:
            if isinstance(stmt, Call):
                cache[key] = {root for _, root, _ in _written_roots(program, stmt, lineage)}
            else:
                cache[key] = set().union(*(written(s) for b in bodies(stmt) for s in b)) if bodies(stmt) else set()
        return cache[key]

    first: dict[str, set[str]] = {}

    def scan(body: tuple[Stmt, ...], seen: set[str]) -> None:
        for stmt in body:
            if isinstance(stmt, Call):
                mine = set()
                for _, root, direction in _written_roots(program, stmt, lineage):
                    if direction == ParamDirection.OUT and root not in seen:
                        first.setdefault(stmt.name, set()).add(root)
                    mine.add(root)
                seen |= mine
            elif isinstance(stmt, RuntimeScope):
                scan(stmt.body, seen)
            elif isinstance(stmt, (For, While, If)):
                for inner in bodies(stmt):
                    scan(inner, set(seen))
                seen |= written(stmt)

    scan(program.function.body, set())
    return first


def derive_directions(program: TaskProgram) -> TaskProgram:
    """``program`` with every call's directions resolved (see the module docstring)."""
    program, symbols = validate_tasks(program)
    lineage = storage_lineage(program, symbols, sound=False)
    first = first_writer_roots(program, lineage)
    inout_params = {p.name for p in program.function.params
                    if isinstance(p, TensorParam) and p.direction == ParamDirection.INOUT}
    sequential: dict[str, bool] = {}

    def mark(body: tuple[Stmt, ...], inside: bool) -> None:
        for stmt in body:
            if isinstance(stmt, Call):
                sequential[stmt.name] = inside
            deeper = inside or isinstance(stmt, While) or (isinstance(stmt, For) and not stmt.parallel)
            for inner in bodies(stmt):
                mark(inner, deeper)

    mark(program.function.body, False)

    def resolve(call: Call) -> Call:
        if call.directions is not None:
            return call
        kernel = program.kernels[call.kernel]
        dirs = []
        for arg, p in zip(call.args, kernel.params):
            if p.direction == ParamDirection.SCALAR:
                dirs.append(ArgDirection.SCALAR)
            elif p.direction == ParamDirection.IN:
                dirs.append(ArgDirection.INPUT)
            elif p.direction == ParamDirection.INOUT:
                dirs.append(ArgDirection.INOUT)
            else:
                root = _root(lineage, arg)
                promoted = sequential[call.name] or (root is not None and root not in first.get(call.name, set())) \
                    or root in inout_params
                dirs.append(ArgDirection.INOUT if promoted else ArgDirection.OUTPUT_EXISTING)
        for i in call.no_dep:
            dirs[i] = ArgDirection.NO_DEP
        return replace(call, directions=tuple(dirs))

    return program.with_body(map_calls(program.function.body, resolve))


@dataclass(frozen=True, slots=True)
class DeriveCallDirections(Pass):
    """See the module docstring (contract included)."""

    name: ClassVar[str] = "derive-call-directions"

    def apply(self, program: TaskProgram, ctx: PassContext) -> TaskProgram:  # type: ignore[override]
        out = derive_directions(program)
        ctx.count(self.name, "inout", sum(d == ArgDirection.INOUT for c, _ in out.calls() for d in c.directions or ()))
        return out
