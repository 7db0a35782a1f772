"""Compiled loop bodies that run no iteration on the traced inputs, and the branch of a
device-valued ``nl.if_else`` they do not take.

NKI builds the body of a compiled loop (``nl.fori_loop``, ``nl.while_loop``,
``nl.dynamic_range``) once, whatever its trip count: the loops "run on the device, so their
bounds or condition can be values known only at run time" (the control-flow deep dive), and the
compiler meets every call of the body.  neuronsim runs the iterations the inputs give, so a body
that runs none on them was never traced, and a call in it that NKI refuses went unseen: a test
whose input makes a dynamic loop empty passed a kernel that does not compile.

The frontend (:func:`~neuronsim.machine.nki.frontend.trace`) traces such a kernel a second time
with each of those bodies run once (a ``fori_loop`` / ``dynamic_range`` body at its lower
bound, a ``while_loop`` body on its initial register), drops that program, and says a failure
inside one of the bodies as a warning at the failing line; the program traced is the first
one.  A warning, not a refusal: at its lower bound the body sees an index no device iteration
takes, and an access there may leave its tensor where no iteration would.

The same holds for ``nl.if_else`` on a device value: the compiler builds both branches and the
device picks one at run time, so the branch the inputs do not take is run too, after the other,
in the check trace (a probe: a broken else branch passed with exit 0).  On a Python value the
branch is picked as the kernel traces, and only that one is built.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from neuronsim.machine.ir.source import shown_path
from neuronsim.machine.nki.errors import NkiError, SourceLine, TraceTooLarge

__all__ = ["Unrun", "UNRUN_KIND", "checked_unrun", "unrun_warning"]

#: A loop body: the function a compiled loop calls, or ``(file, first line, last line)``.
Body = Callable[..., Any] | tuple[str, int, int]

#: The kind of the warning (:attr:`~neuronsim.machine.nki.frontend.TracedKernel.call_warnings`).
UNRUN_KIND = "unrun"


@dataclass
class Unrun:
    """The compiled loops of one trace whose bodies ran no iteration, by site (``path:line``),
    each with its line, its call and its body (a function, or the lines of a ``for`` statement:
    ``dynamic_range``); and the sites whose bodies this trace runs once (a check trace's)."""

    bodies: dict[str, tuple[SourceLine, str, Body]] = field(default_factory=dict)
    run_once: frozenset[str] = frozenset()

    def note(self, key: str, where: SourceLine, call: str, body: Body) -> bool:
        """The loop at ``key`` runs no iteration: remember its body; whether to run it once now."""
        self.bodies.setdefault(key, (where, call, body))
        return key in self.run_once


#: How a check trace runs a body once, by its call (else at the loop's lower bound).
_ONCE = {"nl.while_loop": "on its initial condition register"}
_AT_LOWER_BOUND = "at the loop's lower bound"


def _unrun_text(call: str, where: SourceLine) -> str:
    """Why a body that does not run on the inputs was traced (the warning's closing words)."""
    if call == "nl.if_else":
        return (f"in the branch of the nl.if_else at {where} that these inputs do not take: NKI builds both branches "
                "of an if_else on a device value, and neuronsim traced this one too, after the other, to check it")
    return (f"in the body of the {call} at {where}, which runs no iteration on these inputs: NKI builds a compiled "
            f"loop's body whatever its trip count, and neuronsim traced it once to check it, "
            f"{_ONCE.get(call, _AT_LOWER_BOUND)}")


def checked_unrun(traced: Any, bodies: dict[str, tuple[SourceLine, str, Body]],
                  trace_again: Callable[[frozenset[str]], Any], restore: Callable[[], None]) -> Any:
    """``traced`` (a :class:`~neuronsim.machine.nki.frontend.TracedKernel`), with a warning when
    ``trace_again`` (the same trace, the sites it is given run once; a traced kernel and more)
    fails inside one of ``bodies``, and with the warnings it noted at their lines; its program is
    dropped, and ``restore`` undoes what it changed in the kernel's module.  Any other failure of
    it is no finding: the device never runs those bodies."""
    try:
        again = trace_again(frozenset(bodies))[0]
        said = set(traced.call_warnings)  # (a misspelt keyword in a body: said as its warning)
        found = [w for w in again.call_warnings if w not in said and _in_a_body(w[0], bodies)]
        if found:
            return replace(traced, call_warnings=(*traced.call_warnings, *found))
    except TraceTooLarge:  # (the limit is the first trace's to meet)
        pass
    except Exception as err:  # noqa: BLE001  (said when it is the body's; the first trace stands)
        warning = unrun_warning(err, bodies)
        if warning is not None:
            return replace(traced, call_warnings=(*traced.call_warnings, warning))
    finally:
        restore()
    return traced


def unrun_warning(err: BaseException, bodies: dict[str, tuple[SourceLine, str, Body]]) -> tuple[str, str, str] | None:
    """The warning (``(file:LINE, kind, message)``) for ``err``, the failure of a check trace,
    when it failed inside one of ``bodies``: one of its frames runs the body, or the line it
    names lies in the body's source (a call held back until the body had returned); else None
    (a failure elsewhere follows from the body's run, which the device never makes)."""
    if not isinstance(err, NkiError):
        return None
    for where, call, body in bodies.values():
        if _raised_inside(err, getattr(body, "__code__", None)) or _names_line_of(err.path, body):
            return err.path, UNRUN_KIND, f"{err.message} ({_unrun_text(call, where)})"
    return None


def _in_a_body(path: str, bodies: dict[str, tuple[SourceLine, str, Body]]) -> bool:
    return any(_names_line_of(path, body) for _, _, body in bodies.values())


def _raised_inside(err: BaseException, code: Any) -> bool:
    """Whether a frame of ``err`` or of an exception it was raised from or during runs ``code``."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen and code is not None:
        seen.add(id(err))
        tb = err.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code is code:
                return True
            tb = tb.tb_next
        err = err.__cause__ or err.__context__
    return False


def _names_line_of(path: str, body: Body) -> bool:
    """Whether ``path`` (``file:LINE``, as an error names it) is a line of ``body``'s source."""
    file, _, line = path.rpartition(":")
    if isinstance(body, tuple):
        return line.isdigit() and file == body[0] and body[1] <= int(line) <= body[2]
    code = getattr(body, "__code__", None)
    if code is None or not line.isdigit() or file != shown_path(code.co_filename):
        return False
    try:
        lines, first = inspect.getsourcelines(body)
    except (OSError, TypeError):
        return False
    return first <= int(line) < first + len(lines)
