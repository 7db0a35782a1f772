"""neuronsim's machine model: the program IR, presets, geometry, op table and simulator.

This package imports nothing else of ours; ``passes`` and ``verify`` build on it.
"""

from neuronsim.machine.ir.edges import DepGraph, Edge, EdgeKind
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.formats.program_json import (dumps_program, load_program, loads_program, parse_program,
                                               program_to_json, save_program)
from neuronsim.machine.model.geometry import Footprint, Overlap, footprint, overlap
from neuronsim.machine.ir.program import (
    MEMORY_NAMES,
    OPCODE_LOOP,
    SEQUENCERS,
    Access,
    Dep,
    Instruction,
    Loop,
    MemoryKind,
    Node,
    Program,
    Tensor,
)
from neuronsim.machine.model.optable import OP_TABLE, op_spec
from neuronsim.machine.model.presets import PRESETS, MachineSpec, resolve_machine
from neuronsim.machine.order.unroll import Instance, Unrolled, unroll

__all__ = [
    "Access", "Dep", "DepGraph", "Edge", "EdgeKind", "Footprint", "Instance", "Instruction",
    "Loop", "MEMORY_NAMES", "MachineSpec", "MemoryKind", "Node", "OPCODE_LOOP", "OP_TABLE",
    "Overlap", "PRESETS", "Program", "ProgramError", "SEQUENCERS", "Tensor", "Unrolled",
    "dumps_program", "footprint", "load_program", "loads_program", "op_spec", "overlap",
    "parse_program", "program_to_json", "resolve_machine", "save_program", "unroll",
]
