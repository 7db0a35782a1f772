"""Planted bugs in the task dependence pass the task fuzzer must find (issue #14, acceptance).

Each is a realistic way to get ``auto-derive-task-dependencies`` wrong:

* :class:`ForgetsWar` - the hazard rule without WAR (a writer after readers gets no edge, as
  the runtime's TensorMap, which never registers readers);
* :class:`IgnoresMemRefAliasing` - roots placed in one MemRef allocation never alias
  (``MemRef::MayAlias`` forgotten);
* :class:`DemotesUncoveredInput` - ``Input -> NoDep`` for every read slot that met a hazard,
  covered or not (a fallback, a blocked loop producer).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar
from unittest import mock

from neuronsim.machine.tasks.ir import ArgDirection, TaskProgram
from neuronsim.passes.tasks import AutoDeriveTaskDependencies
from neuronsim.passes.tasks import walk as walk_module
from neuronsim.passes.tasks.lineage import Lineage
from neuronsim.passes.tasks.records import Analysis
from neuronsim.passes.tasks.regions import Hazard, hazards


def _no_war(current, prior):
    return hazards(current, prior) - {Hazard.WAR}


@dataclass(frozen=True, slots=True)
class ForgetsWar(AutoDeriveTaskDependencies):
    name: ClassVar[str] = "auto-derive-task-dependencies"
    analyze_auto_scopes: bool = True

    def analyze(self, program: TaskProgram) -> Analysis:
        with mock.patch.object(walk_module, "hazards", _no_war):
            return AutoDeriveTaskDependencies.analyze(self, program)


@dataclass(frozen=True, slots=True)
class IgnoresMemRefAliasing(AutoDeriveTaskDependencies):
    name: ClassVar[str] = "auto-derive-task-dependencies"
    analyze_auto_scopes: bool = True

    def analyze(self, program: TaskProgram) -> Analysis:
        with mock.patch.object(Lineage, "may_alias", lambda self, a, b: a == b), \
                mock.patch.object(walk_module.Walker, "_alias_roots", lambda self, root: (root, "*")):
            return AutoDeriveTaskDependencies.analyze(self, program)


@dataclass(frozen=True, slots=True)
class DemotesUncoveredInput(AutoDeriveTaskDependencies):
    name: ClassVar[str] = "auto-derive-task-dependencies"
    analyze_auto_scopes: bool = True

    def analyze(self, program: TaskProgram) -> Analysis:
        analysis = AutoDeriveTaskDependencies.analyze(self, program)
        honest = analysis.final_demotions

        def every_read(call: str) -> dict[int, ArgDirection]:
            out = dict(honest(call))
            out.update({i: ArgDirection.NO_DEP for i in analysis.calls[call].no_dep})
            return out

        analysis.final_demotions = every_read  # type: ignore[method-assign]
        return analysis
