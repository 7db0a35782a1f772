"""The search for the SBUF ring groups to make plain (``alloc_place.fit_rings``), against a
placement that fits when the ring bytes left are under a budget: the fewest groups, the
cheapest swapped in last, and a bounded number of placements (a kernel that spilled searched
every group in every spill round, quadratic in the groups: Autocomp's attention spent minutes
in ``alloc``, a probe)."""

from __future__ import annotations

from itertools import combinations
from types import SimpleNamespace

import pytest

from neuronsim.machine.ir.program import MemoryKind
from neuronsim.passes.alloc_place import ALONE_TRIED, SbufFull, fit_rings
from neuronsim.passes.analysis.lifetimes import Life


def _kernel(group_bytes: list[int]):
    """One ring tensor per group (its own loop), ``bytes`` a partition, two slots."""
    tensors = {f"t{k}": SimpleNamespace(memory=MemoryKind.SBUF, shape=(128, b), dtype="uint8", bytes_per_partition=b)
               for k, b in enumerate(group_bytes)}
    lives = {name: Life(0, 9, f"L{k}", 2, (0, 1)) for k, name in enumerate(tensors)}
    return SimpleNamespace(tensors=tensors), lives


def _placement(program, budget: int, calls: list):
    def place(lives):
        calls.append(lives)
        used = sum(program.tensors[n].bytes_per_partition * life.slots for n, life in lives.items())
        if used > budget:
            raise SbufFull("tensors", f"{used} bytes")
        return {n: life.slots for n, life in lives.items()}
    return place


def _fewest_plain(group_bytes: list[int], budget: int) -> int | None:
    """Brute force: the fewest groups whose loss (one slot less each) brings the rings under budget."""
    total = 2 * sum(group_bytes)
    return next((k for k in range(len(group_bytes) + 1)
                 if any(total - sum(c) <= budget for c in combinations(group_bytes, k))), None)


@pytest.mark.parametrize("seed", range(12))
def test_the_fewest_groups_are_made_plain_in_few_placements(seed):
    import random

    rng = random.Random(seed)
    group_bytes = [rng.choice([64, 128, 256, 512, 1024, 2048]) for _ in range(rng.randint(2, 9))]
    budget = rng.randint(sum(group_bytes), 2 * sum(group_bytes) - 1)
    program, lives = _kernel(group_bytes)
    calls: list = []
    placed, used, made_plain = fit_rings(program, lives, _placement(program, budget, calls))
    assert made_plain == _fewest_plain(group_bytes, budget)
    assert sum(program.tensors[n].bytes_per_partition * s for n, s in placed.items()) <= budget
    assert sum(life.slots == 1 for life in used.values()) == made_plain
    if made_plain == 1:  # the cheapest single group that makes room
        cheapest = min(b for b in group_bytes if 2 * sum(group_bytes) - b <= budget)
        assert [program.tensors[n].bytes_per_partition for n, life in used.items() if life.slots == 1] == [cheapest]
    groups = len(group_bytes)
    assert len(calls) <= 2 + groups.bit_length() + 2 * groups, len(calls)


def test_when_every_group_plain_does_not_fit_a_few_placements_say_so():
    program, lives = _kernel([512] * 300)
    calls: list = []
    with pytest.raises(SbufFull):
        fit_rings(program, lives, _placement(program, 300 * 512 - 1, calls))
    # every ring, the cheapest groups plain alone, every group plain: then spills make the room (was 300 * 301 / 2 + 1)
    assert len(calls) == 1 + ALONE_TRIED + 1


def test_one_group_plain_may_fit_where_every_group_plain_does_not():
    # a plain tile holds its bytes over its whole hull: the published Mamba v3 at seq 8192 fits
    # with its cheapest fitting group plain and not with all of them
    program, lives = _kernel([64, 128, 256, 512])
    calls: list = []

    def place(trial):
        calls.append(trial)
        plain = sorted(program.tensors[n].bytes_per_partition for n, life in trial.items() if life.slots == 1)
        if plain != [128]:
            raise SbufFull("tensors", "full")
        return {}

    _placed, used, made_plain = fit_rings(program, lives, place)
    assert made_plain == 1 and used["t1"].slots == 1 and len(calls) == 3


def test_past_the_groups_tried_alone_the_largest_alone_is_still_found():
    # more groups than are tried alone, the largest of them enough by itself: one group plain
    program, lives = _kernel([64] * (ALONE_TRIED + 8) + [4096])
    total = 2 * sum(program.tensors[n].bytes_per_partition for n in lives)
    calls: list = []
    _placed, used, made_plain = fit_rings(program, lives, _placement(program, total - 4096, calls))
    assert made_plain == 1 and [n for n, life in used.items() if life.slots == 1] == [f"t{ALONE_TRIED + 8}"]
