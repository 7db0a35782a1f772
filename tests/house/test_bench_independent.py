"""bench/ and tests/ are independent.  bench/ stands on the installed package alone: no bench
script puts a folder of the checkout on ``sys.path`` (the root, ``tests/support``, ``bench/``
itself) or imports the tests' modules (``tests.*``, ``neuronsim_tests.*``).  A bench that reaches
into the checkout measures code no user has, and a change to a test helper would silently move a
published figure.  And no test imports a bench script (an import, a load by file path, or code
run with ``python -c`` from ``bench/``): a test runs the script as its user does and checks its
output (``neuronsim_tests.bench_runs``), and what it needs as a function lives in the installed
package, where a user gets it too.

A script may still put a folder it is *given* on ``sys.path`` (the corpus run imports the
corpus's own files from ``--corpus DIR``): only paths built from the script's own location
(``__file__``) or naming ``tests`` are refused.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from neuronsim_tests import ROOT

TEST_PACKAGES = ("tests", "neuronsim_tests")
_PATH_EDITS = ("insert", "append", "extend")


def _is_sys_path(node: ast.AST) -> bool:
    return (isinstance(node, ast.Attribute) and node.attr == "path"
            and isinstance(node.value, ast.Name) and node.value.id == "sys")


def _reaches_the_checkout(expr: ast.AST) -> bool:
    """True when a path expression is built from ``__file__`` or names the tests' folder."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Name) and node.id == "__file__":
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "tests" in node.value.split("/"):
            return True
    return False


def checkout_reaches(path: Path) -> list[str]:
    """``file:line: what`` for every import of the tests and every sys.path edit into the checkout."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if a.name.split(".")[0] in TEST_PACKAGES]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in TEST_PACKAGES:
                found.append((node.lineno, f"import {node.module}"))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in _PATH_EDITS and _is_sys_path(node.func.value)):
            if any(_reaches_the_checkout(arg) for arg in node.args):
                found.append((node.lineno, f"sys.path.{node.func.attr} into the checkout"))
        elif isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            hits_path = any(_is_sys_path(t) or (isinstance(t, ast.Subscript) and _is_sys_path(t.value))
                            for t in targets)
            if hits_path and _reaches_the_checkout(node.value):
                found.append((node.lineno, "sys.path assigned a folder of the checkout"))
    return [f"{path}:{line}: {what}" for line, what in sorted(found)]


#: Calls that load a module from a file path: a test naming a bench script in one imports it.
_LOADERS = ("spec_from_file_location", "run_path", "load_script", "SourceFileLoader", "import_module")


def bench_modules() -> frozenset[str]:
    """The names a bench script is imported by (its file's stem)."""
    return frozenset(path.stem for path in (ROOT / "bench").glob("*.py"))


def _names_bench(expr: ast.AST) -> bool:
    return any(isinstance(node, ast.Constant) and isinstance(node.value, str) and "bench" in node.value
               for node in ast.walk(expr))


def bench_imports(path: Path, modules: frozenset[str]) -> list[str]:
    """``file:line: what`` for every way a test file imports a bench script."""
    code = re.compile(rf"^\s*(?:import|from)\s+({'|'.join(sorted(modules))})\b", re.MULTILINE)
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if a.name.split(".")[0] in modules]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in modules:
                found.append((node.lineno, f"import {node.module}"))
        elif isinstance(node, ast.Call):
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if func in _LOADERS and any(_names_bench(arg) for arg in node.args):
                found.append((node.lineno, f"{func} of a bench script"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            hit = code.search(node.value)  # code a test runs with `python -c` from bench/
            if hit:
                found.append((node.lineno, f"code importing {hit.group(1)}"))
    return [f"{path}:{line}: {what}" for line, what in sorted(found)]


def test_no_test_imports_a_bench_script() -> None:
    modules = bench_modules()
    here = Path(__file__).resolve()  # its planted imports are text written to a temporary file
    found = [hit for path in sorted((ROOT / "tests").rglob("*.py")) if path.resolve() != here
             for hit in bench_imports(path, modules)]
    assert not found, ("tests run bench scripts as processes (neuronsim_tests.bench_runs) and never import "
                       "them:\n" + "\n".join(found))


def test_the_test_scan_sees_planted_imports(tmp_path: Path) -> None:
    planted = tmp_path / "test_planted.py"
    planted.write_text(
        "import importlib.util, runpy\n"
        "import bench_corpus\n"
        "from corpus_cases import CASES\n"
        "spec = importlib.util.spec_from_file_location('t', 'bench/bench_timing.py')\n"
        "runpy.run_path(str(ROOT / 'bench' / 'bench_guard.py'))\n"
        'CODE = """\nimport json\nfrom bench_corpus import totals\n"""\n'
        "from neuronsim.passes import compile_program\n"  # the product: allowed
        "TEXT = 'the bench_corpus run imports nothing here'\n")  # prose naming a bench: allowed
    found = [hit.split(": ", 1)[1] for hit in bench_imports(planted, bench_modules())]
    assert found == ["import bench_corpus", "import corpus_cases", "spec_from_file_location of a bench script",
                     "run_path of a bench script", "code importing bench_corpus"], found


def test_no_bench_script_reaches_into_the_checkout() -> None:
    found = [hit for path in sorted((ROOT / "bench").rglob("*.py")) for hit in checkout_reaches(path)]
    assert not found, "bench scripts must import the installed neuronsim.* only:\n" + "\n".join(found)


def test_the_scan_sees_planted_reaches(tmp_path: Path) -> None:
    planted = tmp_path / "bench_planted.py"
    planted.write_text(
        "import os, sys\n"
        "from pathlib import Path\n"
        "sys.path.insert(0, str(Path(__file__).resolve().parents[1]))\n"
        "sys.path.append(os.path.join('tests', 'support'))\n"
        "sys.path[:0] = [os.path.dirname(__file__)]\n"
        "import tests.support\n"
        "from neuronsim_tests.planted import X\n"
        "def given(corpus):\n"
        "    sys.path.insert(0, str(corpus))\n"  # a folder the user names: allowed
        "from neuronsim.verify.racecheck import check_program\n")
    found = [hit.split(": ", 1)[1] for hit in checkout_reaches(planted)]
    assert found == ["sys.path.insert into the checkout", "sys.path.append into the checkout",
                     "sys.path assigned a folder of the checkout", "import tests.support",
                     "import neuronsim_tests.planted"], found
