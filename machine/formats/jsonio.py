"""Strict JSON in, atomic text out: what every neuronsim document reader and writer needs.

:func:`decode_strict` rejects what :mod:`json` lets through by default (a key twice in one
object, NaN and Infinity) and turns every decoding failure into a located
:class:`~neuronsim.machine.ir.errors.ProgramError`; :func:`dumps_strict` is the one JSON writer
of the product (a test scans the sources for any other ``json.dump(s)``): strict JSON only, a
non-finite float written as ``null``; :func:`write_text` writes a path atomically (a temporary
file in the same folder, renamed over the target), standard output for ``-``, or an open file.

>>> decode_strict('{"a": 1}')
{'a': 1}
>>> try:
...     decode_strict('{"a": 1, "a": 2}')
... except ProgramError as err:
...     print(err.message)
malformed JSON at line 1 column 10: the key 'a' appears twice in one object
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any, TextIO

import orjson

from neuronsim.machine.formats import files
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.formats.inputs import check_encoding, huge_integer_error, read_input

#: The standard library's writer and reader, bound now: a user's module that replaces
#: ``json.dumps`` (a kernel's, a reference's) must not break the command's own output.
_DUMPS, _LOADS = json.dumps, json.loads

__all__ = ["decode_strict", "deepest_bracket", "dumps_strict", "finite_json", "loads_strict", "line_column",
           "read_source", "reject_constant", "unique_keys", "write_text"]


def finite_json(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None (JSON has no NaN or Infinity),
    tuples as lists.

    >>> finite_json({"a": [1.5, float("nan")], "b": (float("inf"), 2)})
    {'a': [1.5, None], 'b': [None, 2]}
    """
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    return value


def dumps_strict(value: Any, *, refuse_non_finite: bool = False, **options: Any) -> str:
    """The JSON text of ``value`` (``options`` as :func:`json.dumps` takes them: ``indent``,
    ``separators``, ``sort_keys``): strict JSON, never ``NaN`` or ``Infinity``, which no
    strict reader (ours included) takes back.  A non-finite float is written as ``null`` (a
    figure that could not be computed), or with ``refuse_non_finite`` (documents neuronsim
    reads back, such as programs, whose loaders refuse them) raises ValueError.

    >>> dumps_strict({"makespan": float("inf"), "runs": [1, float("nan")]})
    '{"makespan": null, "runs": [1, null]}'
    >>> dumps_strict({"scale": float("inf")}, refuse_non_finite=True)
    Traceback (most recent call last):
    ValueError: Out of range float values are not JSON compliant...
    """
    if not refuse_non_finite and options.get("separators") == (",", ":") and len(options) == 1:
        try:  # compact text of a large document (a trace): orjson writes it ten times faster, NaN as null
            return orjson.dumps(value).decode()
        except (orjson.JSONEncodeError, TypeError):
            pass  # a value orjson does not take (an integer past 64 bits): the standard writer's turn
    try:  # the common case, one pass; the copy without non-finite floats only when one is there
        return _DUMPS(value, allow_nan=False, **options)
    except ValueError:
        if refuse_non_finite:
            raise
        return _DUMPS(finite_json(value), allow_nan=False, **options)


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads`` object hook: a key twice in one object is malformed JSON."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey("", f"the key {key!r} appears twice in one object")
        out[key] = value
    return out


class _DuplicateKey(ProgramError):
    """A key twice in one object; located by :func:`loads_strict` (the hook is not told where)."""


#: The tokens that say where keys are: strings, and the brackets and commas around them.
_KEY_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],]', re.S)


def _second_key_at(text: str) -> int | None:
    """Offset in ``text`` of the first key that an object holds a second time (asked once the
    decoder has found one).

    >>> _second_key_at('{"a": {"b": 1, "c": [{"b": 2}]}, "b": 3, "a": 4}')
    41
    """
    objects: list[set[str] | None] = []  # per open bracket: an object's keys so far, None for an array
    expect_key = False
    for token in _KEY_TOKENS.finditer(text):
        mark = token.group()
        if mark[0] == '"':
            if expect_key and objects and objects[-1] is not None:
                key = json.loads(mark)
                if key in objects[-1]:
                    return token.start()
                objects[-1].add(key)
            expect_key = False
        elif mark in "{[":
            objects.append(set() if mark == "{" else None)
            expect_key = mark == "{"
        elif mark in "}]":
            if objects:
                objects.pop()
            expect_key = False
        else:  # a comma: a key follows inside an object
            expect_key = bool(objects) and objects[-1] is not None
    return None


def reject_constant(name: str) -> Any:
    """``json.loads`` constant hook: NaN / Infinity are not JSON numbers."""
    raise ProgramError("", f"malformed JSON: {name} is not a JSON number")


def line_column(text: str, index: int) -> str:
    """``line L column C`` (both from 1) of the character at ``index`` of ``text``."""
    line = text.count("\n", 0, index) + 1
    return f"line {line} column {index - (text.rfind(chr(10), 0, index) + 1) + 1}"


class _Unreadable(ValueError):
    """A number token the parser cannot represent; located by :func:`loads_strict`."""

    def __init__(self, token: str, message: str) -> None:
        super().__init__(message)
        self.token = token
        self.message = message


def _finite_float(token: str) -> float:
    """``json.loads`` float hook: ``1e400`` would read as infinity, which no writer may give back
    (strict JSON has none), so it is refused where it is read."""
    value = float(token)
    if not math.isfinite(value):
        raise _Unreadable(token, f"the number {token[:40]} is beyond the range of a double")
    return value


def _token_error(text: str, token: str, message: str) -> ProgramError:
    """``message`` at the first number token ``token`` of ``text`` (a search: the parser
    that found it does not say where)."""
    match = re.search(rf"(?<![0-9.eE+-]){re.escape(token)}(?![0-9])", text)
    where = f" at {line_column(text, match.start())}" if match else ""
    return ProgramError("", f"malformed JSON{where}: {message}")


def deepest_bracket(text: str) -> tuple[int, int]:
    """``(offset, depth)`` of the first bracket that opens the deepest level of ``text``
    (strings skipped).  Only asked after the decoder gave up, so a pass over the text in
    Python is affordable.

    >>> deepest_bracket('{"a": [[1], [[2]]]}')
    (13, 4)
    >>> deepest_bracket('["[[[", 1]')
    (0, 1)
    """
    depth, k, n, best = 0, 0, len(text), (0, 0)
    while k < n:
        c = text[k]
        if c == '"':  # a string: skip to its closing quote, past escaped characters
            k += 1
            while k < n and text[k] != '"':
                k += 2 if text[k] == "\\" else 1
        elif c in "[{":
            depth += 1
            if depth > best[1]:
                best = (k, depth)
        elif c in "]}":
            depth -= 1
        k += 1
    return best


def loads_strict(text: str) -> Any:
    """The document of a JSON text, strictly: a key twice in one object, NaN, Infinity, a
    number beyond a double and an integer of more digits than Python converts are located
    ProgramErrors, as is any malformed JSON (line and column)."""
    try:
        return _LOADS(text, object_pairs_hook=unique_keys, parse_constant=reject_constant,
                          parse_float=_finite_float)
    except _DuplicateKey as err:
        at = _second_key_at(text)
        where = f" at {line_column(text, at)}" if at is not None else ""
        raise ProgramError("", f"malformed JSON{where}: {err.message}") from None
    except ProgramError:
        raise
    except json.JSONDecodeError as err:
        raise ProgramError("", f"malformed JSON at line {err.lineno} column {err.colno}: {err.msg}") from None
    except _Unreadable as err:
        raise _token_error(text, err.token, err.message) from None
    except RecursionError:  # json's decoder recurses per level and says nothing of where it was
        at, depth = deepest_bracket(text)
        raise ProgramError("", f"unreadable JSON at {line_column(text, at)}: arrays and objects nest {depth} deep "
                               "there, deeper than the decoder can follow") from None
    except ValueError as err:  # an integer of more digits than Python converts
        located = huge_integer_error(err, text)
        if located is None:
            raise
        raise located from None


def decode_strict(text: str | bytes) -> Any:
    """The decoded document (:func:`loads_strict`; UTF-8 only: UTF-16 / UTF-32 text is refused
    as the program loader refuses it)."""
    if isinstance(text, (bytes, bytearray)):
        check_encoding(bytes(text[:4]))
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise ProgramError("", f"not UTF-8 text (byte {err.start}): {err.reason}") from None
    return loads_strict(text)


def read_source(source: str | TextIO) -> str | bytes:
    """The text of a path (``-``: standard input) or an open file; an unreadable path is a ProgramError."""
    if hasattr(source, "read"):
        return source.read()  # type: ignore[union-attr]
    return read_input(source)  # type: ignore[arg-type]


def write_text(text: str, target: str | TextIO) -> None:
    """Write ``text`` to an open file, ``-`` (standard output) or a path; a path is written
    atomically by :func:`neuronsim.machine.formats.files.write_text` (mode and symbolic link kept, nothing
    half-written; an :class:`~neuronsim.machine.formats.files.OutputError` names the path)."""
    if hasattr(target, "write"):
        target.write(text)  # type: ignore[union-attr]
        return
    if target == "-":
        try:
            sys.stdout.write(text)
        except BrokenPipeError:  # the reader went away: the command's SIGPIPE status, not an error
            raise
        except OSError as err:  # a full disk or device behind the redirection
            raise files.OutputError("-", f"standard output ({err.strerror or err})", err.errno) from None
        return
    files.write_text(target, text)  # type: ignore[arg-type]
