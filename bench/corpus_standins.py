"""Import stand-ins for the corpus run: packages the corpus's test files import that this
environment does not install, because they are heavy (torch, torch_xla) or ship only with the
Neuron SDK (neuron_dtypes).

nki-library's test harness imports them at the top of its helper modules (``mx_utils.py``,
``exceptions.py``, ``test_attention_tkg_utils.py``), and a few nki-samples
``contributed/`` files import torch only for their ``__main__`` check against PyTorch.  The
kernels themselves never touch them; without a stand-in their whole file fails to import and
every kernel in it is lost before tracing.

:func:`install` puts a stand-in into ``sys.modules`` only for a package that does not import
for real, in the worker process only (never in the corpus, never in neuronsim):

* ``neuron_dtypes``: the names the test files read (the MX dtypes, ``static_cast``,
  ``is_float_type``, ``finfo``, ``sizeinbytes``) mapped onto ``ml_dtypes`` and numpy.  A packed
  ``*_x4`` type stands for its element type: the files only build lookup tables with them at
  import time.
* ``torch``, ``torch_xla`` and nki-library's test infrastructure (``PLACEHOLDER_PACKAGES``):
  the package and any submodule import as placeholders whose every attribute is a placeholder
  class, so annotations (``x: torch.Tensor``), ``except ClientError`` clauses, module-level
  tables and subclasses (``class Ref(torch.nn.Module)``) import; calling or instantiating one
  raises :class:`StandinUsed`, naming it.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any

import ml_dtypes
import numpy as np

__all__ = ["StandinUsed", "install", "STANDIN_PACKAGES"]


class StandinUsed(RuntimeError):
    """A placeholder of a stand-in package was used beyond importing it."""


class _PlaceholderType(type):
    """The type of a placeholder class: an attribute of one is a placeholder too
    (``torch.nn.Module``, reached through the placeholder ``torch.nn``)."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = _placeholder(f"{cls.__qualname__}.{name}")
        setattr(cls, name, value)
        return value


def _placeholder(dotted: str) -> type:
    def refuse(*_: Any, **__: Any) -> Any:
        raise StandinUsed(f"{dotted} is an import stand-in in the corpus run (the package is not installed)")

    # a class, so it also serves as an annotation, an isinstance target or a base class (a torch
    # reference model `class Ref(torch.nn.Module)` defined at import); instantiating it raises
    placeholder = _PlaceholderType(dotted.rsplit(".", 1)[-1], (), {"__new__": refuse})
    placeholder.__qualname__ = dotted
    return placeholder


class _PlaceholderModule(types.ModuleType):
    """A module whose every missing attribute is a placeholder named after it."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        value = _placeholder(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class _PlaceholderFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``PACKAGE`` and every ``PACKAGE.sub.module`` of the packages it stands in for, as
    placeholder modules (last on ``sys.meta_path``: a package that is installed wins)."""

    def __init__(self, packages: frozenset[str]) -> None:
        self.packages = packages

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not any(fullname == p or fullname.startswith(p + ".") for p in self.packages):
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _PlaceholderModule(spec.name, "corpus-run import stand-in")
        module.__path__ = []  # a package, so its submodules are looked up (and found here)
        for name, value in MODULE_LEVEL_NAMES.get(spec.name, {}).items():
            setattr(module, name, value)
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def _neuron_dtypes() -> types.ModuleType:
    module = types.ModuleType("neuron_dtypes", "corpus-run import stand-in: ml_dtypes under neuron_dtypes names")
    names = {
        "bfloat16": ml_dtypes.bfloat16, "float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
        "float8_e4m3": ml_dtypes.float8_e4m3fn, "float4_e2m1fn": ml_dtypes.float4_e2m1fn,
        "float8_e4m3fn_x4": ml_dtypes.float8_e4m3fn, "float8_e5m2_x4": ml_dtypes.float8_e5m2,
        "float4_e2m1fn_x4": ml_dtypes.float4_e2m1fn,
        "float32": np.float32, "float16": np.float16, "int8": np.int8, "uint8": np.uint8, "int32": np.int32,
    }
    for name, dtype in names.items():
        setattr(module, name, dtype)
    module.static_cast = lambda array, dtype: np.asarray(array).astype(dtype)
    module.is_float_type = lambda dtype: np.issubdtype(np.dtype(dtype), np.floating) or np.dtype(dtype).kind == "V"
    module.finfo = ml_dtypes.finfo
    module.sizeinbytes = lambda dtype: np.dtype(dtype).itemsize
    return module


#: Packages stood in for by placeholders (:class:`_PlaceholderFinder`), when not installed:
#: torch for the samples' ``__main__`` checks and nki-library's reference helpers; the rest is
#: nki-library's test infrastructure (remote hosts, AWS uploads, plots, pairwise test
#: generation, the CPU simulator it can use instead of hardware), imported by its harness's
#: helper modules at the top and used only when a test runs on its machines.
PLACEHOLDER_PACKAGES = frozenset({
    "torch", "torch_xla", "fabric2", "paramiko", "boto3", "botocore", "filelock", "plotext",
    "allpairspy", "pytest_html", "debugpy", "nki_cpu_simulator",
    # modules nki-library's test utilities import that its public repository does not hold
    # (remote core-lock scripts; a private trace analysis ``test_orchestrator.py`` imports)
    "test.utils.scripts", "test.utils.perf_analysis_private"})
#: Names a placeholder package has for real, because a corpus module calls them at import time:
#: nki-library's ``mx_torch_common.py`` builds its FP4 lookup table with ``torch.tensor(...,
#: dtype=torch.float32)`` at module level (numpy arrays stand in for torch tensors there).
MODULE_LEVEL_NAMES: dict[str, dict[str, Any]] = {
    "torch": {
        "float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "int32": np.int32,
        "int64": np.int64, "int8": np.int8, "uint8": np.uint8, "bool": np.bool_,
        "tensor": lambda data, dtype=None, **_: np.asarray(data, dtype=dtype),
    },
}
def _importable(dotted: str) -> bool:
    try:
        return importlib.util.find_spec(dotted) is not None
    except ModuleNotFoundError:  # a parent package that is absent
        return False


#: Every package :func:`install` may stand in for.
STANDIN_PACKAGES = ("neuron_dtypes", *sorted(PLACEHOLDER_PACKAGES))


def install() -> list[str]:
    """Put the stand-ins into ``sys.modules`` for the packages that do not import for real;
    returns their names."""
    installed: list[str] = []
    if importlib.util.find_spec("neuron_dtypes") is None:
        sys.modules["neuron_dtypes"] = _neuron_dtypes()
        installed.append("neuron_dtypes")
    absent = frozenset(name for name in PLACEHOLDER_PACKAGES if not _importable(name))
    if absent:
        sys.meta_path.append(_PlaceholderFinder(absent))
        installed += sorted(absent)
    return installed


def main(argv: list[str]) -> int:
    """``python bench/corpus_standins.py FILE``: runs FILE as a script with the stand-ins
    installed, as the corpus run's worker imports a kernel file: to see what a corpus file (or a
    probe of the stand-ins) needs beyond them."""
    import runpy
    from pathlib import Path

    if len(argv) != 1 or not Path(argv[0]).is_file():
        print("usage: corpus_standins.py FILE (a Python file to run with the stand-ins installed)", file=sys.stderr)
        return 2
    install()
    sys.path.insert(0, str(Path(argv[0]).resolve().parent))  # the file's folder, as for any script
    runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
