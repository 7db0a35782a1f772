"""Costs of the search / select / partition-reduce ops and the on-chip ``dma_transpose``: the
rules docs/timing.md states for ops whose reference page gives no estimate."""

from __future__ import annotations

from math import ceil

import pytest

from neuronsim.machine.ir.program import Access, Instruction, MemoryKind, Tensor
from neuronsim.machine.model.cost import dma_shares, instruction_cost
from neuronsim.machine.model.presets import resolve_machine

SPEC = resolve_machine("trn1")
TENSORS = {name: Tensor(name, MemoryKind.SBUF, "float32", shape, partition=0, offset=offset)
           for name, shape, offset in (("a", (128, 512), 0), ("b", (128, 512), 4096), ("c", (128, 512), 8192),
                                       ("row", (1, 512), 12288), ("sq", (128, 128), 16384),
                                       ("sqt", (128, 128), 16896))}


def _cycles(op: str, engine: str, reads: tuple[str, ...], writes: tuple[str, ...]) -> float:
    instr = Instruction("x", engine, op, tuple(Access(r) for r in reads), tuple(Access(w) for w in writes))
    return instruction_cost(instr, TENSORS, SPEC).cycles


@pytest.mark.parametrize("op, reads", [("max8", ("a",)), ("nc_stream_shuffle", ("a",)),
                                       ("tensor_scalar_cumulative", ("a",)), ("range_select", ("a", "b", "c"))])
def test_one_streamed_input_costs_n_on_dve(op, reads):
    assert _cycles(op, "dve", reads, ("b",)) == 512


@pytest.mark.parametrize("op", ["select_reduce", "tensor_copy_predicated"])
def test_two_streamed_inputs_cost_2n(op):
    assert _cycles(op, "dve", ("a", "b"), ("c",)) == 2 * 512


def test_partition_reduce_reads_each_cores_rows_in_turn():
    assert _cycles("tensor_partition_reduce", "pool", ("a",), ("row",)) == SPEC.pool_start_cycles + 512 * ceil(128 / 8)


def test_on_chip_dma_transpose_costs_a_copy_of_its_bytes():
    transpose = Instruction("x", "sp", "dma_transpose", (Access("sq"),), (Access("sqt"),), queue="dma0")
    copy = Instruction("y", "sp", "dma_copy", (Access("sq"),), (Access("sqt"),), queue="dma0")
    t_cost, c_cost = instruction_cost(transpose, TENSORS, SPEC), instruction_cost(copy, TENSORS, SPEC)
    assert t_cost.bytes == c_cost.bytes == 128 * 128 * 4 and t_cost.duration_ns == c_cost.duration_ns
    assert t_cost.shares == c_cost.shares == dma_shares(copy, TENSORS, SPEC) and len(c_cost.shares) == 16


@pytest.mark.parametrize("machine, fp32_factor", [("trn1", 4), ("trn2", 2), ("trn3", 2)])
def test_an_fp32_pe_transpose_costs_what_its_machine_says_over_a_bf16_one(machine, fp32_factor):
    """v2 transposes by a matmul against the identity (fp32 4x, as ``nc_matmul``); v3 and v4
    have TensorE transpose mode ("2x speedup in FP32 transpose"); bf16 is the matmul's
    ``max(P, min(64, F))`` on each."""
    spec = resolve_machine(machine)
    bf16 = {name: Tensor(name, MemoryKind.SBUF, "bfloat16", (128, 128), partition=0, offset=k * 256)
            for k, name in enumerate(("src", "dst"))}
    instr = Instruction("t", "pe", "transpose", (Access("sq"),), (Access("sqt"),))
    half = Instruction("t", "pe", "transpose", (Access("src"),), (Access("dst"),))
    assert instruction_cost(half, bf16, spec).cycles == 128
    assert instruction_cost(instr, TENSORS, spec).cycles == 128 * fp32_factor
