"""An ISA call's instructions and the handle a kernel gets back for them.

Every ``nisa.*`` call of the current API returns a handle (``NkiInstruction``) that
``depends_on`` and ``kernel.with_schedule`` name; both ISA modules (:mod:`.isa`,
:mod:`.isa_select`) emit through :func:`emit_call`, which lives apart so neither imports the
other back.
"""

from __future__ import annotations

from typing import Any

from neuronsim.machine.nki import ops, schedule
from neuronsim.machine.nki.errors import user_line
from neuronsim.machine.nki.tracer import current


def emit_call(fn, name: Any = None, extras: dict | None = None) -> schedule.NkiInstruction:
    """Emit the call's instructions; its handle (``name=``: what ``with_schedule`` calls it)."""
    tracer = current()
    tracer.flush()
    start = tracer.kb.mark()
    tracer.emit(fn, extras=extras)
    site = tracer.site[0] if tracer.site is not None else user_line(2)  # the kernel's line, not "<kernel>"
    return schedule.handle_of(tracer, tracer.kb.emitted_since(start), name, site)


def written(dst: Any):
    """The layout of an ISA call's ``dst``, noted as written (before the call's instructions)."""
    layout = ops.lay(dst)
    current().note_write(layout)
    return layout
