"""Reading an input document: one bounded reader for every format and command.

Every program a command reads (a path, or ``-`` for standard input) goes through
:func:`read_input`:

* at most :data:`INPUT_LIMIT` bytes are read (default :data:`DEFAULT_MAX_INPUT`; the commands'
  ``--max-input SIZE`` raises it): an endless stream (``yes | neuronsim tasks -``, a FIFO
  nobody closes, ``/dev/zero``) is refused as it is read, never read to its end;
* the first bytes are checked before the rest is read: text that cannot be a JSON object (NUL
  bytes, a byte-order mark of UTF-16 / UTF-32, a first character other than ``{``) is refused
  at once;
* standard input that is closed (``neuronsim check - <&-``) is a located error, not a crash.

Errors are :class:`~neuronsim.machine.ir.errors.ProgramError` with an empty path (the caller's loader
reports them as the document's).

>>> import io
>>> read_input(io.BytesIO(b'{"a": 1}'))
b'{"a": 1}'
>>> try:
...     read_input(io.BytesIO(b"\\xff\\xfe{\\x00"))
... except ProgramError as err:
...     print(err.message.split(";")[0])
the file is UTF-16 text (it starts with a byte-order mark)
"""

from __future__ import annotations

import codecs
import os
import re
import stat
import sys
from typing import BinaryIO

from neuronsim.machine.ir.errors import ProgramError

__all__ = ["DEFAULT_MAX_INPUT", "INPUT_LIMIT", "read_input", "check_encoding", "set_input_limit", "describe_size",
           "special_file"]

#: Bytes of program text read at most unless ``--max-input`` says otherwise.
DEFAULT_MAX_INPUT = 256 << 20
#: The limit in force (the CLI's ``--max-input`` sets it for the process).
INPUT_LIMIT = {"bytes": DEFAULT_MAX_INPUT}
_HEAD = 4096
_CHUNK = 1 << 20


def set_input_limit(limit: int | None) -> None:
    """Set the process's input limit (None: the default)."""
    INPUT_LIMIT["bytes"] = DEFAULT_MAX_INPUT if limit is None else int(limit)


def describe_size(size: int) -> str:
    """``268435456`` -> ``'256 MiB'``.

    >>> describe_size(256 << 20), describe_size(1536)
    ('256 MiB', '1.5 KiB')
    """
    value, unit = float(size), "bytes"
    for name in ("KiB", "MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value, unit = value / 1024, name
    return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"


#: What a path that is not a regular file names, by its ``stat`` mode.
_SPECIAL = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
            (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def special_file(path: str | os.PathLike) -> str | None:
    """What ``path`` is when it exists and is not a regular file (links followed): ``"a named
    pipe (FIFO)"``, ``"a directory"``, ...; None for a regular file or a missing one (its
    reader says so).  For inputs read whole as files (an ``.npz`` archive, a kernel or pass
    file): opening a FIFO waits for a writer that may never come, and a device never ends.

    >>> special_file("/"), special_file("/dev/null"), special_file("/no/such/file")
    ('a directory', 'a character device', None)
    """
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return next((kind for test, kind in _SPECIAL if test(mode)), None)


def check_encoding(head: bytes) -> None:
    """Refuse text whose first bytes show it is UTF-16 / UTF-32 or not text at all."""
    for boms, name in (((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE), "UTF-32"),
                       ((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE), "UTF-16")):
        if head.startswith(boms):
            raise ProgramError("", f"the file is {name} text (it starts with a byte-order mark); programs are "
                               f"UTF-8 JSON: convert it, e.g. iconv -f {name} -t UTF-8")
    if b"\x00" in head[:4]:
        raise ProgramError("", "the file holds NUL bytes at its start: UTF-16 or UTF-32 text, or not text at all; "
                           "programs are UTF-8 JSON")


def _first_character(head: bytes) -> str:
    text = head.removeprefix(codecs.BOM_UTF8).lstrip(b" \t\r\n")
    return text[:1].decode("ascii", "replace")


def _stdin() -> BinaryIO:
    stream = sys.stdin
    buffer = getattr(stream, "buffer", None) if stream is not None else None
    if buffer is None:
        raise ProgramError("", "standard input is closed: give a file, or pipe the program into -")
    return buffer


def read_input(source: str | BinaryIO, *, limit: int | None = None) -> bytes:
    """The bytes of ``source`` (a path, ``-`` for standard input, or an open binary file),
    at most ``limit`` bytes (default: :data:`INPUT_LIMIT`)."""
    limit = INPUT_LIMIT["bytes"] if limit is None else limit
    if hasattr(source, "read"):
        return _read_stream(source, limit)  # type: ignore[arg-type]
    if source == "-":
        try:
            data = _read_stream(_stdin(), limit)
        except OSError as err:
            raise ProgramError("", f"cannot read standard input: {err.strerror or err}") from None
        if _PYTHON_START.match(data):  # (`check - < k.py` was "malformed JSON at line 1 column 1": a probe)
            raise ProgramError("", "standard input holds Python source, not a JSON document: trace a kernel into a "
                                   "program with `neuronsim nki FILE.py::FUNC -o PROGRAM.json`, or run it with "
                                   "`neuronsim run FILE.py::FUNC`")
        return data
    _not_a_kernel(os.fspath(source))
    try:
        with open(source, "rb") as fh:
            return _read_stream(fh, limit)
    except OSError as err:
        raise ProgramError(os.fspath(source), f"cannot read it: {err.strerror or err}") from None


#: Python source's first statement (after comments and blank lines): what no JSON document starts with.
_PYTHON_START = re.compile(rb"(?:\s*#[^\n]*\n|\s*\n)*\s*"
                           rb"(?:import\s+\w|from\s+[\w.]+\s+import\b|def\s+\w|class\s+\w|@\w)")


def _not_a_kernel(source: str) -> None:
    """Refuse an NKI kernel (``k.py::add1``) or a Python file given where a JSON document goes:
    it said "No such file or directory" or "malformed JSON at line 1 column 1" (probe_bad M-F7b),
    where the input was of the wrong kind."""
    if not source.endswith(".py") and os.path.exists(source):  # (a program named k.py::add1.json is one)
        return
    file, separator, _func = source.rpartition("::")
    kernel = bool(separator) and file.endswith(".py")
    path = file if kernel else source
    if path.endswith(".py") and os.path.isfile(path):
        spec = source if kernel else f"{source}::FUNC"
        raise ProgramError(source, f"it is {'an NKI kernel' if kernel else 'a Python file'}, not a JSON document: "
                                   f"trace a kernel into a program with `neuronsim nki {spec} -o PROGRAM.json`, "
                                   f"or run it with `neuronsim run {spec}`")


def _read_stream(fh: BinaryIO, limit: int) -> bytes:
    head = fh.read(min(_HEAD, limit + 1)) or b""
    if isinstance(head, str):  # a text stream handed in by a caller
        head = head.encode("utf-8")
    check_encoding(head)
    body = head.removeprefix(codecs.BOM_UTF8)
    try:  # random bytes fail here, before megabytes of them are read (located as the loader locates it)
        codecs.getincrementaldecoder("utf-8")().decode(body, final=False)
    except UnicodeDecodeError as err:
        before = body[:err.start].decode("utf-8", "replace")
        line, column = before.count("\n") + 1, err.start - (before.rfind("\n") + 1) + 1
        raise ProgramError("", f"not UTF-8 text at line {line} column {column} (byte {err.start}): "
                               f"{err.reason}") from None
    chunks, total = [head], len(head)
    start = _first_character(head)
    while total <= limit:
        chunk = fh.read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            break
        if isinstance(chunk, str):
            chunk = chunk.encode("utf-8")
        if start and start != "{":  # a long text that cannot be a program (``yes | neuronsim show -``)
            raise ProgramError("", f"malformed JSON at line 1: a program is a JSON object, the text starts with "
                               f"{start!r}")
        chunks.append(chunk)
        total += len(chunk)
    if total > limit:
        raise ProgramError("", f"the input is larger than {describe_size(limit)}; not read (raise the limit with "
                           f"--max-input SIZE)")
    return b"".join(chunks)


def huge_integer_error(err: ValueError, text: str) -> ProgramError | None:
    """The located error for an integer literal of more digits than Python converts (its
    ``int_max_str_digits``), or None when ``err`` is something else."""
    import re

    found = re.search(r"value has (\d+) digits", str(err))
    if found is None:
        return None
    digits = int(found.group(1))
    match = re.search(r"(?<![0-9.])-?[0-9]{%d}(?![0-9])" % digits, text)
    where = ""
    if match:
        line = text.count("\n", 0, match.start()) + 1
        where = f" at line {line} column {match.start() - (text.rfind(chr(10), 0, match.start()) + 1) + 1}"
    return ProgramError("", f"malformed JSON{where}: an integer of {digits} digits "
                            f"(at most {sys.get_int_max_str_digits()} are read)")
