"""Loop-carried compiler deps: an edge the back-edge walk of loop L finds names the previous
iteration of one execution of L (``{"on": t, "carried": L}``), never an instance left over from
an earlier execution of L.

A decode loop over sequences, each walking its blocks: the block loop's back-edges order the
blocks of one sequence; with plain deps the first block of sequence b+1 would also wait for
the last block of sequence b, serialising a ``parallel`` loop.  When the outer loop is
sequential and the buffer is shared, its own back-edge walk carries the edge across sequences
(carried in the outer loop), and the brute-force oracle confirms the merge into the outer loop
is needed: carrying it in the inner loop alone races.  Expectations written from the rules.
"""

from __future__ import annotations

from dataclasses import replace

from neuronsim.machine.tasks.ir import map_calls
from neuronsim.machine.tasks.orchestrator import unroll_task_program

from neuronsim_tests.task_oracle import races, unroll_tasks
from neuronsim_tests.task_rules_kit import compiled, deps, kit, scopes


def _decode(*, outer_parallel: bool, shared: bool):
    """Per sequence b: ``blocks`` times, P writes the score tile s from q[b], C reads s into out[b]."""
    tb, k = kit()
    q = tb.param("q", (4, 8))
    out = tb.param("out", (4, 8), direction="out")
    n = tb.scalar("n", value=3)
    common = tb.create((1, 8), name="common") if shared else None
    for b in (tb.parallel if outer_parallel else tb.range)(4, name="seqs"):
        s = common if shared else tb.create((1, 8), name="s")
        for _ in tb.range(n, name="blocks"):
            tb.submit(k.copy, [q[b:b + 1, :], s], name="P", task_id="tp")
            tb.submit(k.copy, [s, out[b:b + 1, :]], name="C", task_id="tc")
    return tb.program()


def _sequence_of(instance) -> int:
    return dict(instance.iteration)["seqs"]


def test_back_edges_of_the_block_loop_are_carried_in_it():
    out = compiled(_decode(outer_parallel=True, shared=False))
    # P(j+1) after P(j) (WAW on s) and C(j) (WAR on s): back-edge only, carried;
    # C after this iteration's P (RAW, plain, absorbing the previous P) and the previous C (out row).
    assert deps(out) == {"P": ["tp^blocks", "tc^blocks"], "C": ["tp", "tc^blocks"]}
    assert set(scopes(out).values()) == {"manual/compiler"}


def test_sequences_of_a_parallel_loop_stay_independent():
    out = compiled(_decode(outer_parallel=True, shared=False))
    instances = unroll_task_program(out)
    waits = [(t, instances[d]) for t in instances for d in (*t.user_deps, *t.compiler_deps)]
    assert waits and all(_sequence_of(t) == _sequence_of(d) for t, d in waits)
    firsts = [t for t in instances if t.call == "P" and dict(t.iteration)["blocks"] == 0]
    assert len(firsts) == 4 and all(t.compiler_deps == () for t in firsts)
    assert races(unroll_tasks(out)) == []


def test_a_sequential_outer_loop_sharing_the_tile_carries_the_edge_across_sequences():
    out = compiled(_decode(outer_parallel=False, shared=True))
    # the outer loop's back-edge walk meets the same pairs: the merge keeps the outer loop
    assert deps(out) == {"P": ["tp^seqs", "tc^seqs"], "C": ["tp", "tc^seqs"]}
    assert races(unroll_tasks(out)) == []
    instances = unroll_task_program(out)
    second = next(t for t in instances if t.call == "P" and _sequence_of(t) == 1)
    assert {instances[d].name for d in second.compiler_deps} == {"P[0,2]", "C[0,2]"}

    def inner_only(call):
        return replace(call, compiler_deps=tuple(replace(d, carried="blocks") if d.carried else d
                                                 for d in call.compiler_deps))

    narrowed = out.with_body(map_calls(out.function.body, inner_only))
    lost = {(a.call, b.call, kind) for a, b, kind in races(unroll_tasks(narrowed))}
    assert ("C", "P", "WAR") in lost and ("P", "P", "WAW") in lost


def test_after_a_parallel_loop_the_latest_instance_no_longer_stands_for_all():
    """U's back-edge is carried in L, so U's instances in the two rows of P are not chained:
    after P, an edge to the latest U would order R after one row only.  The analysis falls back
    (the producer left a loop whose iterations its chain does not join) and the runtime's
    lookups order R after every U."""
    from neuronsim_tests.task_rules_kit import fallback_reasons
    from neuronsim.verify.tasks.check import check_task_program

    tb, k = kit()
    x = tb.param("x", (2, 8))
    for b in tb.parallel(2, name="P"):
        for _ in tb.range(2, name="L"):
            tb.submit(k.rw, [x[b:b + 1, :]], name="U", task_id="tu")
    tb.submit(k.r, [x], name="R", task_id="tr")
    out = compiled(tb.program())
    assert deps(out)["U"] == ["tu^L"]
    assert set(fallback_reasons(tb.program()).values()) == {"stale-loop-producer"}
    assert set(scopes(out).values()) == {"auto/compiler"}
    assert races(unroll_tasks(out)) == [] and check_task_program(out).race_free
