"""Task scenarios (``scenarios/tasks/``): orchestration programs run through the task passes.

A task scenario is a file of ``scenarios/tasks`` defining ``build_tasks() -> TaskProgram``;
its program is shipped beside it as ``NAME.json`` and the program after the default task
pipeline as ``NAME.compiled.json`` (``neuronsim check`` on it is race-free; on ``NAME.json``,
the all-AUTO program, it shows the runtime's own races); :func:`write_all_task_scenarios`
keeps them in step.  :func:`run_task_scenario` runs one:

* the all-AUTO program (``derive-call-directions`` only) and the compiled one (the default task
  pipeline), with the runtime tracking each costs (:mod:`neuronsim.verify.tasks.counts`: lookups, inserts,
  explicit deps, tasks in MANUAL scopes, slots demoted) and what the pipeline saved;
* the race check of both, statically, and of the compiled program over simulated runs under
  :data:`DEFAULT_TASK_SEEDS` (every run must keep its edges and be race-free);
* problems: any race of the compiled program, a run that breaks an edge, a stale shipped JSON.

``neuronsim run NAME`` (or a path to such a file) prints it and writes the nominal run's
Perfetto trace and the footprint.  Scenarios are loaded by file: ``verify`` never imports
the ``scenarios`` package.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from neuronsim.machine.formats.files import write_text
from neuronsim.machine.formats.pyfile import run_file
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.sim.runtime import simulate_tasks
from neuronsim.machine.sim.task_trace import TaskTrace
from neuronsim.machine.tasks.format import load_tasks
from neuronsim.machine.tasks.ir import TaskProgram
from neuronsim.machine.tasks.serialize import dumps_tasks
from neuronsim.passes.tasks import compile_tasks, derive_directions

from neuronsim.verify.app.scenario_runs import SCENARIO_DIR, scenario_call
from neuronsim.verify.tasks.counts import TaskFootprint, task_footprint
from neuronsim.verify.tasks.check import check_task_trace, trace_violations

__all__ = ["TASK_SCENARIO_DIR", "DEFAULT_TASK_SEEDS", "all_task_scenarios", "task_scenario_name",
           "find_task_scenario", "run_task_scenario", "TaskScenarioResult", "write_all_task_scenarios"]

TASK_SCENARIO_DIR = SCENARIO_DIR / "tasks"
#: Runs simulated per scenario: nominal durations and three jittered ones.
DEFAULT_TASK_SEEDS: tuple[int | None, ...] = (None, 0, 1, 2)

_LOADED: dict[Path, ModuleType] = {}


def _load(path: Path) -> ModuleType:
    path = path.resolve()
    if path not in _LOADED:
        _LOADED[path] = run_file(path, f"neuronsim_task_scenario_{path.stem}")
    return _LOADED[path]


def _is_task_scenario(module: ModuleType) -> bool:
    return callable(getattr(module, "build_tasks", None))


def all_task_scenarios(folder: Path = TASK_SCENARIO_DIR) -> list[ModuleType]:
    """Every task scenario file of ``folder``, sorted by name."""
    return [m for p in sorted(folder.glob("*.py")) if not p.name.startswith("_") and _is_task_scenario(m := _load(p))]


def task_scenario_name(module: ModuleType) -> str:
    return Path(module.__file__).stem  # type: ignore[arg-type]


def find_task_scenario(spec: str) -> ModuleType | None:
    """The task scenario ``spec`` names (a shipped name, or a ``.py`` path defining
    ``build_tasks``), or None when it names none (then it may be a kernel scenario)."""
    if spec.endswith(".py"):
        path = Path(spec)
        if not path.is_file():
            return None
        try:
            module = _load(path)
        except (Exception, SystemExit) as err:  # noqa: BLE001 - the user's file failed to run: their input
            from neuronsim.verify.app.scenario_runs import scenario_load_error

            raise scenario_load_error(spec, err) from None
        return module if _is_task_scenario(module) else None
    return next((m for m in all_task_scenarios() if task_scenario_name(m) == spec), None)


@dataclass
class TaskScenarioResult:
    name: str
    program: TaskProgram
    compiled: TaskProgram
    footprint: TaskFootprint
    traces: list[TaskTrace] = field(default_factory=list)
    trace_races: list[int] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    stale_json: bool = False

    def problems(self) -> list[str]:
        out = []
        compiled = self.footprint.stages[-1]
        if compiled.races:
            out.append(f"the compiled program has {compiled.races} race(s)")
        for trace, races in zip(self.traces, self.trace_races):
            if races:
                out.append(f"run {'nominal' if trace.seed is None else f'seed {trace.seed}'}: {races} race(s)")
        out.extend(self.violations)
        if self.stale_json:
            out.append(f"scenarios/tasks/{self.name}.json or .compiled.json differs from build_tasks(): regenerate "
                       "them (python -m neuronsim.verify.tasks.scenarios)")
        return out

    def summary(self) -> dict[str, Any]:
        before, after = self.footprint.stages[0], self.footprint.stages[-1]
        return {"tasks": after.run["tasks"] if after.run else 0, "saved": self.footprint.saved(),
                "races": {"all_auto": before.races, "compiled": after.races, "runs": self.trace_races},
                "makespan_ns": {"all_auto": before.makespan_ns, "compiled": after.makespan_ns},
                "orchestration_ns": {"all_auto": before.orchestration_ns, "compiled": after.orchestration_ns}}


def run_task_scenario(module: ModuleType, *, seeds: tuple[int | None, ...] = DEFAULT_TASK_SEEDS,
                      max_idle: float | None = None,
                      before_work: Callable[[TaskProgram], object] | None = None) -> TaskScenarioResult:
    """Build, compile, count, check and simulate one task scenario (see the module doc); its
    ``build_tasks`` is the user's code when the scenario is a file of theirs: what it raises, or
    returns that is no task program, is its error (exit 2), and it is stopped after ``max_idle``
    seconds (None: never).  ``before_work`` sees the built program first (the command's size
    guard: ``run gemm_splitk --max-instances 1`` ran to the end, a probe)."""
    from neuronsim.machine.nki.watch import stopped_when_idle

    name = task_scenario_name(module)
    with stopped_when_idle(f"{name}.build_tasks()", max_idle):
        program = scenario_call(module, "build_tasks")
    if not isinstance(program, TaskProgram):
        raise ProgramError("SCENARIO", f"{name}.build_tasks() returned a {type(program).__name__}, not a "
                                       "TaskProgram")
    if before_work is not None:
        before_work(program)
    shipped = Path(module.__file__).with_suffix(".json")  # type: ignore[arg-type]
    compiled = compile_tasks(program)[0]
    stale = any(path.is_file() and load_tasks(str(path)) != want
                for path, want in ((shipped, program), (_compiled_path(shipped), compiled)))
    footprint = task_footprint([("all AUTO", derive_directions(program)), ("compiled", compiled)], simulate=True,
                               races=True)
    result = TaskScenarioResult(name, program, compiled, footprint, stale_json=stale)
    for seed in seeds:
        trace = simulate_tasks(compiled, seed=seed)
        result.traces.append(trace)
        result.trace_races.append(check_task_trace(trace, max_races=0).total_races)
        result.violations.extend(trace_violations(trace))
    return result


def _compiled_path(shipped: Path) -> Path:
    return shipped.with_suffix(".compiled.json")


def write_all_task_scenarios() -> list[Path]:
    """Write every task scenario's ``NAME.json`` from its ``build_tasks``, and ``NAME.compiled.json``."""
    out = []
    for module in all_task_scenarios():
        path = Path(module.__file__).with_suffix(".json")  # type: ignore[arg-type]
        program = module.build_tasks()
        write_text(path, dumps_tasks(program))
        write_text(_compiled_path(path), dumps_tasks(compile_tasks(program)[0]))
        out.extend((path, _compiled_path(path)))
    return out


if __name__ == "__main__":  # pragma: no cover - the regeneration command
    for written in write_all_task_scenarios():
        print(written)
