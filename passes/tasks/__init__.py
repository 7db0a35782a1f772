"""Task-level passes: call directions, task dependences, runtime scopes (PyPTO's orchestration passes).

Design note: what maps to what in PyPTO (``hw-native-sys/pypto``, ``src/ir/transforms``).

===================================  ============================================================
neuronsim                            PyPTO
===================================  ============================================================
:class:`DeriveCallDirections`        ``DeriveCallDirections`` (R-seq / R-prior / InOut-parent)
:class:`AutoDeriveTaskDependencies`  ``AutoDeriveTaskDependencies(analyze_auto_scopes)``
:class:`MaterializeRuntimeScopes`    ``MaterializeRuntimeScopes``
:mod:`~neuronsim.passes.tasks.lineage`         ``StorageRootAnalysis`` (roots, regions, ``MemRef::MayAlias``)
:mod:`~neuronsim.passes.tasks.taskids`         ``SubmitTaskIdCollector`` and ``CanonicalizeTaskIds``
:mod:`~neuronsim.passes.tasks.regions`         ``AccessRegion``, ``RegionsMayOverlap``, ``HasHazard``
:mod:`~neuronsim.passes.tasks.walk`            ``AutoDepMutator`` (frames = ``prior_stack_``)
:mod:`~neuronsim.passes.tasks.hazards`         the hazard loop of ``AnalyzeCallLike`` (coverage, fallback)
:mod:`~neuronsim.passes.tasks.loops`           ``Remap*LoopAccessTaskIds``, ``LoopReturnVarForAccess``
:class:`~neuronsim.passes.tasks.records.       the ``compiler_manual_dep_edges`` / candidate attrs, as
Analysis`                            data (a rewrite applies them: :func:`apply_analysis`)
===================================  ============================================================

The passes reuse the instruction-level machinery: each is a frozen dataclass deriving from
:class:`neuronsim.passes.pipeline.Pass`, spec strings are parsed by :func:`neuronsim.passes.pipeline.parse_pipeline`
against :data:`TASK_PASSES`, and :func:`run_task_pipeline` is
:func:`neuronsim.passes.pipeline.run_pipeline` with :func:`verify_tasks` between passes.

``faithful=true`` on the dependence pass reproduces the seed, loop back-edge hole included;
the default is the seed made sound (``docs/tasks-passes.md``: what differs and why).
"""

from __future__ import annotations

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.tasks.ir import TaskProgram
from neuronsim.machine.tasks.task_validate import validate_tasks
from neuronsim.passes.pipeline import PassContext, parse_pipeline, run_pipeline
from neuronsim.passes.tasks.auto_derive_task_dependencies import (AutoDeriveTaskDependencies, analyze_dependencies,
                                                                  apply_analysis)
from neuronsim.passes.tasks.derive_call_directions import DeriveCallDirections, derive_directions
from neuronsim.passes.tasks.materialize_runtime_scopes import (MaterializeRuntimeScopes, ScopeDecision,
                                                               materialize_scopes)
from neuronsim.passes.tasks.records import Analysis

__all__ = [
    "TASK_PASSES", "DEFAULT_TASK_PIPELINE", "FAITHFUL_TASK_PIPELINE", "DeriveCallDirections",
    "AutoDeriveTaskDependencies", "MaterializeRuntimeScopes", "Analysis", "ScopeDecision", "analyze_dependencies",
    "apply_analysis", "derive_directions", "materialize_scopes", "parse_task_pipeline", "run_task_pipeline",
    "verify_tasks", "compile_tasks",
]

#: Registry: task pass name -> pass class.
TASK_PASSES: dict[str, type] = {cls.name: cls for cls in (DeriveCallDirections, AutoDeriveTaskDependencies,
                                                         MaterializeRuntimeScopes)}

#: What ``neuronsim tasks`` runs: the seed's order, with AUTO-scope analysis switched on.
DEFAULT_TASK_PIPELINE = ("derive-call-directions,auto-derive-task-dependencies{analyze_auto_scopes=true},"
                         "materialize-runtime-scopes")
FAITHFUL_TASK_PIPELINE = DEFAULT_TASK_PIPELINE.replace("analyze_auto_scopes=true",
                                                       "analyze_auto_scopes=true,faithful=true")


def parse_task_pipeline(spec: str):
    """Task pass objects for a spec string (a bad name or option is a located ProgramError)."""
    return parse_pipeline(spec, TASK_PASSES)


def verify_tasks(after: TaskProgram, before: TaskProgram, pass_name: str) -> None:
    """The checks between task passes: the result is a valid task program."""
    try:
        validate_tasks(after)
    except ProgramError as err:
        raise ProgramError(err.path, f"after pass {pass_name!r}: {err.message}") from None


def run_task_pipeline(program: TaskProgram, passes=DEFAULT_TASK_PIPELINE, ctx: PassContext | None = None,
                      *, after_pass=None) -> TaskProgram:
    """Run task passes (a spec string or pass objects), verifying between them when ``ctx.verify``."""
    if isinstance(passes, str):
        passes = parse_task_pipeline(passes)
    return run_pipeline(program, passes, ctx, after_pass=after_pass, verifier=verify_tasks)  # type: ignore[arg-type]


def compile_tasks(program: TaskProgram, passes=DEFAULT_TASK_PIPELINE, *, verify: bool = True):
    """Run a task pipeline; returns ``(compiled program, context)``."""
    ctx = PassContext(verify=verify)
    return run_task_pipeline(program, passes, ctx), ctx
