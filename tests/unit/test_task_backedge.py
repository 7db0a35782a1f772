"""Issue item 5: the seed's loop back-edge hole, and the default analysis that closes it.

The seed walks each loop body once, so an access late in iteration i is never compared with an
access early in iteration i+1; yet the whole-layer MANUAL conversion switches runtime tracking
off.  The case below (``examples/tasks/backedge_hole.json``): a loop with a runtime trip count
whose body produces ``x`` and then reads it.  The seed derives only ``consume -> produce`` of one
iteration and converts the whole body to MANUAL, so ``produce`` of iteration i+1 may overwrite
``x`` while ``consume`` of iteration i still reads it (WAR), and two ``produce`` may write it at
once (WAW).  The brute force below unrolls the program and checks every conflicting pair.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from neuronsim.machine.tasks.format import load_tasks
from neuronsim.passes.tasks import analyze_dependencies, derive_directions

from neuronsim_tests.task_oracle import races, unroll_tasks
from neuronsim_tests.task_rules_kit import compiled, deps, scopes

HOLE = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "backedge_hole.json"


def _program():
    return load_tasks(str(HOLE))


def _conflicting_pairs(run):
    """Every (earlier, later, kind) pair of instances touching one byte, one writing (by brute force)."""
    from neuronsim.machine.tasks.task_geometry import overlaps

    out = []
    for b in run.instances:
        for a in run.instances[:b.index]:
            for ra, wa in a.accesses:
                for rb, wb in b.accesses:
                    if (wa or wb) and overlaps(ra, rb):
                        out.append((a.index, b.index))
    return sorted(set(out))


def _ordered(run, a: int, b: int) -> bool:
    """Is there a chain of waits from instance b back to instance a?"""
    stack, seen = [b], set()
    while stack:
        node = stack.pop()
        if node == a:
            return True
        if node not in seen:
            seen.add(node)
            stack.extend(run.instances[node].waits)
    return False


def test_the_seed_converts_the_whole_body_and_loses_the_cross_iteration_orders():
    seed = compiled(_program(), faithful=True)
    assert set(scopes(seed).values()) == {"manual/compiler"}
    assert deps(seed) == {"produce": [], "consume": ["tid_p"]}
    run = unroll_tasks(seed, {"n": 3})
    names = [i.call for i in run.instances]
    assert names == ["produce", "consume"] * 3
    lost = [(a, b) for a, b in _conflicting_pairs(run) if not _ordered(run, a, b)]
    # produce(1) vs consume(0) and produce(0), and so on: the orders the back-edge carried.
    assert (1, 2) in lost and (0, 2) in lost and (3, 4) in lost
    assert {(names[a], names[b]) for a, b in lost} == {("consume", "produce"), ("produce", "produce"),
                                                      ("produce", "consume")}


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_the_default_adds_the_back_edges_and_keeps_the_conversion(n):
    sound = compiled(_program())
    assert set(scopes(sound).values()) == {"manual/compiler"}
    # produce's two edges come from the shifted walk only: carried in loop steps (the previous
    # iteration's instances); consume's tid_p is also this iteration's producer: plain.
    assert deps(sound) == {"produce": ["tid_p^steps", "tid_c^steps"], "consume": ["tid_p", "tid_c^steps"]}
    run = unroll_tasks(sound, {"n": n})
    assert all(_ordered(run, a, b) for a, b in _conflicting_pairs(run))
    assert races(run) == []


def test_the_missing_edge_is_produce_after_the_previous_consume():
    """The edge the seed lacks, located: produce waits for consume of the previous iteration."""
    seed = analyze_dependencies(derive_directions(_program()), faithful=True)
    sound = analyze_dependencies(derive_directions(_program()))
    assert [d.on for d in seed.calls["produce"].edges] == []
    shifted = [n for n in sound.calls["produce"].notes if n.previous_iteration]
    assert {(n.prior, n.outcome, n.on) for n in shifted} == {("produce", "edge", "tid_p"), ("consume", "edge", "tid_c")}
    assert {h.value for n in shifted if n.prior == "consume" for h in n.hazards} == {"WAR"}
