"""Users have ``neuronsim.*`` and nothing else: no module of the product, the tests, the benches
or the examples may reach the checkout's top-level folders (``machine``, ``passes``,
``verify``, ``scenarios``, ``tests``) by name, neither in an import statement nor in a string
handed to a loader (``PackageLoader("verify", ...)`` broke ``report`` for every installed user
while a suite run from the checkout's root stayed green).

The scan reads source only; the suite itself must also run without the root on ``sys.path``,
which the last test checks from inside the running test process.
"""

from __future__ import annotations

import ast
import importlib.util
from importlib.machinery import PathFinder
import re
import tomllib
from pathlib import Path

from neuronsim_tests import ROOT, STARTUP_SYS_PATH

FOLDERS = ("machine", "passes", "verify", "scenarios", "tests")
SCANNED = ("machine", "passes", "verify", "scenarios", "tests", "bench", "examples", "docs")
#: a dotted name of one of our folders, optionally ``:attribute`` as in an entry point
_DOTTED = re.compile(rf"^({'|'.join(FOLDERS)})(\.[A-Za-z_]\w*)*(:[A-Za-z_]\w*)?$")
#: ``>>> import x`` / ``>>> from x import`` in a docstring
_DOCTEST_IMPORT = re.compile(rf"^\s*>>> (?:from|import) ((?:{'|'.join(FOLDERS)})\b[\w.]*)", re.M)
#: calls whose string argument is a module or package name
_LOADERS = re.compile(r"(Loader|import_module|find_spec|files|resource\w*|load_entry|__import__|get_data)$")


def _names_a_folder(text: str, root: Path) -> bool:
    """True when ``text`` is a module path into one of our folders as a top-level package."""
    match = _DOTTED.match(text)
    if not match:
        return False
    parts = text.split(":")[0].split(".")
    if len(parts) == 1:
        return False  # a bare word is judged only where a loader takes it (below)
    target = root.joinpath(*parts)
    return target.with_suffix(".py").exists() or (target / "__init__.py").exists()


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def top_level_references(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line: what`` for every import or loader string that names a top-level folder."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[tuple[int, str]] = []
    judged: set[int] = set()  # loader arguments, reported once as the call
    for node in sorted(ast.walk(tree), key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        for name in names:
            if name.split(".")[0] in FOLDERS:
                found.append((node.lineno, f"import {name}"))
        if isinstance(node, ast.Call) and _LOADERS.search(_call_name(node)):
            for arg in node.args[:1]:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    judged.add(id(arg))
                    if arg.value.split(".")[0].split(":")[0] in FOLDERS:
                        found.append((node.lineno, f"{_call_name(node)}({arg.value!r})"))
        elif isinstance(node, ast.Constant) and id(node) not in judged and isinstance(node.value, str):
            if _names_a_folder(node.value, root):
                found.append((node.lineno, f"string {node.value!r}"))
            for module in _DOCTEST_IMPORT.findall(node.value):  # doctests run as code too
                found.append((node.lineno, f"doctest import {module}"))
    return [f"{path}:{line}: {what}" for line, what in found]


def _sources(root: Path) -> list[Path]:
    return sorted(p for folder in SCANNED for p in (root / folder).rglob("*.py")
                  if "kernels" not in p.parts and ".venv" not in p.parts)


def test_no_module_names_a_top_level_folder() -> None:
    found = [ref for path in _sources(ROOT) for ref in top_level_references(path)]
    assert not found, "names only a checkout has (use neuronsim.*):\n" + "\n".join(found)


def test_the_scan_finds_planted_references(tmp_path: Path) -> None:
    # A copy of the layout with one module that makes each mistake: the scan must see all four.
    (tmp_path / "verify" / "templates").mkdir(parents=True)
    (tmp_path / "verify" / "__init__.py").write_text("")
    (tmp_path / "verify" / "html_report.py").write_text("")
    planted = tmp_path / "verify" / "planted.py"
    planted.write_text(
        "import jinja2, importlib\n"
        "import machine.ir\n"
        "from verify.html_report import render\n"
        "loader = jinja2.PackageLoader('verify', 'templates')\n"
        "module = importlib.import_module('verify.html_report')\n"
        "ENTRY = 'verify.html_report:main'\n"
        "OK = 'neuronsim.verify.app.html_report'\n"
        "def f():\n    '>>> from tests.kit import x'\n")
    found = top_level_references(planted, tmp_path)
    assert [f.split(": ", 1)[1] for f in found] == [
        "import machine.ir", "import verify.html_report", "PackageLoader('verify')",
        "import_module('verify.html_report')", "string 'verify.html_report:main'",
        "doctest import tests.kit"], found


def test_the_command_runs_the_installed_package() -> None:
    # The command is a shell launcher (script-files); whatever it runs must be neuronsim.*.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    scripts = config["tool"]["setuptools"]["script-files"]
    assert [Path(s).name for s in scripts] == ["neuronsim"]
    launcher = (ROOT / scripts[0]).read_text()
    targets = re.findall(r" -m (\S+)", launcher)
    assert targets and all(t.startswith("neuronsim.") for t in targets), targets
    assert not config["project"].get("scripts"), "an entry point would shadow the launcher"
    for group, entries in config["project"].get("entry-points", {}).items():
        assert all(v.startswith("neuronsim.") for v in entries.values()), (group, entries)


def test_this_suite_runs_without_the_checkout_on_sys_path() -> None:
    # The package users get is neuronsim.*: if the root were importable, a module that names
    # ``verify`` would pass here and fail for every user.
    # (PathFinder searches sys.path alone: pytest itself registers a ``tests`` module for its
    # own bookkeeping, which no user code can reach.)
    for folder in FOLDERS:
        assert PathFinder.find_spec(folder, list(STARTUP_SYS_PATH)) is None, \
            f"'{folder}' is importable: the checkout root is on sys.path"
    spec = importlib.util.find_spec("neuronsim.verify")
    assert spec is not None and spec.submodule_search_locations
