"""``anti-deps``: one small hand-written program per seed rule, and the reuse-RAW gap (item 6)."""

from __future__ import annotations

import pytest

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.passes.pipeline import graph_of
from neuronsim_tests.passes_kit import acc, compiled, dep_set, deps_of, dr, ins, loop, prog, ps, sb
from neuronsim.verify.racecheck import check_program

SEED = "{early_stop=matmul,skip_ordered=false}"


def anti(program, options="", before=""):
    return compiled(program, f"{before}anti-deps{options}", record=True)


def test_write_after_read_is_anti_and_points_from_later_to_earlier():
    p = prog([sb("t"), sb("u", offset=256)],
             ins("r", "act", "activation", reads=["t"], writes=["u"]),
             ins("w", "dve", "memset", writes=["t"]))
    out, ctx = anti(p)
    assert dep_set(out) == {("w", "r", "anti", False)}  # w (later) waits for r (earlier)
    assert ctx.provenance[("w", "r", False)] == {"anti:war"}
    assert check_program(out).races == ()


def test_write_after_write_is_output():
    p = prog([sb("t")], ins("w1", "act", "memset_like", writes=["t"]), ins("w2", "dve", "memset", writes=["t"]))
    out, _ = anti(p)
    assert dep_set(out) == {("w2", "w1", "output", False)}


def test_write_waits_for_the_reads_of_every_engine_since_the_last_write():
    # reads by ACT, POOL and a DMA queue are not ordered among themselves: the write must
    # wait for each, not only for the nearest read
    p = prog([sb("t"), sb("u", offset=256), dr("o", 0, 128 * 64)],
             ins("w0", "dve", "memset", writes=["t"]),
             ins("r_act", "act", "activation", reads=["t"], writes=["u"]),
             ins("r_pool", "pool", "tensor_copy", reads=["t"], writes=[acc("u", offset=0, pattern=[[1, 1]])]),
             ins("r_dma", "sp", "dma_copy", reads=["t"], writes=["o"], queue="dma1"),
             ins("w1", "dve", "memset", writes=["t"]))
    out, _ = anti(p, "{skip_ordered=false}")
    assert {on for on, kind, _ in deps_of(out, "w1") if kind == "anti"} == {"r_act", "r_pool", "r_dma"}
    assert check_program(compiled(p, "build-fdeps,anti-deps")[0]).races == ()


def _reads_then_write(engine, op):
    reads = [ins(f"r{k}", engine, op, reads=["t", "x"] if op == "matmul" else ["t"],
                 writes=[f"p{k}"] if op == "matmul" else [acc("u", offset=k, pattern=[[1, 1]])]) for k in range(3)]
    tensors = [sb("t"), sb("x", offset=256), sb("u", offset=512)] + [ps(f"p{k}", bank=k) for k in range(3)]
    return prog(tensors, *reads, ins("w", "dve", "memset", writes=["t"]))


def test_matmul_family_early_stop():
    # seed: the reverse walk stops at the first matmul-family read (PE completes them in order)
    out, _ = anti(_reads_then_write("pe", "matmul"), SEED)
    assert deps_of(out, "w") == {("r2", "anti", False)}
    # ...but not for other ops: the seed links every read (ACT ops here)
    out, _ = anti(_reads_then_write("act", "activation"), SEED)
    assert deps_of(out, "w") == {("r0", "anti", False), ("r1", "anti", False), ("r2", "anti", False)}
    # the per-component stop generalises it: one edge per completion component
    out, _ = anti(_reads_then_write("act", "activation"), "{skip_ordered=false}")
    assert deps_of(out, "w") == {("r2", "anti", False)}


def test_loop_carried_branch_for_a_later_instruction_of_the_previous_iteration():
    # each iteration overwrites t after the previous iteration's read: a loop-carried WAR
    p = prog([sb("t"), sb("u", offset=256), dr("x", 0, 3 * 128 * 64)],
             loop("i", 3,
                  ins("w", "sp", "dma_copy", reads=[acc("x", offset=0, pattern=[[1, 8192]], per_iteration={"i": 8192})],
                      writes=["t"], queue="dma0"),
                  ins("r", "act", "activation", reads=["t"], writes=["u"])))
    out, ctx = anti(p, before="build-fdeps,")
    assert dep_set(out) == {("r", "w", "flow", False), ("w", "r", "anti", True)}
    assert ctx.stats["anti-deps"]["added_loop_carried"] >= 1
    assert check_program(out).races == ()


def test_common_loop_nest_test_gives_a_fan_in_after_the_loop():
    # a write after the loop waits (not loop-carried) for every iteration's read
    p = prog([sb("t"), sb("u", offset=256)],
             loop("i", 3, ins("r", "act", "activation", reads=["t"], writes=["u"])),
             ins("w", "dve", "memset", writes=["t"]))
    out, _ = anti(p)
    assert dep_set(out) == {("w", "r", "anti", False)}
    assert check_program(out).races == ()


def test_max_merge_quirk_keeps_flow_and_hides_the_anti():
    # y reads what x wrote (RAW) and overwrites what x read (WAR): one edge, of kind Flow
    p = prog([sb("t"), sb("u", offset=256)],
             ins("x", "act", "activation", reads=["t"], writes=["u"]),
             ins("y", "dve", "tensor_copy", reads=["u"], writes=["t"]))
    out, ctx = compiled(p, "build-fdeps,anti-deps{skip_ordered=false}", record=True)
    assert dep_set(out) == {("y", "x", "flow", False)}
    assert ctx.provenance[("y", "x", False)] == {"fdeps:raw", "anti:war"}
    graph = graph_of(out)
    assert graph.kind("y", "x") == EdgeKind.FLOW and graph.anti_deps("y") == []


def test_read_after_write_through_reuse_gets_a_flow_edge():
    # a and b share bytes; the read of b after the write of a is the seed's gap (item 6)
    p = prog([sb("a"), sb("b"), sb("u", offset=256)],
             ins("w", "act", "memset_like", writes=["a"]),
             ins("r", "dve", "tensor_copy", reads=["b"], writes=["u"]))
    out, ctx = anti(p, before="build-fdeps,")
    assert deps_of(out, "r") == {("w", "flow", False)}
    assert ctx.provenance[("r", "w", False)] == {"anti:raw-reuse"}
    assert check_program(out).races == ()
    gap, _ = anti(p, "{analyses=war|waw}", before="build-fdeps,")
    assert [(r.kind, r.first, r.second) for r in check_program(gap).races] == [("RAW", "w", "r")]


def test_skip_ordered_adds_only_what_is_not_ordered_yet():
    # w2 waits for r (WAR); r waits for w1 (RAW): w2 -> w1 (WAW) is ordered through r
    p = prog([sb("t"), sb("u", offset=256)],
             ins("w1", "act", "memset_like", writes=["t"]),
             ins("r", "pool", "tensor_copy", reads=["t"], writes=["u"]),
             ins("w2", "dve", "memset", writes=["t"]))
    out, ctx = anti(p, before="build-fdeps,")
    assert deps_of(out, "w2") == {("r", "anti", False)}
    assert ctx.stats["anti-deps"]["skipped_ordered"] == 1
    everything, _ = anti(p, "{skip_ordered=false}", before="build-fdeps,")
    # the walk visits the last write and the reads since it, ordered or not
    assert deps_of(everything, "w2") == {("r", "anti", False), ("w1", "output", False)}


def test_same_engine_order_needs_no_edge_but_an_async_dma_does():
    p = prog([sb("t"), dr("src", 0, 128 * 64)],
             ins("load", "pool", "dma_copy", reads=["src"], writes=["t"], queue="dma1"),
             ins("fill", "pool", "memset", writes=[acc("t", partitions=(0, 32))]),
             ins("fill2", "pool", "memset", writes=[acc("t", partitions=(0, 32))]))
    out, _ = anti(p)
    assert dep_set(out) == {("fill", "load", "output", False)}  # rule 2: the DMA is async


def test_filters_restrict_what_is_bucketed():
    p = prog([sb("t"), ps("q", bank=0), sb("u", offset=256)],
             ins("r", "act", "activation", reads=["t"], writes=["u"]),
             ins("w", "dve", "memset", writes=["t"]),
             ins("rq", "act", "activation", reads=["q"], writes=[acc("u", offset=0, pattern=[[1, 1]])]),
             ins("wq", "dve", "memset", writes=["q"]))
    only_psum, _ = anti(p, "{memories=psum}")
    assert dep_set(only_psum) == {("wq", "rq", "anti", False)}
    only_waw, _ = anti(p, "{analyses=waw}")
    assert dep_set(only_waw) == set()
    roles = prog([dr("i", 0, 256, role="input"), dr("o", 4096, 256, role="output"), sb("s")],
                 ins("ld", "sp", "dma_copy", reads=[acc("i", offset=0, pattern=[[1, 64]])],
                     writes=[acc("s", partitions=(0, 1))]),
                 ins("st", "act", "dma_copy", reads=[acc("s", partitions=(0, 1))],
                     writes=[acc("i", offset=0, pattern=[[1, 64]])], queue="dma1"))
    assert dep_set(anti(roles, "{roles=output|internal,memories=dram}")[0]) == set()
    # found as a WAR on i; labelled flow, the strongest kind the pair gives (st reads what ld wrote in s)
    assert dep_set(anti(roles, "{roles=input,memories=dram}")[0]) == {("st", "ld", "flow", False)}


def test_dram_bins_are_conservative_and_counted_apart():
    # two tensors 4 KiB apart in one 64 KiB bin: no byte in common
    p = prog([dr("x", 0, 256), dr("y", 4096, 256), sb("s")],
             ins("wx", "sp", "dma_gather", reads=[acc("s", partitions=(0, 1))], writes=["x"], queue="dma0"),
             ins("wy", "act", "dma_gather", reads=[acc("s", partitions=(0, 1))], writes=["y"], queue="dma1"))
    exact, ctx = anti(p)
    assert dep_set(exact) == set()
    binned, ctx = anti(p, "{dram=bins}")
    assert dep_set(binned) == {("wy", "wx", "ordered", False)}  # no byte shared: labelled as an order
    assert ctx.stats["anti-deps"]["conservative_bin"] == 1
    assert ctx.provenance[("wy", "wx", False)] == {"anti:waw", "anti:dram-bin"}


def _alias_group_program():
    return prog([dr("a", None, 256, alias="g"), dr("b", None, 256, alias="g"), dr("c", None, 256, alias="h"), sb("s")],
                ins("wa", "sp", "dma_gather", reads=[acc("s", partitions=(0, 1))],
                    writes=[acc("a", offset=0, pattern=[[1, 64]])]),
                ins("wb", "act", "dma_gather", reads=[acc("s", partitions=(0, 1))],
                    writes=[acc("b", offset=0, pattern=[[1, 8]])], queue="dma1"),
                ins("wa2", "pool", "dma_gather", reads=[acc("s", partitions=(0, 1))],
                    writes=[acc("a", offset=128, pattern=[[1, 64]])], queue="dma2"),
                ins("wc", "pool", "dma_gather", reads=[acc("s", partitions=(0, 1))], writes=["c"], queue="dma2"))


def test_alias_groups_are_exact_by_default():
    out, ctx = anti(_alias_group_program())
    # two tensors of one group always share; another group never does
    assert ("wb", "wa", "output", False) in dep_set(out)
    assert ("wa2", "wb", "output", False) in dep_set(out)
    assert not any(w == "wc" for w, *_ in dep_set(out))
    # wa2 and wa write disjoint bytes of one tensor: no edge of their own (wa2 waits for wb, which waits for wa)
    assert not any(w == "wa2" and on == "wa" for w, on, *_ in dep_set(out))
    assert ctx.stats["anti-deps"].get("conservative_alias", 0) == 0
    assert check_program(out).races == ()


def test_alias_groups_are_one_batch_with_the_seeds_option():
    out, ctx = anti(_alias_group_program(), "{alias=batch}")
    assert ("wb", "wa", "output", False) in dep_set(out)
    assert not any(w == "wc" for w, *_ in dep_set(out))
    stats = ctx.stats["anti-deps"]
    alias_deps = sum(1 for (w, f, lc), rules in ctx.provenance.items() if "anti:alias" in rules)
    assert stats.get("conservative_alias", 0) == alias_deps
    assert check_program(out).races == ()


def test_second_run_after_shared_dram_allocation():
    p = prog([dr("a", None, 256, alias="g"), dr("b", None, 256, alias="g"), sb("s"), sb("t", offset=1024)],
             ins("wa", "sp", "dma_gather", reads=["s"], writes=[acc("a", offset=0, pattern=[[1, 64]])]),
             ins("rb", "act", "dma_gather", reads=[acc("b", offset=0, pattern=[[1, 64]])], writes=["t"], queue="dma1"))
    spec = "build-fdeps,anti-deps{spaces=local},alloc-shared-dram,anti-deps{spaces=shared}"
    out, ctx = compiled(p, spec, record=True)
    assert all(t.alias is None and t.extras.get("x-shared") == "g" for n, t in out.tensors.items() if n in "ab")
    assert check_program(out).races == ()
    local_only, _ = compiled(p, "build-fdeps,anti-deps{spaces=local}")
    assert check_program(local_only).races  # the shared DRAM needs the second run


def test_needs_placed_tensors():
    p = prog([sb("t", partition=None, offset=None)], ins("w", "dve", "memset", writes=["t"]))
    with pytest.raises(ProgramError, match="alloc"):
        anti(p)


@pytest.mark.parametrize("bad", ["anti-deps{memories=hbm}", "anti-deps{early_stop=never}", "anti-deps{dram=pages}",
                                 "anti-deps{alias=maybe}"])
def test_bad_options_are_located_errors(bad):
    from neuronsim.passes import parse_pipeline

    with pytest.raises(ProgramError, match="anti-deps"):
        parse_pipeline(bad)


@pytest.mark.parametrize("bad", ["alloc-shared-dram{align=0}", "alloc-shared-dram{align=-7}",
                                 "alloc-shared-dram{buffers=0}", "alloc-shared-dram{buffers=-1}"])
def test_shared_dram_allocation_options_are_checked_as_alloc_checks_its_own(bad):
    """``align=0`` divided by zero (an internal error), ``align=-7`` placed bf16 tensors at odd
    addresses: refused at the pass, as ``alloc`` refuses the same values."""
    from neuronsim.passes import parse_pipeline

    with pytest.raises(ProgramError, match="alloc-shared-dram.*align 1-65536"):
        parse_pipeline(bad)


def test_disjoint_bytes_of_one_alias_tensor_give_no_edge_but_under_the_seeds_batch():
    p = prog([dr("a", None, 256, alias="g"), sb("s")],
             ins("w0", "sp", "dma_copy", reads=[acc("s", partitions=(0, 1))],
                 writes=[acc("a", offset=0, pattern=[[1, 64]])]),
             ins("w1", "act", "dma_copy", reads=[acc("s", partitions=(0, 1))],
                 writes=[acc("a", offset=128, pattern=[[1, 64]])], queue="dma1"))
    assert check_program(p).races == ()  # the checker agrees no byte is shared
    out, ctx = anti(p)
    assert dep_set(out) == set()
    out, ctx = anti(p, "{alias=batch}")
    assert dep_set(out) == {("w1", "w0", "ordered", False)}  # an order, not a dependence
    assert ctx.stats["anti-deps"]["conservative_alias"] == 1
    assert "anti:alias" in ctx.provenance[("w1", "w0", False)]


def test_labels_are_the_strongest_kind_over_every_pair_the_dep_orders():
    # t[0] reads t[i] and writes t[1]: the WAW with iota's write is found in iteration 0, but
    # the same dep also orders iteration 1, which reads the byte iota wrote: labelled flow
    p = prog([sb("t", 1, 2)],
             ins("iota", "pool", "iota", writes=[acc("t", offset=1, pattern=[[1, 1]])]),
             loop("i", 2,
                  ins("tr", "dve", "transpose", reads=[acc("t", offset=0, pattern=[[1, 1]], per_iteration={"i": 1})],
                              writes=[acc("t", offset=1, pattern=[[1, 1]])])))
    out, ctx = anti(p, "{restrict=false}", before="build-fdeps,remove-redundancies,")
    assert deps_of(out, "tr") == {("iota", "flow", False)}
    assert ctx.stats["anti-deps"]["relabelled"] == 1
    # restricted to the iteration where it is needed, the dep orders the WAW alone: output
    out, ctx = anti(p, before="build-fdeps,remove-redundancies,")
    (tr,) = [i for i, _ in out.instructions() if i.name == "tr"]
    assert [(d.on, d.kind.name.lower(), d.iterations) for d in tr.deps] == [("iota", "output", (("i", 0, 1),))]


# The fuzzer's program (seed 0, shrunk): matmul4 waits for activation2 through PSUM storage
# that ps0 and ps1 share.  The flow pair (activation2 writes ps1 bytes matmul4 reads) is in
# iteration L0 = 1 only; in L0 = 0, L1 = 1 the two conflict by a WAR alone.
_SPLIT_BOX_PROGRAM = (
    '{"format":"neuronsim.program/1","machine":"trn1","tensors":{"sb0":{"memory":"sbuf","dtype":"bfloat16'
    '","shape":[2,2,5],"partition":32,"offset":149},"ps0":{"memory":"psum","dtype":"bfloat16","shape":[16'
    ',2,8],"partition":0,"bank":1,"offset":237},"ps1":{"memory":"psum","dtype":"float32","shape":[8,3],"p'
    'artition":0,"bank":1,"offset":240}},"body":[{"loop":"L0","trip_count":2,"body":[{"loop":"L1","trip_c'
    'ount":2,"body":[{"name":"activation2","engine":"act","op":"activation","reads":[{"tensor":"ps0","off'
    'set":0,"pattern":[[1,9]],"per_iteration":{"L0":7,"L1":0}},{"tensor":"ps0","offset":7,"pattern":[[0,2'
    '],[2,3]],"per_iteration":{"L1":2}}],"writes":[{"tensor":"ps1","partitions":[0,2,4],"offset":0,"patte'
    'rn":[[0,3],[2,1]],"per_iteration":{"L0":2,"L1":0}}],"attrs":{"scale":0.5}},{"name":"tensor_tensor_sc'
    'an3","engine":"dve","op":"tensor_tensor_scan","reads":[{"tensor":"ps1","offset":0,"pattern":[[0,2]],'
    '"per_iteration":{"L0":0,"L1":1}},{"tensor":"sb0","offset":1,"pattern":[[4,1],[7,2]],"per_iteration":'
    '{"L0":-1}},{"tensor":"ps1","offset":1,"pattern":[[2,1],[1,1],[1,1]],"per_iteration":{"L0":0}}],"writ'
    'es":[{"tensor":"sb0","offset":0,"pattern":[[1,1],[1,1]],"per_iteration":{"L1":1}}],"attrs":{"op1":"g'
    'reater_equal","initial":{"read":2},"reverse0":true,"reverse1":true}},{"name":"matmul4","engine":"pe"'
    ',"op":"matmul","reads":[{"tensor":"sb0","partitions":[0,2],"offset":8},{"tensor":"sb0","offset":0,"p'
    'attern":[[9,2],[0,3]],"per_iteration":{"L0":0,"L1":0}},{"tensor":"ps0","partitions":[0,14],"offset":'
    '4,"pattern":[[1,9]]}],"writes":[{"tensor":"ps0","partitions":[0,14],"offset":4,"pattern":[[1,9]]}],"'
    'attrs":{"accumulate":true}}]}]}]}'
)


def test_a_flow_dep_split_into_iteration_boxes_labels_each_box_by_its_own_pairs():
    from neuronsim.machine.formats.program_json import loads_program
    from neuronsim.passes.analysis.labels import verify_anti_dependence

    out, _ = anti(loads_program(_SPLIT_BOX_PROGRAM), before="alloc,build-fdeps,remove-redundancies,")
    (mm,) = [i for i, _ in out.instructions() if i.name == "matmul4"]
    boxes = {d.iterations: d.kind for d in mm.deps if d.on == "activation2"}
    assert boxes == {(("L0", 0, 1), ("L1", 1, 2)): EdgeKind.ANTI, (("L0", 1, 2),): EdgeKind.FLOW}
    assert verify_anti_dependence(out) == ()
