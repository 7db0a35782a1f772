"""The runtime tracking a task program costs, per pipeline stage (``neuronsim footprint`` on task programs).

What the dependence pass is for: every slot it demotes skips a TensorMap lookup (``no_dep``)
or a lookup (``output_existing``), every MANUAL scope it places skips lookups and inserts for
all its calls, at the price of explicit deps (``set_dependencies``).  Per stage (the program
as given, then after each pass) this counts, for one run of the orchestrator with the
program's scalars (:mod:`neuronsim.machine.sim.tensormap`, the same steps the simulated runtime takes):

* ``lookups`` / ``inserts``: TensorMap work (steps B and 4), ``creator`` edges (step A);
* ``explicit``: explicit deps handed to the runtime (user and compiler), ``edges`` in all;
* ``manual_tasks``: task instances submitted in MANUAL scopes;

and statically: call sites, demoted slots (``no_dep``, ``output_existing``), runtime scopes
placed MANUAL (by the user or the compiler), compiler deps; with ``simulate`` the nominal
makespan and the orchestrator's busy time on the simulated runtime; with ``races`` the number
of races (:func:`neuronsim.verify.tasks.check.check_task_program`).  A stage whose calls carry no
directions yet (a program before ``derive-call-directions``) cannot run and has no dynamic
figures.

Examples
--------
>>> from neuronsim.machine.tasks.format import load_tasks
>>> from neuronsim.passes.tasks import derive_directions, compile_tasks
>>> program = load_tasks("examples/tasks/accumulate.json")
>>> report = task_footprint([("all AUTO", derive_directions(program)), ("compiled", compile_tasks(program)[0])])
>>> [(s.stage, s.run["lookups"], s.run["inserts"], s.run["explicit"], s.static["manual_scopes"]) for s in report.stages]
[('all AUTO', 13, 6, 0, 0), ('compiled', 0, 0, 12, 1)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from neuronsim.machine.sim.runtime import simulate_tasks
from neuronsim.machine.sim.tensormap import task_graph
from neuronsim.machine.tasks.ir import ArgDirection, RuntimeScope, TaskProgram
from neuronsim.machine.tasks.orchestrator import unroll_task_program

from neuronsim.verify.tasks.check import check_task_program

__all__ = ["TaskStage", "TaskFootprint", "task_footprint", "static_counts", "RUN_KEYS"]

RUN_KEYS = ("tasks", "lookups", "inserts", "creator", "explicit", "edges", "manual_tasks", "no_dep")


def static_counts(program: TaskProgram) -> dict[str, int]:
    """What the program text says: call sites, slot directions, scopes, deps."""
    out = {"calls": 0, "no_dep_slots": 0, "output_existing_slots": 0, "inout_slots": 0, "input_slots": 0,
           "user_deps": 0, "compiler_deps": 0, "manual_scopes": 0, "compiler_manual_scopes": 0, "auto_scopes": 0}
    for stmt, _ in program.walk():
        if isinstance(stmt, RuntimeScope):
            if stmt.manual:
                out["manual_scopes"] += 1
                out["compiler_manual_scopes"] += stmt.owner == "compiler"
            else:
                out["auto_scopes"] += 1
    for call, _ in program.calls():
        out["calls"] += 1
        out["user_deps"] += len(call.deps)
        out["compiler_deps"] += len(call.compiler_deps)
        for d in call.directions or ():
            key = {ArgDirection.NO_DEP: "no_dep_slots", ArgDirection.OUTPUT_EXISTING: "output_existing_slots",
                   ArgDirection.INOUT: "inout_slots", ArgDirection.INPUT: "input_slots"}.get(d)
            if key:
                out[key] += 1
    return out


@dataclass(frozen=True, slots=True)
class TaskStage:
    stage: str
    static: dict[str, int]
    run: dict[str, int] | None
    """One orchestrator run's tracking totals (None: the calls carry no directions yet)."""
    makespan_ns: float | None = None
    orchestration_ns: float | None = None
    races: int | None = None

    def per_task(self, key: str) -> float | None:
        if not self.run or not self.run["tasks"]:
            return None
        return self.run[key] / self.run["tasks"]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"stage": self.stage, "static": dict(self.static),
                               "run": dict(self.run) if self.run else None}
        if self.run and self.run["tasks"]:
            out["per_task"] = {k: round(self.run[k] / self.run["tasks"], 4) for k in ("lookups", "inserts", "explicit")}
        for key in ("makespan_ns", "orchestration_ns", "races"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


@dataclass(frozen=True, slots=True)
class TaskFootprint:
    stages: tuple[TaskStage, ...]
    passes: tuple[tuple[str, dict[str, int]], ...] = ()

    def saved(self) -> dict[str, int] | None:
        """First runnable stage minus the last one (what the pipeline saved; negative: added)."""
        runnable = [s for s in self.stages if s.run]
        if len(runnable) < 2:
            return None
        first, last = runnable[0], runnable[-1]
        out = {k: first.run[k] - last.run[k] for k in ("lookups", "inserts", "creator", "explicit")}  # type: ignore[index]
        out["manual_tasks"] = last.run["manual_tasks"] - first.run["manual_tasks"]  # type: ignore[index]
        out["manual_scopes"] = last.static["manual_scopes"] - first.static["manual_scopes"]
        out["demoted_slots"] = (last.static["no_dep_slots"] + last.static["output_existing_slots"]
                                - first.static["no_dep_slots"] - first.static["output_existing_slots"])
        return out

    def to_json(self) -> dict[str, Any]:
        return {"format": "neuronsim.task-footprint/1", "stages": [s.to_json() for s in self.stages],
                "passes": [{"pass": spec, "stats": stats} for spec, stats in self.passes], "saved": self.saved()}


def _runnable(program: TaskProgram) -> bool:
    return all(c.directions is not None for c, _ in program.calls())


def task_footprint(stages: Sequence[tuple[str, TaskProgram]], scalars: Mapping[str, int] | None = None, *,
                   simulate: bool = False, races: bool = False, max_instances: int | None = None,
                   passes: Sequence[tuple[str, dict[str, int]]] = ()) -> TaskFootprint:
    """The tracking figures of every stage (see the module doc)."""
    out = []
    for name, program in stages:
        static = static_counts(program)
        if not _runnable(program):
            out.append(TaskStage(name, static, None))
            continue
        instances = unroll_task_program(program, scalars, max_instances=max_instances)
        graph = task_graph(instances)
        run = {"tasks": len(instances), "manual_tasks": sum(t.manual for t in instances)}
        for key in ("lookups", "inserts", "creator", "explicit", "no_dep"):
            run[key] = sum(getattr(g, key) for g in graph)
        run["edges"] = sum(len(g.edges) for g in graph)
        makespan = orchestration = None
        if simulate:
            trace = simulate_tasks(program, scalars)
            makespan, orchestration = round(trace.makespan, 3), round(trace.orchestration_ns, 3)
        count = check_task_program(program, scalars, max_races=0).total_races if races else None
        out.append(TaskStage(name, static, run, makespan, orchestration, count))
    return TaskFootprint(tuple(out), tuple(passes))
