"""Strict JSON in, atomic text out: what every neuronsim document reader and writer needs.

:func:`decode_strict` rejects what :mod:`json` lets through by default (a key twice in one
object, NaN and Infinity) and turns every decoding failure into a located
:class:`~machine.errors.ProgramError`; :func:`write_text` writes a path atomically (a temporary
file in the same folder, renamed over the target), standard output for ``-``, or an open file.

>>> decode_strict('{"a": 1}')
{'a': 1}
>>> decode_strict('{"a": 1, "a": 2}')
Traceback (most recent call last):
machine.errors.ProgramError: <document>: malformed JSON: the key 'a' appears twice in one object
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from typing import Any, TextIO

from machine.errors import ProgramError

__all__ = ["decode_strict", "read_source", "write_text"]


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ProgramError("", f"malformed JSON: the key {key!r} appears twice in one object")
        out[key] = value
    return out


def _constant(name: str) -> Any:
    raise ProgramError("", f"malformed JSON: {name} is not a JSON number")


def decode_strict(text: str | bytes) -> Any:
    """The decoded document; malformed JSON is a ProgramError naming line and column."""
    try:
        return json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant)
    except json.JSONDecodeError as err:
        raise ProgramError("", f"malformed JSON at line {err.lineno} column {err.colno}: {err.msg}") from None
    except UnicodeDecodeError as err:
        raise ProgramError("", f"not UTF-8 text: {err.reason}") from None


def read_source(source: str | TextIO) -> str | bytes:
    """The text of a path (``-``: standard input) or an open file; an unreadable path is a ProgramError."""
    if hasattr(source, "read"):
        return source.read()  # type: ignore[union-attr]
    if source == "-":
        return sys.stdin.buffer.read()
    try:
        with open(source, "rb") as fh:  # type: ignore[arg-type]
            return fh.read()
    except OSError as err:
        raise ProgramError("", f"cannot read {source}: {err.strerror}") from None


def write_text(text: str, target: str | TextIO) -> None:
    """Write ``text`` to a path (atomically: nothing half-written on error), ``-`` or an open file."""
    if hasattr(target, "write"):
        target.write(text)  # type: ignore[union-attr]
        return
    if target == "-":
        sys.stdout.write(text)
        return
    directory = os.path.dirname(os.path.abspath(target))  # type: ignore[arg-type]
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".neuronsim-", suffix=".json")
    except OSError as err:
        raise ProgramError("", f"cannot write {target}: {err.strerror}") from None
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, target)  # type: ignore[arg-type]
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
