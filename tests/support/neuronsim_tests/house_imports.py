"""The import graph of neuronsim's packages, read from the source (nothing is imported).

Every ``import`` / ``from ... import`` of a ``neuronsim`` module counts, at module level or
inside a function, except those under ``if TYPE_CHECKING:`` (annotations only, never run).
"""

from __future__ import annotations

import ast
from pathlib import Path

from neuronsim_tests import ROOT
#: The installed folders: the four rooms of the product, and the README's examples (package data
#: and an example pass, installed as ``neuronsim.examples``).
FOLDERS = ("machine", "passes", "verify", "scenarios", "examples")


def package_dirs() -> dict[str, str]:
    """pyproject's ``package-dir``: installed package -> its folder (``neuronsim.nki`` ->
    ``verify/author``: a package whose folder sits inside another one's)."""
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]


def installed_name(relative: Path) -> str:
    """The installed module name of a file or folder of the checkout (``verify/author/x.py`` ->
    ``neuronsim.nki.x``): the deepest ``package-dir`` folder holding it names its package."""
    parts = relative.with_suffix("").parts if relative.suffix == ".py" else relative.parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    package, folder = max(((p, f.split("/")) for p, f in package_dirs().items() if tuple(f.split("/")) ==
                           parts[:len(f.split("/"))]), key=lambda pf: len(pf[1]))
    return ".".join((package, *parts[len(folder):]))


def module_files() -> dict[str, Path]:
    """``neuronsim.machine.ir.program`` -> its file, for every module of the installed folders."""
    return {installed_name(path.relative_to(ROOT)): path
            for folder in FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))}


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(tree: ast.AST):
    stack = [tree]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if _type_checking_only(child):
                stack.extend(child.orelse)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child
            stack.append(child)


def import_edges(modules: dict[str, Path] | None = None) -> set[tuple[str, str]]:
    """(importer, imported) pairs between modules of ours; ``from a import b`` names the
    module ``a.b`` when there is one, else ``a``."""
    modules = module_files() if modules is None else modules
    edges = set()
    for name, path in modules.items():
        for node in _imports(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif node.level == 0 and node.module:
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                           for a in node.names]
            else:
                continue
            edges.update((name, t) for t in targets if t in modules and t != name)
    return edges


def room_of(module: str, rooms: tuple[str, ...]) -> str:
    """The longest room name that ``module`` lies in."""
    return max((r for r in rooms if module == r or module.startswith(r + ".")), key=len)
