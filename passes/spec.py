"""Pipeline spec strings: pass names in order, with options in braces.

::

    alloc,build-fdeps,remove-redundancies,anti-deps
    alloc{buffers=3},build-fdeps,anti-deps{memories=sbuf|psum,early_stop=pe-order}

Option values are converted by the field's annotation (its default's type when the annotation
does not resolve): ``true``/``false``, integers, finite floats, strings, ``none`` for a field
that may be None, and ``a|b|c`` for sets, lists and tuples (each item converted in turn); a value
that does not convert, an empty one (``memories=`` would turn the analysis off) and a field of
another type are located errors, as is a trailing comma.  Only ASCII whitespace separates.  The
pass class's ``__post_init__`` validates the values (its ValueError becomes a located
ProgramError).  ``MODULE:NAME`` or ``FILE.py:NAME`` names a pass by its address.

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
import math
import re
import types
import typing
from collections.abc import Mapping
from typing import Any

from neuronsim.machine.formats.inputs import special_file
from neuronsim.machine.formats.pyfile import exit_call, running_users_code, run_file, user_site
from neuronsim.machine.ir.errors import ProgramError, message_of
from neuronsim.machine.ir.source import shown_path

from neuronsim.passes.base import PASS_REGISTRY, Pass, as_pass, build_users_pass

__all__ = ["parse_pipeline", "import_pass", "pass_addresses"]

#: Whitespace in a spec: ASCII only (a no-break space pasted into ``memories=sbuf`` is no separator).
_SPACE = " \t\n\r\f\v"
_ITEM = re.compile(r"[ \t\n\r\f\v]*([a-z][a-z0-9-]*|(?:[\w./-]+\.py|[A-Za-z_][\w.]*):[A-Za-z_]\w*)[ \t\n\r\f\v]*"
                   r"(?:\{([^}]*)\})?[ \t\n\r\f\v]*(,|$)")
_INTEGER = re.compile(r"[+-]?[0-9](?:_?[0-9])*", re.ASCII)
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
_SEQUENCES = (frozenset, set, list, tuple)


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
    kind = special_file(module) if file else None
    if kind is not None:  # (a FIFO would have the import wait for a writer)
        raise ProgramError(option, f"cannot load the pass {address!r}: {module} is {kind}, not a Python file")
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
        site = user_site(err)  # (a module the pass imports is missing: the pass's line)
        raise ProgramError(option, f"cannot load the pass {address!r}: {site + ': ' if site else ''}{err}") from None
    except SyntaxError as err:  # the user's module: its file and line
        raise ProgramError(option, f"cannot load the pass {address!r}: {shown_path(err.filename or '')}:"
                                   f"{err.lineno}: SyntaxError: {err.msg}") from None
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM: the command's to report (a module's own, at its line)
        raise
    except BaseException as err:
        if not isinstance(err, Exception) and type(err).__module__.startswith("neuronsim."):
            raise  # neuronsim's own stop (the --max-idle watch's TraceStalled)
        # the user's module raised while it was imported: a BaseException of its own
        # too (class Stop(BaseException), GeneratorExit), as a kernel's module's; it was a traceback, exit 1
        site = user_site(err)
        raise ProgramError(option, f"cannot load the pass {address!r}: {site + ': ' if site else ''}"
                                   f"{type(err).__name__}: {message_of(err)}") from None
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


def _option_types(cls: type) -> dict[str, Any]:
    """The type each init field of the pass class ``cls`` is converted to: its annotation, or
    its default's type when the annotations do not resolve (a user's names its module lacks)."""
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - the user's annotations: each field falls back on its default
        hints = {}
    types_ = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        kind = hints.get(f.name, f.type if not isinstance(f.type, str) else None)
        if kind is None and f.default is not dataclasses.MISSING:
            kind = type(f.default)
        types_[f.name] = kind
    return types_


def _convert(raw: str, kind: Any, where: str) -> Any:
    """The option text ``raw`` as a value of the type ``kind`` (None: unknown, kept as text)."""
    raw = raw.strip(_SPACE)
    if not raw:
        raise ProgramError(where, "an empty value; give one, or leave the option out for its default")
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        if len(members) < len(args) and raw.lower() == "none":
            return None
        errors = []
        for member in members:
            try:
                return _convert(raw, member, where)
            except ProgramError as err:
                errors.append(err.message)
        raise ProgramError(where, "; or ".join(errors))
    if origin is typing.Literal:
        for choice in args:
            if str(choice).lower() == raw.lower() if isinstance(choice, bool) else str(choice) == raw:
                return choice
        raise ProgramError(where, f"expected one of {', '.join(str(c) for c in args)}, got {raw!r}")
    if kind in _SEQUENCES or origin in _SEQUENCES:
        return _sequence(raw, origin or kind, args, where)
    return _scalar(raw, kind, where)


def _sequence(raw: str, container: type, args: tuple, where: str) -> Any:
    """``a|b|c`` as a set, list or tuple of items converted by the element type."""
    items = [item.strip(_SPACE) for item in raw.split("|")]
    if not all(items):
        raise ProgramError(where, f"an empty item in {raw!r}; separate the items with one |")
    element = args[0] if args and args[0] is not Ellipsis else None
    values = [_convert(item, element, where) for item in items]
    return container(values)


def _scalar(raw: str, kind: Any, where: str) -> Any:
    if kind is bool:
        if raw.lower() not in ("true", "false"):
            raise ProgramError(where, f"expected true or false, got {raw!r}")
        return raw.lower() == "true"
    if kind is int:
        if not _INTEGER.fullmatch(raw):
            raise ProgramError(where, f"expected an integer, got {raw!r}")
        return int(raw)
    if kind is float:
        if not _FLOAT.fullmatch(raw) or not math.isfinite(float(raw)):
            raise ProgramError(where, f"expected a finite number, got {raw!r}")
        return float(raw)
    if kind in (None, str, Any):
        return raw
    name = getattr(kind, "__name__", None) or str(kind)
    raise ProgramError(where, f"the option is of type {name}, which a spec string cannot give (true/false, "
                              "integers, numbers, text, none and a|b sets are read)")


def _options(name: str, options: str | None, kinds: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments ``{key=value,...}`` give the pass ``name``, converted by ``kinds``."""
    kwargs: dict[str, Any] = {}
    if options is None or not options.strip(_SPACE):
        return kwargs
    for item in (o.strip(_SPACE) for o in options.split(",")):
        if not item:
            raise ProgramError(f"--passes.{name}", f"an empty option in {{{options}}} (a comma with nothing after it)")
        key, sep, value = item.partition("=")
        key = key.strip(_SPACE)
        if not sep and key in kinds:  # (said "unknown option 'buffers'" of a known one: a probe)
            raise ProgramError(f"--passes.{name}.{key}", f"no value: write {key}=VALUE")
        if not sep or key not in kinds:
            raise ProgramError(f"--passes.{name}",
                               f"unknown option {item!r}; expected key=value with key in {sorted(kinds)}")
        if key in kwargs:  # (it kept the last)
            raise ProgramError(f"--passes.{name}.{key}", "given twice")
        kwargs[key] = _convert(value, kinds[key], f"--passes.{name}.{key}")
    return kwargs


def pass_addresses(spec: str | None) -> list[str]:
    """The ``FILE.py:NAME`` / ``MODULE:NAME`` items of a spec string, as written, by the grammar
    :func:`parse_pipeline` reads (up to an item it cannot read: the parse says what is wrong).

    >>> pass_addresses("alloc,my_passes.py:Fold{k=2},pkg.mod:Keep")
    ['my_passes.py:Fold', 'pkg.mod:Keep']
    """
    found, pos, text = [], 0, (spec or "").strip(_SPACE)
    while pos < len(text):
        m = _ITEM.match(text, pos)
        if m is None or m.end() == pos:
            break
        if ":" in m.group(1):
            found.append(m.group(1))
        pos = m.end()
    return found


def parse_pipeline(spec: str, registry: Mapping[str, type] | None = None) -> list[Pass]:
    """Pass objects for a spec string; a bad name or option is a located ProgramError."""
    if registry is None:
        registry = PASS_REGISTRY
    passes: list[Pass] = []
    pos = 0
    text = spec.strip(_SPACE)
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
                if options and options.strip(_SPACE):
                    raise ProgramError(f"--passes.{name}", "options need a pass class (a dataclass)")
                passes.append(as_pass(cls, name, "--passes"))
                pos = m.end()
                continue
        if cls is None:
            raise ProgramError("--passes", f"unknown pass {name!r}; expected one of {sorted(registry)} "
                                           f"(or MODULE:NAME, a pass class imported by its address)")
        kwargs = _options(name, options, _option_types(cls))
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
        if m.group(3) == "," and pos == len(text):  # (``alloc,``: it ran the pipeline without the pass meant)
            raise ProgramError("--passes", f"a trailing comma in {text!r}: a pass name is missing after it")
    if not passes:
        raise ProgramError("--passes", "empty pipeline")
    return passes
