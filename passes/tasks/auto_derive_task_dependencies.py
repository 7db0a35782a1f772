"""``auto-derive-task-dependencies``: compiler TaskId deps for AUTO runtime scopes (PyPTO pass of that name).

For every task call of an analysed AUTO region, the hazards its tensor arguments have on
earlier calls become compiler deps (``compiler_deps``), unless a user dep already covers them;
read-only ``Input`` slots and ``InOut`` slots whose hazards are all covered are demoted to
``NoDep`` / ``OutputExisting``; calls that received compiler deps carry the MANUAL-candidate
marker and a fully covered default-mode function the whole-layer marker, both consumed by
``materialize-runtime-scopes``.  A region whose accesses cannot all be expressed that way
falls back as a whole: a hand-placed scope loses every compiler dep and demotion inside it,
the virtual whole body keeps its (additive) deps but loses demotions and markers.

Options: ``analyze_auto_scopes`` (PyPTO ``analyze_auto_scopes_for_deps``, default false as
upstream: the pass then changes nothing); ``faithful`` reproduces the seed exactly, loop
back-edge hole included.  The default analysis also compares each sequential loop body with
itself shifted by one iteration and keeps only the user-dep coverage and loop edges that
name every instance they must (:mod:`neuronsim.passes.tasks.hazards`, :mod:`neuronsim.passes.tasks.walk`); the
edges only that shifted walk finds are loop-carried (``CompilerDep.carried``: the previous
iteration of the loop's current execution, never an earlier execution's last instance);
``docs/tasks-passes.md`` lists the differences.

Contract
    requires: a valid task program whose calls carry resolved ``directions``
    (``derive-call-directions``); calls without them make the layer unsupported.
    guarantees: only ``compiler_deps``, ``directions`` (Input -> NoDep, InOut ->
    OutputExisting only), the call marker and the function's layer marker change; user
    MANUAL scopes, calls outside analysed regions and user deps are untouched; with
    ``analyze_auto_scopes=false`` the program is returned unchanged.  Default mode: in a
    region that did not fall back, every pair of task instances whose accesses may overlap
    (one writing) is ordered by explicit deps (user or compiler), so runtime tracking of its
    demoted slots and marked calls can be switched off without losing an order (pairs in
    different iterations of a ``parallel`` loop excepted: the program promises there are none).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from neuronsim.machine.tasks.ir import Call, RuntimeScope, TaskProgram, map_calls
from neuronsim.machine.tasks.task_validate import validate_tasks
from neuronsim.passes.pipeline import Pass, PassContext
from neuronsim.passes.tasks.lineage import storage_lineage
from neuronsim.passes.tasks.records import Analysis
from neuronsim.passes.tasks.taskids import collect_task_ids
from neuronsim.passes.tasks.walk import Walker

__all__ = ["AutoDeriveTaskDependencies", "analyze_dependencies", "apply_analysis"]


def analyze_dependencies(program: TaskProgram, *, analyze_auto_scopes: bool = True, faithful: bool = False) -> Analysis:
    """What the pass decides for ``program`` (a pure function of the program and the options)."""
    if not analyze_auto_scopes:
        return Analysis(faithful=faithful)
    program, symbols = validate_tasks(program)
    lineage = storage_lineage(program, symbols, sound=not faithful)
    walker = Walker(program, symbols, lineage, collect_task_ids(program, symbols), faithful=faithful)
    body, function = program.function.body, program.function
    if function.auto_scope and not (len(body) == 1 and isinstance(body[0], RuntimeScope)):
        walker.region(body, "function", "virtual", function.name)
    elif function.auto_scope:
        walker.stmt(body[0], "function.body[0]")
    else:
        walker.region(body, "function", "container", function.name)
    return walker.analysis


def apply_analysis(program: TaskProgram, analysis: Analysis) -> TaskProgram:
    """``program`` with the analysis's surviving deps, demotions and markers written in."""
    if not analysis.analyzed:
        return program

    def rewrite(call: Call) -> Call:
        if call.name not in analysis.calls:
            return call
        directions = call.directions
        demoted = analysis.final_demotions(call.name)
        if demoted and directions is not None:
            directions = tuple(demoted.get(i, d) for i, d in enumerate(directions))
        edges = tuple(analysis.final_edges(call.name))
        marker = analysis.marker(call.name)
        if edges == call.compiler_deps and directions == call.directions and marker == call.manual_candidate:
            return call
        return replace(call, compiler_deps=edges, directions=directions, manual_candidate=marker)

    body = map_calls(program.function.body, rewrite)
    layer = analysis.layer_candidate
    if body is program.function.body and layer == program.function.manual_layer_candidate:
        return program
    return program.with_body(body, manual_layer_candidate=layer)


@dataclass(frozen=True, slots=True)
class AutoDeriveTaskDependencies(Pass):
    """See the module docstring (contract included)."""

    name: ClassVar[str] = "auto-derive-task-dependencies"
    analyze_auto_scopes: bool = False
    faithful: bool = False

    def analyze(self, program: TaskProgram) -> Analysis:
        return analyze_dependencies(program, analyze_auto_scopes=self.analyze_auto_scopes, faithful=self.faithful)

    def apply(self, program: TaskProgram, ctx: PassContext) -> TaskProgram:  # type: ignore[override]
        analysis = self.analyze(program)
        for result in analysis.calls.values():
            ctx.count(self.name, "compiler_deps", len(analysis.final_edges(result.name)))
            ctx.count(self.name, "demoted", len(analysis.final_demotions(result.name)))
        ctx.count(self.name, "fallbacks", sum(r.fallback is not None for r in analysis.regions.values()))
        return apply_analysis(program, analysis)
