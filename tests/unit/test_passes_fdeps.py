"""``build-fdeps``: one small hand-written program per seed rule, plus the logical contract."""

from __future__ import annotations

from hypothesis import given

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.passes.build_fdeps import STRUCTURAL
from neuronsim_tests.passes_kit import acc, compiled, dep_set, deps_of, edge_joins_conflict, ins, loop, prog, ps, sb
from neuronsim.verify.strategies import programs

FLOW = "flow"


def fdeps(program, options=""):
    return compiled(program, f"build-fdeps{options}", record=True)


def test_read_waits_for_the_last_writer_of_the_same_tensor():
    p = prog([sb("t"), sb("u", offset=256)],
             ins("w1", "act", "memset_like", writes=["t"]),
             ins("w2", "dve", "memset", writes=["t"]),
             ins("r", "pool", "tensor_copy", reads=["t"], writes=["u"]))
    out, ctx = fdeps(p)
    # w2 rewrote every byte: the chain links the read to it only
    assert deps_of(out, "r") == {("w2", FLOW, False)}
    assert deps_of(out, "w2") == set()  # WAW is anti-deps' business, not the flow chain's
    assert ctx.provenance[("r", "w2", False)] == {"fdeps:raw"}


def test_chain_is_byte_exact_unlike_a_tensor_level_chain():
    # Two tiles of one tensor written by different engines; each read links to its own writer,
    # a read of both to both (the seed's tensor chain would link everything to the last writer).
    p = prog([sb("t"), sb("u", offset=256)],
             ins("lo", "act", "memset_like", writes=[acc("t", partitions=(0, 64))]),
             ins("hi", "dve", "memset", writes=[acc("t", partitions=(64, 64))]),
             ins("r_lo", "pool", "tensor_copy", reads=[acc("t", partitions=(0, 64))],
                 writes=[acc("u", partitions=(0, 64))]),
             ins("r_all", "act", "tensor_copy", reads=["t"], writes=["u"]))
    out, _ = fdeps(p)
    assert deps_of(out, "r_lo") == {("lo", FLOW, False)}
    assert deps_of(out, "r_all") == {("lo", FLOW, False), ("hi", FLOW, False)}


def test_flow_edges_only_between_instances_of_one_tensor():
    # u shares t's bytes, but flow is logical: a read of u after a write of t is not fdeps'
    p = prog([sb("t"), sb("u")],
             ins("w", "act", "memset_like", writes=["t"]),
             ins("r", "dve", "tensor_copy", reads=["u"], writes=[acc("t", offset=0, pattern=[[1, 1]])]))
    out, _ = fdeps(p)
    assert deps_of(out, "r") == set()


def _reduction_program(group_b="g"):
    even = acc("acc", pattern=[[2, 32]])
    odd = acc("acc", offset=1, pattern=[[2, 32]])
    return prog([sb("acc"), sb("x", offset=256)],
                ins("a0", "dve", "tensor_tensor", reads=["x", "x"], writes=[even], group="g", op="add"),
                ins("b0", "pool", "tensor_tensor", reads=["x", "x"], writes=[odd], group=group_b, op="add"),
                ins("a1", "pool", "tensor_tensor", reads=["x", "x"], writes=[even], group="g", op="add"),
                ins("b1", "dve", "tensor_tensor", reads=["x", "x"], writes=[odd], group=group_b, op="add"),
                ins("whole", "dve", "tensor_tensor", reads=["x", "x"], writes=["acc"], group="g", op="add"))


def test_reduction_sequence_chains_overlapping_same_group_writes_only():
    out, ctx = fdeps(_reduction_program(), "{groups=false}")
    rules = {k: v for k, v in ctx.provenance.items() if "fdeps:reduction" in v}
    # interleaved streams never share a byte: a1 chains to a0 (not to b0), b1 to b0;
    # a superset write chains to the last writers of its bytes
    assert set(rules) == {("a1", "a0", False), ("b1", "b0", False), ("whole", "a1", False), ("whole", "b1", False)}
    assert all(kind == FLOW for _, _, kind, _ in dep_set(out))


def test_reduction_sequence_needs_the_same_group():
    out, ctx = fdeps(_reduction_program(group_b="h"), "{groups=false}")
    assert ("whole", "b1", False) not in ctx.provenance  # b1 is another group
    assert ("whole", "a1", False) in ctx.provenance


def test_accumulation_sequence_chains_accumulating_matmuls():
    p = prog([sb("w"), sb("x", offset=256), ps("pt", bank=1)],
             ins("mm0", "pe", "matmul", reads=["w", "x"], writes=["pt"], accumulate=False),
             ins("mm1", "pe", "matmul", reads=["w", "x", "pt"], writes=["pt"], accumulate=True),
             ins("mm2", "pe", "matmul", reads=["w", "x", "pt"], writes=["pt"]),  # inferred: reads its tile
             ins("mm3", "pe", "matmul", reads=["w", "x"], writes=["pt"], accumulate=False))  # new group
    _, ctx = fdeps(p)
    chained = {k for k, v in ctx.provenance.items() if "fdeps:accumulation" in v}
    assert chained == {("mm1", "mm0", False), ("mm2", "mm1", False)}


def test_rng_state_chains_per_engine():
    p = prog([sb("a"), sb("b", offset=256)],
             ins("seed_dve", "dve", "set_rand_state", seed=1),
             ins("rand_pool", "pool", "random", writes=["a"]),
             ins("rand_dve", "dve", "random", writes=["b"]))
    out, ctx = fdeps(p)
    assert deps_of(out, "rand_dve") == {("seed_dve", FLOW, False)}
    assert deps_of(out, "rand_pool") == set()
    assert ctx.provenance[("rand_dve", "seed_dve", False)] == {"fdeps:rng"}


def test_accumulator_groups_chain_across_engines_without_a_conflict():
    p = prog([sb("a"), sb("b", offset=256), sb("x", offset=512)],
             ins("g0", "act", "activation", reads=["x"], writes=["a"], group=7),
             ins("other", "dve", "tensor_copy", reads=["x"], writes=["b"]),
             ins("g1", "dve", "tensor_tensor", reads=["x", "x"], writes=["b"], group=7, op="add"))
    out, ctx = fdeps(p)
    assert deps_of(out, "g1") == {("g0", FLOW, False)}
    assert ctx.provenance[("g1", "g0", False)] <= STRUCTURAL
    out, _ = fdeps(p, "{groups=false}")
    assert deps_of(out, "g1") == set()


def test_loop_barrier_orders_iterations():
    p = prog([sb("a"), sb("b", offset=256)],
             loop("i", 3,
                  ins("x", "act", "activation", reads=["a"], writes=["b"]),
                  ins("y", "dve", "tensor_copy", reads=["a"], writes=[acc("b", offset=0, pattern=[[1, 1]])])))
    out, _ = fdeps(p, "{loop_barrier=true}")
    # first on each sequencer waits, loop-carried, for the last on each engine
    assert {("x", "x", FLOW, True), ("x", "y", FLOW, True), ("y", "x", FLOW, True),
            ("y", "y", FLOW, True)} <= dep_set(out)
    assert not any(lc for *_, lc in dep_set(fdeps(p)[0]))


def test_spill_guard_falls_back_to_program_order():
    body = (ins("a", "act", "activation", reads=["s"], writes=["t"]),
            loop("i", 2, ins("b", "dve", "memset", writes=["u"]), ins("c", "pool", "memset", writes=["u"])),
            ins("d", "sp", "dma_copy", reads=["t"], writes=["o"]))
    tensors = [sb("s"), sb("t", offset=256), sb("u", offset=512), Tensor_o()]
    p = prog(tensors, *body, extras={"x-too-many-spills": True})
    out, ctx = fdeps(p)
    assert dep_set(out) == {("b", "a", FLOW, False), ("b", "c", FLOW, True), ("c", "b", FLOW, False),
                            ("d", "c", FLOW, False)}
    assert ctx.stats["build-fdeps"]["spill_guard"] == 1
    forced, _ = fdeps(prog(tensors, *body), "{trivial=true}")
    assert dep_set(forced) == dep_set(out)


def Tensor_o():
    from neuronsim_tests.passes_kit import dr

    return dr("o", 0, 128 * 64)


def test_given_deps_are_replaced_unless_kept():
    from dataclasses import replace

    from neuronsim.machine.ir.program import Dep

    p = prog([sb("t"), sb("u", offset=256)],
             ins("w", "act", "memset_like", writes=["t"]),
             ins("r", "dve", "tensor_copy", reads=["t"], writes=["u"]))
    given_dep = Dep("w", EdgeKind.ORDERED, False)
    with_dep = p.map_instructions(lambda i: replace(i, deps=(given_dep,)) if i.name == "r" else i)
    out, _ = fdeps(with_dep)
    assert deps_of(out, "r") == {("w", FLOW, False)}  # replaced by the computed flow edge
    other = p.map_instructions(lambda i: replace(i, deps=(Dep("w", EdgeKind.ANTI),)) if i.name == "r" else i)
    kept, _ = fdeps(other, "{keep_given=true}")
    assert deps_of(kept, "r") == {("w", FLOW, False)}  # kept and merged by max: flow > anti


def test_runs_before_allocation_on_logical_tensors():
    p = prog([sb("t", partition=None, offset=None), sb("u", partition=None, offset=None)],
             ins("w", "act", "memset_like", writes=["t"]),
             ins("r", "dve", "tensor_copy", reads=["t"], writes=["u"]))
    out, _ = fdeps(p)
    assert deps_of(out, "r") == {("w", FLOW, False)}


def test_loop_carried_flow_from_a_later_instruction_of_the_previous_iteration():
    p = prog([sb("t"), sb("u", offset=256)],
             loop("i", 3,
                  ins("r", "dve", "tensor_copy", reads=["t"], writes=["u"]),
                  ins("w", "act", "activation", reads=["u"], writes=["t"])))
    out, _ = fdeps(p)
    assert deps_of(out, "r") == {("w", FLOW, True)}
    assert deps_of(out, "w") == {("r", FLOW, False)}


@given(programs(deps="none", virtual=True, max_instructions=8, max_trip=3))
def test_every_memory_flow_edge_joins_a_conflicting_pair(program):
    out, ctx = fdeps(program)
    for waiter, on, kind, lc in dep_set(out):
        assert kind == FLOW
        rules = ctx.provenance[(waiter, on, lc)]
        if rules <= STRUCTURAL:
            continue
        placed = program  # logical: conflicts are checked per tensor, so any placement works
        assert edge_joins_conflict(_placed(placed), waiter, on, lc), (waiter, on, lc, rules)


def _placed(program):
    """Place every virtual tensor apart (offsets far from each other), for the oracle."""
    from neuronsim.machine.ir.program import MemoryKind, Tensor, frozen_mapping

    tensors, k = {}, 0
    for name, t in program.tensors.items():
        if t.is_virtual:
            k += 1
            if t.memory == MemoryKind.SBUF:
                t = Tensor(name, t.memory, t.dtype, t.shape, partition=0, offset=k * 4096)
            elif t.memory == MemoryKind.PSUM:
                t = Tensor(name, t.memory, t.dtype, t.shape, partition=0, bank=k % 8, offset=0)
            else:
                t = Tensor(name, t.memory, t.dtype, t.shape, address=(1 << 30) + k * (1 << 20), role=t.role)
        tensors[name] = t
    return program.with_tensors(frozen_mapping(tensors))
