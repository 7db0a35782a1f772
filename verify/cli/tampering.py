"""What the user's code replaced of the interpreter neuronsim shares with it.

A kernel, a ``--reference`` or a pass given by its address runs in neuronsim's own process: a
kernel that empties ``sys.path``, replaces ``numpy.asarray`` or rebinds a builtin breaks
neuronsim's next step, which then failed as if neuronsim had a bug ("internal error", exit 3).
Such a failure is the user's input.  :func:`remember` notes the objects before any user code
runs; when a command fails in a way no input explains, :func:`replaced` names what differs (a
name rebound or deleted, entries of ``sys.path`` removed: neuronsim adds folders there itself)
and :func:`restore` puts the objects back, so that the one error line can still be written.

>>> import builtins
>>> remember()
>>> saved, builtins.ascii = builtins.ascii, None
>>> replaced()
['builtins.ascii']
>>> restore(); replaced(), builtins.ascii is saved
([], True)
"""

from __future__ import annotations

import builtins
import sys
from typing import Any

__all__ = ["remember", "replaced", "restore"]

_SAVED: dict[str, tuple[Any, dict[str, Any]]] = {}  # module name -> (module, its namespace as it was)
_PATH: list[str] = []
_HOOKS: list[Any] = []  # sys.path_hooks as it was (a kernel's clear() failed every later import)
_MODULE_ENTRIES: dict[str, Any] = {}
#: The modules watched: those neuronsim's own last steps go through (the report's line is
#: ``click.echo``'d; a thread's failure is ``threading.excepthook``'s; numpy and the builtins).
_MODULES = ("builtins", "numpy", "click", "threading", "os", "time", "tempfile", "json", "shutil", "sys", "re",
            "functools", "itertools", "math", "numpy.random", "heapq", "bisect", "operator")
#: Of these, only the functions are watched: the standard library sets some of their other names
#: itself (``tempfile.tempdir`` when first asked), which is no one's tampering.  neuronsim writes
#: its files with ``tempfile`` and times with ``time.perf_counter`` (a kernel that replaced one
#: was an exit 3: probe_bad F4); ``os.replace`` and the descriptor calls it binds as it loads;
#: a thread starts only while ``sys.excepthook`` is a function (a kernel's None: probe_ad).
_FUNCTIONS_ONLY = tuple(name for name in _MODULES if name not in ("builtins", "numpy", "click", "threading"))
#: The entries of ``sys.modules`` watched besides neuronsim's own: a kernel's ``sys.modules["numpy"]
#: = None`` failed neuronsim's next import as its bug (exit 3: a probe).
_ENTRIES = (*(name for name in _MODULES if name != "builtins"), "rich", "simpy", "networkx")
#: The standard streams, which a user's code may close (the one line then had nowhere to go).
_STREAMS = ("stdout", "stderr")


def remember() -> None:
    """Note the watched modules (when loaded) and ``sys.path`` as they are now."""
    _SAVED.clear()
    for name in _MODULES:
        module = builtins if name == "builtins" else sys.modules.get(name)
        if module is not None:
            names = vars(module)
            _SAVED[name] = (module, {key: value for key, value in names.items()
                                     if name not in _FUNCTIONS_ONLY or callable(value)})
    _PATH[:] = sys.path
    _HOOKS[:] = sys.path_hooks
    _MODULE_ENTRIES.clear()
    _MODULE_ENTRIES.update({name: module for name, module in sys.modules.items()
                            if name in _ENTRIES or name.split(".")[0] == "neuronsim"})


def replaced() -> list[str]:
    """The names rebound or deleted since :func:`remember` (new names are not counted: a
    library loads its submodules lazily), then ``sys.path`` if entries left it."""
    out = []
    for name, (module, before) in _SAVED.items():
        now = vars(module)
        out += [f"{name}.{key}" for key, value in before.items() if key != "_" and now.get(key, _GONE) is not value]
    if any(entry not in sys.path for entry in _PATH):
        out.append("sys.path (entries removed)")
    if any(hook not in sys.path_hooks for hook in _HOOKS):
        out.append("sys.path_hooks (entries removed)")
    out += [f"sys.modules[{name!r}]" for name, module in _MODULE_ENTRIES.items() if sys.modules.get(name) is not module]
    out += [f"sys.{name} (closed)" for name in _STREAMS if getattr(getattr(sys, name), "closed", True)]
    return out


def restore() -> None:
    """Put back what :func:`replaced` names."""
    for module, before in _SAVED.values():
        now = vars(module)
        for key, value in before.items():
            if now.get(key, _GONE) is not value:
                setattr(module, key, value)
    sys.path[:] = [*_PATH, *(entry for entry in sys.path if entry not in _PATH)]
    sys.path_hooks[:] = [*_HOOKS, *(hook for hook in sys.path_hooks if hook not in _HOOKS)]
    sys.modules.update(_MODULE_ENTRIES)
    for fd, name in enumerate(_STREAMS, start=1):  # closed (or None): a new one on the same descriptor
        if getattr(getattr(sys, name), "closed", True):
            setattr(sys, name, open(fd, "w", closefd=False, errors="backslashreplace"))


_GONE = object()
