"""Traces: rules 1-4 hold on the recorded times, waits are recorded as the semaphores met them,
and the Perfetto JSON, summary table and plot are well formed."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuronsim_tests import ROOT
from rich.console import Console

from neuronsim.machine.formats.program_json import load_program
from neuronsim.machine.sim.export import chrome_trace, write_chrome_trace
from neuronsim.verify.app.drawings import plot_timeline
from neuronsim.machine.sim.plan import build_plan
from neuronsim.machine.sim.simulator import simulate
from neuronsim.machine.sim.trace import summarize, summary_table
from neuronsim.verify.strategies import programs

try:  # tests/ is a rootdir package or only on sys.path, depending on how pytest is run
    from neuronsim_tests.oracles import hb_graph
except ImportError:
    from oracles import hb_graph

EXAMPLES = ROOT / "examples"
_TIME = {"T": "trigger", "S": "start", "E": "end"}


def _assert_rules(program, trace):
    """Every happens-before edge of the spec's rules 1-4 (brute-force DAG) holds on the times."""
    records = trace.records
    for (a, pa), (b, pb) in hb_graph(program).edges:
        before, after = getattr(records[a], _TIME[pa]), getattr(records[b], _TIME[pb])
        assert before <= after, (records[a].name, pa, records[b].name, pb)
    plan = build_plan(program)
    for r in records:
        assert r.ready <= r.trigger <= r.start <= r.end
        assert r.trigger <= r.issued <= (r.start if r.is_dma else r.end)
        for w in r.waits_met:
            producer = records[w.producer]
            assert w.semaphore == producer.component
            assert w.value == plan.position[w.producer] + 1
            assert w.time == producer.end <= r.trigger
            assert trace.semaphore_times[trace.components.index(w.semaphore)][w.value - 1] == w.time
    for comp in trace.components:  # in-order streams, explicitly
        stream = trace.stream(comp)
        for prev, nxt in zip(stream, stream[1:]):
            if comp.startswith("dma"):
                assert prev.end <= nxt.start
            else:
                assert (prev.issued if prev.is_dma else prev.end) <= nxt.trigger


@settings(max_examples=30)
@given(programs(deps="random", max_instructions=14, machine=None), st.sampled_from([None, 0, 5]))
def test_rules_hold_on_every_trace(program, seed):
    _assert_rules(program, simulate(program, seed=seed, functional=False).trace)


@pytest.mark.parametrize("name", ["matmul_k_loop", "matmul_k_loop_racy", "async_load_then_fill"])
def test_rules_hold_on_the_examples(name):
    program = load_program(f"{EXAMPLES}/{name}.json")
    for run in simulate(program, seeds=[None, 0, 1, 2]).runs:
        _assert_rules(program, run.trace)


def test_records_are_in_program_order_with_names_and_places():
    trace = simulate(load_program(f"{EXAMPLES}/matmul_k_loop.json")).trace
    assert [r.id for r in trace] == list(range(len(trace)))
    r = {rec.name: rec for rec in trace}
    assert r["ld_x[1]"].is_dma and r["ld_x[1]"].engine == "sp" and r["ld_x[1]"].queue == "dma0"
    assert r["mm[2]"].component == "pe" and r["mm[2]"].queue is None and r["mm[2]"].bytes == 0
    assert [(w.producer, w.semaphore, w.value) for w in r["drain"].waits_met] == [(r["mm[2]"].id, "pe", 4)]
    assert trace.makespan == r["store"].end


# -- Perfetto / Chrome JSON ----------------------------------------------------------------------
def test_chrome_trace_structure(tmp_path):
    trace = simulate(load_program(f"{EXAMPLES}/matmul_k_loop.json"), seed=1).trace
    doc = chrome_trace(trace)
    events = doc["traceEvents"]
    assert doc["displayTimeUnit"] == "ns"
    threads = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert sorted(threads.values()) == sorted(trace.components)
    assert any(e["ph"] == "M" and e["name"] == "process_name" for e in events)
    slices = [e for e in events if e["ph"] == "X"]
    ndma = sum(r.is_dma for r in trace)
    assert len(slices) == len(trace) + ndma  # one per instance, plus one trigger slice per DMA
    for e in slices:
        assert e["dur"] >= 0 and e["ts"] >= 0 and e["tid"] in threads
    by_name = {e["name"]: e for e in slices}
    mm = next(r for r in trace if r.name == "mm[1]")
    assert by_name["mm[1]"]["ts"] == pytest.approx(mm.start / 1000)
    assert threads[by_name["mm[1]"]["tid"]] == "pe" and threads[by_name["ld_x[1]"]["tid"]] == "dma0"
    assert threads[by_name["trigger ld_x[1]"]["tid"]] == "sp"
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    assert set(starts) == set(finishes) and len(starts) == sum(len(r.waits_met) for r in trace)
    for fid, f in finishes.items():
        assert f["bp"] == "e" and starts[fid]["ts"] <= f["ts"]
    for queue in ("dma0", "dma1", "dma2"):
        pending = [e["args"]["pending"] for e in events if e["ph"] == "C" and e["name"] == f"pending {queue}"]
        assert pending and min(pending) >= 0 and pending[-1] == 0
    (end,) = [e for e in events if e["ph"] == "i"]  # the run's end: past every slice when a result ends last
    assert end["name"] == "makespan" and end["ts"] == pytest.approx(trace.makespan / 1000)
    assert end["ts"] >= max(e["ts"] + e["dur"] for e in slices) - 1e-9
    tails = [e for e in slices if "span_end_us" in e["args"]]
    assert tails and all(e["args"]["span_end_us"] > e["ts"] + e["dur"] for e in tails)
    sem = [(e["ts"], e["args"]["value"]) for e in events if e["ph"] == "C" and e["name"] == "semaphore pe"]
    assert [v for _, v in sem] == list(range(5)) and sem == sorted(sem)
    path = tmp_path / "trace.json"
    write_chrome_trace(trace, path)
    assert json.loads(path.read_text()) == json.loads(json.dumps(doc))


# -- summary and plot ------------------------------------------------------------------------------
def _act_chain(count: int, dependent: bool):
    from neuronsim.machine.formats.program_json import parse_program

    tensors = {f"t{k}": {"memory": "sbuf", "dtype": "bfloat16", "shape": [128, 1], "partition": 0, "offset": 64 * k}
               for k in range(count + 1)}
    body = [{"name": f"a{k}", "engine": "act", "op": "activation", "attrs": {"func": "exp"},
             "reads": [{"tensor": f"t{k if dependent else 0}"}], "writes": [{"tensor": f"t{k + 1}"}]}
            for k in range(count)]
    return parse_program({"format": "neuronsim.program/1", "machine": "trn1", "tensors": tensors, "body": body})


def test_active_time_is_the_union_of_whole_instruction_spans():
    """A dependent chain shows each instruction's whole duration (element cost plus ACT's fixed
    overhead: (1 + 220) / 1.4 ns) and the gaps between them; independent instructions pipeline,
    so their spans overlap and count once (docs/timing.md, "Busy and active")."""
    full = (1 + 220) / 1.4
    chain = simulate(_act_chain(8, dependent=True), functional=False).trace
    act = next(c for c in summarize(chain).components if c.name == "act")
    assert all(r.span_end - r.start == pytest.approx(full) for r in chain)
    assert act.active_ns == pytest.approx(8 * full)  # a new start only after the result: no overlap
    assert act.busy_ns == pytest.approx(8 * 64 / 1.4) and act.active_ns > 3 * act.busy_ns
    flat = simulate(_act_chain(8, dependent=False), functional=False).trace
    act = next(c for c in summarize(flat).components if c.name == "act")
    starts = [r.start for r in flat]
    assert act.active_ns == pytest.approx(starts[-1] - starts[0] + full)  # overlapping spans, counted once
    assert act.active_ns < 8 * full
    doc = summarize(flat).to_json()["engines"]
    row = next(e for e in doc if e["name"] == "act")
    assert row["active_percent"] == pytest.approx(100 * act.active_ns / summarize(flat).makespan_ns)


@pytest.mark.parametrize("count", [1, 3])
def test_the_makespan_holds_the_last_instruction_s_whole_duration(count):
    """A program ending in compute ends when its last result is in, not when its engine could
    start another: a one-instruction program was ACT 'active 212 %' of its makespan (a probe)."""
    simulation = simulate(_act_chain(count, dependent=True), functional=False)
    act = next(c for c in summarize(simulation.trace).components if c.name == "act")
    last = max(simulation.trace, key=lambda r: r.start)
    assert simulation.trace.makespan == pytest.approx(last.start + (1 + 220) / 1.4)
    assert simulation.trace.makespan > last.end
    assert simulation.runs[0].makespan == simulation.trace.makespan and act.active_ns <= simulation.trace.makespan


def test_summary_figures_add_up():
    trace = simulate(load_program(f"{EXAMPLES}/matmul_k_loop.json")).trace
    summary = summarize(trace)
    rows = {c.name: c for c in summary.components}
    assert summary.makespan_ns == trace.makespan
    assert rows["pe"].instances == 4 and rows["pe"].busy_ns == pytest.approx(4 * 128 / 2.8)
    assert rows["dma0"].bytes == 4 * 32768 and rows["dma2"].bytes == 65536
    assert summary.dma_bytes == sum(r.bytes for r in trace)
    for c in summary.components:
        assert 0 <= c.busy_ns <= summary.makespan_ns and c.wait_ns >= 0
    # SP triggers four loads, each after waiting for the matmul that frees its buffer
    sp = [r for r in trace if r.engine == "sp"]
    assert rows["sp"].wait_ns == pytest.approx(sum(r.trigger - r.ready for r in sp))
    doc = summary.to_json()
    assert doc["dma_gb_per_s"] == pytest.approx(summary.dma_bytes / summary.makespan_ns)
    out = io.StringIO()
    Console(file=out, width=120).print(summary_table(summary))
    text = out.getvalue()
    assert "makespan 7,860.3 ns" in text and "dma0" in text and "pool" not in text


def test_plot_writes_a_png(tmp_path):
    trace = simulate(load_program(f"{EXAMPLES}/async_load_then_fill.json")).trace
    plot_timeline(trace, tmp_path / "t.png")
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"
