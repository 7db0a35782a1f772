"""``expand-scheduling-units`` after ``alloc``: rotating tiles (``x-rotate``) become one tensor
per slot, so the default passes run on the expanded program and leave it race-free.

Before, ``--passes alloc,expand-scheduling-units,...`` exited 2 on every kernel whose
loop-body tiles ``alloc`` multi-buffers ("tensor ... rotates with loop ..., which does not
enclose this instruction").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from neuronsim.machine.formats.program_json import dumps_program, load_program, loads_program
from neuronsim.machine.model.geometry import footprint
from neuronsim.machine.ir.program import Access, Instruction, Loop, MemoryKind, Program, Rotation, Tensor
from neuronsim.machine.order.unroll import unroll
from neuronsim.machine.formats.validate import validate_program
from neuronsim.passes import compile_program
from neuronsim.passes.expand_scheduling_units import expand_scheduling_units
from neuronsim.verify.racecheck import check_program

SCENARIOS = sorted(p for p in Path("scenarios").glob("*.json") if not p.name.endswith(".golden.json"))
PIPELINE = "alloc,expand-scheduling-units,build-fdeps,remove-redundancies,anti-deps,dep-reduction"


def _bytes(program: Program) -> list[tuple[str, tuple]]:
    """Per instance, the exact footprint of each access (memory, partitions, bytes)."""
    out = []
    for inst in unroll(program):
        prints = []
        for access, is_write in inst.instr.accesses:
            f = footprint(program.tensors[access.tensor], access, inst.iteration)
            prints.append((is_write, f.memory, f.partition_range, tuple(f.bytes)))
        out.append((inst.name, tuple(prints)))
    return out


def rotating_program() -> Program:
    """``buf`` rotates over 3 SBUF slots and ``acc`` over 2 PSUM banks with loop ``i``; ``x``
    moves a partition per iteration (``x-partitions_per_iteration``)."""
    tensors = {
        "buf": Tensor("buf", MemoryKind.SBUF, "float32", (32, 8), partition=0, offset=64,
                      rotate=Rotation("i", 3, 32)),
        "acc": Tensor("acc", MemoryKind.PSUM, "float32", (32, 8), partition=0, bank=1, offset=0,
                      rotate=Rotation("i", 2, 2048)),
        "x": Tensor("x", MemoryKind.SBUF, "float32", (128, 8), partition=0, offset=0),
        "buf@1": Tensor("buf@1", MemoryKind.SBUF, "float32", (4, 8), partition=64, offset=0),
    }
    body = (Loop("i", 4, (
        Instruction("fill", "dve", "memset", writes=(Access("buf"),)),
        Instruction("cp", "act", "tensor_copy", reads=(Access("buf", partitions=(0, 4, 1)),),
                    writes=(Access("x", partitions=(0, 4, 1), partitions_per_iteration=(("i", 32),)),)),
        Instruction("mv", "dve", "tensor_copy", reads=(Access("buf"),), writes=(Access("acc"),)),
    )),)
    program = Program(tensors, body)
    validate_program(program)
    return program


def test_each_slot_becomes_a_tensor_where_the_slot_sits():
    program = rotating_program()
    flat = expand_scheduling_units(program)
    validate_program(flat)
    tensors = flat.tensors
    assert [(n, t.offset, t.role) for n, t in tensors.items() if n.startswith("buf")] == [
        ("buf", 64, "internal"), ("buf@1#2", 96, "internal"), ("buf@2", 128, "internal"), ("buf@1", 0, "internal")]
    assert (tensors["acc"].bank, tensors["acc@1"].bank) == (1, 2) and all(t.rotate is None for t in tensors.values())
    writes = [(i.name, i.writes[0].tensor) for i in flat.body if i.name.startswith("fill")]
    assert writes == [("fill[0]", "buf"), ("fill[1]", "buf@1#2"), ("fill[2]", "buf@2"), ("fill[3]", "buf")]
    assert [i.writes[0].partitions for i in flat.body if i.name.startswith("cp")] == [
        (0, 4, 1), (32, 4, 1), (64, 4, 1), (96, 4, 1)]
    assert _bytes(flat) == _bytes(program)  # every instance keeps its bytes
    assert loads_program(dumps_program(flat)) == flat


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_alloc_then_expansion_then_the_passes_is_race_free_on_every_scenario(path):
    program = load_program(str(path))
    compiled, ctx = compile_program(program, PIPELINE)
    assert not any(isinstance(node, Loop) for node in compiled.body)
    report = check_program(compiled)
    assert report.race_free, report
    assert ctx.stats["expand-scheduling-units"]["instructions-after"] == len(compiled.body)
