"""Device values on the traced inputs: the contents of an on-chip tile at a point of the trace
(:func:`tile_values`), read by running the instructions traced so far on the kernel's inputs
(the *reader*, registered by :mod:`neuronsim.verify.nki.probe`: it needs a placement pass the
frontend sits below), and the *decisions*, ``extras["x-nki-decisions"]``: every place the
traced program's shape followed such a value, with its kernel line.  Used by the scalars and
registers (:mod:`~neuronsim.machine.nki.scalars`) and indirect DMA
(:mod:`~neuronsim.machine.nki.indirect`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from neuronsim.machine.ir.program import Program
from neuronsim.machine.nki.errors import NotAffine, fail, user_line
from neuronsim.machine.nki.layout import Layout
from neuronsim.machine.nki.tracer import current

__all__ = ["DECISIONS_KEY", "set_value_reader", "record_decision", "tile_values", "no_kept_loop"]

DECISIONS_KEY = "x-nki-decisions"
_PROBE = "__nki_probe"
_READER: list[Callable[[Program, dict[str, np.ndarray], str], np.ndarray]] = []


def set_value_reader(reader: Callable[[Program, dict[str, np.ndarray], str], np.ndarray]) -> None:
    """``reader(program, inputs, tensor)``: the contents of DRAM ``tensor`` after ``program``
    runs in program order on ``inputs`` (registered by :mod:`neuronsim.verify.nki.probe`)."""
    _READER[:] = [reader]


def record_decision(what: str, value: Any, depth: int = 2, where: Any = None) -> None:
    """Note that the traced program's shape followed ``value``, a device value, at the kernel
    line ``where`` (default: ``depth`` frames up)."""
    where = where or user_line(depth + 1)
    tracer = current()
    decisions = tracer.program_extras.setdefault(DECISIONS_KEY, [])
    decisions.append({"file": where.file, "line": where.line, "what": what, "value": value})


def tile_values(layout: Layout, call: str) -> np.ndarray:
    """The values ``layout`` (an on-chip view) holds at this point of the trace on the traced
    inputs, flat in the view's order.  Emits nothing: the caller adds the instruction that reads
    the tile on the device (and may call this while an instruction is being emitted)."""
    tracer = current()
    no_kept_loop(tracer, call)
    if not _READER:
        raise fail(f"{call}: reading a device value needs the traced inputs run (import neuronsim.verify.nki)")
    kb = tracer.kb
    emitting = (kb.next_extras, tracer.mask, tracer.emit_site)
    try:
        program, inputs = _probe_program(tracer, layout)
        return np.asarray(_READER[0](program, inputs, _PROBE)).reshape(-1)
    finally:
        kb.next_extras, tracer.mask, tracer.emit_site = emitting


def no_kept_loop(tracer: Any, call: str) -> None:
    kept = tracer.kept_loops()
    if kept:  # one body for every iteration cannot hold one value per iteration
        raise NotAffine(tuple(kept), f"{call} (a value read from device memory)")


def _probe_program(tracer: Any, layout: Layout) -> tuple[Program, dict[str, np.ndarray]]:
    """The program traced so far plus one DMA copying ``layout`` to a DRAM output tensor; the
    builder is left as it was."""
    kb = tracer.kb
    written = set(tracer.written)
    try:
        with kb.trial():
            ref = kb.dram_output(_PROBE, (int(np.prod(layout.shape)), 1), layout.tensor.dtype)
            kb.dma_copy(Layout.whole(ref.tensor).view(), layout.view())
            program = kb.draft()
    finally:
        tracer.written = written
    inputs = dict(tracer.input_values)
    for tile, constant in tracer.constants.values():
        inputs[tile.layout.tensor.name] = constant
    return program, inputs
