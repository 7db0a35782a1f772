"""Issue #12's acceptance: the default pipeline's kept waits against the minimum, loops kept.

The minimum is the spec's (``footprint``): a wait for every conflicting instance pair that
rules 1-3 alone leave unordered, transitively reduced.  The default pipeline restricts deps to
the iterations their conflicts need (``x-iterations``), waits exactly as many iterations back
as the nearest conflict (``x-distance``) and reduces what is left, so its kept waits equal the
minimum on loop programs.  They can be *fewer* in one case: the spec's minimum waits on
triggers, so when a DMA queue already orders a transfer's start after the writer it
conflicts with (rule 3, through a wait on an earlier transfer of that queue), the minimum
still counts a wait that the queue makes unnecessary.  They are never *more*: a dep from after
a loop waits for its target's last iteration, which may share no byte with the waiter while
an earlier one does, and ``dep-reduction`` (``orders=needed``) drops such a wait when other
waits already order every conflict it stood for; ``anti-deps``
buckets DRAM alias groups exactly (one tensor's accesses by their bytes; the seed's one batch
per group, ``alias=batch``, ordered accesses of one tensor that share no byte and kept up to
one wait above the minimum).  ``bench/bench_instance_exact.py`` prints the split on 1,000
generated loop programs.
"""

from __future__ import annotations

import networkx as nx
from hypothesis import HealthCheck, example, given, settings

from neuronsim.machine.formats.program_json import loads_program
from neuronsim.machine.ir.program import Loop
from neuronsim.machine.order.unroll import unroll
from neuronsim.passes import compile_program
from neuronsim_tests.oracles import brute_races
from neuronsim_tests.reduction_kit import hb_digraph
from neuronsim_tests.vacuity import nonvacuous, tally
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.strategies import programs
from neuronsim.verify.sync_counts import minimum_sync, stage_sync

SLOW = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
LOOPS = dict(deps="none", virtual=True, max_instructions=10, max_trip=3, max_loops=3)


def _loops(program):
    return [(node.name, node.trip_count) for node, _ in program.walk() if isinstance(node, Loop)]


def _brute_minimum(program) -> int:
    """The spec's minimum by brute force: unordered conflicting pairs (explicit byte sets),
    then networkx's transitive reduction of their waits."""
    unrolled = unroll(program)
    ids = {inst.name: inst.id for inst in unrolled}
    waits = [[] for _ in unrolled]
    for race in brute_races(program):  # every conflicting pair rules 1-3 leave unordered
        waits[ids[race[2]]].append(ids[race[1]])
    graph, wait_edges, structural = hb_digraph(program, unrolled, waits)
    reduced = nx.transitive_reduction(graph)
    return len({(u, v) for u, v in reduced.edges if (u, v) in wait_edges and (u, v) not in structural})


def _strip(program):
    from neuronsim.verify.strategies import strip_deps

    return strip_deps(program)


#: The program a full ``-n 2`` run drew (shrunk): a dep from after loop L0 resolved to the last
#: iteration of ``tensor_copy0``, which shares no byte with ``activation8``, and the pipeline kept
#: 7 waits against a minimum of 6 (``tests/unit/test_reduction_needed.py`` has it by hand).
_FAN_IN_REGRESSION = (
    '{"format":"neuronsim.program/1","machine":"trn1","tensors":{"sb0":{"memory":"sbuf","dtype":"bfloat16'
    '","shape":[4,3,4]},"sb1":{"memory":"sbuf","dtype":"bfloat16","shape":[4,8],"partition":0,"offset":0}'
    ',"ps0":{"memory":"psum","dtype":"float32","shape":[4,5,5]},"ps1":{"memory":"psum","dtype":"float32",'
    '"shape":[4,1,3],"partition":0,"bank":0,"offset":0},"dr0":{"memory":"dram","dtype":"bfloat16","shape"'
    ':[1,1]},"al0":{"memory":"dram","dtype":"float16","shape":[1],"alias":"g1"},"al1":{"memory":"dram","d'
    'type":"float16","shape":[1],"alias":"g0"}},"body":[{"loop":"L0","trip_count":3,"body":[{"loop":"L1",'
    '"trip_count":1,"body":[{"name":"tensor_copy0","engine":"pool","op":"tensor_copy","reads":[{"tensor":'
    '"sb0","offset":1,"pattern":[[1,1],[1,1]]}],"writes":[{"tensor":"sb1","partitions":[0,1],"offset":2,"'
    'pattern":[[5,2],[1,1]],"per_iteration":{"L0":-1}}]}]},{"name":"tensor_scalar1","engine":"dve","op":"'
    'tensor_scalar","reads":[{"tensor":"sb0","partitions":[0,1],"offset":2,"pattern":[[2,1]]},{"tensor":"'
    'ps1","offset":0,"pattern":[[1,1],[1,2]],"per_iteration":{"L0":0}},{"tensor":"sb1","partitions":[0,1]'
    ',"offset":1,"pattern":[[1,1],[1,1],[1,1]],"per_iteration":{"L0":0}}],"writes":[{"tensor":"sb0","part'
    'itions":[0,1],"offset":3,"pattern":[[1,1],[1,1],[1,1]]}],"attrs":{"op0":"add","operand0":{"read":1},'
    '"op1":"add","operand1":{"read":2}}}]},{"name":"matmul2","engine":"pe","op":"matmul","reads":[{"tenso'
    'r":"sb0","partitions":[0,1],"pattern":[[1,1]]},{"tensor":"sb0","partitions":[0,1],"offset":1,"patter'
    'n":[[1,2]]}],"writes":[{"tensor":"ps0","partitions":[0,1],"offset":1,"pattern":[[1,1]]}],"attrs":{"g'
    'roup":"acc_ps0"}},{"name":"tensor_scalar3","engine":"dve","op":"tensor_scalar","reads":[{"tensor":"s'
    'b0","offset":10}],"writes":[{"tensor":"ps0","offset":13}],"attrs":{"op0":"add","operand0":0,"reverse'
    '":true}},{"name":"dma_copy4","engine":"pe","op":"dma_gather","queue":"dma0","reads":[{"tensor":"sb0"'
    ',"offset":1,"pattern":[[1,1]]}],"writes":[{"tensor":"dr0","pattern":[[0,1],[0,1]]}]},{"loop":"L2","t'
    'rip_count":1,"body":[{"name":"transpose5","engine":"pe","op":"transpose","reads":[{"tensor":"sb0","p'
    'artitions":[0,1],"pattern":[[2,1]]}],"writes":[{"tensor":"ps0","partitions":[0,1],"offset":2,"patter'
    'n":[[1,1],[1,1]]}]}]},{"name":"random6","engine":"dve","op":"random","reads":[],"writes":[{"tensor":'
    '"sb0","offset":2}],"attrs":{"low":0,"high":1}},{"name":"transpose7","engine":"pe","op":"transpose","'
    'reads":[{"tensor":"sb0","partitions":[0,1]}],"writes":[{"tensor":"ps0","partitions":[0,1],"pattern":'
    '[[1,1]]}]},{"name":"activation8","engine":"act","op":"activation","reads":[{"tensor":"sb1","offset":'
    '1,"pattern":[[1,1]]}],"writes":[{"tensor":"sb0","partitions":[0,1],"pattern":[[1,1]]}]},{"name":"tra'
    'nspose9","engine":"pe","op":"transpose","reads":[{"tensor":"sb0","partitions":[0,1],"pattern":[[1,1]'
    ']}],"writes":[{"tensor":"ps0","partitions":[0,1],"pattern":[[1,1]]}]}]}'
)


@nonvacuous(equal=120, looped=60)
@settings(max_examples=160, **SLOW)
@given(programs(**LOOPS))
@example(loads_program(_FAN_IN_REGRESSION))
def test_kept_waits_never_exceed_the_minimum_and_reach_it(program):
    compiled, ctx = compile_program(program)
    assert _loops(compiled) == _loops(program)  # loops kept
    assert check_program(compiled).race_free
    kept = stage_sync(compiled, "compiled", simulate=False).figures.waits
    minimum = minimum_sync(compiled).figures.waits
    assert not ctx.stats.get("anti-deps", {}).get("conservative_alias")
    assert kept <= minimum
    if kept == minimum:
        tally("equal")
    if _loops(program):
        tally("looped")


@nonvacuous(checked=30)
@settings(max_examples=40, **SLOW)
@given(programs(deps="none", virtual=True, max_instructions=6, max_trip=2, max_loops=2))
def test_kept_waits_against_the_brute_force_minimum(program):
    compiled, _ = compile_program(program)
    kept = stage_sync(compiled, "compiled", simulate=False).figures.waits
    assert kept <= _brute_minimum(_strip(compiled))
    tally("checked")
