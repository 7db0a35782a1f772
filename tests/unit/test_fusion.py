"""The ``fuse-loops`` pass: the transformation, its refusals, and properties checked against a
brute-force reorder oracle, the race checker and the simulator."""

from __future__ import annotations

import dataclasses
import json

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.formats.program_json import dumps_program, loads_program
from neuronsim.machine.ir.program import Access, Dep, Instruction, Loop, Program
from neuronsim.machine.model.optable import OP_TABLE
from neuronsim.machine.order.unroll import unroll
from neuronsim.machine.formats.validate import validate_program
from neuronsim.passes.fuse_loops import FuseLoops, check_fusion, fuse_loops, fuse_pair, fusion_hazards
from neuronsim.passes.pipeline import PassContext, parse_pipeline, run_pipeline
from neuronsim.verify.cli import cli
from neuronsim_tests.fusion_kit import RNG_OPS, TENSORS, cells, check_fused, copy, sbuf, tile, write















def two_loops(first: tuple, second: tuple, trips=(3, 3), tensors=TENSORS, names=("a", "b")) -> Program:
    program = Program(tensors, (Loop(names[0], trips[0], first), Loop(names[1], trips[1], second)))
    validate_program(program)
    return program


# -- the transformation ----------------------------------------------------------------------
def test_fused_loop_runs_both_bodies_with_renamed_iteration_keys():
    w = write("w", tile("t", "a", 0))
    r = dataclasses.replace(copy("r", tile("t", "b", 0), tile("u", "b", 0)), deps=(Dep("w"),))
    tail = Instruction("tail", "dve", "tensor_copy", reads=(Access("u"),), writes=(Access("u", offset=31),),
                       deps=(Dep("r"),))
    program = Program(TENSORS, (Loop("a", 4, (w,), {"x-note": 1}), Loop("b", 4, (r,), {"x-note": 2, "x-b": 3}), tail))
    result = fuse_loops(program)
    (verdict,) = result.verdicts
    assert (verdict.status, verdict.fused) == ("fused", "a+b")
    fused = result.program
    validate_program(fused)
    loop = fused.body[0]
    assert (loop.name, loop.trip_count, [n.name for n in loop.body]) == ("a+b", 4, ["w", "r"])
    assert [a.per_iteration for n in loop.body for a in (*n.reads, *n.writes) if a.per_iteration] == [(("a+b", 4),)] * 3
    assert dict(loop.extras) == {"x-note": 1, "x-b": 3, "x-fused-from": ["a", "b"]}
    assert fused.instruction_map()["r"].deps == (Dep("w"),) and fused.body[1] is tail
    assert loads_program(dumps_program(fused)) == fused  # the format carries the fused loop


def test_greedy_chains_and_fresh_names():
    loops = tuple(Loop(n, 2, (write("w" + n, tile("t", n, 8 * k, shift=2)),)) for k, n in enumerate("abc"))
    taken = Instruction("a+b", "dve", "memset", writes=(Access("u", pattern=((1, 1),)),))
    result = fuse_loops(Program(TENSORS, (*loops, taken)))
    assert [v.fused for v in result.verdicts] == ["a+b#2", "a+b#2+c"]
    (loop, _) = result.program.body
    assert loop.extras["x-fused-from"] == ["a", "b", "c"] and [n.name for n in loop.body] == ["wa", "wb", "wc"]


def test_inner_loops_that_become_adjacent_are_fused_too():
    def nest(outer, inner, k):
        return Loop(outer, 2, (Loop(inner, 3, (write("w" + inner, Access("t", offset=k, pattern=((1, 1),),
                                                                       per_iteration=((outer, 8), (inner, 2)))),)),))
    result = fuse_loops(Program(TENSORS, (nest("a", "ai", 0), nest("b", "bi", 1))))
    assert [v.fused for v in result.verdicts] == ["a+b", "ai+bi"]
    (outer,) = result.program.body
    (inner,) = outer.body
    assert inner.name == "ai+bi"
    assert {a.per_iteration for n in inner.body for a in n.writes} == {(("a+b", 8), ("ai+bi", 2))}
    validate_program(result.program)


def test_window_one_takes_adjacent_loops_with_compatible_trip_counts_only():
    between = Instruction("mid", "dve", "memset", writes=(Access("u", pattern=((1, 1),)),))
    a, b, c = (Loop(n, t, (write("w" + n, tile("t", n, 0, shift=0)),)) for n, t in (("a", 2), ("b", 3), ("c", 3)))
    program = Program(TENSORS, (a, between, b, Loop("d", 2, (write("wd", tile("u", "d", 0)),)), c))
    result = fuse_loops(program, window=1)
    assert [v.fused for v in result.verdicts] == []  # b, d and d, c share no factor; a, b not adjacent
    assert check_fusion(result.program, "b", "d").status == "trip counts differ"
    # the seed's window (8) also tries a + d (neither can move over what lies between) and
    # b + c (c hoisted over d, then a swapped write-after-write)
    wide = fuse_loops(program)
    assert [(v.first, v.second, v.placement, [f.kind for f in v.findings]) for v in wide.verdicts] == [
        ("a", "d", "blocked", ["intervening"]), ("b", "c", "hoist", ["def-def"])]
    assert "d cannot move up over mid (wd.writes[0] and mid.writes[0] share bytes)" in wide.verdicts[0].message
    with pytest.raises(ProgramError, match="not adjacent"):
        fuse_pair(Program(TENSORS, (a, between, Loop("b", 2, b.body))), "a", "b")
    with pytest.raises(ProgramError, match="trip counts differ"):
        fuse_pair(result.program, "b", "d")


def test_only_option_limits_fusion():
    loops = tuple(Loop(n, 2, (write("w" + n, tile("t", n, 8 * k, shift=2)),)) for k, n in enumerate("abc"))
    result = fuse_loops(Program(TENSORS, loops), only=frozenset({"b", "c"}))
    assert [v.fused for v in result.verdicts] == ["b+c"]


def test_only_naming_no_loop_is_the_option_s_mistake():
    """A misspelt loop in ``only=`` fused (or interchanged) nothing, silently."""
    loops = tuple(Loop(n, 2, (write("w" + n, tile("t", n, 8 * k, shift=2)),)) for k, n in enumerate("ab"))
    for spec in ("fuse-loops{only=a|nope}", "interchange-loops{only=nope}"):
        with pytest.raises(ProgramError, match=r"no loop named 'nope'; loops are \['a', 'b'\]") as raised:
            run_pipeline(Program(TENSORS, loops), spec, PassContext())
        assert raised.value.path == f"--passes.{spec.split('{')[0]}.only"


# -- refusals ---------------------------------------------------------------------------------
def test_refusals_name_both_loops_the_tensor_bytes_and_distance():
    program = two_loops((write("w", tile("t", "a", 0)),), (copy("r", tile("t", "b", 8), tile("u", "b", 0)),))
    result = fuse_loops(program)
    assert result.program is program and not result.fused
    (verdict,) = result.refused
    (finding,) = verdict.findings
    assert finding.kind == "def-use" and finding.distance == 2
    assert verdict.message == ("a + b: [STOP FUSION] negative distance dep in def-use: w[2] (loop a, w.writes[0]) "
                               "writes t, r[0] (loop b, r.reads[0]) reads it: sbuf partitions [0, 64) bytes [32, 48), "
                               "distance 2 over 3 iteration groups")


def test_write_after_write_and_write_after_read_refuse():
    waw = two_loops((write("w1", tile("t", "a", 0)),), (write("w2", tile("t", "b", 4)),))
    assert [f.kind for f in fusion_hazards(waw, "a", "b")] == ["def-def"]
    war = two_loops((copy("r", tile("t", "a", 0), tile("u", "a", 0)),), (write("w", tile("t", "b", 4)),))
    assert [f.kind for f in fusion_hazards(war, "a", "b")] == ["use-def"]


def test_shared_random_generator_refuses():
    rand = Instruction("ra", "pool", "random", writes=(tile("t", "a", 0),))
    other = Instruction("rb", "pool", "random", writes=(tile("u", "b", 0),))
    (finding,) = fusion_hazards(two_loops((rand,), (other,)), "a", "b")
    assert finding.kind == "rng-state" and finding.engine == "pool" and "[STOP FUSION]" in finding.message
    assert fusion_hazards(two_loops((rand,), (dataclasses.replace(other, engine="dve"),)), "a", "b") == ()
    assert fusion_hazards(two_loops((rand,), (other,), trips=(1, 1)), "a", "b") == ()


def test_literal_gate_refuses_what_the_relative_gate_fuses():
    program = two_loops((write("w", tile("t", "a", 0)),), (copy("r", tile("t", "b", 0), tile("u", "b", 0)),))
    assert fuse_loops(program).fused and not fuse_loops(program, gate="literal").fused


# -- the pass in a pipeline --------------------------------------------------------------------
def test_pass_runs_in_a_pipeline_and_counts():
    registry = {"fuse-loops": FuseLoops}
    (p,) = parse_pipeline("fuse-loops{gate=literal,only=a|b}", registry)
    assert p == FuseLoops("literal", frozenset({"a", "b"})) and p.spec_string() == "fuse-loops{gate=literal,only=a|b}"
    with pytest.raises(ProgramError):
        parse_pipeline("fuse-loops{gate=sideways}", registry)
    program = two_loops((write("w", tile("t", "a", 0)),), (copy("r", tile("t", "b", 0), tile("u", "b", 0)),))
    ctx = PassContext()
    fused = run_pipeline(program, [FuseLoops(), *parse_pipeline("build-fdeps")], ctx)
    assert ctx.stats["fuse-loops"] == {"fused": 1, "refused": 0}
    assert [n.name for n in fused.body] == ["a+b"] and fused.instruction_map()["r"].deps


# -- the CLI -----------------------------------------------------------------------------------
def test_loops_command_human_and_json(tmp_path):
    program = two_loops((write("w", tile("t", "a", 0)),), (copy("r", tile("t", "b", 8), tile("u", "b", 0)),))
    path = tmp_path / "p.json"
    path.write_text(dumps_program(program))
    runner = CliRunner()
    human = runner.invoke(cli, ["loops", str(path), "-v"])
    assert human.exit_code == 0
    assert "loop a: trip count 3, depth 0, parents -, niters 3" in human.output
    assert "(DEBUG) def = w.writes[0]" in human.output
    assert "[STOP FUSION] negative distance dep in def-use" in human.output
    doc = json.loads(runner.invoke(cli, ["loops", str(path), "--json"]).stdout)
    assert doc["format"] == "neuronsim.loops/1" and [g["loop"] for g in doc["loops"]] == ["a", "b"]
    assert doc["fusion"][0]["status"] == "refused" and doc["fusion"][0]["findings"][0]["distance"] == 2
    bad = runner.invoke(cli, ["loops", "-", "--json"], input='{"format": "neuronsim.program/1", "body": 3}')
    assert bad.exit_code == 2 and json.loads(bad.stdout)["format"] == "neuronsim.error/1"
    assert "expected a list" in bad.stderr


# -- properties ----------------------------------------------------------------------------------
PROPERTY_TENSORS = {"t": sbuf("t", partition=0, offset=0), "u": sbuf("u", partition=0, offset=256),
                    "v": sbuf("v", partition=0, offset=64)}  # v shares t's bytes 64..128
OPS = ["memset", "tensor_copy", "tensor_copy", "tensor_tensor", "random"]


@st.composite
def adjacent_loops(draw, nested: bool = False):
    """Loops ``a`` and ``b`` with one trip count, side by side (inside loop ``p`` when
    ``nested``), each with one or two instructions over ``t``, ``u``, ``v`` whose tiles move
    per iteration; often ``b`` reads ``a``'s first write ``d`` iterations on."""
    trip = draw(st.integers(1, 4))

    def access(loop: str) -> Access:
        width, stride = draw(st.integers(1, 6)), draw(st.sampled_from([1, 1, 2]))
        span, shift = stride * (width - 1), draw(st.integers(-6, 6))
        move = shift * (trip - 1)
        lo, hi = max(0, -move), 31 - span - max(0, move)
        if lo > hi:
            shift, lo, hi = 0, 0, 31 - span
        parts = draw(st.sampled_from([None, (0, 32, 1), (32, 32, 1)]))
        tensor = draw(st.sampled_from(sorted(PROPERTY_TENSORS)))
        return Access(tensor, partitions=parts, offset=draw(st.integers(lo, hi)), pattern=((stride, width),),
                      per_iteration=((loop, shift),) if shift else ())

    def instruction(name: str, loop: str) -> Instruction:
        op = draw(st.sampled_from(OPS))
        spec = OP_TABLE[op]
        return Instruction(name, draw(st.sampled_from(spec.engines)), op,
                           reads=tuple(access(loop) for _ in range(spec.reads[0])), writes=(access(loop),),
                           attrs={"op": "add"} if op == "tensor_tensor" else {})

    first = [instruction(f"a{k}", "a") for k in range(draw(st.integers(1, 2)))]
    second = [instruction(f"b{k}", "b") for k in range(draw(st.integers(1, 2)))]
    if draw(st.booleans()) and second[0].reads:  # b reads a's first write d iterations on
        w = first[0].writes[0]
        shift = dict(w.per_iteration).get("a", 0)
        moved = (w.offset or 0) + draw(st.integers(-2, 2)) * shift
        read = dataclasses.replace(w, offset=moved, per_iteration=(("b", shift),) if shift else ())
        candidate = dataclasses.replace(second[0], reads=(read, *second[0].reads[1:]))
        try:
            validate_program(Program(PROPERTY_TENSORS, (Loop("b", trip, (candidate,)),)))
            second[0] = candidate
        except ProgramError:
            pass
    if draw(st.booleans()):  # given deps: b0 on a0; they must stay valid through fusion
        second[0] = dataclasses.replace(second[0], deps=(Dep(first[0].name),))
    body = (Loop("a", trip, tuple(first)), Loop("b", trip, tuple(second)))
    if nested:
        body = (Loop("p", draw(st.integers(1, 2)), body),)
    program = Program(PROPERTY_TENSORS, body)
    validate_program(program)
    return program


def swapped_conflicts(program: Program) -> list[tuple[str, str]]:
    """Brute force: instance pairs (x in a at iteration i, y in b at iteration j, same parent
    iteration, ``i > j``) that conflict on a byte or on an engine's random generator: the
    pairs fusion would run in the other order."""
    def members(loop: str):
        for inst in unroll(program):
            names = [lp.name for lp in inst.loops]
            if loop in names:
                k = names.index(loop)
                yield inst, inst.index[:k], inst.index[k]

    def touches(inst):
        return [(w, cells(program.tensors[a.tensor], a, inst.iteration)) for a, w in inst.instr.accesses]

    found = []
    for x, px, ix in members("a"):
        for y, py, iy in members("b"):
            if px != py or ix <= iy:
                continue
            rng = x.instr.op in RNG_OPS and y.instr.op in RNG_OPS and x.instr.engine == y.instr.engine
            if rng or any((wx or wy) and cx & cy for wx, cx in touches(x) for wy, cy in touches(y)):
                found.append((x.name, y.name))
    return found






@given(adjacent_loops())
def test_fusion_is_exact_for_top_level_loops(program):
    swapped = swapped_conflicts(program)
    result = fuse_loops(program)
    (verdict,) = [v for v in result.verdicts if (v.first, v.second) == ("a", "b")]
    assert verdict.legal == (not swapped), (swapped, verdict.message)
    literal = check_fusion(program, "a", "b", gate="literal")
    assert verdict.legal or not literal.legal  # the literal gate refuses at least as much
    if verdict.legal:
        check_fused(program, result.program)


@given(adjacent_loops(nested=True))
def test_fusion_inside_a_parent_loop_is_sound(program):
    swapped = swapped_conflicts(program)
    result = fuse_loops(program)
    (verdict,) = [v for v in result.verdicts if (v.first, v.second) == ("a", "b")]
    if swapped:  # the converse does not hold: the seed's grouping by parent iterations is conservative
        assert not verdict.legal
    if verdict.legal:
        check_fused(program, result.program)


@pytest.mark.parametrize("d", [-2, -1, 0, 1, 2])
def test_producer_writes_t_i_consumer_reads_t_i_plus_d(d):
    program = two_loops((write("w", tile("t", "a", 4 * max(-d, 0))),),
                        (copy("r", tile("t", "b", 4 * max(d, 0)), tile("u", "b", 0)),), trips=(4, 4))
    result = fuse_loops(program)
    assert bool(result.fused) == (d <= 0)
    if result.fused:
        check_fused(program, result.program)
