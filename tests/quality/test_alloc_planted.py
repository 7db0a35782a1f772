"""The allocator's oracles find planted allocation bugs (each oracle must be able to fail).

Each test plants one bug in the allocator (``monkeypatch``) and shows that the brute-force
oracle meant for it reports it, located, on a small loop kernel; the same kernels pass
without the bug (:mod:`tests.unit.test_alloc_rings`).
"""

from __future__ import annotations

import dataclasses

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.passes import compile_program
from neuronsim.testing.alloc_oracles import holding_clashes, rotation_mismatches, stale_reads
from neuronsim.machine.ir.program import MemoryKind
from neuronsim_tests.passes_kit import ins, loop, prog
from neuronsim_tests.alloc_rings_kit import V, _pipeline, dram, tile
from neuronsim.verify.racecheck import check_program


def _running_max():
    """``run`` is read in each iteration before it is written: it carries a value."""
    return _pipeline(4, V("run"), body_tail=[
        ins("use", "dve", "tensor_tensor", reads=["run", "b"], writes=["b"], op="max"),
        ins("keep", "dve", "tensor_copy", reads=["b"], writes=["run"])])


def test_rotating_a_tensor_that_carries_a_value_is_a_stale_read(monkeypatch):
    program = _running_max()
    monkeypatch.setattr("neuronsim.passes.analysis.lifetimes.iteration_private", lambda *args: True)
    placed, _ = compile_program(program, "alloc")
    assert placed.tensors["run"].rotate is not None
    stale = stale_reads(program, placed)
    # use[1] reads slot 1, which iteration 0's keep never wrote (and a's load of iteration 1 did)
    assert stale and stale[0] == ("use[1]", "run", 4, 5)
    assert ("run", "rotates over i; private over []") in rotation_mismatches(program, placed)


def test_a_missed_rotation_is_found(monkeypatch):
    program = _pipeline()
    monkeypatch.setattr("neuronsim.passes.analysis.lifetimes.iteration_private", lambda *args: False)
    placed, _ = compile_program(program, "alloc")
    assert {name for name, _ in rotation_mismatches(program, placed)} == {"a", "b"}


def _two_psum_tiles():
    tensors = [dram("x", "input"), dram("y", "output"), V("a"), V("b"), V("p", memory=MemoryKind.PSUM),
               V("q", memory=MemoryKind.PSUM)]
    body = loop("i", 4, ins("ld", "sp", "dma_copy", reads=[tile("x")], writes=["a"]),
                ins("mm1", "pe", "matmul", reads=["a", "a"], writes=["p"], accumulate=False),
                ins("mm2", "pe", "matmul", reads=["a", "a"], writes=["q"], accumulate=False),
                ins("ev", "dve", "tensor_copy", reads=["p"], writes=["b"]),
                ins("ev2", "act", "tensor_tensor_like", reads=["q", "b"], writes=["b"]),
                ins("st", "sp", "dma_copy", reads=["b"], writes=[tile("y")]))
    return prog(tensors, body)


def test_sharing_storage_between_live_tensors_is_a_clash(monkeypatch):
    program = _two_psum_tiles()
    monkeypatch.setattr("neuronsim.passes.alloc_place.may_share", lambda *args: True)  # PSUM placement (alloc_place)
    placed, _ = compile_program(program, "alloc{psum_banks=2}")  # two banks: both rings on them
    clashes = holding_clashes(program, placed)
    assert clashes and {clashes[0][0], clashes[0][2]} == {"p", "q"}
    assert stale_reads(program, placed)  # and mm2 overwrote what ev reads from p


def test_the_race_checker_sees_slot_reuse_across_iterations():
    # without their anti / output deps, the rotating slots race (WAR / WAW n iterations apart)
    compiled, _ = compile_program(_pipeline())
    assert compiled.tensors["a"].rotate is not None
    storage = (EdgeKind.ANTI, EdgeKind.OUTPUT)
    stripped = compiled.map_instructions(
        lambda inst: dataclasses.replace(inst, deps=tuple(d for d in inst.deps if d.kind not in storage)))
    assert check_program(compiled).races == ()
    races = check_program(stripped).races
    assert any(r.kind == "WAR" and r.first.startswith("exp[") and r.second.startswith("ld[") for r in races), races[:3]
