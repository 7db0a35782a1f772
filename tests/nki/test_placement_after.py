"""The identity placement resumed (``place_apart_after``): placing only the tensors declared
after an earlier placement gives what a placement from scratch gives, and it starts from
scratch where the earlier tensors' bytes would move (a group joined, a rotation, a changed
declaration).  A trace reading device values places its program so far at every read."""

from __future__ import annotations

from dataclasses import replace

import pytest

from neuronsim.machine.ir.program import MemoryKind, Program, Rotation, Tensor
from neuronsim.machine.nki.alloc import ALLOC_GROUP_KEY
from neuronsim.verify.nki.placement import place_apart, place_apart_after

SBUF, PSUM, DRAM = MemoryKind.SBUF, MemoryKind.PSUM, MemoryKind.DRAM


def _tensors() -> list[Tensor]:
    """Every kind place_apart places: DRAM arguments and an alias group, virtual SBUF and PSUM
    tiles of odd sizes, and two directly allocated blocks of one kernel allocation."""
    return [
        Tensor("x", DRAM, "float32", (256, 3), role="input"),
        Tensor("a", SBUF, "bfloat16", (128, 100)),
        Tensor("g0", SBUF, "float32", (128, 8), partition=0, offset=512, extras={ALLOC_GROUP_KEY: "g"}),
        Tensor("p", PSUM, "float32", (128, 700)),
        Tensor("alias", DRAM, "float32", (4, 4), alias="G"),
        Tensor("g1", SBUF, "float32", (128, 8), partition=0, offset=1024, extras={ALLOC_GROUP_KEY: "g"}),
        Tensor("b", SBUF, "float32", (64, 33)),
        Tensor("y", DRAM, "float32", (256, 3), role="output"),
        Tensor("q", PSUM, "float32", (128, 2)),
        Tensor("h0", SBUF, "float32", (128, 2), partition=0, offset=0, extras={ALLOC_GROUP_KEY: "h"}),
    ]


def _program(tensors: list[Tensor]) -> Program:
    return Program({t.name: t for t in tensors})


@pytest.mark.parametrize("cut", range(11))
def test_tensors_placed_after_a_prefix_sit_where_a_placement_from_scratch_puts_them(cut):
    tensors = _tensors()
    before = place_apart_after(_program(tensors[:cut]), None)
    after = place_apart_after(_program(tensors), before)
    whole = place_apart(_program(tensors))
    # a group's later member moves the group's placement: from scratch then (g1 joins g0's group)
    assert after.resumed == (cut not in (3, 4, 5))
    assert dict(after.program.tensors) == dict(whole.tensors) and after.program.machine == whole.machine
    again = place_apart_after(_program(tensors), after)  # nothing new: every tensor kept
    assert again.resumed and dict(again.program.tensors) == dict(whole.tensors)


def test_a_changed_declaration_or_a_rotation_places_from_scratch():
    tensors = _tensors()
    before = place_apart_after(_program(tensors[:4]), None)
    amended = [replace(tensors[1], extras={"x-note": 1}), *tensors[2:4]]
    changed = place_apart_after(_program([tensors[0], *amended, *tensors[4:]]), before)
    assert not changed.resumed
    spun = Tensor("r", SBUF, "float32", (128, 4), rotate=Rotation("i", 2, 16))
    rotating = place_apart_after(_program([*tensors[:4], spun]), before)
    assert not rotating.resumed and rotating.rotating
    assert dict(rotating.program.tensors) == dict(place_apart(_program([*tensors[:4], spun])).tensors)
    assert not place_apart_after(_program([*tensors[:4], spun, tensors[4]]), rotating).resumed
