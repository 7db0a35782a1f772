"""Where a command's files go: output paths checked before any work (a folder, a file the
command reads, standard output twice or under ``--json``) and once the user's code has run (a
module it imported), and the text set aside when a file goes to standard output.

Every command checks its outputs here before it works, so that a bad path is one ``error:``
line and exit 2 with nothing written, not a run lost at its end.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Mapping

from neuronsim.machine.formats.files import OutputError, check_output_path
from neuronsim.verify.cli import document
from neuronsim.verify.cli.failures import UsageFailure

__all__ = ["check_output", "check_not_imported", "pass_sources", "stdout_for_json", "distinct_outputs",
           "text_aside", "check_plot", "plot_format_or_fail"]


def check_output(path: str | None, option: str, inputs: tuple[str | None, ...] = ()) -> None:
    """Refuse an output path before any work (a directory, a missing folder, one of the files
    ``inputs`` the command reads: writing it would destroy it): exit 2 naming ``path``; ``-``
    and None (no output) pass.  A kernel spec ``FILE.py::FUNC`` or ``FILE.py:FUNC`` among
    ``inputs`` stands for its file."""
    if path is None or path == "-":
        return
    for given in inputs:
        for source in _files_of(given):
            if _same_file(path, source):
                raise UsageFailure(f"the {option} file is {source}, which this command reads: writing it would "
                                   "destroy it", path)
    try:
        check_output_path(path)
    except OutputError as err:
        raise UsageFailure(f"cannot write the {option} file: {err.reason}", path) from None


def check_not_imported(path: str | None, option: str) -> None:
    """Refuse an output path that is the file of a module the user's code imported (a kernel's
    helper, a reference's): checked once that code ran, before the file is written.  ``nki
    kern.py::k -o helper.py`` replaced the ``helper.py`` the kernel imports with a program, exit
    0 (a probe); the files named on the command line are refused before any work
    (:func:`check_output`)."""
    if path is None or path == "-":
        return
    from neuronsim.machine.nki.standins import user_file

    for module in list(sys.modules.values()):
        source = getattr(module, "__file__", None)
        if isinstance(source, str) and user_file(source) and _same_file(path, source):
            raise UsageFailure(f"the {option} file is {source}, a module the user's code imported: writing it would "
                               "destroy it", path)


def _files_of(source: str | None) -> list[str]:
    """The files an input names: itself, a kernel spec's file, or a ``MODULE:FN`` module's
    (``--reference refmod:good``: an output over ``refmod.py`` destroyed it, a probe)."""
    if source in (None, "-"):
        return []
    plain = re.sub(r"::?[A-Za-z_][\w.]*$", "", source)
    if plain == source or plain.endswith(".py") or not re.fullmatch(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*", plain):
        return [plain]
    return [plain, *_module_files(plain)]


def _module_files(module: str) -> list[str]:
    """``MODULE``'s file found from the current folder (``pkg.mod``: ``pkg/mod.py`` or
    ``pkg/mod/__init__.py``), if any."""
    base = os.path.join(*module.split("."))
    return [path for path in (base + ".py", os.path.join(base, "__init__.py")) if os.path.isfile(path)]


def pass_sources(spec: str | None) -> tuple[str, ...]:
    """The files a ``--passes`` spec string reads: each ``FILE.py:NAME``'s file, and each
    ``MODULE:NAME``'s module found from the current folder (``pkg.mod``: ``pkg/mod.py`` or
    ``pkg/mod/__init__.py``), for :func:`check_output` (an output over one destroyed the pass;
    a probe's ``compile -o up.py --passes alloc,up.py:lam``).

    >>> pass_sources("alloc,my_passes.py:Fold{k=2},schedule")
    ('my_passes.py',)
    """
    from neuronsim.passes.spec import pass_addresses

    found = []
    for module in (address.rpartition(":")[0] for address in pass_addresses(spec)):
        if module.endswith(".py"):
            found.append(module)
            continue
        found += _module_files(module)
    return tuple(found)


def stdout_for_json(as_json: bool, outputs: Mapping[str, str | None]) -> None:
    """Under ``--json`` standard output is the command's one document: an output sent there
    too (``-o -``, ``--html -``) would make two, and the JSON would not parse."""
    for option, path in outputs.items():
        if as_json and path is not None and (path == "-" or _is_stdout(path)):
            raise UsageFailure(f"--json writes its report to standard output; give {option} a file", option)


def _is_stdout(path: str) -> bool:
    """Whether ``path`` is the file standard output writes to (``/dev/stdout``, ``/dev/fd/1``,
    or the very file stdout was redirected to): a second document there breaks the JSON."""
    if os.path.abspath(path) in ("/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"):  # (descriptor 1 is held apart)
        return True
    try:
        here, there, null = os.stat(path), os.fstat(document.descriptor()), os.stat(os.devnull)
    except (OSError, ValueError):
        return False
    same = (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)
    return same and (here.st_dev, here.st_ino) != (null.st_dev, null.st_ino)  # (both discarded: harmless)


def distinct_outputs(outputs: Mapping[str, str | None]) -> None:
    """Refuse two of a command's outputs (option -> path; an option with two, spelt again with
    a trailing space) that name one file: the second
    written would replace the first, exit 0 with one of them lost (``--trace t.json --outputs
    t.json``, a ``--report`` into the ``--out`` folder's trace); standard output (``-``) too,
    where the second would follow the first in one stream (a probe)."""
    dashes = [option.strip() for option, path in outputs.items() if path == "-"]
    if len(dashes) > 1:
        raise UsageFailure(f"the {dashes[1]} file is also the {dashes[0]} file (standard output, -): the two would "
                           "run together in one stream", dashes[1])
    given = [(option, path) for option, path in outputs.items() if path not in (None, "-")]
    for k, (option, path) in enumerate(given):
        for other, earlier in given[:k]:
            if _same_file(path, earlier):
                raise UsageFailure(f"the {option.strip()} file is also the {other.strip()} file ({earlier}): one "
                                   "would overwrite the other", path)


def text_aside(*paths: str | None) -> contextlib.AbstractContextManager:
    """Where a command's text for people goes while it prints it: standard error when one of its
    file outputs ``paths`` is standard output (``-``), as ``compile -o -`` does, else standard
    output.  The text after the file made it unreadable (``simulate --trace -`` was no JSON, an
    HTML page ended in the engine table: a probe)."""
    return contextlib.redirect_stdout(sys.stderr) if "-" in paths else contextlib.nullcontext()


def _same_file(a: str, b: str) -> bool:
    """Whether paths ``a`` and ``b`` name one file (links followed); a path that does not exist
    yet is one when it resolves to the same place (its folders' links followed: ``real/t`` and
    ``link/t`` with ``link`` -> ``real``)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_plot(path: str | None) -> None:
    """:func:`check_output` for a picture: also an extension matplotlib can write."""
    if path is None:
        return
    check_output(path, "--plot")
    plot_format_or_fail(path)


def plot_format_or_fail(path: str) -> str:
    """The image format of ``path`` (its extension), or exit 2 naming it."""
    from neuronsim.verify.app.drawings import plot_format

    try:
        return plot_format(path)
    except OutputError as err:
        raise UsageFailure(f"cannot write the --plot file: {err.reason}", path) from None
