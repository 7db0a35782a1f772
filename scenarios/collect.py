"""Find the scenarios in the package tree and (re)write their shipped files.

A *scenario* is any module of this package that defines ``build() -> Program``,
``inputs(seed) -> {name: array}`` (its input DRAM tensors) and ``reference(inputs) -> {name:
array}`` (numpy values of every output tensor), plus ``rtol`` / ``atol`` for the comparison
(exact when absent).  :func:`all_scenarios` imports every module of the package with
:mod:`pkgutil`, so a new scenario is found as soon as its file exists (never a hand-kept
list), and a module that fails to import fails the collection loudly.

Each scenario ships two files beside its module: ``NAME.json``, the program its ``build()``
returns (canonical text of :func:`machine.format.save_program`), and ``NAME.golden.json``,
its end-to-end summary (:meth:`scenarios.run.ScenarioRun.summary`).  ``python -m scenarios.collect``
rewrites both for every scenario; ``tests/test_scenarios.py`` checks they are current.

>>> "scenarios.softmax" in [module.__name__ for module in all_scenarios()]
True
>>> scenario_name(load_scenario("softmax"))
'softmax'
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import pkgutil
from pathlib import Path
from types import ModuleType

from machine.errors import ProgramError

__all__ = ["all_scenarios", "get_scenario", "load_scenario", "is_scenario", "scenario_name", "json_path",
           "golden_path", "golden_text", "write_all", "REQUIRED"]

#: What a module must define to be a scenario.
REQUIRED = ("build", "inputs", "reference")

_PACKAGE = "scenarios"


def is_scenario(module: ModuleType) -> bool:
    """True when ``module`` defines every callable of :data:`REQUIRED`."""
    return all(callable(getattr(module, attr, None)) for attr in REQUIRED)


def all_scenarios() -> list[ModuleType]:
    """Every scenario module of the package, sorted by name (import errors propagate)."""
    package = importlib.import_module(_PACKAGE)
    found = []
    for info in pkgutil.iter_modules(package.__path__):
        if info.ispkg or info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{_PACKAGE}.{info.name}")
        if is_scenario(module):
            found.append(module)
    return sorted(found, key=lambda m: m.__name__)


def scenario_name(module: ModuleType) -> str:
    """The short name, its file's stem: ``scenarios/softmax.py`` -> ``softmax``."""
    return Path(module.__file__).stem


def get_scenario(name: str) -> ModuleType:
    """The shipped scenario called ``name``; a located ProgramError lists the known ones."""
    scenarios = all_scenarios()
    for module in scenarios:
        if scenario_name(module) == name:
            return module
    known = ", ".join(scenario_name(m) for m in scenarios)
    raise ProgramError("SCENARIO", f"no scenario {name!r}; the scenarios are: {known}")


def load_scenario(spec: str) -> ModuleType:
    """A shipped scenario by name, or a user's scenario module by file path (``.py``).

    This is what ``neuronsim run SCENARIO`` resolves its argument with; every failure is a
    :class:`~machine.errors.ProgramError` (exit status 2), never a traceback.
    """
    if not spec.endswith(".py"):
        return get_scenario(spec)
    path = Path(spec)
    if not path.is_file():
        raise ProgramError("SCENARIO", f"cannot read {spec}: no such file")
    loader_spec = importlib.util.spec_from_file_location(f"_neuronsim_scenario_{path.stem}", path)
    module = importlib.util.module_from_spec(loader_spec)
    loader_spec.loader.exec_module(module)
    if not is_scenario(module):
        missing = [attr for attr in REQUIRED if not callable(getattr(module, attr, None))]
        raise ProgramError("SCENARIO", f"{spec} is not a scenario: it defines no {', '.join(missing)}")
    return module


def json_path(module: ModuleType) -> Path:
    """``scenarios/NAME.json``: the shipped program."""
    return Path(module.__file__).with_suffix(".json")


def golden_path(module: ModuleType) -> Path:
    """``scenarios/NAME.golden.json``: the shipped end-to-end summary."""
    return Path(module.__file__).with_suffix(".golden.json")


def golden_text(summary: dict) -> str:
    """Canonical text of a golden summary."""
    return json.dumps(summary, indent=1, sort_keys=True) + "\n"


def write_all(*, golden: bool = True) -> list[Path]:
    """Rewrite ``NAME.json`` (and ``NAME.golden.json``) of every scenario; the paths written."""
    from machine.format import save_program

    from .run import run_scenario

    written = []
    for module in all_scenarios():
        path = json_path(module)
        save_program(module.build(), str(path))
        written.append(path)
        if golden:
            path = golden_path(module)
            path.write_text(golden_text(run_scenario(module).summary()))
            written.append(path)
    return written


if __name__ == "__main__":  # pragma: no cover - the regeneration script
    for written_path in write_all():
        print(written_path)
