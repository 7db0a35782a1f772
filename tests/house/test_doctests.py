"""The packages' doctests, run on the installed ``neuronsim.*`` modules.

pytest's ``--doctest-modules`` would import ``machine/ir/program.py`` by its path, as a second
copy named ``neuronsim.machine.ir.program`` beside the ``neuronsim.machine.ir.program`` the code imports,
and a doctest mixing the two copies' classes fails for no fault of the code.  So the package
doctests are collected here, one test per module, and run with the standard runner.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

PACKAGES = ("neuronsim.machine", "neuronsim.passes", "neuronsim.verify", "neuronsim.scenarios", "neuronsim.nki")
#: A package's folder inside another's (pyproject's package-dir): its modules count once, by
#: the name it is installed under, never as a second copy under the outer package.
INNER = ("neuronsim.verify.author",)


def _modules() -> list[str]:
    names = []
    for package in PACKAGES:
        root = importlib.import_module(package)
        names.append(package)
        names.extend(info.name for info in pkgutil.walk_packages(root.__path__, package + ".")
                     if not any(info.name == inner or info.name.startswith(inner + ".") for inner in INNER))
    return sorted(names)


MODULES = _modules()


def test_every_package_has_modules_with_doctests() -> None:
    finder = doctest.DocTestFinder()
    with_tests = [m for m in MODULES if any(t.examples for t in finder.find(importlib.import_module(m)))]
    assert len(with_tests) >= 40, with_tests  # the collection found the doctests, not nothing


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    failures = []
    for test in doctest.DocTestFinder().find(module, name):
        out: list[str] = []
        result = runner.run(test, out=out.append)
        if result.failed:
            failures.append("".join(out))
    assert not failures, "\n".join(failures)
