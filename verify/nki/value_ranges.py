"""Activations the simulated run gave inputs outside their function's valid range: on the
device the result there is invalid, while the simulator computed the exact function.

The shared API page's activation table gives each function the Scalar Engine approximates a
Valid Input Range (``sin`` [-pi, pi], ``arctan`` [-pi/2, pi/2], ``log``, ``sqrt``, ``rsqrt``,
``reciprocal``: :data:`~neuronsim.machine.model.elementwise.VALID_INPUT`) and says "if input
values fall outside ... the Scalar Engine will generate invalid output results"; of ``sin``,
that it "performs no argument range reduction or clamping" (``sin(9.0)`` is ~27.65), which is
why nki-library's RoPE reduces its angles to [-pi, pi] before ``nisa.activation(op=nl.sin)``.
A kernel that does not gets the right answer from the simulator and a wrong one from the
device: a warning here, at the call's line, with how many inputs and the first.  Only the
``nisa.*`` calls: ``nl.sin`` "applies additional instructions to perform range reduction"
(its page), and the other ``nl.*`` functions' pages give no range.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from neuronsim.machine.ir.source import SOURCE_KEY, source_of
from neuronsim.machine.model.elementwise import VALID_INPUT
from neuronsim.machine.sim.simulator import Simulation
from neuronsim.verify.nki.finding import NkiFinding

__all__ = ["outside_range_findings"]


def _bound(value: float) -> str:
    """An end of a valid range as the table writes it: a fraction of pi or a power of two.

    >>> _bound(-np.pi / 2), _bound(2.0**-64)
    ('-pi/2', '2^-64')
    >>> _SHOWN["sin"], _SHOWN["sqrt"], _SHOWN["reciprocal"]
    ('[-pi, pi]', '[2^-116, 2^118]', '+-[2^-42, 2^42]')
    """
    sign, size = "-" if value < 0 else "", abs(value)
    named = {np.pi: "pi", np.pi / 2: "pi/2"}.get(size)
    return sign + (named if named is not None else f"2^{int(np.log2(size))}")


#: Each range as the warning shows it (``reciprocal``'s by magnitude), from the one table.
_SHOWN = {func: ("+-" if func == "reciprocal" else "") + f"[{_bound(low)}, {_bound(high)}]"
          for func, (low, high) in VALID_INPUT.items()}


def _call(instr) -> str:
    raw = (instr.extras or {}).get(SOURCE_KEY)
    return str(raw.get("call", "")) if isinstance(raw, Mapping) else ""


def outside_range_findings(simulation: Simulation) -> list[NkiFinding]:
    """One warning per ``nisa.*`` activation call whose instances got inputs outside the
    function's valid range (module doc), in the order the run met them."""
    sites: dict[str, list] = {}  # instruction name -> [where, call, func, inputs, instances, first]
    for note in simulation.outside_inputs:
        instr = note.instance.instr
        call = _call(instr)
        if not call.startswith("nisa."):
            continue
        site = sites.get(instr.name)
        if site is None:
            ref = source_of(instr)
            where = ref.text(note.instance.iteration) if ref is not None else note.instance.name
            sites[instr.name] = [where, call, note.func, note.count, 1, note.first]
        else:
            site[3] += note.count
            site[4] += 1
    return [NkiFinding(kind="range", dependence="read", first=where, second="", severity="warning",
                       note=f"op={func} was given {inputs:,} input(s) outside {func}'s valid input range "
                            f"{_SHOWN[func]} (the first {first:g}; {instances:,} instance(s)): the Scalar Engine's "
                            f"result there is invalid (the activation table: \"the Scalar Engine will generate "
                            f"invalid output results\"; sin is not reduced: sin(9.0) is ~27.65 on the device), while "
                            f"neuronsim computed the exact {func}; "
                            + ("reduce the angles to [-pi, pi] first, as nl.sin does" if func == "sin" else
                               "keep the inputs inside"))
            for where, call, func, inputs, instances, first in sites.values()]
