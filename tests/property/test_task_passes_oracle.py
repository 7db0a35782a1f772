"""The task passes against the brute-force oracle on generated programs.

Contract of the dependence pass (default): once its deps, demotions and MANUAL scopes are in,
the program has no race the all-AUTO program (directions only) does not have.  The seed
(``faithful=true``) breaks that on some programs; the oracle must see it.
"""

from __future__ import annotations

import pytest

from neuronsim.passes.pipeline import PassContext
from neuronsim.passes.tasks import (
    DEFAULT_TASK_PIPELINE, FAITHFUL_TASK_PIPELINE, AutoDeriveTaskDependencies, compile_tasks, derive_directions,
)

from neuronsim_tests.task_oracle import races, unroll_tasks
from neuronsim_tests.task_programs import random_task_program

SEEDS = range(120)


def _extra_races(program, spec):
    """Races of the compiled program that the all-AUTO program does not have, over trip counts 0-3."""
    baseline, compiled = derive_directions(program), compile_tasks(program, spec)[0]
    for n in range(4):
        before = {(a.index, b.index) for a, b, _ in races(unroll_tasks(baseline, {"n": n}))}
        after = [(a.call, b.call, kind) for a, b, kind in races(unroll_tasks(compiled, {"n": n}))
                 if (a.index, b.index) not in before]
        if after:
            return n, after
    return None


@pytest.mark.parametrize("chunk", range(4))
def test_the_default_analysis_never_adds_a_race(chunk):
    for seed in SEEDS[chunk::4]:
        found = _extra_races(random_task_program(seed), DEFAULT_TASK_PIPELINE)
        assert found is None, f"seed {seed}: with n={found[0]} the compiled program races: {found[1][:3]}"


def test_the_oracle_sees_the_seeds_holes():
    lossy = [seed for seed in SEEDS if _extra_races(random_task_program(seed), FAITHFUL_TASK_PIPELINE)]
    assert len(lossy) >= 5, lossy


def test_with_the_switch_off_nothing_changes():
    for seed in SEEDS[:40]:
        program = derive_directions(random_task_program(seed))
        assert AutoDeriveTaskDependencies(analyze_auto_scopes=False).apply(program, PassContext()) is program
