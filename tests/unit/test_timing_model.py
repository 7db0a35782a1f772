"""The timing model of issue 21: result latency and additive overhead on dependent
instructions, pipelining of independent ones, DMA engines shared by partitions, the fixed DMA
latency overlapping the transfers in flight, the descriptor-rate limit, the aggregate cap,
descriptor generation, and the rules kept (FIFO queues)."""

from __future__ import annotations

import pytest

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.formats.program_json import parse_program
from neuronsim.machine.model.presets import resolve_machine
from neuronsim.machine.sim.simulator import simulate

TRN1, TRN2 = resolve_machine("trn1"), resolve_machine("trn2")


def _trace(tensors, body, machine="trn1"):
    doc = {"format": "neuronsim.program/1", "machine": machine, "tensors": tensors, "body": body}
    return {r.name: r for r in simulate(parse_program(doc), functional=False).trace}


TILES = {f"t{k}": {"memory": "sbuf", "dtype": "bfloat16", "shape": [128, 1], "partition": 0, "offset": 64 * k}
         for k in range(4)}


def _act(name, source, target, **extra):
    return {"name": name, "engine": "act", "op": "activation", "reads": [{"tensor": source}],
            "writes": [{"tensor": target}], **extra}


def test_a_dependent_activation_waits_for_its_producers_result():
    """start to start = (1 element + 220 cycles overhead) / 1.4 GHz + 30 ns result latency"""
    r = _trace(TILES, [_act("a", "t0", "t1"), _act("b", "t1", "t2")])
    assert r["b"].start - r["a"].start == pytest.approx(221 / 1.4 + 30)
    assert r["a"].end == pytest.approx(64 / 1.4)  # its occupancy: the MIN_II floor


def test_independent_activations_pipeline_at_the_initiation_interval():
    r = _trace(TILES, [_act("a", "t0", "t1"), _act("b", "t2", "t3")])
    assert r["b"].start == r["a"].end == pytest.approx(64 / 1.4)


def test_a_cross_engine_wait_adds_the_producers_result_latency():
    body = [_act("a", "t0", "t1"),
            {"name": "d", "engine": "dve", "op": "tensor_copy", "reads": [{"tensor": "t1"}],
             "writes": [{"tensor": "t2"}], "deps": [{"on": "a"}]}]
    r = _trace(TILES, body)
    assert r["d"].waits_met[0].time == r["a"].end
    assert r["d"].start == pytest.approx(r["a"].start + 221 / 1.4 + 30)


def test_a_matmul_accumulating_into_its_psum_tile_does_not_wait_for_the_previous_one():
    tensors = {"w": {"memory": "sbuf", "dtype": "bfloat16", "shape": [128, 128], "partition": 0, "offset": 0},
               "acc": {"memory": "psum", "dtype": "float32", "shape": [128, 128], "partition": 0, "bank": 0}}
    mm = {"engine": "pe", "op": "matmul", "reads": [{"tensor": "w"}, {"tensor": "w"}, {"tensor": "acc"}],
          "writes": [{"tensor": "acc"}], "attrs": {"accumulate": True}}
    r = _trace(tensors, [{**mm, "name": "m0"}, {**mm, "name": "m1"}])
    assert r["m1"].start == r["m0"].end == pytest.approx(128 / 2.8)


def _endpoints(rows=128, free=2048):
    return {"a": {"memory": "dram", "dtype": "bfloat16", "shape": [4 * rows, free], "address": 0},
            "s": {"memory": "sbuf", "dtype": "bfloat16", "shape": [128, free], "partition": 0, "offset": 0}}


def _load(name, parts=(0, 128), free=2048, queue="dma0", engine="sp", k=0, **attrs):
    first, count = parts
    return {"name": name, "engine": engine, "op": "dma_copy", "queue": queue, "attrs": attrs,
            "reads": [{"tensor": "a", "offset": k * count * free, "pattern": [[1, count * free]]}],
            "writes": [{"tensor": "s", "partitions": [first, count, 1], "pattern": [[1, free]]}]}


def test_the_fixed_latency_overlaps_the_previous_transfer_of_the_queue():
    """4 KiB per partition: 32 KiB per engine moves in 1,927 ns; the second transfer's 550 ns
    latency runs meanwhile, so it starts the moment the first ends (rule 3, no gap)."""
    r = _trace(_endpoints(), [_load("l0"), _load("l1", k=1)])
    data = 8 * 4096 / 17
    assert r["l0"].start == pytest.approx(64 / 1.4 + 550)
    assert r["l0"].end - r["l0"].start == pytest.approx(data)
    assert r["l1"].start == r["l0"].end and r["l1"].end == pytest.approx(r["l0"].end + data)


def test_small_transfers_are_limited_by_the_descriptor_rate():
    """256 B per partition: 8 rows per engine take 8 x 106 ns of descriptors, more than data."""
    r = _trace(_endpoints(), [_load("l0", free=128), _load("l1", free=128, k=1)])
    assert r["l1"].start == pytest.approx(r["l0"].start + 8 * 106)
    assert r["l1"].start > r["l0"].end


def test_where_descriptors_are_made_paces_the_engines_or_the_queue():
    """256 B per partition on two queues.  trn1 (descriptors read by the engines): the engines
    are held 8 x 106 ns, so the second queue's transfer waits for them.  trn2 (made at run time
    by a DGE): the engines are held for the data only, the second queue's transfer moves at
    once, and a queue's next transfer still waits the 848 ns (the efficiency curve, one queue)."""
    body = [_load("l0", free=128), _load("l1", free=128, queue="dma1", k=1), _load("l2", free=128, k=2)]
    trn1, trn2 = _trace(_endpoints(), body), _trace(_endpoints(), body, "trn2")
    assert trn1["l1"].start == pytest.approx(trn1["l0"].start + 8 * 106)
    assert trn2["l1"].start - trn2["l0"].start < 100  # the trigger apart: the engines were free
    assert trn2["l2"].start == pytest.approx(trn2["l0"].start + 8 * 106)  # its own queue's pace
    assert not TRN1.dma_paced_by_queue and TRN2.dma_paced_by_queue


def test_queues_share_the_dma_engines_their_partitions_map_to():
    """Two 4-partition loads on two queues: on the same partitions they take turns on one
    engine; on partitions 0-3 and 8-11 (engines 0 and 1) they move at once."""
    same = _trace(_endpoints(4), [_load("x", (0, 4)), _load("y", (0, 4), queue="dma1", k=1)])
    apart = _trace(_endpoints(4), [_load("x", (0, 4)), _load("y", (8, 4), queue="dma1", k=1)])
    data = 4 * 4096 / 17
    assert same["y"].start == pytest.approx(same["x"].end)
    assert apart["y"].start == pytest.approx(apart["x"].start + 64 / 1.4)  # only the trigger apart
    assert apart["y"].end - apart["y"].start == pytest.approx(data)


def test_the_aggregate_cap_slows_every_engine():
    capped = {"base": "trn1", "dma_core_bytes_per_ns": 136.0}
    assert resolve_machine(capped).dma_rate == 8.5
    r = _trace(_endpoints(), [_load("l0")], capped)
    assert r["l0"].end - r["l0"].start == pytest.approx(8 * 4096 / 8.5)


def test_descriptor_generation_modes():
    """swdge keeps POOL busy 468 ns; hwdge adds 600 ns of latency and leaves ACT free."""
    sw = _trace(_endpoints(), [_load("l", engine="pool", dge="swdge"),
                               {"name": "i", "engine": "pool", "op": "iota", "writes": [{"tensor": "s"}]}], "trn2")
    assert sw["l"].issued - sw["l"].trigger == pytest.approx(64 / 1.2 + 468)
    assert sw["i"].start == sw["l"].issued
    hw = _trace(_endpoints(), [_load("l", engine="act", dge="hwdge")], "trn2")
    assert hw["l"].issued == pytest.approx(64 / 1.2)
    assert hw["l"].start == pytest.approx(64 / 1.2 + 550 + 600)


def test_dge_costs_an_opaque_transfer_as_it_costs_dma_copy():
    opaque = {**_load("t", engine="act"), "op": "dma_transpose", "attrs": {"dge": "hwdge"}}
    hw = _trace(_endpoints(), [opaque], "trn2")
    assert hw["t"].start == pytest.approx(64 / 1.2 + 550 + 600)
    with pytest.raises(ProgramError) as err:
        _trace(_endpoints(), [opaque], "trn1")
    assert err.value.path == "body[0].attrs.dge"


def test_strided_access_halves_the_rate_and_isa_named_opaque_ops_cost_their_formula():
    tensors = {"f": {"memory": "sbuf", "dtype": "float32", "shape": [128, 1024], "partition": 0, "offset": 0}}
    plain = {"name": "c", "engine": "dve", "op": "tensor_copy", "reads": [{"tensor": "f", "pattern": [[1, 256]]}],
             "writes": [{"tensor": "f", "offset": 512, "pattern": [[1, 256]]}]}
    strided = {**plain, "reads": [{"tensor": "f", "pattern": [[4, 256]]}]}  # 16 B steps: full rate
    wider = {**plain, "reads": [{"tensor": "f", "pattern": [[5, 100]]}],
             "writes": [{"tensor": "f", "offset": 600, "pattern": [[1, 100]]}]}  # 20 B steps
    assert _trace(tensors, [plain])["c"].end == pytest.approx(256 / 1.12)
    assert _trace(tensors, [strided])["c"].end == pytest.approx(256 / 1.12)
    assert _trace(tensors, [wider])["c"].end == pytest.approx(200 / 1.12)
    recip = {**plain, "op": "reciprocal"}
    assert _trace(tensors, [recip])["c"].end == pytest.approx(8 * 256 / 1.12)


def test_queues_complete_in_program_order_under_jitter():
    """Rule 3 on a queue whose second transfer is far smaller: it still starts after the first."""
    body = [_load("big", free=4096), _load("small", (0, 4), free=64, k=1)]
    doc = {"format": "neuronsim.program/1", "machine": "trn1", "tensors": _endpoints(free=4096), "body": body}
    program = parse_program(doc)
    for seed in range(10):
        r = {x.name: x for x in simulate(program, seed=seed, functional=False).trace}
        assert r["big"].end <= r["small"].start
