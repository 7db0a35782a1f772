"""How the NKI frontend reads a device value while tracing (``nisa.scalar_load``,
``nisa.register_load``, a ``scalar_offset`` tile): the instructions traced so far, each tile on
bytes of its own (the storage the NKI compiler reasons with), run in program order on the
kernel's inputs, and the one tensor read back.  Registered with
:func:`neuronsim.machine.nki.device_values.set_value_reader` when :mod:`neuronsim.verify.nki` is
imported (the frontend sits below the simulator's placement and cannot call it itself).

Each read runs the program from its start: a kernel that reads N device values costs N runs of
its prefix, fine for the small inputs a test traces.
"""

from __future__ import annotations

import numpy as np

from neuronsim.machine.ir.program import Program
from neuronsim.machine.nki.device_values import set_value_reader
from neuronsim.machine.sim.memory import initial_memory
from neuronsim.machine.sim.plan import build_plan
from neuronsim.machine.sim.simulator import output_arrays, run_sequential

from neuronsim.verify.nki.placement import identity_placement as _identity_placement

__all__ = ["read_tensor"]


def read_tensor(program: Program, inputs: dict[str, np.ndarray], tensor: str) -> np.ndarray:
    """DRAM output ``tensor`` after ``program`` (virtual tiles allowed) runs on ``inputs``."""
    placed = _identity_placement(program)
    plan = build_plan(placed)
    known = {name: value for name, value in inputs.items() if name in placed.tensors}
    memory = run_sequential(plan, initial_memory(placed, plan.spec, 0, known))
    return output_arrays(placed, memory)[tensor]


set_value_reader(read_tensor)
