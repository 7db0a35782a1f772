"""The task race checker against the brute-force oracle (:mod:`tests.task_oracle`).

With the TensorMap deciding overlaps on bytes (the oracle's assumption), the checker's races
over the unrolled graph are exactly the oracle's pairs (the kind of a pair whose tasks touch
the bytes through several arguments is one of them, tested per rule in the unit tests) (it finds
every pair, not only a first one per location), the orchestrator's edges order exactly what the
oracle's waits order, and every simulated run records the same edges, keeps them and gives the
same races.  Programs of every construct the generator draws; all-AUTO, compiled, and the seed's compiled programs.
"""

from __future__ import annotations

import pytest

from neuronsim.machine.sim.runtime import simulate_tasks
from neuronsim.machine.sim.tensormap import task_graph
from neuronsim.machine.tasks.orchestrator import unroll_task_program
from neuronsim.passes.tasks import FAITHFUL_TASK_PIPELINE, compile_tasks, derive_directions
from neuronsim.verify.tasks.check import check_task_program, check_task_trace, trace_violations

from neuronsim_tests.task_oracle import races, unroll_tasks
from neuronsim_tests.task_programs import random_task_program


def _closure(waits) -> list[int]:
    before: list[int] = []
    for ws in waits:
        mask = 0
        for w in ws:
            mask |= before[w] | (1 << w)
        before.append(mask)
    return before


@pytest.mark.parametrize("chunk", range(3))
def test_checker_runtime_and_oracle_agree(chunk):
    for seed in range(chunk, 90, 3):
        program = random_task_program(seed)
        for compiled in (derive_directions(program), compile_tasks(program)[0],
                         compile_tasks(program, FAITHFUL_TASK_PIPELINE)[0]):
            for n in (0, 2, 3):
                run = unroll_tasks(compiled, {"n": n})
                expected = {(a.index, b.index) for a, b, _ in races(run)}
                report = check_task_program(compiled, {"n": n}, exact_overlap=True, max_races=10**6)
                assert report.pairs() == expected and report.total_races == len(expected), (seed, n)
                graph = task_graph(unroll_task_program(compiled, {"n": n}), exact=True)
                assert _closure([g.fan_in for g in graph]) == _closure([i.waits for i in run.instances])
                trace = simulate_tasks(compiled, {"n": n}, seed=n, exact_overlap=True)
                assert trace_violations(trace) == []
                assert check_task_trace(trace, max_races=10**6).pairs() == report.pairs()
