"""The simulator: cost model, timing (on paper and against a closed form), outputs against the
sequential reference, interleavings (rule 5), deadlocks, and the ``simulate`` command."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from neuronsim.machine.model.cost import instruction_cost
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.formats.program_json import load_program, parse_program
from neuronsim.machine.ir.program import Dep, Instruction, Program
from neuronsim.machine.model.presets import resolve_machine
from neuronsim.machine.sim.engine import DeadlockError, Interleaving, TimedRun
from neuronsim.testing.heaploop import heap_run
from neuronsim.machine.sim.plan import build_plan
from neuronsim.machine.sim.memory import initial_memory
from neuronsim.machine.sim.simulator import run_sequential, simulate
from neuronsim.verify.cli import cli
from neuronsim.verify.racecheck import check_program
from neuronsim.verify.strategies import programs

EXAMPLES = "examples"
TRN1 = resolve_machine("trn1")


def _doc(tensors, body, machine="trn1"):
    return {"format": "neuronsim.program/1", "machine": machine, "tensors": tensors, "body": body}


# -- cost model --------------------------------------------------------------------------------
def _cost(tensors, instr, machine="trn1"):
    program = parse_program(_doc(tensors, [instr], machine))
    return instruction_cost(program.instruction_map()[instr["name"]], program.tensors, resolve_machine(machine))


SB = {"a": {"memory": "sbuf", "dtype": "bfloat16", "shape": [128, 512], "partition": 0, "offset": 0},
      "f": {"memory": "sbuf", "dtype": "float32", "shape": [128, 512], "partition": 0, "offset": 4096},
      "p": {"memory": "psum", "dtype": "float32", "shape": [128, 512], "partition": 0, "bank": 0},
      "d": {"memory": "dram", "dtype": "float32", "shape": [128, 512], "address": 0}}


@pytest.mark.parametrize(("instr", "machine", "ns"), [
    # PE matmul: max(min(64, M), N) cycles at 2.8 / 2.4 GHz; fp32 x4
    ({"name": "m", "engine": "pe", "op": "matmul", "reads": [{"tensor": "a", "pattern": [[1, 128]]}, {"tensor": "a"}],
      "writes": [{"tensor": "p"}]}, "trn1", 512 / 2.8),
    ({"name": "m", "engine": "pe", "op": "matmul", "reads": [{"tensor": "a", "pattern": [[1, 16]]},
                                                              {"tensor": "a", "pattern": [[1, 8]]}],
      "writes": [{"tensor": "p", "pattern": [[1, 8]]}]}, "trn2", 16 / 2.4),
    ({"name": "m", "engine": "pe", "op": "matmul", "reads": [{"tensor": "f", "pattern": [[1, 128]]}, {"tensor": "f"}],
      "writes": [{"tensor": "p"}]}, "trn1", 4 * 512 / 2.8),
    ({"name": "t", "engine": "pe", "op": "transpose", "reads": [{"tensor": "a", "pattern": [[1, 32]]}],
      "writes": [{"tensor": "p", "partitions": [0, 32], "pattern": [[1, 128]]}]}, "trn1", 128 / 2.8),
    # DVE / ACT: max(64, formula) at 1.12 / 1.4 GHz
    ({"name": "x", "engine": "dve", "op": "tensor_tensor", "reads": [{"tensor": "f"}, {"tensor": "f"}],
      "writes": [{"tensor": "f"}]}, "trn1", 1024 / 1.12),
    ({"name": "x", "engine": "dve", "op": "tensor_tensor", "reads": [{"tensor": "p"}, {"tensor": "f"}],
      "writes": [{"tensor": "f"}]}, "trn1", 512 / 1.12),
    ({"name": "x", "engine": "dve", "op": "tensor_tensor", "reads": [{"tensor": "a"}, {"tensor": "a"}],
      "writes": [{"tensor": "a"}], "attrs": {"op": "multiply"}}, "trn1", 512 / 1.12),
    ({"name": "x", "engine": "dve", "op": "tensor_reduce", "reads": [{"tensor": "a"}],
      "writes": [{"tensor": "a", "pattern": [[1, 1]]}], "attrs": {"op": "max"}}, "trn1", 256 / 1.12),
    ({"name": "x", "engine": "act", "op": "activation", "reads": [{"tensor": "f", "pattern": [[1, 10]]}],
      "writes": [{"tensor": "f", "pattern": [[1, 10]]}]}, "trn1", 64 / 1.4),
    ({"name": "x", "engine": "dve", "op": "memset", "writes": [{"tensor": "a"}], "attrs": {"value": 0}}, "trn2",
     256 / 0.96),
    # POOL: 150 + work at 1.4 GHz
    ({"name": "x", "engine": "pool", "op": "iota", "writes": [{"tensor": "f", "pattern": [[1, 100]]}]}, "trn1",
     250 / 1.4),
    ({"name": "x", "engine": "pool", "op": "tensor_tensor", "reads": [{"tensor": "f"}, {"tensor": "f"}],
      "writes": [{"tensor": "f"}]}, "trn1", (150 + 1024) / 1.4),
    # cycles override and opaque ops
    ({"name": "x", "engine": "act", "op": "activation", "reads": [{"tensor": "f"}], "writes": [{"tensor": "f"}],
      "attrs": {"cycles": 7}}, "trn1", 7 / 1.4),
    ({"name": "x", "engine": "sp", "op": "whatever", "reads": [{"tensor": "f", "pattern": [[1, 3]]}]}, "trn1",
     64 / 1.4),
])
def test_compute_costs(instr, machine, ns):
    assert _cost(SB, instr, machine).duration_ns == pytest.approx(ns, rel=1e-12)


def test_dma_costs():
    """A transfer splits by partitions over the 16 DMA engines (8 partitions each); its
    latency is the fixed part plus hardware DGE; software DGE occupies the POOL trigger."""
    load = {"name": "l", "engine": "sp", "op": "dma_copy", "reads": [{"tensor": "d"}], "writes": [{"tensor": "f"}]}
    cost = _cost(SB, load)
    assert cost.bytes == 128 * 512 * 4
    share = 128 * 512 * 4 / 16 / 17
    assert cost.shares == tuple((e, pytest.approx(share), pytest.approx(share)) for e in range(16))
    assert cost.latency_ns == 550 and cost.duration_ns == pytest.approx(550 + share)
    assert cost.issue_ns == pytest.approx(64 / 1.4)
    trn2 = _cost(SB, {**load, "attrs": {"dge": "hwdge"}}, "trn2")
    assert trn2.latency_ns == 550 + 600 and trn2.duration_ns == pytest.approx(1150 + 16384 / 23)
    sw = _cost(SB, {**load, "engine": "pool", "attrs": {"dge": "swdge"}})
    assert sw.issue_ns == pytest.approx(64 / 1.4 + 468) and sw.latency_ns == 550
    stand_in = _cost(SB, {**load, "attrs": {"cycles": 500}})
    assert (stand_in.duration_ns, stand_in.shares) == (500, ())
    # four partitions from partition 8 on: one engine (the second), four descriptors of 106 ns
    few = _cost(SB, {**load, "writes": [{"tensor": "f", "partitions": [8, 4, 1], "pattern": [[1, 16]]}],
                     "reads": [{"tensor": "d", "pattern": [[1, 64]]}]})
    assert few.shares == ((1, pytest.approx(256 / 17), pytest.approx(4 * 106)),)
    # DRAM to DRAM: rows of the destination spread evenly over the engines, a descriptor a row
    # (probe_aa: the whole tensor was costed a descriptor per element, 27 us for 16 KiB)
    copy = _cost({**SB, "e": {**SB["d"], "address": 1 << 20}},
                 {**load, "writes": [{"tensor": "e"}]})
    share = 128 * 512 * 4 / 16 / 17
    assert copy.shares == tuple((e, pytest.approx(share), pytest.approx(max(share, 8 * 106))) for e in range(16))
    # a row at a time: 4 rows of 64 columns on 4 engines; every other element of the destination:
    # a descriptor each; of the source only: one row (as a load's DRAM side, it is not counted)
    rows = _cost({**SB, "e": {**SB["d"], "address": 1 << 20}},
                 {**load, "reads": [{"tensor": "d", "pattern": [[512, 4], [1, 64]]}],
                  "writes": [{"tensor": "e", "pattern": [[512, 4], [1, 64]]}]})
    assert rows.shares == tuple((e, pytest.approx(256 / 17), pytest.approx(106)) for e in range(4))
    strided = _cost({**SB, "e": {**SB["d"], "address": 1 << 20}},
                    {**load, "reads": [{"tensor": "d", "pattern": [[1, 32]]}],
                     "writes": [{"tensor": "e", "pattern": [[2, 32]]}]})
    assert strided.shares == tuple((e, pytest.approx(8 / 17), pytest.approx(2 * 106)) for e in range(16))
    gather = _cost({**SB, "e": {**SB["d"], "address": 1 << 20}},
                   {**load, "reads": [{"tensor": "d", "pattern": [[2, 32]]}],
                    "writes": [{"tensor": "e", "pattern": [[1, 32]]}]})
    assert gather.shares == ((0, pytest.approx(128 / 17), pytest.approx(106)),)


# -- timing ------------------------------------------------------------------------------------
HAND = _doc({
    "src": {"memory": "dram", "dtype": "float32", "shape": [128, 64], "address": 0, "role": "input"},
    "dst": {"memory": "dram", "dtype": "float32", "shape": [128, 64], "address": 65536, "role": "output"},
    "t": {"memory": "sbuf", "dtype": "float32", "shape": [128, 64], "partition": 0, "offset": 0},
    "u": {"memory": "sbuf", "dtype": "float32", "shape": [128, 64], "partition": 0, "offset": 256},
    "v": {"memory": "sbuf", "dtype": "float32", "shape": [128, 64], "partition": 0, "offset": 512},
    "w": {"memory": "sbuf", "dtype": "float32", "shape": [128, 64], "partition": 0, "offset": 768}}, [
    {"name": "ld", "engine": "sp", "op": "dma_copy", "queue": "dma0", "reads": [{"tensor": "src"}],
     "writes": [{"tensor": "t"}]},
    {"name": "ix", "engine": "pool", "op": "iota", "writes": [{"tensor": "w"}]},
    {"name": "ex", "engine": "act", "op": "activation", "reads": [{"tensor": "t"}], "writes": [{"tensor": "u"}],
     "attrs": {"func": "exp"}, "deps": [{"on": "ld"}]},
    {"name": "add", "engine": "dve", "op": "tensor_tensor", "reads": [{"tensor": "u"}, {"tensor": "t"}],
     "writes": [{"tensor": "v"}], "deps": [{"on": "ex"}]},
    {"name": "st", "engine": "act", "op": "dma_copy", "queue": "dma1", "reads": [{"tensor": "v"}],
     "writes": [{"tensor": "dst"}], "deps": [{"on": "add"}]}])


def test_makespan_of_a_hand_built_program_matches_the_paper_figure():
    """trn1: a load, exp on ACT, an add on DVE, a store; an iota on POOL meanwhile.

    trigger 64 cycles / 1.4 GHz; transfer 550 ns latency + 2 KiB per engine / 17 B/ns;
    exp occupies max(64, 64) / 1.4 and its result exists (64 + 220) / 1.4 + 30 ns after its
    start; the add (2 x 64 cycles at 1.12 GHz) starts then, and its result (128 + 144) / 1.12
    + 30 ns after its start triggers the store; iota (150 + 64) / 1.4.
    """
    trace = simulate(parse_program(HAND)).trace
    trigger, latency, data = 64 / 1.4, 550, 2048 / 17
    r = {rec.name: rec for rec in trace}
    assert (r["ld"].trigger, r["ld"].issued) == (0, pytest.approx(trigger))
    assert r["ld"].start == pytest.approx(trigger + latency)
    assert r["ld"].end == pytest.approx(trigger + latency + data, abs=1e-9)
    assert r["ix"].start == 0 and r["ix"].end == pytest.approx(214 / 1.4)
    assert r["ex"].start == r["ld"].end and r["ex"].end == pytest.approx(r["ld"].end + 64 / 1.4, abs=1e-9)
    exp_result = r["ex"].start + (64 + 220) / 1.4 + 30
    assert r["add"].start == pytest.approx(exp_result, abs=1e-9)
    assert r["add"].end == pytest.approx(exp_result + 128 / 1.12, abs=1e-9)
    assert r["st"].trigger == pytest.approx(r["add"].start + (128 + 144) / 1.12 + 30, abs=1e-9)
    paper = r["st"].trigger + trigger + latency + data
    assert trace.makespan == pytest.approx(paper, abs=1e-9)
    assert r["add"].waits_met == ((2, "act", 1, r["ex"].end),)
    assert r["ex"].waits_met == ((0, "dma0", 1, r["ld"].end),)


@settings(max_examples=40)
@given(programs(deps="random", max_instructions=16, machine=None), st.sampled_from([None, 0, 1, 7]))
def test_event_times_equal_the_heapq_twin(program, seed):
    """The simpy run and the independently written heapq loop agree exactly, jitter included."""
    plan = build_plan(program)
    policy = Interleaving(seed)
    times = TimedRun(plan, policy).run()
    trigger, issued, start, end = heap_run(plan, policy.timing(plan))
    assert (times.trigger, times.issued, times.start, times.end) == (trigger, issued, start, end)


def test_runs_are_deterministic_per_seed_and_seeds_differ():
    program = load_program(f"{EXAMPLES}/matmul_k_loop.json")
    a, b, c = (simulate(program, seed=s, functional=False).trace for s in (3, 3, 4))
    assert a == b
    assert [r.end for r in a] != [r.end for r in c]
    jitter = Interleaving(4, spread=2.0).durations(build_plan(program))[0]
    nominal = build_plan(program).duration
    assert all(d / 2 <= j <= d * 2 for d, j in zip(nominal, jitter))


# -- outputs against the sequential reference ---------------------------------------------------
def test_race_free_example_equals_the_reference_under_20_seeds():
    sim = simulate(load_program(f"{EXAMPLES}/matmul_k_loop.json"), seeds=[None, *range(20)], compare="all")
    assert len(sim.runs) == 21 and not sim.differs


def test_racy_matmul_loop_is_witnessed_under_some_seeds():
    """Measured: the WAR races on ``xs`` change ``out`` in 11 of seeds 0..19 (the nominal run is clean)."""
    sim = simulate(load_program(f"{EXAMPLES}/matmul_k_loop_racy.json"), seeds=[None, *range(20)])
    differing = [run.seed for run in sim.runs if run.differs]
    assert None not in differing and 5 <= len(differing) <= 18
    assert all(d.tensor == "out" for run in sim.runs for d in run.diffs)


def test_async_load_then_fill_race_shows_in_the_filled_partitions_only():
    """Nominally the memset of partitions 0-31 finishes before the asynchronous load overwrites
    them; seeded runs realise both orders (measured: 34 of 41 runs differ)."""
    sim = simulate(load_program(f"{EXAMPLES}/async_load_then_fill.json"), seeds=[None, *range(40)])
    assert sim.runs[0].differs
    assert 20 <= sum(run.differs for run in sim.runs) <= 40
    for run in sim.runs:
        assert [d.tensor for d in run.diffs] in (["o"], [])
        assert all(d.ranges == ((0, 32 * 64 * 4),) and d.expected == 0.0 for d in run.diffs)


TWENTY = [None, *range(20)]


@settings(max_examples=15)
@given(programs(deps="sequential", max_instructions=12))
def test_sequential_programs_equal_the_reference_under_20_seeds(program):
    assert not simulate(program, seeds=TWENTY, compare="all").differs


@settings(max_examples=30)
@given(programs(deps="random", max_instructions=10))
def test_programs_the_race_checker_passes_equal_the_reference_under_20_seeds(program):
    if check_program(program).race_free:
        assert not simulate(program, seeds=TWENTY, compare="all").differs


def test_both_orders_of_an_unordered_pair_are_realised():
    """Rule 5: a load and a compute write with no chain between them finish in either order."""
    program = load_program(f"{EXAMPLES}/async_load_then_fill.json")
    orders = set()
    for seed in range(40):
        r = {rec.name: rec for rec in simulate(program, seed=seed, functional=False).trace}
        orders.add(r["load"].end < r["fill"].end)
    assert orders == {True, False}


def test_virtual_tensors_are_refused():
    doc = _doc({"t": {"memory": "sbuf", "dtype": "float32", "shape": [4, 4]}},
               [{"name": "m", "engine": "dve", "op": "memset", "writes": [{"tensor": "t"}]}])
    with pytest.raises(ProgramError, match="virtual tensors is an error") as err:
        simulate(parse_program(doc))
    assert err.value.path == "tensors.t"


# -- deadlocks ---------------------------------------------------------------------------------
def _opaque_program(*places):
    body = tuple(Instruction(f"i{k}", seq, "dma_op" if queue else "op", attrs={"cycles": 10}, queue=queue)
                 for k, (seq, queue) in enumerate(places))
    return Program({}, body)


def test_two_engines_waiting_on_each_other_deadlock_with_the_cycle_named():
    program = _opaque_program(("dve", None), ("act", None))
    with pytest.raises(DeadlockError) as err:
        simulate(program, waits=[[1], [0]])
    cycle = {(b.component, b.instance, b.waits_for, b.semaphore, b.threshold) for b in err.value.cycle}
    assert cycle == {("dve", "i0", "i1", "act", 1), ("act", "i1", "i0", "dve", 1)}
    assert err.value.path == "body[0].deps" or err.value.path == "body[1].deps"


def test_a_wait_on_its_own_instance_or_a_later_one_on_the_same_engine_deadlocks():
    with pytest.raises(DeadlockError, match="pe blocked at i0 waiting for pe >= 1"):
        simulate(_opaque_program(("pe", None)), waits=[[0]])
    with pytest.raises(DeadlockError, match="pe blocked at i0 waiting for pe >= 2"):
        simulate(_opaque_program(("pe", None), ("pe", None)), waits=[[1], []], seed=3)


def test_a_deadlock_through_a_queue_waiting_for_its_trigger():
    """i0 (sp -> dma0) waits for i2 on PE; i2 waits for i1 (act -> dma0), queued behind i0."""
    program = _opaque_program(("sp", "dma0"), ("act", "dma0"), ("pe", None))
    with pytest.raises(DeadlockError) as err:
        simulate(program, waits=[[2], [], [1]])
    comps = {b.component: b for b in err.value.cycle}
    assert set(comps) == {"sp", "pe", "dma0"}
    assert comps["dma0"].semaphore is None and comps["dma0"].instance == "i0"


def test_backward_waits_never_deadlock_and_override_the_program_deps():
    program = _opaque_program(("pe", None), ("act", None), ("sp", "dma1"))
    trace = simulate(program, waits=[[], [0], [0, 1]]).trace
    act = trace.records[1]  # i2's trigger waits for act's result: 10 cycles + ACT's overhead, + 30 ns
    assert act.end < trace.records[2].trigger == pytest.approx(act.start + (10 + 220) / 1.4 + 30)
    with pytest.raises(ValueError, match="entries"):
        simulate(program, waits=[[]])


# -- the command ---------------------------------------------------------------------------------
def _invoke(*args):
    return CliRunner().invoke(cli, ["simulate", *args], catch_exceptions=False)


def test_cli_exit_statuses_and_json(tmp_path):
    ok = _invoke(f"{EXAMPLES}/matmul_k_loop.json", "--seeds", "3")
    assert ok.exit_code == 0 and "makespan 7,860.3 ns" in ok.output and "4 of 4 runs" in ok.output
    racy = _invoke(f"{EXAMPLES}/matmul_k_loop_racy.json", "--seeds", "20", "--json")
    assert racy.exit_code == 1
    doc = json.loads(racy.stdout)
    assert doc["format"] == "neuronsim.simulation/1" and not doc["outputs_equal"]
    assert doc["runs"][0]["seed"] is None and len(doc["runs"]) == 21
    assert doc["reported_seed"] == next(r["seed"] for r in doc["runs"] if r["differs"])
    assert {e["name"] for e in doc["summary"]["engines"]} >= {"pe", "act", "dma0"}
    virtual = tmp_path / "virtual.json"
    virtual.write_text(json.dumps(_doc({"t": {"memory": "sbuf", "dtype": "float32", "shape": [4, 4]}},
                                       [{"name": "m", "engine": "dve", "op": "memset", "writes": [{"tensor": "t"}]}])))
    placed = _invoke(str(virtual), "--json")  # virtual tensors are placed by alloc first, and it is said
    assert placed.exit_code == 0 and json.loads(placed.stdout)["format"] == "neuronsim.simulation/1"
    assert "note: 1 virtual tensor(s): placed with the alloc pass first" in placed.stderr


def test_cli_inputs_trace_and_plot(tmp_path):
    src = np.arange(128 * 64, dtype=np.float32).reshape(128, 64) / 8192
    np.savez(tmp_path / "in.npz", src=src)
    program = tmp_path / "hand.json"
    program.write_text(json.dumps(HAND))
    result = _invoke(str(program), "--inputs", str(tmp_path / "in.npz"), "--seed", "2", "--trace",
                     str(tmp_path / "t.json"), "--plot", str(tmp_path / "t.png"), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "t.json").read_text())["otherData"]["seed"] == 2
    assert (tmp_path / "t.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    unknown = tmp_path / "bad.npz"
    np.savez(unknown, nope=src)
    assert _invoke(str(program), "--inputs", str(unknown)).exit_code == 2
    (tmp_path / "junk.npz").write_text("not a zip")
    assert _invoke(str(program), "--inputs", str(tmp_path / "junk.npz")).exit_code == 2


def test_inputs_reach_the_outputs():
    src = np.linspace(-1, 1, 128 * 64, dtype=np.float32).reshape(128, 64)
    program = parse_program(HAND)
    sim = simulate(program, inputs={"src": src})
    plan = build_plan(program)
    done = run_sequential(plan, initial_memory(program, plan.spec, inputs={"src": src}))
    out = np.frombuffer(done.tensor_bytes(program.tensors["dst"]), np.float32).reshape(128, 64)
    np.testing.assert_allclose(out, np.exp(src) + src, rtol=1e-6)
    assert not sim.differs


def test_unvalidated_programs_are_validated_first():
    program = parse_program(HAND)
    bad = program.map_instructions(lambda i: replace(i, deps=(Dep("st"),)) if i.name == "ex" else i)
    with pytest.raises(ProgramError, match="later in program order"):
        simulate(bad)
