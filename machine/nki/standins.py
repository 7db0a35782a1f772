"""Stand-in ``nki`` / ``neuronxcc`` modules, installed only while a kernel is imported or traced.

:func:`standins` swaps the stand-ins into ``sys.modules`` and restores whatever was there
afterwards (nothing, or a real NKI install, which is never touched otherwise), the way
nki-library's own tests swap in a CPU simulator.  Current API: ``nki``, ``nki.language``,
``nki.isa``, ``nki.compiler``; legacy: ``neuronxcc``, ``neuronxcc.nki`` and its
``language``, ``isa``, ``compiler``, ``typing``.  A name neither models raises an
:class:`~neuronsim.machine.nki.errors.NkiError` naming it at the kernel line that used it.
"""

from __future__ import annotations

import builtins
import difflib
import importlib.abc
import importlib.machinery
import inspect
import logging
import os
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from neuronsim.machine.nki import isa, kernel, legacy, ranks, tracer
from neuronsim.machine.formats import pyfile
from neuronsim.machine.formats.pyfile import running_users_code
from neuronsim.machine.nki.compile_config import compiler_config_names
from neuronsim.machine.nki.dtypes import sizeinbytes
from neuronsim.machine.nki.kernel import run_eagerly
from neuronsim.machine.nki.errors import NkiError, Refused, RefusedClass, no_such_name, user_line
from neuronsim.machine.nki.kernel_frames import library_folders, the_kernels
from neuronsim.machine.nki.lang_names import LANGUAGE_REFUSED, current_language, legacy_language
from neuronsim.machine.nki.language import KERNEL_KEYWORDS
from neuronsim.machine.nki.optional_imports import expected_to_fail

__all__ = ["standins", "generation_of", "stand_in_modules", "user_file"]

_MODULES: dict[str, types.ModuleType] = {}
#: Kernel files being imported (:func:`importing`): what the file runs meanwhile is import.
_IMPORTING: list[str] = []
_ROOTS = ("nki", "neuronxcc")


class StandIn(types.ModuleType):
    """A stand-in module.  An attribute it does not hold is, in a module whose real names
    neuronsim lists (``_refusals``: ``nki.language``, ``nki.isa``, ``nki.collectives``, both
    generations), either a real name not modelled, which imports and is refused when used
    (:class:`~neuronsim.machine.nki.errors.Refused`), or no name at all (a typo), refused at
    once with the closest real name; in any other module (``neuronxcc.starfish...``) every
    name is taken as real."""

    def __getattr__(self, attr: str) -> Any:
        refusals = self.__dict__.get("_refusals")
        if attr.startswith("_") and (refusals is None or attr.startswith("__")):  # dunders, the module's settings
            raise AttributeError(attr)
        if attr.startswith("_"):  # nisa._tiled_offloaded_memcpy: the compiler's private calls (ring attention)
            return Refused(f"{self._alias}.{attr}", "a private name of the module, the compiler's own")
        if refusals is not None and attr not in refusals:
            known = set(self.__dict__) | set(refusals)
            raise no_such_name(f"{self._alias}.{attr}", self.__name__, sorted(known))
        if refusals is None and _misspelt_submodule(self, attr):  # nki.langauge: a typo, not a real name
            raise no_such_name(f"{self._alias}.{attr}", self.__name__,
                               sorted(k for k, v in self.__dict__.items() if isinstance(v, types.ModuleType)))
        why = refusals[attr] if refusals is not None else "not modelled by neuronsim"
        # in a module neuronsim knows nothing of, a CapWords name is taken for a class: building
        # one (a harness's default argument) is allowed, using the instance refused
        kind = RefusedClass if refusals is None and attr[:1].isupper() else Refused
        refused = kind(f"{self._alias}.{attr}", why)
        setattr(self, attr, refused)  # one object per name: `x is nl.name` holds
        return refused


def _misspelt_submodule(module: StandIn, attr: str) -> bool:
    """``attr`` is one or two letters off a submodule the stand-in holds (``nki.langauge``, the
    NKI language guide's own typo): a name the real package does not have either."""
    subs = [k for k, v in module.__dict__.items() if isinstance(v, types.ModuleType) and not k.startswith("_")]
    return bool(difflib.get_close_matches(attr, subs, n=1, cutoff=0.8))


def _module(name: str, alias: str, names: dict[str, Any], generation: str) -> StandIn:
    module = StandIn(name, f"neuronsim stand-in for {name}")
    module.__dict__.update(names)
    module._alias = alias
    module._generation = generation
    module.__path__ = []  # a package: submodules import
    return module


def _build() -> dict[str, types.ModuleType]:
    current_nl = _module("nki.language", "nl", current_language(), "current")
    current_nl._refusals = LANGUAGE_REFUSED
    current_isa = _module("nki.isa", "nisa", isa.current_names(), "current")
    current_isa._refusals = isa.REFUSED
    current_cc = _module("nki.compiler", "ncc", dict(legacy.compiler_names(), **compiler_config_names()), "current")
    collectives = _module("nki.collectives", "nki.collectives", ranks.collective_names(), "current")
    collectives._refusals = COLLECTIVES_REFUSED
    top = {"jit": kernel.jit, "baremetal": kernel.jit, "benchmark": kernel.jit, "profile": kernel.jit,
           "trace": kernel.jit, "language": current_nl, "isa": current_isa, "compiler": current_cc, "dtype": str,
           "simulate_kernel": kernel.run_eagerly, "simulate": _simulate, "collectives": collectives}
    current_typing = _module("nki.typing", "nt", legacy.typing_names(), "current")
    top["typing"] = current_typing
    nki = _module("nki", "nki", top, "current")
    legacy_nl = _module("neuronxcc.nki.language", "nl", legacy_language(), "legacy")
    legacy_nl._refusals = LANGUAGE_REFUSED
    legacy_isa = _module("neuronxcc.nki.isa", "nisa", legacy.isa_names(), "legacy")
    legacy_isa._refusals = isa.LEGACY_REFUSED
    legacy_cc = _module("neuronxcc.nki.compiler", "ncc", legacy.compiler_names(), "legacy")
    legacy_typing = _module("neuronxcc.nki.typing", "nt", legacy.typing_names(), "legacy")
    legacy_top = dict(top, language=legacy_nl, isa=legacy_isa, compiler=legacy_cc, typing=legacy_typing)
    neuronxcc_nki = _module("neuronxcc.nki", "nki", legacy_top, "legacy")
    neuronxcc = _module("neuronxcc", "neuronxcc", {"nki": neuronxcc_nki}, "legacy")
    legacy_collectives = _module("neuronxcc.nki.collectives", "nki.collectives", ranks.collective_names(), "legacy")
    legacy_collectives._refusals = collectives._refusals
    neuronxcc_nki.collectives = legacy_collectives
    # `from nki.isa.constants import dge_mode` (nki-library, the SDK's dma_transpose tests)
    constants = {name: value for name, value in isa.enum_names().items() if name in ("dge_mode", "oob_mode", "engine")}
    current_constants = _module("nki.isa.constants", "nisa.constants", constants, "current")
    legacy_constants = _module("neuronxcc.nki.isa.constants", "nisa.constants", constants, "legacy")
    lnc = _module("nki.lnc", "nki.lnc", isa.lnc_names(), "current")
    lnc._refusals = {"sendrecv_compute": "a sendrecv reducing what it receives"}
    nki.lnc = lnc
    # the pre-release sendrecv NxD's released two-core kernels import (indexed_flatten, the MX expert MLPs)
    private_api = _module("neuronxcc.nki._private.private_api", "private_api", {"sendrecv": isa.sendrecv}, "legacy")
    current_isa.constants, legacy_isa.constants = current_constants, legacy_constants
    # `from nki.language.constants import sizeinbytes` (nki-samples' neuron-team convolutions)
    sizes = {"sizeinbytes": sizeinbytes}
    current_nl.constants = _module("nki.language.constants", "nl.constants", sizes, "current")
    legacy_nl.constants = _module("neuronxcc.nki.language.constants", "nl.constants", sizes, "legacy")
    return {"nki.isa.constants": current_constants, "neuronxcc.nki.isa.constants": legacy_constants,
            "nki.language.constants": current_nl.constants, "neuronxcc.nki.language.constants": legacy_nl.constants,
            "nki.typing": current_typing, "nki.collectives": collectives,
            "neuronxcc.nki.collectives": legacy_collectives,
            "nki": nki, "nki.language": current_nl, "nki.isa": current_isa, "nki.compiler": current_cc,
            "neuronxcc": neuronxcc, "neuronxcc.nki": neuronxcc_nki, "neuronxcc.nki.language": legacy_nl,
            "neuronxcc.nki.isa": legacy_isa, "neuronxcc.nki.compiler": legacy_cc,
            "neuronxcc.nki.typing": legacy_typing, "neuronxcc.nki._private.private_api": private_api, "nki.lnc": lnc}


_TWO_CORES = "collectives: neuronsim models one NeuronCore"
#: ``nki.collectives`` (the API reference module, NKI 0.7's prepare / trigger splits too): every
#: name is real; those :mod:`~neuronsim.machine.nki.ranks` does not model are refused when used.
COLLECTIVES_REFUSED = dict.fromkeys(
    ("all_gather_v", "all_to_all_v", "collective_permute", "all_gather_v_prepare", "all_gather_v_trigger",
     "all_to_all_v_prepare", "all_to_all_v_trigger"), _TWO_CORES)


def _simulate(kernel: Any) -> Any:
    """``nki.simulate(kernel)``: the kernel as a function run on numpy arrays."""
    return lambda *args, **kwargs: run_eagerly(kernel, *args, **kwargs)


def stand_in_modules() -> dict[str, types.ModuleType]:
    """The stand-in modules by name (built once)."""
    if not _MODULES:
        _MODULES.update(_build())
    return _MODULES


@contextmanager
def importing(path: str) -> Iterator[None]:
    """The kernel file ``path`` being imported: a missing package's names are inert in every
    frame it runs meanwhile (:class:`Absent`), not only its module and class bodies."""
    _IMPORTING.append(path)
    try:
        yield
    finally:
        _IMPORTING.pop()


@contextmanager
def standins() -> Iterator[dict[str, types.ModuleType]]:
    """Install the stand-ins in ``sys.modules`` for the duration of the block; afterwards
    every ``nki*`` / ``neuronxcc*`` entry is exactly what it was before (re-entrant)."""
    modules = stand_in_modules()
    saved = {name: mod for name, mod in sys.modules.items() if name.split(".")[0] in _ROOTS}
    for name in saved:
        del sys.modules[name]
    sys.modules.update(modules)
    finders = list(sys.meta_path)
    sys.meta_path.insert(0, _FINDER)
    sys.meta_path.append(_MISSING)
    missing_before = {n for n, module in sys.modules.items() if isinstance(module, _Missing)}
    # CS149's NKI assignment (run on Trainium by its students) calls logging.disable(logging.OFF)
    # after importing neuronxcc, a level the standard library does not have: the Neuron
    # packages add it, so the stand-ins do, and the logging state is as it was afterwards
    added_off, disabled = not hasattr(logging, "OFF"), logging.root.manager.disable
    if added_off:
        logging.OFF = logging.CRITICAL + 10  # type: ignore[attr-defined]
    # NKI's bare `sbuf` / `hbm` keywords (language.KERNEL_KEYWORDS), where a kernel's module
    # looks a name up last; a module's own `sbuf` still comes first
    keywords = {name: value for name, value in KERNEL_KEYWORDS.items() if not hasattr(builtins, name)}
    vars(builtins).update(keywords)
    # a kernel's os._exit (or exec, abort, a signal to itself) would end this command with nothing said:
    # it is the kernel's error at its line, as its sys.exit is (frontend.trace)
    # likewise a fork: its child would go on with the command, a second run writing a second result
    process_fork, os.fork = os.fork, _kernel_forks
    try:
        with running_users_code(_kernel_exits):
            yield modules
    finally:
        os.fork = process_fork
        for name in keywords:
            vars(builtins).pop(name, None)
        if added_off:
            del logging.OFF  # type: ignore[attr-defined]
        logging.disable(disabled)
        # the finders as they were, and any the kernel added (its sys.meta_path.clear() failed the
        # removal of ours, and every later import: exit 3, a probe)
        sys.meta_path[:] = [*finders, *(f for f in sys.meta_path if f not in finders and f not in (_FINDER, _MISSING))]
        for name in [n for n, mod in sys.modules.items() if isinstance(mod, _Missing) and n not in missing_before]:
            del sys.modules[name]
        for name in [n for n in sys.modules if n.split(".")[0] in _ROOTS]:
            del sys.modules[name]
        sys.modules.update(saved)


def _kernel_forks() -> int:
    # (a --reference runs with the stand-ins too, after the trace: it was called "the kernel", probe_av)
    who = "the kernel" if tracer.tracing() else "the code at this line"
    raise NkiError(user_line(), f"{who} forks the process (os.fork()): its child would run the command a "
                                "second time; a kernel and its reference run in one process")


def _kernel_exits(call: str, status: Any = 2) -> None:
    depth = 1  # the kernel's line: past the guard's stand-in that called this (machine/formats/pyfile.py)
    while sys._getframe(depth).f_code.co_filename == pyfile.__file__:
        depth += 1
    if tracer.tracing():
        raise NkiError(user_line(depth + 1), f"the kernel ends the process ({call}): a kernel returns its outputs")
    # a file being imported (a kernel's module, or a --reference beside it): not "the kernel"
    raise NkiError(user_line(depth + 1), f"the code at this line ends the process ({call}) as its file is "
                                         "imported: a kernel returns its outputs, a reference its arrays")


class _OtherSubmodules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Any other ``nki.*`` / ``neuronxcc.*`` module imports as a stand-in whose every name is
    refused when used (``import nki.tensor`` works; ``nki.tensor.identity`` names itself)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname.split(".")[0] in _ROOTS and fullname not in sys.modules:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        generation = "legacy" if spec.name.startswith("neuronxcc") else "current"
        return _module(spec.name, spec.name, {}, generation)

    def exec_module(self, module: types.ModuleType) -> None:
        pass


_FINDER = _OtherSubmodules()

#: Neuron packages kernel files import for their test harness (``if __name__ == "__main__"``),
#: not for the kernel: when they are not installed, they import as stand-ins whoever imports
#: them (:class:`_MissingImport`); ``neuronxcc`` is one of the stand-ins themselves.
_HARNESS_ROOTS = ("torch_xla", "torch_neuronx", "libneuronxla")


#: Harness names that are decorator forms of ``nki.jit`` (the SDK's older examples decorate
#: kernels with ``torch_neuronx.nki_jit``): they trace the kernel as ``nki.jit`` does.
_HARNESS_NAMES = {"torch_neuronx": {"nki_jit": kernel.jit}}


class Absent(Refused):
    """A name of a package a kernel's file imports that is not installed here (``torch``, a
    framework's ``wrap_nki``): where the file is imported (its module and class bodies) it is
    inert, as a harness needs it to be: calling one returns another, except that a call with
    one function and nothing else returns the function (a decorator, or a wrapper such as
    ``wrap_nki(kernel)``); attributes and items are more of them, and its truth is False.  In
    a function that runs (the kernel, its helpers, a reference) it is refused at that line, as
    a name neuronsim does not model is."""

    __slots__ = ()

    def _inert(self) -> bool:
        # module and class bodies run unoptimised code (no CO_OPTIMIZED); functions do not, but
        # one the file calls while it is imported (a decorator factory's: nki-llama's model glue
        # annotates with nn.Module) is import too, unless it runs a kernel
        if _IMPORTING and not tracer.tracing():
            return True
        return not sys._getframe(2).f_code.co_flags & inspect.CO_OPTIMIZED

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self._inert():
            raise self.refusal()
        decorated = args[0] if len(args) == 1 and not kwargs else None
        if inspect.isfunction(decorated) or inspect.isclass(decorated) or hasattr(decorated, "__wrapped__"):
            return decorated
        return Absent(f"{self._name}(...)", self._why)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or not self._inert():
            return Refused.__getattr__(self, attr)
        return Absent(f"{self._name}.{attr}", self._why)

    def __getitem__(self, key: Any) -> Any:
        if not self._inert():
            raise self.refusal()
        return Absent(f"{self._name}[...]", self._why)

    def __iter__(self) -> Any:
        if not self._inert():
            raise self.refusal()
        return iter(())

    def __bool__(self) -> bool:
        if not self._inert():
            raise self.refusal()
        return False

    def __enter__(self) -> Any:
        if not self._inert():
            raise self.refusal()
        return self

    def __or__(self, other: Any) -> Any:  # ``Context | None`` in an annotation evaluated at def time
        if not self._inert():
            raise self.refusal()
        return Absent(f"{self._name} | ...", self._why)

    __ror__ = __or__

    def __mro_entries__(self, bases: tuple) -> tuple:  # ``class Model(torch.nn.Module)``: a plain class
        return (object,)

    def __instancecheck__(self, obj: Any) -> bool:
        # ``isinstance(a, torch.Tensor)`` (a kernel accepting either): nothing is an instance of
        # a package that is not installed, anywhere (it was Python's "isinstance() arg 2 must
        # be a type", which did not name torch: probe_bc)
        return False

    def __subclasscheck__(self, cls: Any) -> bool:
        return False


class _Missing(StandIn):
    """A package a kernel's file imports that is not installed: every name an :class:`Absent`."""

    def __getattr__(self, attr: str) -> Any:
        why = (f"{self.__name__.split('.')[0]} cannot be imported here: not installed, nor beside the kernel; "
               "a kernel runs on NKI calls and numpy")
        if attr.startswith("__"):  # (a private name is the package's: ``torch._dynamo``)
            # still an AttributeError (getattr(torch, "__version__", None) holds), saying why:
            # "AttributeError: __version__" read as if torch had none (probe_bc); the kernel's
            # error where its code reads it, not neuronsim's (exit 3: probe_bd)
            raise the_kernels(AttributeError(f"{self.__name__}.{attr}: {why}"))
        absent = Absent(f"{self.__name__}.{attr}", why)
        setattr(self, attr, absent)
        return absent


def user_file(path: str) -> bool:
    """Whether ``path`` is a user's file: not the standard library's, an installed package's
    or neuronsim's own."""
    path = os.path.abspath(path)
    return not path.startswith(_NOT_USERS) and not path.startswith("<")


#: The standard library, installed packages and neuronsim's rooms.
_NOT_USERS = library_folders("machine", "passes", "verify")


class _MissingImport(_OtherSubmodules):
    """Last on ``sys.meta_path``: a module nothing else can import is a :class:`_Missing`
    package when a user's file imports it (the kernel's, a module beside it), or when it is a
    Neuron harness package (:data:`_HARNESS_ROOTS`); a library's optional import still fails as
    it expects, and so does a user's file's (:mod:`~neuronsim.machine.nki.optional_imports`)."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        root = fullname.split(".")[0]
        if fullname in sys.modules or root in _ROOTS:
            return None
        importer = _importer()
        if root not in _HARNESS_ROOTS and not user_file(importer.f_code.co_filename):
            return None
        if root not in _HARNESS_ROOTS and expected_to_fail(importer):  # the user's own optional import
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> types.ModuleType:
        module = _Missing(spec.name, f"neuronsim stand-in for {spec.name} (not installed)")
        module.__dict__.update(_HARNESS_NAMES.get(spec.name, {}))
        module.__path__ = []  # a package: submodules import
        module._generation = "current"
        return module


def _importer() -> Any:
    """The frame whose import statement is being executed (the import system's own frames
    skipped)."""
    frame = sys._getframe(2)
    while frame.f_back is not None and (frame.f_code.co_filename.startswith("<frozen")
                                        or "importlib" in frame.f_code.co_filename):
        frame = frame.f_back
    return frame


_MISSING = _MissingImport()


def generation_of(func: Any) -> str:
    """``"legacy"`` when the kernel's module imported the ``neuronxcc`` stand-ins, else
    ``"current"``.  A host function that calls a kernel takes, from the call on, the generation
    of the kernel's module (``Kernel.__call__``; probe_ac N1, probe_ad)."""
    names = getattr(func, "__globals__", {})
    found = {value._generation for value in names.values() if isinstance(value, StandIn)}
    return "legacy" if "legacy" in found else "current"
