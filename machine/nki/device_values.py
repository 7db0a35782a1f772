"""Device values on the traced inputs: the contents of an on-chip tile at a point of the trace
(:func:`tile_values`), read by running the instructions traced so far on the kernel's inputs
(the *reader*, registered by :mod:`neuronsim.verify.nki.probe`: it needs a placement pass the
frontend sits below), and the *decisions*, ``extras["x-nki-decisions"]``: every place the
traced program's shape followed such a value, with its kernel line.  Used by the scalars and
registers (:mod:`~neuronsim.machine.nki.scalars`) and indirect DMA
(:mod:`~neuronsim.machine.nki.indirect`)."""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from neuronsim.machine.formats.validate import validate_program
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import Program
from neuronsim.machine.nki.errors import NkiError, NotAffine, SourceLine, fail, user_line
from neuronsim.machine.nki.layout import Layout
from neuronsim.machine.nki.liveness import TileLiveness
from neuronsim.machine.nki.tracer import current

__all__ = ["DECISIONS_KEY", "set_value_reader", "record_decision", "tile_values", "no_kept_loop", "validated_prefix"]

DECISIONS_KEY = "x-nki-decisions"
_PROBE = "__nki_probe"
_READER: list[Callable[[Program, dict[str, np.ndarray], str, TileLiveness], np.ndarray]] = []


def set_value_reader(reader: Callable[[Program, dict[str, np.ndarray], str, TileLiveness], np.ndarray]) -> None:
    """``reader(program, inputs, tensor, liveness)``: the contents of DRAM ``tensor`` after
    ``program`` runs in program order on ``inputs``; ``liveness`` says which tiles the kernel can
    no longer reach (their bytes may be reused: :mod:`~neuronsim.machine.nki.liveness`).
    Registered by :mod:`neuronsim.verify.nki.probe`."""
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
    if tracer.pending is None and kb.depth == 1:  # (else a held-back call may still read a tile gone)
        tracer.liveness.retire(len(kb.tensors), kb.mark())
    try:
        program, inputs = _probe_program(tracer, layout)
        fresh, before = _new_part(tracer, program)
        try:  # the run below reads what each access names: an access past its tensor stops here
            validate_program(fresh, checked=before)
        except ProgramError as err:
            raise NkiError(*_instruction_site(fresh, err.path, call, err.message)) from None
        _LAST_CHECK[:] = [_Checked(weakref.ref(tracer), program.body[-2] if len(program.body) > 1 else None,
                                   len(program.body) - 1, fresh)]
        return np.asarray(_READER[0](program, inputs, _PROBE, tracer.liveness)).reshape(-1)
    finally:
        kb.next_extras, tracer.mask, tracer.emit_site = emitting


class _Checked(NamedTuple):
    """What a read validated: its trace (a weak reference), the last node of the program then
    (the probe's copy excluded), how many nodes it had, and the program validated."""

    trace: Any
    last: Any
    count: int
    program: Program


_LAST_CHECK: list[_Checked] = []  # the last read's, if any


def _new_part(tracer: Any, program: Program) -> tuple[Program, Program | None]:
    """What of ``program`` the last read of this trace did not validate: its nodes appended
    since (the trace only appends at the top level where a value is read: no kept loop is
    open) and the probe's copy, with every tensor.  Each instruction's checks read its own
    fields and the tensors it names, so the older ones stay valid; a read per tile of a long
    kernel validated the whole program each time (quadratic: 85 % of the trace of nki-library's
    cross-entropy, 3,840 instructions).  A new node that waits on another (``deps``) has the
    whole program checked, as before.  Returned with the program the last read validated (the
    ``checked`` of :func:`~neuronsim.machine.formats.validate.validate_program`), or None."""
    last = _LAST_CHECK[0] if _LAST_CHECK else None
    body = program.body
    if (last is None or last.trace() is not tracer or last.count == 0 or len(body) <= last.count
            or body[last.count - 1] is not last.last):
        return program, None
    fresh = replace(program, body=body[last.count:])
    return (program, None) if any(inst.deps for inst, _ in fresh.instructions()) else (fresh, last.program)


def validated_prefix(tracer: Any, built: Program) -> Program | None:
    """What of ``built`` (the trace's program as its builder made it) the trace's device-value
    reads validated on the way: its first nodes, against the tensors they were validated with,
    for the ``checked`` of the final :func:`~neuronsim.machine.formats.validate.validate_program`
    (a gather per tile checked each transfer twice: probe_bb).  None when the last read was
    another trace's or its nodes are not ``built``'s first."""
    last = _LAST_CHECK[0] if _LAST_CHECK else None
    if last is None or last.trace() is not tracer or last.count == 0 or len(built.body) < last.count:
        return None
    if built.body[last.count - 1] is not last.last:
        return None
    return replace(last.program, body=built.body[:last.count])


#: what a register loaded from a float tile records (``record_decision``): it holds the bits
FLOAT_BITS = "a register loaded from a float tile holds its bit pattern"


def float_bits_hint(tracer: Any = None) -> str:
    """Said beside an access beyond its tensor when the trace (default: the current one)
    loaded a float into a register (a DMA offset kept in float32 reads far away on the device),
    else nothing."""
    decisions = (tracer or current()).program_extras.get(DECISIONS_KEY, [])
    found = [d for d in decisions if str(d["what"]).startswith(FLOAT_BITS)]
    if not found:
        return ""
    last = found[-1]
    return (f" ({last['file']}:{last['line']}: {last['what']}, {last['value']:,}: keep an offset in an integer "
            "tile, or convert it first with nisa.tensor_copy(dtype=nl.int32))")


def instruction_source(body: Any, path: str) -> dict | None:
    """The ``x-source`` of the instruction a program error's JSON path (``body[3].body[0]...``)
    names, or None."""
    node = None
    for index in re.findall(r"body\[(\d+)\]", path):
        node = body[int(index)]
        body = getattr(node, "body", ())
    return dict(getattr(node, "extras", {}) or {}).get("x-source") or None


def _instruction_site(program: Program, path: str, call: str, message: str) -> tuple[SourceLine, str]:
    """Where a traced instruction breaks a rule of the program (its kernel line) and what to
    say: an access beyond its tensor, found before ``call`` runs the program so far."""
    source = instruction_source(program.body, path)
    if source is None:
        return user_line(3), f"{call}: the program traced so far is not valid: {message}{float_bits_hint()}"
    return SourceLine(source["file"], source["line"]), f"{source['call']}: {message}{float_bits_hint()}"


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
