"""How often seeded simulation witnesses a race made by deleting one RAW wait.

Two workloads, each race-free before the deletion:

* ``matmul_k_loop`` (shipped example): every dep whose deletion makes the race checker report a
  RAW race is deleted in turn;
* generated straight-line programs (``neuronsim.verify.strategies.programs``, no loops) given a wait on
  every earlier conflicting instruction; per program one RAW wait whose deletion makes the
  checker report a RAW race is deleted.

Each racy program runs the nominal schedule plus seeds 0..19; a race is *witnessed* when some
run's ``output`` tensors differ from the sequential reference (the spec's check), or, finer,
when some tensor's final contents differ (``compare="all"``).

Usage: ``.venv/bin/python bench/bench_race_witness.py [PROGRAMS]`` (default 60).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.formats.program_json import load_program
from neuronsim.machine.model.geometry import footprint, overlap
from neuronsim.machine.ir.program import Dep, Program
from neuronsim.machine.sim.simulator import simulate
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.strategies import programs

SEEDS = [None, *range(20)]
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _without(program: Program, name: str, dep: Dep) -> Program:
    return program.map_instructions(
        lambda i: replace(i, deps=tuple(d for d in i.deps if d != dep)) if i.name == name else i)


def _raw_races(program: Program) -> int:
    return sum(race.kind == "RAW" for race in check_program(program).races)


def _witness(program: Program) -> tuple[int, int]:
    """(runs whose outputs differ, runs where some tensor differs), out of len(SEEDS)."""
    outputs = sum(run.differs for run in simulate(program, seeds=SEEDS).runs)
    tensors = sum(run.differs for run in simulate(program, seeds=SEEDS, compare="all").runs)
    return outputs, tensors


def example_deletions() -> None:
    program = load_program(str(EXAMPLES / "matmul_k_loop.json"))
    print(f"matmul_k_loop, {len(SEEDS)} runs each (nominal + seeds 0..19):")
    for inst, _loops in program.instructions():
        for dep in inst.deps:
            racy = _without(program, inst.name, dep)
            if not _raw_races(racy):
                continue
            outputs, tensors = _witness(racy)
            print(f"  delete {inst.name} -> {dep.on}{' (loop-carried)' if dep.loop_carried else ''}: "
                  f"outputs differ in {outputs}/{len(SEEDS)} runs, some tensor in {tensors}/{len(SEEDS)}")


def _conflict_deps(program: Program) -> Program:
    """Straight-line program: each instruction waits on every earlier one it conflicts with."""
    insts = [inst for inst, _ in program.instructions()]
    tensors = program.tensors
    prints = [[(footprint(tensors[a.tensor], a, {}), w) for a, w in inst.accesses] for inst in insts]
    deps: dict[str, tuple[Dep, ...]] = {}
    for y, inst in enumerate(insts):
        mine = []
        for x in range(y):
            kinds = [EdgeKind.FLOW if wx and not wy else EdgeKind.OUTPUT if wx else EdgeKind.ANTI
                     for fx, wx in prints[x] for fy, wy in prints[y] if (wx or wy) and overlap(fx, fy)]
            if kinds:
                mine.append(Dep(insts[x].name, max(kinds)))
        deps[inst.name] = tuple(mine)
    return program.map_instructions(lambda i: replace(i, deps=deps[i.name]))


def generated_deletions(count: int) -> None:
    found: list[tuple[int, int, int]] = []

    @seed(2024)
    @settings(max_examples=count * 6, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(programs(deps="none", max_loops=0, min_instructions=3, max_instructions=10, opaque=False))
    def collect(program: Program) -> None:
        if len(found) >= count:
            return
        program = _conflict_deps(program)
        if not check_program(program).race_free:
            return
        for inst, _ in program.instructions():
            for dep in inst.deps:
                if dep.kind != EdgeKind.FLOW:
                    continue
                racy = _without(program, inst.name, dep)
                if _raw_races(racy):
                    has_outputs = any(t.role == "output" for t in program.tensors.values())
                    found.append((*_witness(racy), has_outputs))
                    return

    collect()
    n = len(found)
    with_outputs = [f for f in found if f[2]]
    by_outputs = sum(1 for f in found if f[0])
    by_tensors = sum(1 for f in found if f[1])
    print(f"generated straight-line programs, one RAW wait deleted: {n} racy programs "
          f"({len(with_outputs)} with an output tensor), {len(SEEDS)} runs each")
    print(f"  witnessed by an output difference: {by_outputs}/{n} programs "
          f"({sum(1 for f in with_outputs if f[0])}/{len(with_outputs)} of those with outputs); "
          f"runs per witnessed program {sum(f[0] for f in found) / max(by_outputs, 1):.1f}/{len(SEEDS)}")
    print(f"  witnessed by any tensor's final contents: {by_tensors}/{n} programs; "
          f"runs per witnessed program {sum(f[1] for f in found) / max(by_tensors, 1):.1f}/{len(SEEDS)}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("programs", nargs="?", type=int, default=60, help="generated programs (default 60)")
    count = parser.parse_args().programs
    example_deletions()
    generated_deletions(count)
