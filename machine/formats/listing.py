"""A readable listing of a program: one instruction a line (``neuronsim show``).

Each line gives the instruction's name, engine (and DMA queue), op, its footprints resolved
to partitions and bytes at the first iteration (with the per-iteration byte shift), and its
deps, then (for a traced kernel's instruction, ``x-source``) ``@ CALL at FILE:LINE``.  Loops
open an indented block.

>>> from neuronsim.machine.formats.program_json import load_program
>>> print(render_listing(load_program("examples/async_load_then_fill.json")))  # doctest: +NORMALIZE_WHITESPACE
program on trn1: 3 tensors, 3 instructions, 3 instances
load   pool>dma1  dma_copy  r src dram[0,32768)  w t sbuf p[0,128) b[0,256)
fill   pool       memset    w t sbuf p[0,32) b[0,256)  {value=0}
store  sp>dma2    dma_copy  r t sbuf p[0,128) b[0,256)  w o dram[65536,98304)  <- load, fill
"""

from __future__ import annotations

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.errors import printable
from neuronsim.machine.model.geometry import footprint, mask_range
from neuronsim.machine.ir.program import Access, Instruction, Loop, MemoryKind, Node, Program, Tensor
from neuronsim.machine.model.presets import resolve_machine
from neuronsim.machine.ir.source import source_text

__all__ = ["render_listing", "describe_access"]


def _attr_text(value) -> str:
    """An attribute value; a per-partition operand tile ``{"read": k}`` reads ``reads[k]``."""
    if isinstance(value, dict) and set(value) == {"read"}:
        return f"reads[{value['read']}]"
    return str(value)


def describe_access(tensor: Tensor, access: Access) -> str:
    """``NAME MEMORY p[lo,hi) b[lo,hi)`` at iteration 0, with the per-iteration shift."""
    memory = tensor.memory.name.lower()
    if tensor.is_virtual:
        text = f"{tensor.name} {memory}(virtual)"
        if access.partitions is not None:
            text += f" p+{access.partitions[0]}x{access.partitions[1]}"
        return text
    fp = footprint(tensor, access, {})
    lo, hi = fp.byte_range
    pieces = "" if len(fp.bytes) == 1 else f"({len(fp.bytes)} runs)"
    if tensor.memory == MemoryKind.DRAM:
        where = f"alias:{tensor.alias}" if tensor.alias is not None else "dram"
        text = f"{tensor.name} {where}[{lo},{hi}){pieces}"
    else:
        plo, phi = mask_range(fp.partitions)
        step = access.partitions[2] if access.partitions else 1
        ptext = f"p[{plo},{phi})" + (f"/{step}" if step != 1 else "")
        text = f"{tensor.name} {memory} {ptext} b[{lo},{hi}){pieces}"
    for loop, shift in access.per_iteration:
        text += f" {shift * tensor.itemsize:+d}B/{loop}"
    return text


def _deps(inst: Instruction) -> str:
    items = []
    for dep in inst.deps:
        text = dep.on
        if dep.kind != EdgeKind.ORDERED:
            text += f":{dep.kind.name.lower()}"
        if dep.loop_carried:
            text += "(prev)"
        items.append(text)
    return ("<- " + ", ".join(items)) if items else ""


def _line(inst: Instruction, tensors: dict[str, Tensor], indent: str, widths: tuple[int, int, int]) -> str:
    engine = inst.engine + (f">{inst.queue}" if inst.queue else "")
    parts = [f"{indent}{inst.name:<{widths[0]}}", f"{engine:<{widths[1]}}", f"{inst.op:<{widths[2]}}"]
    for prefix, group in (("r", inst.reads), ("w", inst.writes)):
        for access in group:
            parts.append(f"{prefix} {describe_access(tensors[access.tensor], access)}")
    if inst.attrs:
        pairs = ", ".join(f"{printable(str(k))}={printable(_attr_text(v))}" for k, v in inst.attrs.items())
        parts.append("{" + pairs + "}")
    deps = _deps(inst)
    if deps:
        parts.append(deps)
    where = source_text(inst)
    if where:  # a traced kernel's instruction: the line that made it
        parts.append(f"@ {where}")
    return "  ".join(parts).rstrip()


def render_listing(program: Program) -> str:
    """The whole listing as one string."""
    tensors = dict(program.tensors)
    instructions = [inst for inst, _ in program.instructions()]
    widths = (
        max((len(i.name) for i in instructions), default=4),
        max((len(i.engine) + (len(i.queue) + 1 if i.queue else 0) for i in instructions), default=3),
        max((len(i.op) for i in instructions), default=2),
    )
    count = 0
    lines: list[str] = []

    def visit(nodes: tuple[Node, ...], depth: int, mult: int) -> None:
        nonlocal count
        indent = "  " * depth
        for node in nodes:
            if isinstance(node, Loop):
                lines.append(f"{indent}loop {node.name} x{node.trip_count} {{")
                visit(node.body, depth + 1, mult * node.trip_count)
                lines.append(f"{indent}}}")
            else:
                count += mult
                lines.append(_line(node, tensors, indent, widths))

    visit(program.body, 0, 1)
    machine = resolve_machine(program.machine).name + ("*" if isinstance(program.machine, dict) else "")
    head = f"program on {machine}: {len(tensors)} tensors, {len(instructions)} instructions, {count} instances"
    return "\n".join([head, *lines])
