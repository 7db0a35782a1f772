"""``neuronsim examples [DIR]``: a copy of the shipped examples, for the commands that name them.

The README's and the docs' commands name files under ``examples/`` (``neuronsim check
examples/matmul_k_loop_racy.json``).  In the checkout they are there; an installed neuronsim
carries the same files as package data (``neuronsim.examples``), and this command writes them
into ``DIR`` (``./examples`` by default), so those commands work as written from any folder.

A file already in ``DIR`` with the same bytes is left as it is (running the command twice is
harmless); one with other bytes, a user's edit, is never replaced: the command refuses, names
it, and writes nothing.  The files are put in place as every output is (atomically, and taken
back together if the command fails part way).
"""

from __future__ import annotations

import os
import stat
from importlib.resources import files
from importlib.resources.abc import Traversable

import click

from neuronsim.machine.formats.files import make_folders, write_atomically
from neuronsim.machine.ir.source import shown_path

from neuronsim.verify.cli.common import UsageFailure, run_command

#: What a copy leaves out: the interpreter's caches beside the example pass and the package's marker.
_NOT_EXAMPLES = frozenset({"__pycache__", "__init__.py"})


def shipped_examples() -> dict[str, bytes]:
    """Each shipped example file's path under ``examples/`` (``/``-separated) -> its bytes.

    >>> shipped = shipped_examples()
    >>> "matmul_k_loop_racy.json" in shipped and "nki/row_sums.py" in shipped
    True
    """
    found: dict[str, bytes] = {}

    def walk(node: Traversable, prefix: str) -> None:
        for entry in sorted(node.iterdir(), key=lambda e: e.name):
            if entry.name in _NOT_EXAMPLES or entry.name.endswith(".pyc"):
                continue
            if entry.is_dir():
                walk(entry, f"{prefix}{entry.name}/")
            else:
                found[f"{prefix}{entry.name}"] = entry.read_bytes()

    walk(files("neuronsim.examples"), "")
    return found


def _held(path: str) -> bytes | None:
    """The bytes of the file at ``path``, or None where there is none.  Anything but a regular
    file there is refused unread: a FIFO would wait for a writer for ever."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(mode):
        raise UsageFailure("a folder stands where an example file goes; nothing written", shown_path(path))
    if not stat.S_ISREG(mode):
        raise UsageFailure("something other than a file stands where an example file goes; nothing written",
                           shown_path(path))
    with open(path, "rb") as handle:
        return handle.read()


@click.command()
@click.argument("folder", default="examples", metavar="[DIR]")
@run_command
def examples(folder: str) -> int:
    """Write the shipped examples into DIR (default: ./examples).

    The README's commands name them as examples/...; in the checkout they are there already.
    A file of DIR with the same bytes is left; one with other bytes is never replaced: the
    command then writes nothing and exits 2.
    """
    if not folder:  # (an unset shell variable: the files went into the working folder)
        raise UsageFailure("an empty folder name; give DIR, or leave it out for ./examples", "DIR")
    if os.path.lexists(folder) and not os.path.isdir(folder):
        raise UsageFailure("not a folder (a file, or a link to nothing); nothing written", shown_path(folder))
    shipped = shipped_examples()
    targets = {name: os.path.join(folder, *name.split("/")) for name in shipped}
    new = {}
    for name, path in targets.items():
        held = _held(path)
        if held is None:
            new[name] = path
        elif held != shipped[name]:
            raise UsageFailure("exists with other contents (yours?); nothing written: remove it, or give another DIR",
                               shown_path(path))
    for name, path in new.items():
        make_folders(os.path.dirname(path) or ".")
        data = shipped[name]
        write_atomically(path, lambda handle, data=data: handle.write(data))
    where = shown_path(folder)
    kept = len(shipped) - len(new)
    done = f"{len(new)} example files written" + (f", {kept} there already" if kept else "") if new else \
        f"the {kept} example files are there already"
    click.echo(f"{where}: {done}; try: neuronsim check {os.path.join(where, 'matmul_k_loop_racy.json')}")
    return 0
