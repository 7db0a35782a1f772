"""BIR opcodes of instructions: the numbers the seeds' passes test, and where ours come from.

The seeds gate some rules on an instruction's BIR opcode (``Instruction+0x50``).  Our IR names
ops instead; an instruction's opcode is its ``x-opcode`` (an integer, set by a tool that exports
from BIR) or else the number :data:`OPCODES_BY_OP` gives its op, or None (no rule keyed on an
opcode applies to it).  The numbers the seeds name:

=======  ==================================================  ===================================
opcode   what the seeds say                                  rule
=======  ==================================================  ===================================
4        ``Activation``                                      accumulator groups (build_fdeps)
7, 9, 95 the ``Matmult``-base family                         early stop of the anti walk
10, 23   "not a reduction op"                                ``make_reduction_sequence`` returns
                                                             when the first accessor has one
31       ``TensorTensor``                                    reduction / accumulator groups
41       "not a real flow consumer"                          ``make_linear_dependencies`` skips
                                                             its reads
59       ``SetRandState``                                    the RNG chain
103      ``Exp``                                             accumulator groups
105      ``InstLoop`` (scheduling unit)                      :data:`neuronsim.machine.ir.program.OPCODE_LOOP`
=======  ==================================================  ===================================

The seeds never say which ops 10, 23 and 41 are, so no op name maps to them: only an
``x-opcode`` brings those gates into play.  ``matmul`` maps to 7; a PE ``transpose`` (a matmul
against the identity on the hardware) to 9, our assumption since the seed names the family's
numbers without its members.

>>> from neuronsim.machine.ir.program import Instruction
>>> opcode_of(Instruction("mm", "pe", "matmul")), opcode_of(Instruction("t", "dve", "transpose"))
(7, None)
>>> opcode_of(Instruction("x", "act", "tensor_copy", extras={"x-opcode": 41}))
41
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from neuronsim.machine.ir.errors import ProgramError, join_path
from neuronsim.machine.ir.program import Instruction

__all__ = ["OPCODES_BY_OP", "MATMUL_FAMILY", "NOT_REDUCTION", "NOT_FLOW_CONSUMER", "opcode_of", "check_opcode"]

#: Op name -> BIR opcode, for ops whose number the seeds give (``transpose`` only on PE).
OPCODES_BY_OP: Mapping[str, int] = {"activation": 4, "matmul": 7, "tensor_tensor": 31, "set_rand_state": 59}
_PE_TRANSPOSE = 9

#: The ``Matmult``-base family at which the seed's anti walk stops.
MATMUL_FAMILY = frozenset({7, 9, 95})
#: First-accessor opcodes for which ``make_reduction_sequence`` builds nothing.
NOT_REDUCTION = frozenset({10, 23})
#: Readers ``make_linear_dependencies`` leaves out of the flow chain.
NOT_FLOW_CONSUMER = 41


def opcode_of(instr: Instruction) -> int | None:
    """The instruction's ``x-opcode``, else its op's number (:data:`OPCODES_BY_OP`), else None."""
    given = instr.extras.get("x-opcode")
    if given is not None:
        return int(given)
    if instr.op == "transpose" and instr.engine == "pe":
        return _PE_TRANSPOSE
    return OPCODES_BY_OP.get(instr.op)


def check_opcode(raw: Mapping[str, Any], path: str) -> None:
    """``x-opcode`` of an instruction, when present, is an integer 0..65535 (a located error)."""
    if "x-opcode" not in raw:
        return
    value = raw["x-opcode"]
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 0xFFFF:
        raise ProgramError(join_path(path, "x-opcode"), f"expected a BIR opcode, an integer 0..65535, got {value!r}")
