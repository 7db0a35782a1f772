"""Deps to instruction ids by the name objects (``deptable.positions_of``, issue 31): a dep
that names its instruction by the very string of the instruction's name is matched by identity,
one naming it by an equal string by value, and an unknown name is still the one-line error;
the JSON loader gives deps the instructions' own name objects; a body without loops lays out
its access slots by the four placed fields with the same templates as by all six."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from neuronsim.machine.formats.program_json import parse_program
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import Access, Dep, Instruction, Program
from neuronsim.machine.order.deptable import dep_table, positions_of
from neuronsim.machine.order.slots import lay_out_slots


def _copy(name: str) -> str:
    copied = "".join(list(name))  # an equal string that is another object
    assert copied == name and copied is not name
    return copied


def test_identical_and_equal_names_resolve_alike():
    rng = random.Random(3)
    names = [f"i{k}" for k in range(200)]
    picks = [rng.randrange(200) for _ in range(500)]
    wanted = [names[k] if rng.random() < 0.5 else _copy(names[k]) for k in picks]
    looked_up = []

    def table():
        looked_up.append(1)
        return {n: k for k, n in enumerate(names)}

    assert positions_of(names, wanted, table).tolist() == picks
    assert looked_up == [1]  # built once, for the equal strings only
    assert positions_of(names, [names[k] for k in picks], table).tolist() == picks
    assert looked_up == [1]  # all identical: no table


def test_an_unknown_name_is_a_key_error():
    with pytest.raises(KeyError):
        positions_of(["a", "b"], ["b", "c"], lambda: {"a": 0, "b": 1})
    with pytest.raises(KeyError):
        positions_of([], ["c"], lambda: {})


def test_dep_table_of_a_program_with_copied_names_and_an_unknown_one():
    body = [Instruction(f"i{k}", "act", "op") for k in range(4)]
    body.append(Instruction("w", "dve", "op", deps=(Dep("i2"), Dep(_copy("i0")), Dep(body[3].name))))
    assert dep_table(Program({}, tuple(body))).former.tolist() == [2, 0, 3]
    bad = Program({}, (*body, Instruction("x", "pe", "op", deps=(Dep("nowhere"),))))
    with pytest.raises(ProgramError, match=r"x\.deps: waits on unknown instruction 'nowhere'"):
        dep_table(bad)


def test_the_loader_gives_deps_the_instructions_name_objects():
    doc = {"format": "neuronsim.program/1", "tensors": {},
           "body": [{"name": "second", "engine": "act", "op": "op", "deps": [{"on": "first"}]},
                    {"name": "first", "engine": "dve", "op": "op", "deps": [{"on": "second"}]}]}
    program = parse_program(json.loads(json.dumps(doc)), validate=False)
    b, a = program.body
    assert b.deps[0].on is a.name and a.deps[0].on is b.name


def test_a_flat_layout_by_placed_fields_equals_the_full_one():
    rng = random.Random(5)
    accesses = [Access(f"t{rng.randrange(4)}", (0, rng.choice([32, 64]), 1) if rng.random() < 0.5 else None,
                       rng.choice([None, 0, 128]), rng.choice([None, ((1, 64),)])) for _ in range(300)]
    body = [Instruction(f"i{k}", "dve", "op", tuple(rng.sample(accesses, rng.randrange(3))),
                        (rng.choice(accesses),)) for k in range(200)]
    flat, full = lay_out_slots(body, can_move=False), lay_out_slots(body)
    assert np.array_equal(flat.slot_t, full.slot_t) and flat.accesses == full.accesses
    assert len(flat.accesses) < sum(len(i.reads) + len(i.writes) for i in body)  # values were shared


def test_chunks_give_the_same_positions(monkeypatch):
    from neuronsim.machine.order import deptable
    rng = random.Random(7)
    names = [f"n{k}" for k in range(50)]
    picks = [rng.randrange(50) for _ in range(333)]
    wanted = [names[k] if k % 3 else _copy(names[k]) for k in picks]
    table = lambda: {n: k for k, n in enumerate(names)}  # noqa: E731
    whole = positions_of(names, wanted, table).tolist()
    monkeypatch.setattr(deptable, "_CHUNK", 16)
    assert positions_of(names, wanted, table).tolist() == whole == picks


def test_a_name_given_twice_means_its_last_instruction_either_way():
    name = "twice"
    names = ["a0", name, "a2", name, "a4"]
    table = lambda: dict(zip(names, range(len(names))))  # noqa: E731
    assert positions_of(names, [name, _copy(name)], table).tolist() == [3, 3]
