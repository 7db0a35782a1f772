"""NKI's ``simulate_kernel`` on neuronsim: trace a kernel, place its tiles with the allocation
pass, run it in program order (neuronsim's sequential reference) and hand back what NKI's
simulator would.

Importing this module also makes a traced kernel callable outside a trace (``kernel(x)``,
``nki.simulate_kernel(kernel, x)`` inside a kernel file), as NKI's eager mode is: the
frontend (:mod:`neuronsim.machine.nki`) traces only, since placing needs a pass.

>>> import numpy as np
>>> from neuronsim.machine.nki import standins
>>> with standins():
...     import nki.language as nl
...     def add_in_place(x, y):  # legacy style: the output is a parameter, filled in place
...         nl.store(y, nl.add(nl.load(x), nl.load(y)))
>>> y = np.ones((4, 8), np.float32)
>>> simulate_kernel(add_in_place, np.full((4, 8), 3, np.float32), y) is None, y[0, :3]
(True, array([4., 4., 4.], dtype=float32))
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from neuronsim.machine.nki.frontend import trace
from neuronsim.machine.nki.kernel import set_eager_runner, unwrap
from neuronsim.machine.sim.memory import initial_memory
from neuronsim.machine.sim.plan import build_plan
from neuronsim.machine.sim.simulator import output_arrays, run_sequential
from neuronsim.passes import compile_program

__all__ = ["simulate_kernel", "hand_back", "sequential_outputs"]


def simulate_kernel(kernel: Any, *arrays: Any, **kwargs: Any) -> Any:
    """Run ``kernel`` as NKI's ``simulate_kernel`` does: the returned arrays (one, a tuple, or
    None), and every written numpy argument updated in place.  The program is placed by the
    allocation pass and run in program order (neuronsim's sequential reference)."""
    traced = trace(kernel, *arrays, **kwargs)
    return hand_back(kernel, arrays, kwargs, traced, sequential_outputs(traced.program, traced.run_inputs))


def sequential_outputs(program: Any, inputs: Any = None) -> dict[str, np.ndarray]:
    """The outputs of a traced ``program`` placed by the allocation pass and run in program
    order (neuronsim's sequential reference) on ``inputs`` (default: the seeded pattern)."""
    placed, _ = compile_program(program, "alloc")
    plan = build_plan(placed, timed=False)
    return output_arrays(placed, run_sequential(plan, initial_memory(placed, plan.spec, 0, inputs)))


def hand_back(kernel: Any, arrays: tuple, kwargs: dict, traced: Any, outputs: dict) -> Any:
    """What NKI's simulator hands back: every written numpy argument updated in place from
    ``outputs`` (by parameter name), and the returned arrays (one, a tuple, or None)."""
    func, _grid = unwrap(kernel)
    bound = inspect.signature(func).bind_partial(*arrays, **{k: v for k, v in kwargs.items()
                                                            if k not in ("grid", "name", "machine")})
    for param in traced.written_args:
        target = bound.arguments.get(param)
        if isinstance(target, np.ndarray) and target.flags.writeable:
            target[...] = outputs[param].astype(target.dtype)
    returned = [outputs[name] for name in traced.returned]
    if not returned:
        return None
    return returned[0] if len(returned) == 1 else tuple(returned)


set_eager_runner(simulate_kernel)
