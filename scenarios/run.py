"""Run one scenario end to end: compile, race-check, simulate, compare with numpy.

What ``neuronsim run SCENARIO`` does (issue #7, item 6), as a library call.

Contract (:func:`run_scenario`)
    requires: a scenario module (:mod:`scenarios.collect`) whose ``build()`` validates.
    guarantees: the returned :class:`ScenarioRun` holds the compiled program (the given pass
    pipeline: allocation and dependence construction), the final program (the compiled one
    after ``dep-reduction``, what is simulated), the race reports of both under their deps,
    the simulation of the final program under every interleaving seed (each run's final
    contents of *every* tensor compared byte for byte with the sequential reference, a finer
    race witness than the outputs alone), the output tensors of one seeded timed run
    read back from the simulated memory, the scenario's numpy reference, and the sync
    footprint of both programs (:mod:`verify.footprint`).  Nothing is judged here:
    :meth:`ScenarioRun.problems` lists what is wrong, located (race pair and bytes, tensor
    and element), and is empty for a correct scenario.

The summary (:meth:`ScenarioRun.summary`) is what ``NAME.golden.json`` holds:

* ``races``: races of the compiled and of the final program (spec rules 1-4), 0 and 0;
* ``waits``: instance-level waits of the compiled program (``before``), of the final one
  (``after``), and the spec's ``minimum`` (the ``footprint`` command's figures);
* ``makespan_ns``: the final program's nominal run (cost-model durations, no jitter);
* ``outputs_match``: every output equals the numpy reference within the tolerance, and
  ``interleavings_agree``: every seeded run leaves every tensor as the sequential reference
  does, byte for byte.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from machine.dtypes import numpy_dtype
from machine.ir import MemoryKind, Program
from machine.memory import initial_memory
from machine.sim_engine import Interleaving, TimedRun
from machine.sim_plan import build_plan
from machine.simulator import Executor, Simulation, simulate
from passes import CONSTRUCTION_PIPELINE, compile_program, parse_pipeline
from passes.reduction import DepReduction
from verify.footprint import FootprintReport, footprint_report
from verify.racecheck import RaceReport, check_program

from .collect import scenario_name

__all__ = ["ScenarioRun", "run_scenario", "simulated_outputs", "compare_outputs", "DEFAULT_SEEDS"]

#: Interleavings simulated by default: the nominal schedule and three jittered ones.
DEFAULT_SEEDS: tuple[int | None, ...] = (None, 0, 1, 2)


def simulated_outputs(program: Program, seed: int | None, inputs: Mapping[str, np.ndarray],
                      data_seed: int = 0) -> dict[str, np.ndarray]:
    """The ``output`` DRAM tensors after one timed run under interleaving ``seed``."""
    plan = build_plan(program)
    memory = initial_memory(program, plan.spec, data_seed, inputs)
    TimedRun(plan, Interleaving(seed), Executor(plan, memory)).run()
    outputs = {}
    for name, tensor in program.tensors.items():
        if tensor.memory == MemoryKind.DRAM and tensor.role == "output":
            raw = memory.tensor_bytes(tensor)
            outputs[name] = np.frombuffer(raw, numpy_dtype(tensor.dtype)).reshape(tensor.shape).copy()
    return outputs


def compare_outputs(actual: Mapping[str, np.ndarray], expected: Mapping[str, np.ndarray], rtol: float,
                    atol: float) -> list[str]:
    """Located differences between simulated outputs and the reference (empty: they agree)."""
    problems = []
    for name in sorted(set(actual) | set(expected)):
        if name not in actual or name not in expected:
            where = "the program" if name not in actual else "the reference"
            problems.append(f"{name}: output missing from {where}")
            continue
        got, want = actual[name].astype(np.float64), expected[name].astype(np.float64)
        if got.shape != want.shape:
            problems.append(f"{name}: simulated shape {got.shape}, reference shape {want.shape}")
            continue
        close = np.isclose(got, want, rtol=rtol, atol=atol)
        if close.all():
            continue
        bad = np.argwhere(~close)
        first = tuple(int(i) for i in bad[0])
        worst = float(np.max(np.abs(got - want)))
        problems.append(f"{name}: {len(bad)} of {got.size} elements beyond rtol={rtol}, atol={atol}; first at "
                        f"{list(first)}: simulated {got[first]!r}, reference {want[first]!r}; "
                        f"max abs error {worst:.3g}")
    return problems


@dataclass(frozen=True, slots=True)
class ScenarioRun:
    """Everything one end-to-end run of a scenario produced (see the module doc)."""

    name: str
    program: Program
    compiled: Program
    final: Program
    """The compiled program after ``dep-reduction``: what is simulated."""
    pipeline: str
    final_pipeline: str
    """The passes that made :attr:`final` (``pipeline``, plus ``dep-reduction`` unless in it)."""
    compiled_report: RaceReport
    report: RaceReport
    """Races of the final program."""
    simulation: Simulation
    seeds: tuple[int | None, ...]
    inputs: Mapping[str, np.ndarray]
    outputs: Mapping[str, np.ndarray]
    """Output tensors of the timed run under the last seed."""
    reference: Mapping[str, np.ndarray]
    footprint: FootprintReport
    """Stages ``compiled`` and ``final``."""
    rtol: float
    atol: float

    def problems(self) -> list[str]:
        """What is wrong, located: races, interleavings that disagree, outputs off the reference."""
        found = [f"{stage} program: race {r.kind} {r.first} -> {r.second} in {r.memory} bytes {list(r.bytes)}"
                 for stage, report in (("compiled", self.compiled_report), ("final", self.report))
                 for r in report.races]
        for run in self.simulation.runs:
            found += [f"interleaving seed {run.seed}: {diff}" for diff in run.diffs]
        return found + compare_outputs(self.outputs, self.reference, self.rtol, self.atol)

    def summary(self) -> dict[str, Any]:
        """The golden summary (plain JSON values, deterministic)."""
        compiled, final = self.footprint.stages
        return {
            "scenario": self.name,
            "pipeline": self.final_pipeline,
            "instances": self.report.instances,
            "races": {"compiled": len(self.compiled_report.races), "final": len(self.report.races)},
            "deps": {"before": compiled.deps, "after": final.deps},
            "waits": {"before": compiled.figures.waits, "after": final.figures.waits,
                      "minimum": final.minimum.figures.waits if final.minimum else None},
            "makespan_ns": round(self.simulation.trace.makespan, 1),
            "interleavings": len(self.seeds),
            "interleavings_agree": not self.simulation.differs,
            "outputs_match": not compare_outputs(self.outputs, self.reference, self.rtol, self.atol),
        }


def run_scenario(scenario: ModuleType, *, pipeline: str = CONSTRUCTION_PIPELINE,
                 seeds: Sequence[int | None] = DEFAULT_SEEDS, data_seed: int = 0) -> ScenarioRun:
    """Build, compile, race-check and simulate ``scenario``; see the module doc."""
    seeds = tuple(seeds)
    program = scenario.build()
    compiled, _ctx = compile_program(program, pipeline)
    reduces = any(isinstance(p, DepReduction) for p in parse_pipeline(pipeline))
    final = compiled if reduces else DepReduction().apply(compiled)
    values = scenario.inputs(data_seed)
    simulation = simulate(final, seeds=seeds, inputs=values, data_seed=data_seed, compare="all")
    outputs = simulated_outputs(final, seeds[-1], values, data_seed)
    return ScenarioRun(
        name=scenario_name(scenario), program=program, compiled=compiled, final=final, pipeline=pipeline,
        final_pipeline=pipeline if reduces else f"{pipeline},{DepReduction.name}",
        compiled_report=check_program(compiled), report=check_program(final), simulation=simulation, seeds=seeds,
        inputs=values, outputs=outputs, reference=scenario.reference(values),
        footprint=footprint_report([("compiled", compiled), ("final", final)], simulate=False),
        rtol=getattr(scenario, "rtol", 0.0), atol=getattr(scenario, "atol", 0.0))
