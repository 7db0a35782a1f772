"""Located errors for unusable input.

Every problem with a user's program is reported as a :class:`ProgramError` that names the
JSON path where it sits (``body[3].reads[0].pattern``) and says what was expected.  The
command line turns it into exit status 2 and one line on standard error, never a traceback.
"""

from __future__ import annotations

import re
from json.encoder import encode_basestring_ascii

__all__ = ["LazyPath", "ProgramError", "join_path", "printable", "message_of"]


class ProgramError(ValueError):
    """A program (or other input document) cannot be used.

    Parameters
    ----------
    path:
        JSON path of the offending value, e.g. ``"tensors.x.shape"``; ``""`` for the document.
    message:
        What is wrong and what was expected.
    """

    def __init__(self, path: str | LazyPath, message: str) -> None:
        if isinstance(path, LazyPath):  # spelt out now that an error names it
            path = str(path)
        super().__init__(f"{path or '<document>'}: {message}")
        self.path = path
        self.message = message


class LazyPath:
    """A JSON path spelt out only when an error names it: the validator passes one per access
    of every instruction, and an unrolled kernel's tens of thousands of accesses would
    otherwise build their paths for nothing (issue 31).  :func:`join_path` and
    :class:`ProgramError` take it where they take a string.

    >>> path = LazyPath("body[3]", "reads", 0)
    >>> join_path(path, "tensor"), str(ProgramError(path, "bad").path)
    ('body[3].reads[0].tensor', 'body[3].reads[0]')
    """

    __slots__ = ("base", "keys")

    def __init__(self, base: str | LazyPath, *keys: str | int) -> None:
        self.base, self.keys = base, keys

    def __str__(self) -> str:
        path = str(self.base)
        for key in self.keys:
            path = join_path(path, key)
        return path


def join_path(base: str | LazyPath, key: str | int) -> str:
    """Extend a JSON path by an object key or a list index.

    >>> join_path("body[3]", "reads")
    'body[3].reads'
    >>> join_path("body", 2)
    'body[2]'
    >>> join_path("", "tensors")
    'tensors'

    A key that is empty or holds ``.``, ``[``, ``]``, ``"`` or white space is quoted, so the
    path stays unambiguous:

    >>> join_path("tensors", ""), join_path("tensors", "a.b")
    ('tensors[""]', 'tensors["a.b"]')
    """
    if isinstance(key, int):
        return f"{base}[{key}]"
    plain = _PLAIN.get(key)
    if plain is None:
        plain = not (not key or _AWKWARD.search(key))
        if len(_PLAIN) < 1 << 16:
            _PLAIN[key] = plain
    if not plain:
        return f"{base}[{encode_basestring_ascii(key)}]"  # a string literal, as json.dumps quotes one
    return f"{base}.{key}" if base else key


# Paths are built for every value a loader or validator visits, so the key test is cached.
_AWKWARD = re.compile(r'[.\[\]"\s]')
_PLAIN: dict[str, bool] = {}


def printable(text: str) -> str:
    r"""``text`` safe to print on a terminal: control characters (ANSI escapes among them),
    line breaks, lone surrogates and other unprintable characters become Python escapes, so
    a message stays one line and cannot recolour or rewrite the screen.

    >>> print(printable("tensor \x1b[31mred\nx"))
    tensor \x1b[31mred\nx
    >>> print(printable("a\ud800b"), printable("naïve ok"))
    a\ud800b naïve ok
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == " " else c.encode("unicode_escape", "backslashreplace").decode("ascii")
                   for c in text)


def message_of(err: BaseException) -> str:
    """``str(err)`` of an exception a user's code raised, or a stand-in when its own
    ``__str__`` fails (an error message must still be made).

    >>> class Mute(Exception):
    ...     def __str__(self):
    ...         raise RuntimeError
    >>> message_of(ValueError("bad")), message_of(Mute())
    ('bad', '(its message could not be made: __str__ raised RuntimeError)')
    """
    try:
        return str(err)
    except Exception as failed:  # noqa: BLE001 - the user's __str__, whatever it raises
        return f"(its message could not be made: __str__ raised {type(failed).__name__})"
