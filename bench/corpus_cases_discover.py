"""Finding the kernel functions of the public NKI corpus (a folder holding aws-neuron-sdk,
nki-samples and nki-library, given with ``--corpus DIR`` or ``NEURONSIM_NKI_CORPUS``).

A kernel function is a function of a corpus file that either

* carries a kernel decorator of either API generation (``@nki.jit``, ``@nki.baremetal``,
  ``@nki.benchmark``, ``@nki.trace``, ``@nki.profile``,
  ``@nki.compiler.skip_middle_end_transformations``, and the aliases the corpus defines for
  them, ``@nki_jit`` / ``@_kernel``), or
* is handed to NKI by a corpus file (a test, or an example's ``__main__``): ``kernel_func=NAME``
  / ``kernel_entry=NAME`` keyword arguments of nki-library's harness and ``nki.jit(NAME)`` /
  ``nki.baremetal()(NAME)`` / ``simulate_kernel(NAME, ...)`` calls, with ``NAME`` resolved
  through the file's own imports to a function defined in the corpus (nki-library hands its
  undecorated kernels to its harness this way).

Only module-level functions count: ``load_kernel`` reaches a kernel by its module attribute.
A file that does not parse (the corpus has two, snippets pasted into the docs with a missing
parenthesis) is scanned line by line for ``@...jit`` + ``def``, so its kernels are counted and
their runs report the file's own SyntaxError.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["KernelSite", "discover", "corpus_files", "corpus_folder", "CORPUS_VARIABLE"]

#: The environment variable naming the corpus folder when no ``--corpus`` is given.
CORPUS_VARIABLE = "NEURONSIM_NKI_CORPUS"

#: The last name of a decorator that makes a kernel.
KERNEL_DECORATORS = frozenset({"jit", "baremetal", "benchmark", "trace", "profile",
                               "skip_middle_end_transformations", "nki_jit", "_kernel"})
#: Keyword arguments of the nki-library harness that name the kernel under test.
HARNESS_KEYWORDS = frozenset({"kernel_func", "kernel_entry"})
#: Calls whose first argument is a kernel function.
KERNEL_WRAPPERS = frozenset({"jit", "baremetal", "benchmark", "simulate_kernel"})
#: Where a dotted module of the corpus lives, by its first name.
PACKAGE_ROOTS = {"nkilib_src": "nki-library/src", "nkilib": "nki-library/src/nkilib_src",
                 "test": "nki-library", "nki_samples": "nki-samples/src"}

_UNPARSED_DEF = re.compile(r"^def\s+([A-Za-z_]\w*)\s*\(")


@dataclass(frozen=True, slots=True)
class KernelSite:
    """One kernel function of the corpus."""

    key: str
    """``relative/path.py::function``: the case table's key."""
    path: str
    """Path relative to the corpus root."""
    func: str
    line: int
    found_by: str
    """``decorator``, ``handed`` (handed to NKI by a corpus file) or ``unparsed`` (a file with a
    SyntaxError, scanned by lines)."""


def corpus_folder(given: str | None, flag: str = "--corpus") -> Path | str:
    """The corpus folder, from ``flag`` (its value ``given``) else :data:`CORPUS_VARIABLE`, resolved;
    or the one-line reason there is none (the corpus lives outside the repository, so there is
    no default)."""
    folder = given or os.environ.get(CORPUS_VARIABLE, "")
    if not folder:
        return f"no corpus folder: give {flag} DIR or set {CORPUS_VARIABLE}"
    if not Path(folder).is_dir():
        source = flag if given else CORPUS_VARIABLE
        return (f"{folder}: no such corpus folder ({source}; expected a folder holding aws-neuron-sdk, "
                "nki-samples and nki-library)")
    return Path(folder).resolve()


def corpus_files(corpus: Path) -> list[Path]:
    """Every Python file of the corpus, sorted (the run's order)."""
    return sorted(p for p in corpus.rglob("*.py") if p.is_file())


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _is_kernel(func: ast.FunctionDef) -> bool:
    return any(_dotted(d).rsplit(".", 1)[-1] in KERNEL_DECORATORS for d in func.decorator_list)


def _module_file(corpus: Path, module: str) -> Path | None:
    root = PACKAGE_ROOTS.get(module.split(".")[0])
    if root is None:
        return None
    base = corpus.joinpath(root, *module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _handed_names(tree: ast.Module) -> set[str]:
    """Names a test hands to the harness as its kernel."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg in HARNESS_KEYWORDS and isinstance(node.value, ast.Name):
            names.add(node.value.id)
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name)
              and _dotted(node.func).rsplit(".", 1)[-1] in KERNEL_WRAPPERS):
            names.add(node.args[0].id)
    return names


def _top_functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def _resolve(corpus: Path, path: Path, tree: ast.Module, name: str,
             trees: dict[Path, ast.Module | None], hops: int = 3) -> tuple[Path, ast.FunctionDef] | None:
    """The module-level def ``name`` means in ``path``: its own, or one it imports (through
    packages' ``__init__`` re-exports, a few hops)."""
    own = _top_functions(tree).get(name)
    if own is not None:
        return path, own
    if hops == 0:
        return None
    for node in tree.body:
        if not isinstance(node, ast.ImportFrom):
            continue
        for alias in node.names:
            if (alias.asname or alias.name) != name:
                continue
            if node.level:  # relative: from the file's package
                package = path.parent
                for _ in range(node.level - 1):
                    package = package.parent
                base = package.joinpath(*(node.module or "").split(".")) if node.module else package
                target = next((c for c in (base.with_suffix(".py"), base / "__init__.py") if c.is_file()), None)
            else:
                target = _module_file(corpus, node.module or "")
            sub = _parsed(target, trees) if target else None
            if sub is not None:
                return _resolve(corpus, target, sub, alias.name, trees, hops - 1)
    return None


def _parsed(path: Path, trees: dict[Path, ast.Module | None]) -> ast.Module | None:
    if path not in trees:
        try:
            trees[path] = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except SyntaxError:
            trees[path] = None
    return trees[path]


def _unparsed_kernels(text: str) -> list[tuple[str, int]]:
    """``(name, line)`` of the kernels of a file that does not parse: a ``def`` right below a
    kernel decorator line."""
    found, decorated = [], False
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("@"):
            decorated = decorated or stripped[1:].split("(")[0].rsplit(".", 1)[-1] in KERNEL_DECORATORS
            continue
        match = _UNPARSED_DEF.match(line)
        if match and decorated:
            found.append((match.group(1), number))
        decorated = False
    return found


def discover(corpus: Path) -> list[KernelSite]:
    """Every kernel function of the corpus, in file then line order."""
    corpus = corpus.resolve()
    trees: dict[Path, ast.Module | None] = {}
    sites: dict[str, KernelSite] = {}

    def add(path: Path, func: str, line: int, how: str) -> None:
        rel = path.relative_to(corpus).as_posix()
        key = f"{rel}::{func}"
        sites.setdefault(key, KernelSite(key=key, path=rel, func=func, line=line, found_by=how))

    files = corpus_files(corpus)
    for path in files:
        tree = _parsed(path, trees)
        if tree is None:
            for func, line in _unparsed_kernels(path.read_text(encoding="utf-8")):
                add(path, func, line, "unparsed")
            continue
        for func in _top_functions(tree).values():
            if _is_kernel(func):
                add(path, func.name, func.lineno, "decorator")
    for path in files:  # tests hand kernels to the harness; examples wrap them (nki.baremetal()(f))
        tree = trees.get(path)
        if tree is None:
            continue
        for name in sorted(_handed_names(tree)):
            hit = _resolve(corpus, path, tree, name, trees)
            if hit is not None:
                add(hit[0], hit[1].name, hit[1].lineno, "handed")
    return sorted(sites.values(), key=lambda s: (s.path, s.line))


if __name__ == "__main__":  # a listing, for writing cases: key, how found, parameters
    import sys

    root = corpus_folder(sys.argv[1] if len(sys.argv) > 1 else None, flag="the first argument,")
    if isinstance(root, str):
        print(root, file=sys.stderr)
        sys.exit(2)
    for site in discover(root):
        print(site.key, site.found_by, site.line, sep="\t")
    print(len(discover(root)), "kernel functions", file=sys.stderr)

