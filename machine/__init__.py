"""neuronsim's machine model: the program IR, presets, geometry, op table and simulator.

This package imports nothing else of ours; ``passes`` and ``verify`` build on it.
"""

from machine.edges import DepGraph, Edge, EdgeKind
from machine.errors import ProgramError
from machine.format import dumps_program, load_program, loads_program, parse_program, program_to_json, save_program
from machine.geometry import Footprint, Overlap, footprint, overlap
from machine.ir import (
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
from machine.optable import OP_TABLE, op_spec
from machine.presets import PRESETS, MachineSpec, resolve_machine
from machine.unroll import Instance, Unrolled, unroll

__all__ = [
    "Access", "Dep", "DepGraph", "Edge", "EdgeKind", "Footprint", "Instance", "Instruction",
    "Loop", "MEMORY_NAMES", "MachineSpec", "MemoryKind", "Node", "OPCODE_LOOP", "OP_TABLE",
    "Overlap", "PRESETS", "Program", "ProgramError", "SEQUENCERS", "Tensor", "Unrolled",
    "dumps_program", "footprint", "load_program", "loads_program", "op_spec", "overlap",
    "parse_program", "program_to_json", "resolve_machine", "save_program", "unroll",
]
