"""``load_kernel("path/to/mod.py::FUNC")``: import a kernel file with the stand-ins active.

A file inside a package (directories with ``__init__.py``) whose package root is on
``sys.path`` (``PYTHONPATH``) is imported under its dotted name, so its relative imports
resolve; any other file is imported on its own, its folder first on ``sys.path`` as
``python path/kernel.py`` puts it, so the modules beside it import (a kernel's helpers).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import sys
import sysconfig
from typing import Any

import numpy as np

from neuronsim.machine.formats.inputs import special_file
from neuronsim.machine.formats.pyfile import exit_call, run_file
from neuronsim.machine.ir.errors import message_of
from neuronsim.machine.ir.source import shown_path
from neuronsim.machine.nki.errors import NkiError, SourceLine
from neuronsim.machine.nki.kernel_frames import kernel_frame
from neuronsim.machine.nki.standins import importing, standins

__all__ = ["load_kernel", "split_spec", "beside_first"]


def split_spec(spec: str) -> tuple[str, str]:
    """``("path/mod.py", "FUNC")`` from ``"path/mod.py::FUNC"``."""
    path, sep, func = spec.rpartition("::")
    if not sep or not path or not func:
        raise NkiError(SourceLine(spec, 0), "name a kernel as PATH.py::FUNCTION")
    return path, func


def _package_root(path: str) -> tuple[str, str] | None:
    """``(root, module name)`` of ``path`` under the nearest ``sys.path`` entry (or the working
    folder) reached through packages only (a package tree may sit inside a larger one that is
    not importable); above a package, through folders without ``__init__.py`` too, as Python's
    namespace packages do (a repository's ``kernels/attention/rope.py`` whose ``kernels/`` has
    none, importing ``..utils``, run from the repository's root as ``python -m`` would)."""
    directory, module = os.path.split(os.path.abspath(path))
    parts = [os.path.splitext(module)[0]]
    roots = {os.path.abspath(p or os.curdir) for p in (*sys.path, os.curdir)}
    while os.path.exists(os.path.join(directory, "__init__.py")):
        directory, package = os.path.split(directory)
        parts.append(package)
        if directory in roots:
            return directory, ".".join(reversed(parts))
    if len(parts) == 1 and not _imports_relatively(path):  # a file of its own
        return None
    while directory != os.path.dirname(directory):
        directory, package = os.path.split(directory)
        parts.append(package)
        if not package.isidentifier():  # (a folder no import can name)
            return None
        if directory in roots:  # a top name already taken (``nki``, a package's) would import that instead
            return None if package in sys.modules or package in ("nki", "neuronxcc") else (
                directory, ".".join(reversed(parts)))
    return None


def _imports_relatively(path: str) -> bool:
    """Whether the file ``path`` has a relative import (``from .x import y``): it is a module of
    a package, a namespace one when its folder has no ``__init__.py``."""
    try:
        with open(path, "rb") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):  # (the import reports it)
        return False
    return any(isinstance(node, ast.ImportFrom) and node.level for node in ast.walk(tree))


def beside_first(path: str) -> None:
    """Put the folder of the file ``path`` first on ``sys.path`` (once), as Python does for a
    script it runs: a kernel or reference file imports the modules beside it.  Python takes the
    folder of the file a symbolic link leads to (a kernel reached through a link imported no
    helper beside its target: a probe); the link's own folder follows it."""
    for folder in dict.fromkeys((os.path.dirname(os.path.abspath(path)), os.path.dirname(os.path.realpath(path)))):
        if folder not in sys.path:
            sys.path.insert(0, folder)


def _import(path: str) -> Any:
    found = _package_root(path)
    if found is not None:
        root, dotted = found
        if root not in (os.path.abspath(p or os.curdir) for p in sys.path):  # the working folder
            sys.path.insert(0, root)
        return importlib.import_module(dotted)
    beside_first(path)
    return run_file(path, "nki_kernel_" + os.path.splitext(os.path.basename(path))[0])


def _nul_line(path: str) -> int:
    """The line of the first NUL byte of ``path`` (0 if none or unreadable)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError:
        return 0
    at = data.find(b"\0")
    return data.count(b"\n", 0, at) + 1 if at >= 0 else 0


def load_kernel(spec: str) -> Any:
    """The kernel object (``@nki.jit`` kernel or plain function) ``FUNC`` of ``PATH.py``."""
    if not isinstance(spec, str):  # (a Path or None failed inside neuronsim: probe_bf)
        raise TypeError(f"load_kernel takes 'PATH.py::FUNC' as a str, not {type(spec).__name__} {spec!r:.60}")
    path, func = split_spec(spec)
    # the file as the user named it: outside the working folder its name alone would point at
    # another file (``/elsewhere/cp.py`` missing, said as ``cp.py`` beside a ./cp.py that exists)
    where = SourceLine(path, 0, os.path.abspath(path))
    kind = special_file(path)
    if kind is not None:  # (a FIFO would have the import wait for a writer)
        raise NkiError(where, f"not a kernel file: it is {kind}")
    if not os.path.isfile(path):
        raise NkiError(where, "no such kernel file")
    if not path.endswith(".py"):
        raise NkiError(where, "not a Python file: name a kernel as PATH.py::FUNCTION")
    try:
        with standins(), importing(path):
            module = _import(path)
    except NkiError:
        raise
    except SyntaxError as err:  # the kernel's file, or a module it imports (named by the error)
        source = err.filename if err.filename and os.path.isfile(err.filename) else path
        line = err.lineno or _nul_line(source)  # Python names no line for a NUL byte
        shown = path if _same_file(source, path) else shown_path(source)
        raise NkiError(SourceLine(shown, line, os.path.abspath(source)), f"SyntaxError: {err.msg}") from None
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM: the command's to report
        raise
    except BaseException as err:  # an import the kernel needs and we do not have, or its own error
        said = message_of(err) or ("out of memory, or an expression nested too deeply for Python's parser"
                                   if isinstance(err, MemoryError) else "")
        what = exit_call(err) if isinstance(err, SystemExit) else f"{type(err).__name__}{': ' + said if said else ''}"
        raise NkiError(kernel_frame(err) or where, f"importing the kernel: {what}") from None
    kernel = module
    try:
        for part in func.split("."):  # CLASS.METHOD: a kernel kept as a class's static method
            kernel = getattr(kernel, part, None)
    except Exception as err:  # noqa: BLE001 - a module's or class's own __getattr__ raised: the file's doing
        raise NkiError(where, f"looking up {func!r} in the kernel file: {type(err).__name__}: "
                              f"{message_of(err)}") from None
    if kernel is None:
        raise NkiError(where, f"no function {func!r} in the kernel file")
    if not callable(kernel):  # (`add2 = 42` was "no function 'add2'", which the file has)
        raise NkiError(where, f"{func!r} in the kernel file is {_shown(kernel)}, not a kernel function")
    if not _traceable(kernel):  # `h = int`, `max`, a partial of a builtin: nothing a kernel's trace can run
        raise NkiError(where, f"{func!r} in the kernel file is {_shown(kernel)}, not a kernel function")
    return kernel


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


#: Folders no kernel comes from: the standard library's and numpy's functions, named as a kernel
#: (`k.py::np.linalg.norm`, `k.py::functools.wraps`), were traced and failed inside them (a probe).
_LIBRARIES = tuple(os.path.realpath(folder) + os.sep for folder in (sysconfig.get_path("stdlib"),
                                                                   os.path.dirname(np.__file__)))


def _traceable(kernel: Any) -> bool:
    """A function (or what ``@nki.jit`` made of one, or a class of the file's) whose parameters
    the trace can read: not a builtin, nor one of neuronsim's own classes (``f.__class__``) or
    functions (the NKI stand-ins)."""
    if inspect.isbuiltin(kernel) or (isinstance(kernel, type) and kernel.__module__.startswith("neuronsim.")):
        return False
    # an NKI call's stand-in (`k.py::nl.load`, `k.py::nki.jit`): traced, its error was placed in
    # neuronsim's own source (a probe)
    target = getattr(kernel, "func", kernel)
    source = os.path.realpath(getattr(getattr(target, "__code__", None), "co_filename", "") or "")
    module = str(getattr(target, "__module__", None) or "")
    if module.startswith(("neuronsim.", "numpy.")) or module == "numpy" or source.startswith(_LIBRARIES):
        return False
    try:
        inspect.signature(getattr(kernel, "func", kernel))
    except Exception:  # noqa: BLE001 - no signature (a builtin under a partial), or a broken __signature__
        return False
    return True


def _shown(value: Any) -> str:
    try:
        return repr(value)[:80]
    except Exception:  # noqa: BLE001 - its own __repr__ raised
        return f"a {type(value).__name__}"
