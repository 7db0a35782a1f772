"""Errors of the NKI frontend, located at the kernel's own source line.

Every problem a kernel author can cause is an :class:`NkiError` whose message starts with
``file.py:LINE:`` (the kernel frame that made the call), so the command line prints one line
and exits 2.  :class:`NotAffine` is internal: a legacy loop body that is not affine in its
loop variable makes the tracer start again with that loop unrolled.
"""

from __future__ import annotations

import copy
import difflib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any

import numpy as np

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.fast_dataclasses import quick_init
from neuronsim.machine.ir.source import declared_name, shown_path

__all__ = ["NkiError", "NkiInternalError", "NoSuchTensorAttribute", "NotAffine", "TraceTooLarge", "SourceLine",
           "user_line", "user_frame", "user_site", "line_of", "unsupported", "fail", "Refused", "no_such_name", "shown",
           "at_line", "past_end"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
#: neuronsim itself: past generated code, a frame here is the command that ran the kernel, not its caller
_NEURONSIM_DIR = os.path.dirname(os.path.dirname(_PACKAGE_DIR)) + os.sep


@quick_init
@dataclass(frozen=True, slots=True)
class SourceLine:
    """Where a call came from: the kernel file (relative to cwd when below it) and line."""

    file: str
    line: int
    path: str = ""

    def __str__(self) -> str:  # line 0: the file as a whole (it is missing, or not a kernel file)
        return f"{self.file}:{self.line}" if self.line else self.file


_CODE: dict[int, tuple[bool, str, str, object]] = {}
#: numpy's own files: a kernel's ``np.sum(tile)`` is refused inside them, at the kernel's line
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__)) + os.sep
#: the standard library's copy module: a kernel's ``copy.copy(tile)`` likewise
_COPY = os.path.abspath(copy.__file__)


def _code_info(code: object) -> tuple[bool, str, str, object]:
    """``(is the frontend's own code, display name, absolute path, code)`` of a code object
    (cached: tracing asks for every frame of every call).  Keyed by ``id``: hashing a code
    object hashes its constants every time (a third of a microsecond); the entry holds the
    code, so its id is never reused while cached."""
    info = _CODE.get(id(code))
    if info is None:
        path = os.path.abspath(code.co_filename)  # type: ignore[attr-defined]
        # importlib's frozen frames sit between a kernel's ``from nki.language import x`` and
        # the stand-in that refuses ``x``: the kernel's line is the one to name
        ours = (path.startswith((_PACKAGE_DIR + os.sep, _NUMPY_DIR)) or path.endswith(("contextlib.py", "functools.py"))
                or path == _COPY or "<frozen importlib" in path)
        info = _CODE[id(code)] = (ours, shown_path(path), path, code)
    return info


#: ``(id(code), f_lasti) -> line`` of kernel frames: ``frame.f_lineno`` decodes the code's line
#: table from its start, so it grows with the function (2.6 us a call 300 lines into a
#: neuronx-cc-printed kernel, asked once or twice per NKI call); a kernel's calls sit at a
#: few bytecode offsets, each met once per iteration.  Only codes held by :data:`_CODE` are
#: keyed, so an id names one code while its entries stand.
_LINES: dict[tuple[int, int], int] = {}


def frame_line(frame: FrameType) -> int:
    """``frame.f_lineno`` of a frame whose code :func:`_code_info` has seen, read once per
    bytecode offset."""
    key = (id(frame.f_code), frame.f_lasti)
    line = _LINES.get(key)
    if line is None:
        line = frame.f_lineno
        if line is None:  # (no line at this offset: nothing to remember)
            return 0
        _LINES[key] = line
    return line


def user_frame(depth: int = 1) -> FrameType | None:
    """The innermost frame outside this package (and the standard library's contextlib):
    the kernel statement being traced (:func:`user_site`'s)."""
    return user_site(depth + 1)[1]


def user_site(depth: int = 1) -> tuple[SourceLine, FrameType | None]:
    """The kernel line being traced and its frame (one walk: every NKI call asks).  Code with no
    file of its own (an ``eval`` / ``exec`` string, ``"<string>"`` or another ``<name>``) gives way
    to the kernel line that ran it, when there is one: it was ``<string>:1``, no file (a probe);
    a kernel defined entirely so keeps its pseudo name."""
    frame, pseudo = sys._getframe(depth), None
    while frame is not None:
        info = _CODE.get(id(frame.f_code)) or _code_info(frame.f_code)
        if not info[0]:
            if pseudo is not None and info[2].startswith(_NEURONSIM_DIR):
                break  # the kernel was the generated code itself
            if not frame.f_code.co_filename.startswith("<"):
                return SourceLine(info[1], frame_line(frame), info[2]), frame
            pseudo = pseudo or frame
        frame = frame.f_back
    if pseudo is not None:
        return line_of(pseudo), pseudo
    return SourceLine("<unknown>", 0), None


def line_of(frame: FrameType | None) -> SourceLine:
    """The kernel line ``frame`` is running."""
    if frame is None:
        return SourceLine("<unknown>", 0)
    _ours, display, path, _code = _code_info(frame.f_code)
    return SourceLine(display, frame_line(frame), path)


def user_line(depth: int = 1) -> SourceLine:
    """The kernel line being traced (:func:`user_frame`)."""
    return line_of(user_frame(depth + 1))


def shown(value: Any) -> str:
    """A value as an error message names it: a plain value with its repr (``float 64.0``), any
    other object by its type alone (no internal repr leaks into a kernel author's message)."""
    plain = isinstance(value, (int, float, str, bool)) or value is None
    if isinstance(value, np.ndarray) and value.ndim == 0:  # an --inputs array of no dimensions: passed as it is
        return f"an array of no dimensions ({value.item()!r}; an input holding one value is a tensor of shape (1,))"
    return f"{type(value).__name__} {value!r}" if plain else type(value).__name__


class NkiError(ProgramError):
    """A kernel that cannot be traced: ``"file.py:LINE: what"``.

    >>> str(NkiError(SourceLine("k.py", 3), "nisa.sendrecv is not supported (two-core kernels)"))
    'k.py:3: nisa.sendrecv is not supported (two-core kernels)'
    """

    #: The exception the kernel's own code raised, which this error says at its line (its
    #: ``assert``, its ``ValueError``), or None for a refusal of neuronsim's: NKI's simulator
    #: lets the kernel's own exception through, and the drop-in does too.
    raised: BaseException | None = None

    def __init__(self, where: SourceLine | str, message: str) -> None:
        super().__init__(str(where), message)


@contextmanager
def at_line(where: SourceLine) -> Iterator[None]:
    """A plain :class:`NkiError` the block raises is said at ``where``: work a call left pending
    (its result's tile, its instruction) is done when a later statement, or the end of the
    kernel, uses the result, and its refusal is the call's, at its line."""
    try:
        yield
    except NkiError as err:
        if type(err) is NkiError and err.path != str(where):
            raise NkiError(where, err.message) from None
        raise


class TraceTooLarge(NkiError):
    """A trace past its limits (``Tracer.max_instructions``, ``Tracer.max_memory``): a Python
    loop of a billion iterations is refused at the limit, not traced for hours or until the
    machine runs out of memory.  ``kind`` is ``"instructions"`` or ``"memory"``, ``limit``
    the number (bytes for memory); ``hint`` how to raise it (the command line names its option).

    >>> str(TraceTooLarge(SourceLine("k.py", 7), 1000, "instructions"))
    'k.py:7: the kernel traces to more than 1,000 instructions (its Python loops unroll)'
    """

    def __init__(self, where: SourceLine | str, limit: int, kind: str, hint: str = "") -> None:
        what = f"{limit:,} instructions" if kind == "instructions" else f"{limit / 2**30:.1f} GiB of memory"
        super().__init__(where, f"the kernel traces to more than {what} (its Python loops unroll)"
                                + (f": {hint}" if hint else ""))
        self.limit, self.kind = limit, kind


class IndexOutside(NkiError):
    """An integer index past its tensor's end (``a[k]``, ``k`` at least its length): a view
    subscripted so is refused where an instruction accesses it, whose mask may keep nothing
    (:mod:`~neuronsim.machine.nki.outside`)."""


class NkiInternalError(RuntimeError):
    """An exception raised inside the frontend's own code while tracing (not by the kernel's
    code, not an :class:`NkiError`): a bug of neuronsim, named with the kernel line it was
    tracing.  Not a :class:`ProgramError`, so the command line reports it as an internal error
    (exit 3, one line), never as the kernel author's mistake; the original exception is its
    ``__cause__``."""


class NoSuchTensorAttribute(AttributeError):
    """A kernel read an attribute an NKI tensor does not have.  Still an ``AttributeError``
    (``hasattr`` and ``getattr(x, name, default)`` keep working), but the kernel's mistake, not
    neuronsim's: the frontend reports it at the kernel's line instead of as an internal error."""


class LeftLoopEarly(NkiError):
    """A kernel that left an unrolled legacy loop by ``return`` / ``break`` with iterations to
    go (:func:`~neuronsim.machine.nki.loop_exit.check_loops_finished`); ``where`` is the loop's line."""

    def __init__(self, where: SourceLine, message: str) -> None:
        super().__init__(where, message)
        self.where = where


class NotAffine(Exception):
    """Raised while tracing a kept legacy loop whose body is not affine in its variable.

    ``loops`` are the keys (``file:line`` of the range call) of the loops to unroll."""

    def __init__(self, loops: tuple[str, ...], what: str) -> None:
        super().__init__(what)
        self.loops = loops
        self.what = what


def fail(message: str) -> NkiError:
    """An :class:`NkiError` at the current kernel line (raise it)."""
    return NkiError(user_line(2), message)


def unsupported(construct: str, why: str) -> NkiError:
    """``"<construct> is not supported (<why>)"`` at the current kernel line (raise it)."""
    return NkiError(user_line(2), f"{construct} is not supported ({why})")


def no_such_name(qualified: str, module: str, known: Any) -> NkiError:
    """``"nl.expp: no such name in nki.language (did you mean nl.exp?)"`` at the kernel line:
    a name the real module does not define either (a typo), as opposed to a real name neuronsim
    does not model (:class:`Refused`)."""
    alias, _, attr = qualified.rpartition(".")
    close = difflib.get_close_matches(attr, [k for k in known if not k.startswith("_")], n=1, cutoff=0.6)
    hint = f" (did you mean {alias}.{close[0]}?)" if close else ""
    return NkiError(user_line(2), f"{qualified}: no such name in {module}{hint}")


class Refused:
    """A real NKI name neuronsim does not model: importing it (``from nki.isa import
    sendrecv``) or passing it around works, as with the real module; using it (calling it,
    reading an attribute, indexing, iterating, testing it) raises ``"<name> is not supported
    (<why>)"`` at the kernel line that used it.  Equality is identity, so a kernel may compare
    a dtype with it."""

    __slots__ = ("_name", "_why")

    def __init__(self, name: str, why: str) -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_why", why)

    def refusal(self) -> NkiError:
        return NkiError(user_line(2), f"{self._name} is not supported ({self._why})")

    def __call__(self, *_args: Any, **_kwargs: Any) -> Any:
        raise self.refusal()

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):  # Python's own probes (copy, pickle, inspect)
            raise AttributeError(attr)
        raise self.refusal()

    def __getitem__(self, _key: Any) -> Any:
        raise self.refusal()

    def __iter__(self) -> Any:
        raise self.refusal()

    def __bool__(self) -> bool:
        raise self.refusal()

    def __enter__(self) -> Any:
        raise self.refusal()

    def __exit__(self, *_exc: Any) -> None:
        return None

    def __eq__(self, other: Any) -> bool:
        return self is other

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"<{self._name}: not supported by neuronsim ({self._why})>"



class RefusedClass(Refused):
    """A class of a module neuronsim knows nothing of (``nki.compiler.frontend.ParserFrontend``):
    making an instance is not yet a use, since test harnesses build such objects as default
    arguments when they are imported; the instance is a :class:`Refused` that refuses when used."""

    __slots__ = ()

    def __call__(self, *_args: Any, **_kwargs: Any) -> Any:
        return Refused(f"{self._name}()", self._why)


def check_tensor_name(hint: Any, site: SourceLine, call: str) -> None:
    """A tensor's ``name=``: a string a program's names may be (it names an output as given,
    printed and written as it is: no control character, line break or bidirectional override;
    :func:`~neuronsim.machine.formats.program_json.check_name`), else refused at ``site``."""
    from neuronsim.machine.formats.program_json import check_name

    if not isinstance(hint, str):
        raise NkiError(site, f"{call}: name={shown(hint)}; a tensor's name is a string")
    if hint:
        try:
            check_name(hint, "name")
        except ProgramError as err:
            raise NkiError(site, f"{call}: name={hint!r}: {err.message}") from None


def past_end(tensor: Any, first: int, stop: int, dim: int, size: int, n: int) -> str:
    """What an access reaching past ``size`` elements of dimension ``dim`` of ``tensor`` says:
    positions ``first`` to ``stop - 1`` of its ``n`` inside (none when ``stop <= first``); the
    tensor as the kernel names it (:func:`~neuronsim.machine.ir.source.declared_name`)."""
    whom = declared_name(tensor)
    if stop <= first:
        return (f"the access of {whom} lies wholly past its {size} elements along dimension {dim} (none of its "
                f"{n} positions is inside)")
    return (f"the access of {whom} reaches past its {size} elements along dimension {dim} (positions {first} to "
            f"{stop - 1} of its {n} are inside; a mask= bounds it)")
