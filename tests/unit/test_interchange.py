"""``interchange-loops``: legality from direction vectors, checked against a brute-force
instance oracle, and every interchange made confirmed by the sequential result, the race
checker and the simulator."""

from __future__ import annotations


import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import Access, Instruction, Loop, Program
from neuronsim.machine.order.unroll import unroll
from neuronsim.machine.formats.validate import validate_program
from neuronsim.passes.interchange_loops import InterchangeLoops, interchange, interchange_hazards, interchange_loops
from neuronsim.passes.pipeline import PassContext, parse_pipeline
from neuronsim_tests.fusion_kit import RNG_OPS, cells, check_fused, copy, sbuf, write
from neuronsim_tests.vacuity import nonvacuous, tally

GRID = {"t": sbuf("t", (64, 64), partition=0, offset=0), "u": sbuf("u", (64, 64), partition=0, offset=256)}


def at(tensor: str, offset: int, row: int = 8, col: int = 1, width: int = 1) -> Access:
    """Element ``offset + 8 o + i`` of every partition (an 8 x 8 grid per partition)."""
    return Access(tensor, offset=offset, pattern=((1, width),), per_iteration=(("o", row), ("i", col)))


def nest(*body, trips=(4, 4)) -> Program:
    program = Program(GRID, (Loop("o", trips[0], (Loop("i", trips[1], tuple(body)),)),))
    validate_program(program)
    return program


def swapped(program: Program) -> list[tuple[str, str]]:
    """Brute force: conflicting instance pairs (bytes one writes, or one engine's random
    generator) whose order by ``(o, i)`` and by ``(i, o)`` differ."""
    insts = list(unroll(program))

    def key(inst, order):
        it = inst.iteration
        return (it["o"], it["i"]) if order == "oi" else (it["i"], it["o"])

    def touches(inst):
        return [(w, cells(program.tensors[a.tensor], a, inst.iteration)) for a, w in inst.instr.accesses]

    found = []
    for x in insts:
        for y in insts:
            if not (key(x, "oi") < key(y, "oi") and key(x, "io") > key(y, "io")):
                continue
            rng = x.instr.op in RNG_OPS and y.instr.op in RNG_OPS and x.instr.engine == y.instr.engine
            if rng or any((wx or wy) and cx & cy for wx, cx in touches(x) for wy, cy in touches(y)):
                found.append((x.name, y.name))
    return found


def test_an_elementwise_nest_is_interchanged_and_runs_the_same():
    program = nest(copy("c", at("t", 0), at("u", 0)))
    assert interchange_hazards(program, "o") == ()
    out, (verdict,) = interchange_loops(program)
    assert verdict.done
    assert [(n.name, n.trip_count) for n, _ in out.walk() if isinstance(n, Loop)] == [("i", 4), ("o", 4)]
    check_fused(program, out)


def test_a_dependence_with_direction_less_greater_forbids_it():
    # s[o, i] reads t[o - 1, i + 1], written by w one outer iteration earlier: direction (<, >)
    program = nest(write("w", at("t", 7)), copy("s", at("t", 0), at("u", 0)), trips=(3, 3))
    (hazard,) = interchange_hazards(program, "o")
    assert hazard.kind == "direction" and "(<, >) on (o, i)" in hazard.message
    assert swapped(program)
    out, (verdict,) = interchange_loops(program)
    assert out is program and not verdict.done


def test_random_draws_and_non_nests_refuse():
    program = nest(Instruction("r", "pool", "random", writes=(at("t", 0),)))
    assert [h.kind for h in interchange_hazards(program, "o")] == ["rng-state"]
    with pytest.raises(ProgramError, match="not a perfect nest"):
        interchange(program, "i")


def test_pass_in_a_pipeline():
    (p,) = parse_pipeline("interchange-loops{only=o}")
    assert p == InterchangeLoops(frozenset({"o"}))
    ctx = PassContext()
    out = p.apply(nest(copy("c", at("t", 0), at("u", 0))), ctx)
    assert ctx.stats["interchange-loops"] == {"interchanged": 1, "refused": 0} and out.body[0].name == "i"


@st.composite
def nests(draw):
    """A perfect nest ``o`` x ``i`` (trips 1-3) of one to three instructions whose tiles move
    with both indices (row strides 4 or 8, column strides -1..2), reading and writing ``t``
    and ``u``."""
    trips = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))

    def access() -> Access:
        row, col = draw(st.sampled_from([4, 8])), draw(st.integers(-1, 2))
        lo = max(0, -col * (trips[1] - 1))
        hi = 64 - 1 - row * (trips[0] - 1) - max(0, col * (trips[1] - 1))
        return Access(draw(st.sampled_from(["t", "u"])), offset=draw(st.integers(lo, min(hi, lo + 12))),
                      pattern=((1, 1),), per_iteration=(("o", row), ("i", col)))

    body = []
    for k in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["write", "copy", "copy", "random"]))
        if kind == "write":
            body.append(write(f"x{k}", access()))
        elif kind == "copy":
            body.append(copy(f"x{k}", access(), access()))
        else:
            body.append(Instruction(f"x{k}", "pool", "random", writes=(access(),)))
    return nest(*body, trips=trips)


@nonvacuous(legal=5, illegal=5)
@settings(max_examples=100)
@given(nests())
def test_interchange_legality_is_exact_and_the_result_runs_the_same(program):
    found = swapped(program)
    hazards = interchange_hazards(program, "o")
    assert (not hazards) == (not found), (found, [h.message for h in hazards])
    if hazards:
        tally("illegal")
        return
    check_fused(program, interchange(program, "o"))
    tally("legal")
