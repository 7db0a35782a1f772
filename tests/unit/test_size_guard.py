"""The size estimate (machine/order/work_estimate.py) against what the work really makes, and its limits."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from hypothesis import given

from neuronsim.machine.model.geometry import base_footprint
from neuronsim.machine.ir.program import Instruction, Loop, MemoryKind, Program, Tensor
from neuronsim.machine.model.presets import resolve_machine
from neuronsim.machine.sim.memory import DramLayout
from neuronsim.machine.order.work_estimate import BYTES_PER_INSTANCE, estimate_size
from neuronsim.verify.app.host import format_bytes, machine_memory
from neuronsim.machine.order.unroll import unroll
from neuronsim.verify.cli import cli
from neuronsim.verify.cli.common import ByteSize, UsageFailure, guard_size
from neuronsim.verify.strategies import programs


@given(programs(max_trip=4, max_depth=3))
def test_instances_are_what_unrolling_makes(program):
    assert estimate_size(program).instances == len(unroll(program))


@given(programs())
def test_simulated_bytes_cover_the_simulated_memory(program):
    spec = resolve_machine(program.machine)
    allocated = (spec.sbuf_partitions * (spec.sbuf_partition_bytes + spec.psum_banks * spec.psum_bank_bytes)
                 + DramLayout.of(program).size)
    assert allocated <= estimate_size(program).simulated_bytes <= allocated + 4096 * (1 + len(program.tensors))


@given(programs())
def test_footprint_starts_bound_the_runs_of_every_access(program):
    runs = {(a.tensor, a.offset, a.pattern): len(base_footprint(program.tensors[a.tensor], a).bytes)
            for inst, _ in program.instructions() for a, _ in inst.accesses}
    assert sum(runs.values()) <= estimate_size(program).footprint_starts


def test_a_billion_iterations_cost_nothing_to_estimate():
    body = (Loop("i", 10**9, (Loop("j", 10**9, (Instruction("a", "dve", "nop"),)),)),)
    size = estimate_size(Program({}, body))
    assert size.instances == 10**18 and size.largest == ("a", 10**18, ("i", "j"))
    with pytest.raises(UsageFailure) as caught:
        guard_size(Program({}, body), max_instances=5_000_000, max_memory=None)
    assert caught.value.path == "--max-instances" and "1,000,000,000,000,000,000 instances" in caught.value.message


def test_memory_counts_instances_and_simulated_runs():
    t = Tensor("d", MemoryKind.DRAM, "uint8", (1 << 20,), address=0)
    program = Program({"d": t}, (Loop("i", 1000, (Instruction("a", "sp", "nop"),)),))
    size = estimate_size(program)
    assert size.memory_bytes(unrolled=False) == 0
    assert size.memory_bytes() == 1000 * BYTES_PER_INSTANCE
    assert size.memory_bytes(simulated_runs=2) > size.memory_bytes() + 4 * (1 << 20)
    with pytest.raises(UsageFailure) as caught:
        guard_size(program, max_instances=None, max_memory=1 << 20, simulated_runs=1)
    assert caught.value.path == "--max-memory" and "the limit is 1.0 MiB (--max-memory)" in caught.value.message
    guard_size(program, max_instances=None, max_memory=1 << 20)  # without simulating it fits


def test_a_pattern_of_a_billion_runs_is_refused_even_by_show(tmp_path):
    n = 1_999_999_999
    doc = json.dumps({"format": "neuronsim.program/1", "tensors": {
        "d": {"memory": "dram", "dtype": "uint8", "shape": [4 * 10**9], "address": 0},
        "e": {"memory": "dram", "dtype": "uint8", "shape": [4 * 10**9], "address": 4 * 10**9}},
        "body": [{"name": "ld", "engine": "sp", "op": "dma_copy", "reads": [{"tensor": "d", "pattern": [[2, n]]}],
                  "writes": [{"tensor": "e", "pattern": [[1, n]]}]}]})
    path = tmp_path / "runs.json"
    path.write_text(doc)
    result = CliRunner().invoke(cli, ["show", str(path), "--max-memory", "8G"])
    assert result.exit_code == 2 and "byte runs in access footprints" in result.stderr


def test_the_machine_memory_is_known_here():
    memory = machine_memory()
    assert memory is not None and memory > 1 << 28


@pytest.mark.parametrize(("text", "size"), [("1024", 1024), ("8G", 8 << 30), ("512MiB", 512 << 20), ("1.5k", 1536),
                                            ("2 tb", 2 << 40)])
def test_sizes_read_like_people_write_them(text, size):
    assert ByteSize().convert(text, None, None) == size
    assert format_bytes(size).split()[0]


def test_timing_only_runs_need_no_simulated_memory():
    t = Tensor("d", MemoryKind.DRAM, "uint8", (1 << 30,), address=0)
    size = estimate_size(Program({"d": t}, (Instruction("a", "sp", "nop"),)))
    assert size.memory_bytes(simulated_runs=2, functional=False) < 1 << 20 < size.memory_bytes(simulated_runs=2)


def test_the_runs_of_every_access_instance_are_counted_beyond_the_first():
    """An access of several byte runs costs the unrolled analyses an event per run of each
    instance: 50,000 stores of one 1,024-run block took 2.4 GB the instances did not foresee
    (probe_bd)."""
    from neuronsim.machine.ir.program import Access, Instruction, Loop, MemoryKind, Program, Tensor
    from neuronsim.machine.order.work_estimate import BYTES_PER_INSTANCE_RUN

    y = Tensor("y", MemoryKind.DRAM, "float32", (128, 4096), address=0, role="output")
    t = Tensor("t", MemoryKind.SBUF, "float32", (128, 8), partition=0, offset=0)
    store = Instruction("st", "sp", "dma_copy", (Access("t"),), (Access("y", pattern=((4096, 128), (2, 8))),))
    size = estimate_size(Program({"y": y, "t": t}, (Loop("i", 1000, (store,)),)))
    assert size.instance_runs == 1000 * 1023
    assert size.memory_bytes() - size.memory_bytes(unrolled=False) >= 1000 * 1023 * BYTES_PER_INSTANCE_RUN
