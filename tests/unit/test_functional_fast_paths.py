"""The fast paths of functional simulation (issue 31.2) give what the slow paths give.

* :class:`~neuronsim.machine.sim.instance_views.InstanceViews` (views cached per instruction, shifted
  per instance) equals :meth:`Plan.views` for every instance;
* the sequential run on live views (no copies of the reads) leaves the same bytes as one on
  copies;
* ``simulate(timed_values=False)`` (values in the reference alone) gives the runs the same
  times, sources and outputs as runs that compute values, for race-free programs; and
  ``run_scenario`` computes values in every run when the race check finds races;
* the PSUM findings' block index (slices for runs) reads and writes the cells ``np.ix_`` does;
* the uninitialised pattern, drawn as words, is the seeded streams' bytes;
* on a kernel flattened by ``schedule`` (instances that share access and attribute objects),
  the views found by object identity and the costs memoised by it equal those computed
  afresh for every instance.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import pytest

from neuronsim.machine.formats.program_json import load_program, loads_program
from neuronsim.machine.sim.blas import blas_limited
from neuronsim.machine.sim.memory import initial_memory
from neuronsim.machine.sim.plan import build_plan
from neuronsim.machine.sim.simulator import Executor, instance_sources, make_trace, run_sequential, simulate
from neuronsim.machine.sim.engine import TimedRun
from neuronsim.machine.sim.instance_views import InstanceViews
from neuronsim.passes import compile_program
from neuronsim.verify.nki.control_findings import _block
from neuronsim.verify.app.scenario_runs import DEFAULT_SEEDS, get_scenario, run_scenario

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCENARIOS = ("matmul_tiled", "flash_attention", "layernorm", "double_buffer", "mamba")


@cache
def compiled(name: str):
    """A shipped scenario, placed and with its deps (what ``run`` simulates)."""
    return compile_program(get_scenario(name).build())[0]


def programs():
    yield "matmul_k_loop", load_program(str(EXAMPLES / "matmul_k_loop.json"))
    for name in SCENARIOS:
        yield name, compiled(name)


@pytest.mark.parametrize("name", ["matmul_k_loop", *SCENARIOS])
def test_cached_views_equal_the_plan_views_for_every_instance(name):
    program = dict(programs())[name]
    plan = build_plan(program)
    layout = initial_memory(program, plan.spec).dram_layout
    fast = InstanceViews(plan, layout)
    assert len(plan) > 0
    for i in range(len(plan)):
        assert fast.of(i) == plan.views(i, layout), plan.unrolled[i].name


def _sequential_on_copies(plan, memory):
    # at the BLAS threads run_sequential holds: a matmul split over more threads sums in another
    # order (the two runs differed in the last bits on a 2-core AMD EPYC, not on the machines before)
    executor = Executor(plan, memory, copy_reads=True)
    with blas_limited():
        for i in range(len(plan)):
            executor.finish(i, executor.begin(i))
    return memory


def _self_overlapping_transfer():
    """One DMA that reads ``x[0:2]`` and writes both elements to ``x[1]`` (a stride-0 write):
    what the fuzzer drew when it blamed a user's pass (probe_y's correct reduction) for outputs
    that differed from the sequential reference."""
    return loads_program('''{"format": "neuronsim.program/1", "machine": "trn1",
      "tensors": {"x": {"memory": "dram", "dtype": "uint32", "shape": [2], "address": 0, "role": "input"}},
      "body": [{"name": "d", "engine": "pool", "op": "dma_copy", "queue": "dma0",
                "reads": [{"tensor": "x", "offset": 0, "pattern": [[1, 2]]}],
                "writes": [{"tensor": "x", "offset": 1, "pattern": [[0, 2]]}]}]}''')


def test_a_transfer_that_overwrites_its_own_source_reads_it_first():
    program = _self_overlapping_transfer()
    plan = build_plan(program)
    before = initial_memory(program, plan.spec).dram_array(program.tensors["x"])
    after = run_sequential(plan, initial_memory(program, plan.spec)).dram_array(program.tensors["x"])
    assert before[0] != before[1]  # else the two orders could not differ
    assert after.tolist() == [before[0], before[1]]  # the last write is the old x[1]
    assert simulate(program, compare="all").first_difference is None


@pytest.mark.parametrize("name", ["matmul_k_loop", *SCENARIOS])
def test_the_sequential_run_on_live_views_leaves_the_bytes_of_one_on_copies(name):
    program = dict(programs())[name]
    plan = build_plan(program)
    start = initial_memory(program, plan.spec, 5)
    live, copied = run_sequential(plan, start.copy()), _sequential_on_copies(plan, start.copy())
    for a, b in zip(live.spaces, copied.spaces):
        assert np.array_equal(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(live.spaces, start.spaces))  # it computed something


@pytest.mark.parametrize("name", ["matmul_k_loop", "matmul_tiled", "flash_attention"])
def test_runs_timed_without_values_match_runs_with_values(name):
    program = dict(programs())[name]
    seeds = [None, 1, 2]
    full = simulate(program, seeds=seeds, compare="all")
    fast = simulate(program, seeds=seeds, compare="all", timed_values=False)
    assert full.timed_values and not fast.timed_values and not full.differs and not fast.differs
    for a, b in zip(full.runs, fast.runs):
        assert a.trace == b.trace
        assert a.outputs.keys() == b.outputs.keys() and a.outputs
        assert all(np.array_equal(a.outputs[k], b.outputs[k]) for k in a.outputs)


def test_the_runs_without_values_share_the_references_outputs_uncopied():
    """Nothing writes the sequential reference's memory once it has run, so its outputs are
    views of it (a 4096^2 bf16 output's copy was 32 MB of pages touched afresh); a run that
    computes values still gets arrays of its own."""
    program = dict(programs())["matmul_tiled"]
    fast = simulate(program, seeds=[None, 1], compare="all", timed_values=False)
    full = simulate(program, seeds=[None], compare="all")
    for name, array in fast.runs[0].outputs.items():
        assert not array.flags.owndata and array.base is not None
        assert fast.runs[1].outputs[name] is array
        assert np.array_equal(array, full.runs[0].outputs[name])
    assert all(array.flags.owndata for array in full.runs[0].outputs.values())


def test_traces_with_the_shared_sources_equal_traces_that_compute_them():
    program = compiled("matmul_tiled")
    plan = build_plan(program)
    times = TimedRun(plan).run()
    assert make_trace(plan, times, None, instance_sources(plan)) == make_trace(plan, times, None)


def test_run_scenario_computes_values_in_every_run_when_the_check_finds_races():
    racy = run_scenario(get_scenario("matmul_tiled"), pipeline="alloc")  # no deps: it races
    assert racy.report.races and racy.simulation.timed_values
    assert [run.seed for run in racy.simulation.runs] == list(DEFAULT_SEEDS)
    clean = run_scenario(get_scenario("matmul_tiled"))
    assert not clean.report.races and not clean.simulation.timed_values and not clean.problems()


def test_a_race_free_run_simulates_the_nominal_order_alone_with_the_same_makespan_and_outputs():
    """Interleavings without values compare nothing: the first seed alone is simulated, and
    what is reported (its makespan, the outputs) is what all the seeds' runs gave."""
    clean = run_scenario(get_scenario("matmul_tiled"))
    every = run_scenario(get_scenario("matmul_tiled"), timed_values=True)
    assert clean.seeds == every.seeds == tuple(DEFAULT_SEEDS)
    assert [run.seed for run in clean.simulation.runs] == [DEFAULT_SEEDS[0]]
    assert len(every.simulation.runs) == len(DEFAULT_SEEDS)
    assert clean.simulation.trace.makespan == every.simulation.trace.makespan
    assert clean.outputs.keys() == every.outputs.keys()
    assert all(np.array_equal(clean.outputs[k], every.outputs[k]) for k in clean.outputs)
    assert clean.summary() == every.summary()
    timing = run_scenario(get_scenario("matmul_tiled"), functional=False, timed_values=True)
    assert [run.seed for run in timing.simulation.runs] == [DEFAULT_SEEDS[0]]  # nothing to compare


@pytest.mark.parametrize("rows, cols", [
    (np.arange(0, 128), np.arange(8, 2056)),       # a tile: two runs, slices
    (np.arange(4, 8), np.array([0, 1, 5, 6])),     # a gap: fancy indexing
    (np.array([0, 2, 4]), np.arange(3, 9)),        # strided partitions
])
def test_the_psum_block_index_names_the_cells_ix_names(rows, cols):
    state = np.arange(128 * 2100, dtype=np.int32).reshape(128, 2100)
    assert np.array_equal(state[_block(rows, cols)], state[np.ix_(rows, cols)])
    a, b = state.copy(), state.copy()
    a[_block(rows, cols)] = -1
    b[np.ix_(rows, cols)] = -1
    assert np.array_equal(a, b)


@pytest.mark.parametrize("rows, row", [(4, 7), (3, 13), (128, 1000), (1, 1 << 16)])
def test_the_uninitialised_pattern_is_the_seeded_streams_bytes(rows, row):
    """Row p of a memory's uninitialised bytes is ``default_rng([seed, 0x5EED, space, p]).bytes(row)``
    masked (the module doc's definition), whatever way the fast path draws them."""
    from neuronsim.machine.sim.memory import UNINITIALISED_BYTE_LIMIT, _pattern

    for seed, space in ((0, 0), (7, 2)):
        expected = b"".join(np.random.default_rng([seed, 0x5EED, space, p]).bytes(row) for p in range(rows))
        masked = np.frombuffer(expected, np.uint8) & np.uint8(UNINITIALISED_BYTE_LIMIT - 1)
        assert np.array_equal(_pattern(seed, space, rows, row), masked)


@pytest.mark.parametrize("name", ["matmul_tiled", "double_buffer"])
def test_views_and_costs_found_by_identity_equal_fresh_ones_on_a_flattened_kernel(name):
    from neuronsim.machine.model.cost import CostMemo, instruction_cost
    from neuronsim.passes import TRACED_PIPELINE, PassContext, run_pipeline

    program = run_pipeline(get_scenario(name).build(), TRACED_PIPELINE, PassContext(verify=False))
    plan = build_plan(program)
    instrs = [inst.instr for inst in plan.unrolled]
    assert len({id(i) for i in instrs}) == len(plan) > 1  # flattened: an instruction per instance
    accesses = [a for i in instrs for a in (*i.reads, *i.writes)]
    assert len({id(a) for a in accesses}) < len(accesses)  # objects shared: the identity paths are taken
    layout = initial_memory(program, plan.spec).dram_layout
    fast = InstanceViews(plan, layout)
    memo = CostMemo(program.tensors, plan.spec)
    for k, instr in enumerate(instrs):
        assert fast.of(k) == plan.views(k, layout), instr.name
        assert memo(instr) == instruction_cost(instr, program.tensors, plan.spec), instr.name


def test_dram_drawn_around_the_inputs_is_the_pattern_the_inputs_were_written_over():
    """The DRAM pattern under the inputs is not drawn (the generator jumps over it); every
    byte is what drawing it all and writing the inputs over it gives: gaps at odd addresses,
    overlapping inputs, an output given initial values, an alias group."""
    from neuronsim.machine.formats.program_json import parse_program
    from neuronsim.machine.model.presets import resolve_machine
    from neuronsim.machine.sim.memory import DramLayout, UNINITIALISED_BYTE_LIMIT, _pattern

    doc = {"format": "neuronsim.program/1", "tensors": {
        "a": {"memory": "dram", "dtype": "float32", "shape": [13], "address": 3, "role": "input"},
        "b": {"memory": "dram", "dtype": "bfloat16", "shape": [9], "address": 40, "role": "input"},
        "c": {"memory": "dram", "dtype": "int8", "shape": [21], "address": 50, "role": "input"},
        "y": {"memory": "dram", "dtype": "float32", "shape": [7], "address": 101, "role": "output"},
        "z": {"memory": "dram", "dtype": "float32", "shape": [5], "address": 160, "role": "output"},
        "g": {"memory": "dram", "dtype": "float32", "shape": [8], "alias": "G", "role": "input"},
        "w": {"memory": "dram", "dtype": "float32", "shape": [4], "address": 44, "role": "input"}},
        "body": []}
    program = parse_program(doc)
    spec = resolve_machine(program.machine)
    y = np.arange(7, dtype=np.float32)
    for seed in (0, 5):
        memory = initial_memory(program, spec, data_seed=seed, inputs={"y": y})
        layout = DramLayout.of(program)
        expected = _pattern(seed, 2, 1, layout.size)
        for name in ("a", "b", "c", "g", "w", "y"):  # b, c and w overlap: the bytes are the last's
            base, raw = layout.base[name], memory.tensor_bytes(program.tensors[name])
            expected[base:base + len(raw)] = np.frombuffer(raw, np.uint8)
        assert np.array_equal(memory.spaces[2], expected)
        z = layout.base["z"]  # an output nobody gave: the stream's bytes, masked
        assert memory.spaces[2][z:z + 20].max() < UNINITIALISED_BYTE_LIMIT
        assert np.array_equal(memory.spaces[2][:3], expected[:3])
