"""The seed's opcode gates (``x-opcode``), ``addDependenciesAmongSchedulingUnits`` and the
literal ``early_stop=matmul`` walk of ``anti-deps`` (unsound: the racing case)."""

from __future__ import annotations

import dataclasses

import pytest

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.formats.program_json import dumps_program, loads_program
from neuronsim.machine.ir.program import Dep, Instruction, Loop, frozen_mapping
from neuronsim.machine.model.opcodes import opcode_of
from neuronsim.passes.build_fdeps import unit_dependencies
from neuronsim_tests.passes_kit import acc, compiled, dep_set, deps_of, ins, loop, prog, ps, sb
from neuronsim.verify.racecheck import check_program


def with_opcode(inst: Instruction, opcode: int) -> Instruction:
    return dataclasses.replace(inst, extras=frozen_mapping({**inst.extras, "x-opcode": opcode}))


# -- x-opcode ------------------------------------------------------------------------------------
def test_opcode_comes_from_x_opcode_else_the_op_name():
    assert opcode_of(ins("m", "pe", "matmul")) == 7 and opcode_of(ins("t", "pe", "transpose")) == 9
    assert opcode_of(ins("a", "act", "activation")) == 4 and opcode_of(ins("c", "act", "tensor_copy")) is None
    assert opcode_of(with_opcode(ins("c", "act", "tensor_copy"), 41)) == 41


def test_x_opcode_round_trips_and_a_bad_one_is_located():
    p = prog([sb("t")], with_opcode(ins("w", "dve", "memset", writes=["t"]), 23))
    assert opcode_of(loads_program(dumps_program(p)).instruction_map()["w"]) == 23
    bad = dumps_program(p).replace('"x-opcode": 23', '"x-opcode": "ten"')
    with pytest.raises(ProgramError, match=r"body\[0\]\.x-opcode: expected a BIR opcode"):
        loads_program(bad)


# -- op 41: make_linear_dependencies skips the reader ----------------------------------------------
def _write_then_read(opcode: int | None):
    reader = ins("r", "act", "tensor_copy", reads=["t"], writes=["u"])
    return prog([sb("t"), sb("u", offset=256)], ins("w", "dve", "memset", writes=["t"]),
                with_opcode(reader, opcode) if opcode is not None else reader)


def test_an_op_41_reader_gets_no_flow_dep_as_in_the_seed():
    out, ctx = compiled(_write_then_read(41), "build-fdeps")
    assert deps_of(out, "r") == set() and ctx.stats["build-fdeps"].get("raw", 0) == 0
    # the seed's quirk is unsound in our model: the read is real and now races
    assert [(r.kind, r.first, r.second) for r in check_program(out).races] == [("RAW", "w", "r")]
    off, _ = compiled(_write_then_read(41), "build-fdeps{opcodes=false}")
    assert deps_of(off, "r") == {("w", "flow", False)}
    other, _ = compiled(_write_then_read(40), "build-fdeps")
    assert deps_of(other, "r") == {("w", "flow", False)}


# -- op 10 / 23: make_reduction_sequence returns when the first accessor has one ---------------------
def _reduction(first_opcode: int | None, gate_on: str = "a0"):
    even = acc("acc", pattern=[[2, 32]])
    body = [ins("a0", "dve", "tensor_tensor", reads=["x", "x"], writes=[even], group="g", op="add"),
            ins("a1", "pool", "tensor_tensor", reads=["x", "x"], writes=[even], group="g", op="add")]
    if first_opcode is not None:
        body = [with_opcode(i, first_opcode) if i.name == gate_on else i for i in body]
    return prog([sb("acc"), sb("x", offset=256)], *body)


@pytest.mark.parametrize("opcode", [10, 23])
def test_a_first_accessor_of_opcode_10_or_23_turns_the_reduction_sequence_off(opcode):
    def reduction_edges(program, options=""):
        _, ctx = compiled(program, f"build-fdeps{{groups=false{options}}}", record=True)
        return {k for k, v in ctx.provenance.items() if "fdeps:reduction" in v}

    assert reduction_edges(_reduction(None)) == {("a1", "a0", False)}
    assert reduction_edges(_reduction(opcode)) == set()
    assert reduction_edges(_reduction(opcode), ",opcodes=false") == {("a1", "a0", False)}
    assert reduction_edges(_reduction(opcode, gate_on="a1")) == {("a1", "a0", False)}  # not the first
    # sound after anti-deps: the writes it no longer chains are ordered WAW
    out, _ = compiled(_reduction(opcode), "build-fdeps{groups=false},anti-deps")
    assert deps_of(out, "a1") == {("a0", "output", False)} and check_program(out).race_free


# -- addDependenciesAmongSchedulingUnits ---------------------------------------------------------------
def _units():
    t = [sb("t"), sb("u", offset=256), sb("v", offset=512)]
    return prog(t,
                loop("a", 2, ins("wa", "dve", "memset", writes=["t"])),
                loop("b", 2, ins("wb", "pool", "memset", writes=["v"])),
                ins("mid", "act", "tensor_copy", reads=["v"], writes=[acc("u", offset=8, pattern=[[1, 1]])]),
                loop("c", 2, loop("ci", 2, ins("rc", "act", "tensor_copy", reads=["t"], writes=["u"]))),
                loop("d", 2,
                     ins("rd", "pool", "tensor_copy", reads=["v"], writes=[acc("u", offset=4, pattern=[[1, 1]])])))


def test_units_option_writes_the_order_among_sibling_loops():
    out, ctx = compiled(_units(), "build-fdeps{units=true}")
    assert {n.name: n.extras.get("x-unit-deps") for n, _ in out.walk() if isinstance(n, Loop)} == {
        "a": None, "b": None, "c": ["a"], "ci": None, "d": ["b"]}
    assert ctx.stats["build-fdeps"]["unit-deps"] == 2
    assert dep_set(out) == dep_set(compiled(_units(), "build-fdeps")[0])  # the instruction deps are the same
    plain, _ = compiled(_units(), "build-fdeps")
    assert not any("x-unit-deps" in n.extras for n, _ in plain.walk() if isinstance(n, Loop))
    assert loads_program(dumps_program(out)) == out


def test_a_dep_loop_carried_at_the_units_level_does_not_order_them():
    inner_a = Instruction("x", "dve", "op")
    inner_b = Instruction("y", "act", "op", deps=(Dep("x", loop_carried=True),))
    program = prog([], loop("p", 3, loop("a", 2, inner_a), loop("b", 2, inner_b)))
    assert unit_dependencies(program) == {}
    plain = prog([], loop("p", 3, loop("a", 2, inner_a), loop("b", 2, dataclasses.replace(inner_b, deps=(Dep("x"),)))))
    assert unit_dependencies(plain) == {"b": ("a",)}


# -- anti-deps: the seed's literal walk and the rule we keep under its own name ------------------------------
def _act_read_then_matmul_read_then_write():
    """``t`` read by an ACT op, then by a matmul (PE), then overwritten: the write must wait
    for both reads, which no rule orders between themselves."""
    return prog([sb("t"), sb("x", offset=256), sb("u", offset=512), ps("p", bank=0)],
                ins("r_act", "act", "activation", reads=["t"], writes=["u"]),
                ins("r_mm", "pe", "matmul", reads=["t", "x"], writes=["p"]),
                ins("w", "dve", "memset", writes=["t"]))


def test_the_seeds_literal_walk_races_a_write_with_an_act_read_before_a_matmul_read():
    literal, _ = compiled(_act_read_then_matmul_read_then_write(), "anti-deps{early_stop=matmul}")
    assert deps_of(literal, "w") == {("r_mm", "anti", False)}
    assert [(r.kind, r.first, r.second) for r in check_program(literal).races] == [("WAR", "r_act", "w")]
    for kept in ("pe-order", "component"):
        out, _ = compiled(_act_read_then_matmul_read_then_write(), f"anti-deps{{early_stop={kept}}}")
        assert deps_of(out, "w") == {("r_act", "anti", False), ("r_mm", "anti", False)}
        assert check_program(out).race_free


def test_pe_order_drops_earlier_matmul_reads_only_and_the_literal_walk_skips_the_last_write():
    p = prog([sb("t"), sb("x", offset=256), sb("u", offset=512), ps("p", bank=0), ps("q", bank=1)],
             ins("w0", "act", "memset_like", writes=["t"]),
             ins("r_act", "act", "activation", reads=["t"], writes=["u"]),
             ins("m0", "pe", "matmul", reads=["t", "x"], writes=["p"]),
             ins("m1", "pe", "matmul", reads=["t", "x"], writes=["q"]),
             ins("w", "dve", "memset", writes=["t"]))
    pe, _ = compiled(p, "anti-deps{early_stop=pe-order,skip_ordered=false}")
    assert deps_of(pe, "w") == {("w0", "output", False), ("r_act", "anti", False), ("m1", "anti", False)}
    literal, _ = compiled(p, "anti-deps{early_stop=matmul,skip_ordered=false}")
    assert deps_of(literal, "w") == {("m1", "anti", False)}
