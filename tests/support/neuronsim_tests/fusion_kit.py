"""Shared helpers of the tests, moved from tests/unit/test_fusion.py."""

from __future__ import annotations
from itertools import product
from neuronsim.machine.ir.program import Access, Instruction, MemoryKind, Program, Tensor
from neuronsim.machine.sim.memory import initial_memory
from neuronsim.machine.model.presets import resolve_machine
from neuronsim.machine.sim.simulator import run_sequential, simulate
from neuronsim.machine.sim.plan import build_plan
from neuronsim.machine.formats.validate import validate_program
from neuronsim.passes import compile_program
from neuronsim.verify.racecheck import check_program


RNG_OPS = {"random", "set_rand_state"}


def sbuf(name: str, shape=(64, 32), **placement) -> Tensor:
    return Tensor(name, MemoryKind.SBUF, "float32", shape, **placement)


TENSORS = {"t": sbuf("t", partition=0, offset=0), "u": sbuf("u", partition=0, offset=256)}


def tile(tensor: str, loop: str, offset: int, width: int = 4, shift: int = 4) -> Access:
    """``width`` elements of every partition from ``offset``, moving ``shift`` per iteration."""
    return Access(tensor, offset=offset, pattern=((1, width),), per_iteration=((loop, shift),) if shift else ())


def write(name: str, access: Access) -> Instruction:
    return Instruction(name, "dve", "memset", writes=(access,))


def copy(name: str, src: Access, dst: Access) -> Instruction:
    return Instruction(name, "act", "tensor_copy", reads=(src,), writes=(dst,))


def cells(tensor: Tensor, access: Access, iteration: dict[str, int]) -> set:
    """Every ``(memory, partition, byte)`` of one access instance, from the format's text."""
    offset = (access.offset or 0) + sum(s * iteration.get(loop, 0) for loop, s in access.per_iteration)
    pattern = access.pattern or ((1, tensor.free_elements - (access.offset or 0)),)
    elements = {offset + sum(i * s for i, (s, _) in zip(idx, pattern))
                for idx in product(*(range(c) for _, c in pattern))}
    start, count, step = access.partitions or (0, tensor.shape[0], 1)
    size, base = tensor.itemsize, tensor.byte_base
    return {(tensor.memory, (tensor.partition or 0) + start + k * step, base + e * size + b)
            for k in range(count) for e in elements for b in range(size)}


def final_state(program: Program) -> dict[str, bytes]:
    """Every tensor's bytes after running the program sequentially, in program order."""
    memory = run_sequential(build_plan(program), initial_memory(program, resolve_machine(program.machine), 7))
    return {name: memory.tensor_bytes(t) for name, t in program.tensors.items()}


def check_fused(program: Program, fused: Program) -> None:
    validate_program(fused)
    assert final_state(fused) == final_state(program)
    compiled, _ = compile_program(fused)
    assert check_program(compiled).race_free
    assert not simulate(compiled, seeds=[None, 1, 2], compare="all").differs

