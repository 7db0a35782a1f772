"""Writing output files atomically: all or nothing, in place of the old file.

Every file neuronsim writes (compiled programs, traces, plots, reports) goes through
:func:`write_atomically`: the bytes go to a temporary file in the target's own directory, are
flushed to disk (``fsync``), and the temporary file is renamed over the target
(``os.replace``, atomic on POSIX).  A reader sees the old file or the new one, never half of
one, and a write that fails (disk full, permission, a crash, Ctrl-C) leaves the old file as it
was and no temporary file behind.

Writing *in place of* the old file keeps what a user set on it:

* the mode of an existing target (a new file gets ``0o666`` less the umask, as ``open``
  would give, not the ``0o600`` of a temporary file), and its owner where the process may set
  it;
* a symbolic link stays a link: the new bytes replace the file it points to;
* a target that is not a regular file (a FIFO, a character device such as ``/dev/null``, a
  socket) is written *through*, never replaced: renaming over ``/dev/null`` as root would
  destroy it, and a FIFO's reader waits for the bytes, not for a new file; ``-`` is standard
  output.

A command's outputs are all or nothing too: between :func:`begin_outputs` and
:func:`settle_outputs` every file put in place is recorded (an existing one first kept under a
hard link), so a command that fails after writing some (standard output full, say) takes them
back: new files removed, replaced ones restored.

Temporary files in flight are listed in :data:`PENDING` so that a process ended by a signal
(:mod:`neuronsim.verify.cli.signals`) removes them even when it cannot unwind normally.

Errors are :class:`OutputError`, an :class:`OSError` whose ``filename`` is the path the user
gave (never the temporary file's) and whose ``strerror`` says what went wrong.

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> target = os.path.join(folder, "out.txt")
>>> write_text(target, "hello\\n")
>>> open(target).read()
'hello\\n'
>>> try:
...     write_text(folder, "x")
... except OutputError as err:
...     err.filename == folder, err.strerror
(True, 'cannot write: it is a directory')
"""

from __future__ import annotations

import errno
import os
import stat
import sys
import tempfile
from collections.abc import Callable
from typing import BinaryIO

__all__ = ["OutputError", "write_atomically", "write_text", "check_output_path", "link_to_nowhere", "resolve_target",
           "PENDING", "remove_pending", "is_stream_target", "begin_outputs", "settle_outputs", "make_folders"]

#: Temporary files being written now (removed by :func:`remove_pending` on a forced exit).
PENDING: set[str] = set()
#: Bound as the module loads: a kernel's ``os.replace = lambda a, b: None`` left every output
#: a temporary file and the report naming files that were never put in place (a probe).
_REPLACE = os.replace


#: While a command records its outputs: per file put in place, ``(target, the old file's link
#: or None, whether a file was there)``; None when nothing records.
_PLACED: list[tuple[str, str | None, bool]] | None = None
#: The folders :func:`make_folders` created while recording (removed again if left empty).
_FOLDERS: list[str] = []


def _forget_in_child() -> None:  # a forked worker's files are its own; the command settles only the parent's
    global _PLACED
    _PLACED = None
    _FOLDERS.clear()


os.register_at_fork(after_in_child=_forget_in_child)


def begin_outputs() -> None:
    """Record the files put in place from now on (a command starting)."""
    global _PLACED
    _PLACED = []


def settle_outputs(*, keep: bool) -> None:
    """End the recording: keep the files (drop the old ones' links), or take them back (latest
    first: a new file removed, a replaced one restored from its link; one replaced where no
    link could be made stays, complete)."""
    global _PLACED
    placed, _PLACED = _PLACED or [], None
    folders = _FOLDERS[:]
    _FOLDERS.clear()
    for target, old, existed in reversed(placed):
        try:
            if keep:
                if old is not None:
                    os.unlink(old)
            elif old is not None:
                _REPLACE(old, target)
            elif not existed:
                os.unlink(target)
        except OSError:
            pass
        if old is not None:
            PENDING.discard(old)
    for folder in () if keep else reversed(folders):
        try:
            os.rmdir(folder)  # only if empty: a folder the user filled meanwhile stays
        except OSError:
            pass


def make_folders(path: str | os.PathLike) -> None:
    """``os.makedirs(path, exist_ok=True)``; while outputs are recorded, the folders it
    creates are taken back with the files of a failed command."""
    # every prefix of the path as written, `..` kept: makedirs creates new/a for new/a/../o, which
    # a path resolved first (new/o) missed, and a failed run left new/a behind (a probe)
    prefixes, folder = [], os.sep
    for part in os.path.join(os.getcwd(), os.fspath(path)).split(os.sep):
        if part:
            folder = os.path.join(folder, part)
            prefixes.append(folder)
    missing = [folder for folder in prefixes if not os.path.isdir(folder)]
    os.makedirs(path, exist_ok=True)
    if _PLACED is not None:
        _FOLDERS.extend(missing)


def _prefix(name: str) -> str:
    """The start of a temporary file's name beside ``name``: the name itself, cut where a file
    system's 255-byte names would not hold it with the random part and suffix (a legal name of
    250 characters was refused as "File name too long")."""
    # (the file system's own codec both ways: a name not in UTF-8 holds its bytes as lone
    # surrogates, which encode() refused, and a C locale's ASCII refused a decoded é: exit 3)
    return f".{os.fsdecode(os.fsencode(name)[:200])}."


def _keep_old(target: str, folder: str, name: str) -> str | None:
    """A hard link to the file at ``target`` beside it (None: none could be made)."""
    try:
        fd, old = tempfile.mkstemp(dir=folder, prefix=_prefix(name), suffix=".old")
        os.close(fd)
        os.unlink(old)
        os.link(target, old)
    except OSError:
        return None
    PENDING.add(old)  # a process ended by a signal removes it (the new file stays)
    return old


def remove_pending() -> None:
    """Remove every temporary file still in flight (a process ending by a signal)."""
    for tmp in list(PENDING):
        try:
            os.unlink(tmp)
        except OSError:
            pass
        PENDING.discard(tmp)


def is_stream_target(path: str | os.PathLike) -> bool:
    """True for ``-`` and for an existing target that is not a regular file (FIFO, device,
    socket): written through, never replaced.

    >>> is_stream_target("-"), is_stream_target(os.devnull)
    (True, True)
    """
    user = os.fspath(path)
    if user == "-":
        return True
    try:
        mode = os.stat(user).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


class OutputError(OSError):
    """A file could not be written; ``filename`` is the user's path."""

    def __init__(self, path: str, reason: str, code: int | None = None) -> None:
        super().__init__(code or errno.EIO, f"cannot write: {reason}", str(path))
        self.reason = reason


def resolve_target(path: str | os.PathLike) -> str:
    """The file a write to ``path`` lands in: symbolic links followed (even dangling ones).

    >>> resolve_target("/tmp/x.json") == os.path.realpath("/tmp/x.json")
    True
    """
    return os.path.realpath(os.fspath(path))


def link_to_nowhere(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot become a folder when it, or a missing folder on the way to it, is a
    symbolic link that leads nowhere (to a missing target, or round a loop of links): the
    link as the path names it and the system's reason; None otherwise.  ``os.makedirs``
    would fail on it only when the first file is written, after the work.

    >>> link_to_nowhere("/tmp") is None
    True
    """
    head = os.fspath(path).rstrip(os.sep) or os.sep
    while head and not os.path.exists(head):
        if os.path.islink(head):
            try:
                os.stat(head)
            except OSError as err:
                return f"{head} is a symbolic link that leads nowhere ({err.strerror})"
        parent = os.path.dirname(head)
        if parent == head:
            break
        head = parent
    return None


def check_output_path(path: str | os.PathLike) -> str:
    """Raise :class:`OutputError` now when ``path`` cannot be an output file (a directory, a
    folder that does not exist); the resolved target otherwise.  Commands call it before
    their work starts, so a bad output path costs nothing."""
    user = os.fspath(path)
    if not user:
        raise OutputError(user, "the path is empty", errno.ENOENT)
    if is_stream_target(user):
        if user != "-" and not os.access(user, os.W_OK):
            raise OutputError(user, "permission denied", errno.EACCES)
        return user
    target = resolve_target(user)
    if os.path.isdir(target):
        raise OutputError(user, "it is a directory", errno.EISDIR)
    if user.endswith(os.sep):  # a folder's name (realpath drops the slash: a file of that name was written)
        raise OutputError(user, "it names a folder (a trailing /), and no such folder exists", errno.EISDIR)
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise OutputError(user, f"the folder {os.path.dirname(user) or folder} does not exist", errno.ENOENT)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise OutputError(user, f"the folder {os.path.dirname(user) or folder} is not writable", errno.EACCES)
    if os.path.exists(target) and not os.access(target, os.W_OK):
        raise OutputError(user, "permission denied", errno.EACCES)
    return target


def _new_file_mode() -> int:
    """``0o666`` less the process umask (read without changing it where /proc allows)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _fsync_folder(folder: str) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems cannot sync a directory; the rename is still atomic
        pass
    finally:
        os.close(fd)


def write_atomically(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> None:
    """Call ``write(fh)`` on a temporary binary file and put it in place of ``path``.

    Anything ``write`` raises propagates (after the temporary file is removed) unless it is
    an :class:`OSError`, which becomes an :class:`OutputError` naming ``path``.
    """
    user = os.fspath(path)
    target = check_output_path(user)
    if is_stream_target(user):
        _write_through(user, write)
        return
    folder, name = os.path.split(target)
    try:
        existing = os.stat(target)
    except FileNotFoundError:
        existing = None
    except OSError as err:
        raise OutputError(user, err.strerror or str(err), err.errno) from None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=_prefix(name), suffix=".tmp")
    except OSError as err:
        raise OutputError(user, err.strerror or str(err), err.errno) from None
    PENDING.add(tmp)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
            if existing is not None:
                os.fchmod(fh.fileno(), stat.S_IMODE(existing.st_mode))
                if (existing.st_uid, existing.st_gid) != (os.geteuid(), os.getegid()):
                    try:
                        os.fchown(fh.fileno(), existing.st_uid, existing.st_gid)
                    except PermissionError:  # only root may give a file away; keep ours
                        pass
            else:
                os.fchmod(fh.fileno(), _new_file_mode())
        if _PLACED is not None:
            _PLACED.append((target, _keep_old(target, folder, name) if existing is not None else None,
                            existing is not None))
        _REPLACE(tmp, target)
        PENDING.discard(tmp)
    except BaseException as err:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        PENDING.discard(tmp)
        if isinstance(err, OSError) and not isinstance(err, OutputError):
            raise OutputError(user, err.strerror or str(err), err.errno) from None
        raise
    _fsync_folder(folder)


def _write_through(user: str, write: Callable[[BinaryIO], None]) -> None:
    """Write into standard output (``-``) or an existing non-regular file, in place."""
    if user == "-":
        stream = getattr(sys.stdout, "buffer", None)
        if stream is None:
            raise OutputError(user, "standard output is closed", errno.EBADF)
        try:
            sys.stdout.flush()
            write(stream)
            stream.flush()
        except BrokenPipeError:  # the reader went away: the command's SIGPIPE status, not an error
            raise
        except OSError as err:  # a full disk or device behind the redirection
            raise OutputError(user, f"standard output ({err.strerror or err})", err.errno) from None
        return
    try:
        with open(user, "wb") as fh:  # O_TRUNC on a FIFO or a device truncates nothing
            write(fh)
    except OutputError:
        raise
    except OSError as err:
        raise OutputError(user, err.strerror or str(err), err.errno) from None


def write_text(path: str | os.PathLike, text: str) -> None:
    """:func:`write_atomically` for UTF-8 text; a path's bytes that are not UTF-8 (lone
    surrogates in the text, as a command line holds them) are written escaped (an HTML report of
    such a program was exit 3: a probe)."""
    data = text.encode("utf-8", "backslashreplace")
    write_atomically(path, lambda fh: fh.write(data))
