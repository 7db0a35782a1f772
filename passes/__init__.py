"""Compiler passes over the program IR: allocation, dependence construction and reduction.

Each pass is a small frozen dataclass with a kebab-case ``name`` and ``apply(program, ctx)``
(:mod:`passes.pipeline`).  :data:`ALL_PASSES` is the registry pipeline spec strings are parsed
against; :data:`~passes.pipeline.DEFAULT_PIPELINE` is what ``neuronsim compile`` runs.

To add a pass (for example the transitive reduction of issue #6): define it beside the
others, add it to :data:`ALL_PASSES` under its ``name``, and append it to
:data:`~passes.pipeline.DEFAULT_PIPELINE` if it belongs in the default pipeline.
"""

from passes.alloc import Alloc, AllocSharedDram
from passes.anti_deps import AntiDeps
from passes.dep_opt import DepOpt
from passes.expand_scheduling_units import ExpandSchedulingUnits
from passes.build_fdeps import BuildFdeps
from passes.fuse_loops import FuseLoops
from passes.pipeline import CONSTRUCTION_PIPELINE, DEFAULT_PIPELINE, Pass, PassContext, parse_pipeline, run_pipeline
from passes.dep_reduction import DepReduction
from passes.remove_redundancies import RemoveRedundancies
from passes.list_schedule import ListSchedule

#: Registry: pass name -> pass class.
ALL_PASSES: dict[str, type] = {
    cls.name: cls for cls in (FuseLoops, Alloc, AllocSharedDram, BuildFdeps, RemoveRedundancies, AntiDeps,
                             ExpandSchedulingUnits, ListSchedule, DepOpt, DepReduction)
}

__all__ = [
    "ALL_PASSES", "CONSTRUCTION_PIPELINE", "DEFAULT_PIPELINE", "Pass", "PassContext", "parse_pipeline", "run_pipeline",
    "FuseLoops", "Alloc", "AllocSharedDram", "BuildFdeps", "RemoveRedundancies", "AntiDeps",
    "ExpandSchedulingUnits", "ListSchedule", "DepOpt", "DepReduction", "compile_program",
]


def compile_program(program, passes: str = DEFAULT_PIPELINE, *, verify: bool = True, record: bool = False):
    """Run a pipeline on ``program``; returns ``(compiled program, context)``."""
    ctx = PassContext(verify=verify, record=record)
    return run_pipeline(program, passes, ctx), ctx
