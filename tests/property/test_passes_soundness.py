"""Acceptance of issue #5: compile, then check, finds no race; every memory edge is earned.

Soundness runs on 600 generated programs per run (virtual and placed tensors, nested loops,
strides, PSUM accumulation groups, async DMAs, alias groups, RNG and opaque ops), with their
deps stripped or replaced, through the default pipeline and its variants; the race checker
of issue #3 is the oracle.  Precision checks every dep of the output against a brute-force
byte comparison of instance pairs (``tests.oracles.conflicts``).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from neuronsim.machine.formats.program_json import load_program
from neuronsim.passes import DEFAULT_PIPELINE
from neuronsim.passes.build_fdeps import STRUCTURAL
from neuronsim_tests.passes_kit import brute_label, compiled, dep_set, edge_joins_conflict
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.strategies import programs, strip_deps

VARIANTS = [
    DEFAULT_PIPELINE,
    "alloc{buffers=1,psum_banks=2},build-fdeps,remove-redundancies,anti-deps",
    "alloc,build-fdeps,anti-deps{early_stop=pe-order,skip_ordered=false}",
    "alloc,build-fdeps,remove-redundancies,anti-deps{spaces=local},alloc-shared-dram,anti-deps{spaces=shared}",
    "alloc,build-fdeps,remove-redundancies{mode=engine},anti-deps{dram=bins}",
    "alloc,anti-deps{analyses=war|waw|raw}",
    "alloc,build-fdeps{loop_barrier=true,groups=false},remove-redundancies,anti-deps",
]
CONSERVATIVE = {"anti:dram-bin", "anti:alias"}


def assert_race_free(program, spec=DEFAULT_PIPELINE):
    out, _ = compiled(program, spec)
    races = check_program(out).races
    assert races == (), (spec, races[:3])
    return out


@settings(max_examples=200)
@given(programs(deps="none", virtual=True, max_instructions=12, max_trip=3))
def test_virtual_and_placed_programs_compile_race_free(program):
    out = assert_race_free(program)
    assert not out.has_virtual_tensors


@settings(max_examples=150)
@given(programs(deps="none", max_instructions=12, max_loops=3, max_depth=3, max_trip=3))
def test_placed_programs_with_deep_loops_compile_race_free(program):
    assert_race_free(program)


@settings(max_examples=100)
@given(programs(deps="random", virtual=True, max_instructions=12, max_trip=3))
def test_given_deps_are_replaced_and_the_result_is_race_free(program):
    out, ctx = compiled(program, DEFAULT_PIPELINE, record=True)
    assert check_program(out).races == ()
    # every dep left was computed by a pass: none of the given ones survives as such
    assert all((i.name, d.on, d.loop_carried) in ctx.provenance for i, _ in out.instructions() for d in i.deps)


@settings(max_examples=150)
@given(programs(deps="none", virtual=True, max_instructions=10, max_trip=3), st.sampled_from(VARIANTS))
def test_pipeline_variants_compile_race_free(program, spec):
    assert_race_free(program, spec)


def test_examples_compile_race_free_and_keep_their_shape():
    for name in ("matmul_k_loop", "matmul_k_loop_racy", "async_load_then_fill"):
        program = load_program(f"examples/{name}.json")
        out = assert_race_free(strip_deps(program))
        assert [(i.name, len(loops)) for i, loops in out.instructions()] == \
               [(i.name, len(loops)) for i, loops in program.instructions()]


@settings(max_examples=100)
@given(programs(deps="none", virtual=True, max_instructions=8, max_trip=3),
       st.sampled_from([DEFAULT_PIPELINE,
                        "alloc,build-fdeps,remove-redundancies,anti-deps{dram=bins,skip_ordered=false}"]))
def test_every_memory_edge_joins_a_truly_conflicting_pair(program, spec):
    out, ctx = compiled(program, spec, record=True)
    conservative = 0
    for waiter, on, _, lc in dep_set(out):
        rules = ctx.provenance[(waiter, on, lc)]
        assert rules, (waiter, on, lc)
        if rules & CONSERVATIVE:
            conservative += 1
            continue
        if rules <= STRUCTURAL:
            continue
        assert edge_joins_conflict(out, waiter, on, lc), (waiter, on, lc, rules)
    stats = ctx.stats.get("anti-deps", {})
    assert conservative == stats.get("conservative_bin", 0) + stats.get("conservative_alias", 0)


@settings(max_examples=80)
@given(programs(deps="none", virtual=True, max_instructions=8, max_trip=3))
def test_memory_deps_are_labelled_with_the_kind_their_bytes_give(program):
    out, ctx = compiled(program, DEFAULT_PIPELINE, record=True)
    for inst, _ in out.instructions():
        for dep in inst.deps:
            if ctx.provenance[(inst.name, dep.on, dep.loop_carried)] <= STRUCTURAL:
                continue  # an order the seed's structural chains ask for, labelled flow
            assert dep.kind.name.lower() == brute_label(out, inst.name, dep), (inst.name, dep)
