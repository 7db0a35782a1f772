"""Pipeline spec strings: pass names in order, with options in braces.

::

    alloc,build-fdeps,remove-redundancies,anti-deps
    alloc{buffers=3},build-fdeps,anti-deps{memories=sbuf|psum,early_stop=pe-order}

Option values are parsed after the type of the field's default: ``true``/``false``, integers,
strings, and ``a|b|c`` for sets; the pass class's ``__post_init__`` validates them (its
ValueError becomes a located ProgramError).  ``MODULE:NAME`` or ``FILE.py:NAME`` names a pass by
its address.

Examples
--------
>>> from neuronsim.passes import parse_pipeline
>>> [type(p).name for p in parse_pipeline("alloc,build-fdeps")]
['alloc', 'build-fdeps']
>>> parse_pipeline("anti-deps{memories=sbuf|psum, skip_ordered=false}")[0].memories == {"sbuf", "psum"}
True
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from neuronsim.machine.formats.pyfile import exit_call, running_users_code, run_file
from neuronsim.machine.ir.errors import ProgramError, message_of

from neuronsim.passes.base import PASS_REGISTRY, Pass, as_pass, build_users_pass

__all__ = ["parse_pipeline", "import_pass"]

_ITEM = re.compile(r"\s*([a-z][a-z0-9-]*|(?:[\w./-]+\.py|[A-Za-z_][\w.]*):[A-Za-z_]\w*)\s*(?:\{([^}]*)\})?\s*(?:,|$)")


def import_pass(address: str, option: str = "--passes") -> Any:
    """``MODULE:NAME`` of a spec string (or of ``fuzz --pass``: ``option`` names where it was
    given): a pass class (or object, or function) imported from the current folder or the
    installed packages, so an unregistered pass runs by its address; ``FILE.py:NAME`` (a path
    from the current folder) runs that file, as ``--reference FILE.py:FN`` does."""
    import importlib
    import os
    import sys

    module, _, attr = address.partition(":")
    file = module.endswith(".py")
    if file and not os.path.isfile(module):
        raise ProgramError(option, f"cannot load the pass {address!r}: no such file {module}")
    folder = os.path.dirname(os.path.abspath(module)) if file else os.getcwd()
    added = folder not in sys.path  # for this import only: the caller's sys.path stays theirs
    if added:
        sys.path.insert(0, folder)
    try:
        with running_users_code():
            loaded = _pass_file(module) if file else importlib.import_module(module)
        if file and not hasattr(loaded, attr):
            raise ProgramError(option, f"cannot load the pass {address!r}: {module} defines no {attr!r}")
        return getattr(loaded, attr)
    except ProgramError:
        raise
    except SystemExit as err:  # the user's module ends the process as it loads
        raise ProgramError(option, f"cannot load the pass {address!r}: it ends the process "
                                   f"({exit_call(err)})") from None
    except (ImportError, AttributeError) as err:
        raise ProgramError(option, f"cannot load the pass {address!r}: {err}") from None
    except SyntaxError as err:  # the user's module: its file and line
        raise ProgramError(option, f"cannot load the pass {address!r}: {os.path.basename(err.filename or '')}:"
                                   f"{err.lineno}: SyntaxError: {err.msg}") from None
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM: the command's to report (a module's own, at its line)
        raise
    except BaseException as err:
        if not isinstance(err, Exception) and type(err).__module__.startswith("neuronsim."):
            raise  # neuronsim's own stop (the --max-idle watch's TraceStalled)
        # the user's module raised while it was imported: a BaseException of its own
        # too (class Stop(BaseException), GeneratorExit), as a kernel's module's; it was a traceback, exit 1
        raise ProgramError(option, f"cannot load the pass {address!r}: {type(err).__name__}: "
                                   f"{message_of(err)}") from None
    finally:
        if added and folder in sys.path:
            sys.path.remove(folder)


def _pass_file(path: str) -> Any:
    """The module of a pass's file, run once per file (a spec is parsed more than once)."""
    import os
    import sys

    name = "neuronsim_pass_" + re.sub(r"\W", "_", os.path.abspath(path))
    module = sys.modules.get(name)
    return module if module is not None else run_file(path, name)


def _convert(raw: str, default: Any, where: str) -> Any:
    raw = raw.strip()
    if isinstance(default, bool):
        if raw.lower() not in ("true", "false"):
            raise ProgramError(where, f"expected true or false, got {raw!r}")
        return raw.lower() == "true"
    if isinstance(default, int):
        try:
            return int(raw)
        except ValueError:
            raise ProgramError(where, f"expected an integer, got {raw!r}") from None
    if isinstance(default, frozenset):
        return frozenset(v.strip() for v in raw.split("|") if v.strip())
    return raw


def parse_pipeline(spec: str, registry: Mapping[str, type] | None = None) -> list[Pass]:
    """Pass objects for a spec string; a bad name or option is a located ProgramError."""
    if registry is None:
        registry = PASS_REGISTRY
    passes: list[Pass] = []
    pos = 0
    text = spec.strip()
    while pos < len(text):
        m = _ITEM.match(text, pos)
        if m is None or m.end() == pos:
            raise ProgramError("--passes", f"cannot parse {text[pos:]!r}; expected NAME, MODULE:NAME or "
                                           f"NAME{{key=value,...}}")
        name, options = m.group(1), m.group(2)
        cls = registry.get(name)
        if cls is None and ":" in name:
            cls = import_pass(name)
            if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):  # an object or a function: no options
                if options and options.strip():
                    raise ProgramError(f"--passes.{name}", "options need a pass class (a dataclass)")
                passes.append(as_pass(cls, name, "--passes"))
                pos = m.end()
                continue
        if cls is None:
            raise ProgramError("--passes", f"unknown pass {name!r}; expected one of {sorted(registry)} "
                                           f"(or MODULE:NAME, a pass class imported by its address)")
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
        kwargs: dict[str, Any] = {}
        for item in filter(None, (o.strip() for o in (options or "").split(","))):
            key, sep, value = item.partition("=")
            key = key.strip()
            if not sep or key not in defaults:
                raise ProgramError(f"--passes.{name}",
                                   f"unknown option {item!r}; expected key=value with key in {sorted(defaults)}")
            if key in kwargs:  # (it kept the last)
                raise ProgramError(f"--passes.{name}.{key}", "given twice")
            kwargs[key] = _convert(value, defaults[key], f"--passes.{name}.{key}")
        if ":" in name:  # the user's class: anything its building raises is the error of --passes
            made = build_users_pass(cls, kwargs, name, "--passes")
        else:
            try:
                made = cls(**kwargs)
            except ValueError as err:
                raise ProgramError(f"--passes.{name}", str(err)) from None
        # a pass class given by its address need not derive from Pass (as for fuzz --pass): a
        # dataclass with apply is wrapped as one; it was an internal error, no attribute 'spec_string'
        passes.append(made if isinstance(made, Pass) else as_pass(made, name, "--passes"))
        pos = m.end()
    if not passes:
        raise ProgramError("--passes", "empty pipeline")
    return passes
