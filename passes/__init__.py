"""Compiler passes over the program IR: allocation, dependence construction and reduction.

Each pass is a small frozen dataclass with a kebab-case ``name`` and ``apply(program, ctx)``
(:mod:`neuronsim.passes.pipeline`).  :data:`ALL_PASSES` is the registry pipeline spec strings are parsed
against; :data:`~neuronsim.passes.pipeline.DEFAULT_PIPELINE` is what ``neuronsim compile`` runs.

To add a pass (for example the transitive reduction of issue #6): define it beside the
others, add it to :data:`ALL_PASSES` under its ``name``, and append it to
:data:`~neuronsim.passes.pipeline.DEFAULT_PIPELINE` if it belongs in the default pipeline.  A pass in
another package registers itself under the entry-point group ``neuronsim.passes`` (name: the
pass's ``name``, value: ``module:Class``); :data:`ALL_PASSES` then lists it, so spec strings
(``--passes``) can name it (``docs/writing-a-pass.md``).
"""

import warnings
from importlib.metadata import entry_points

from neuronsim.passes.alloc import Alloc, AllocSharedDram
from neuronsim.passes.anti_deps import AntiDeps
from neuronsim.passes.dep_opt import DepOpt
from neuronsim.passes.expand_scheduling_units import ExpandSchedulingUnits
from neuronsim.passes.build_fdeps import BuildFdeps
from neuronsim.passes.fuse_loops import FuseLoops
from neuronsim.passes.interchange_loops import InterchangeLoops
from neuronsim.passes.pipeline import (PASS_REGISTRY, CONSTRUCTION_PIPELINE, DEFAULT_PIPELINE, Pass, PassContext,
                                       PipelineState, parse_pipeline, run_passes, run_pipeline)
from neuronsim.passes.dep_reduction import DepReduction
from neuronsim.passes.remove_redundancies import RemoveRedundancies
from neuronsim.passes.list_schedule import ListSchedule
from neuronsim.passes.schedule import TRACED_PIPELINE, Schedule
from neuronsim.passes.dma_place import DmaPlace
from neuronsim.passes.load_elim import LoadElim

#: Registry: pass name -> pass class (the one :func:`parse_pipeline` reads).
ALL_PASSES: dict[str, type] = PASS_REGISTRY
ALL_PASSES.update({
    cls.name: cls for cls in (FuseLoops, InterchangeLoops, Alloc, AllocSharedDram, BuildFdeps, RemoveRedundancies,
                             AntiDeps, ExpandSchedulingUnits, ListSchedule, Schedule, DmaPlace, LoadElim, DepOpt,
                             DepReduction)
})

#: Entry-point group under which other packages register passes.
PLUGIN_GROUP = "neuronsim.passes"


def _plugin_passes(builtin: dict[str, type]) -> dict[str, type]:
    """Pass classes registered by installed packages; a broken or clashing one is skipped
    with a warning (a plugin never breaks the tool)."""
    found: dict[str, type] = {}
    for entry in entry_points(group=PLUGIN_GROUP):
        try:
            cls = entry.load()
        except Exception as err:  # noqa: BLE001 - any import error of someone else's package
            warnings.warn(f"pass plugin {entry.name!r} ({entry.value}) cannot be loaded: {err}", stacklevel=2)
            continue
        name = getattr(cls, "name", None)
        if not (isinstance(cls, type) and issubclass(cls, Pass)) or name != entry.name or name in builtin:
            warnings.warn(f"pass plugin {entry.name!r} ({entry.value}) skipped: it must be a Pass class whose "
                          f"name is the entry point's and no built-in pass's", stacklevel=2)
            continue
        found[name] = cls
    return found


ALL_PASSES.update(_plugin_passes(ALL_PASSES))

__all__ = [
    "PLUGIN_GROUP",
    "ALL_PASSES", "CONSTRUCTION_PIPELINE", "DEFAULT_PIPELINE", "Pass", "PassContext", "PipelineState", "parse_pipeline",
    "run_pipeline", "run_passes",
    "FuseLoops", "InterchangeLoops", "Alloc", "AllocSharedDram", "BuildFdeps", "RemoveRedundancies", "AntiDeps",
    "ExpandSchedulingUnits", "ListSchedule", "Schedule", "DmaPlace", "LoadElim", "TRACED_PIPELINE", "DepOpt",
    "DepReduction", "compile_program",
]


def compile_program(program, passes: str = DEFAULT_PIPELINE, *, verify: bool = True, record: bool = False):
    """Run a pipeline on ``program``; returns ``(compiled program, context)``."""
    ctx = PassContext(verify=verify, record=record)
    return run_pipeline(program, passes, ctx), ctx
