"""A module's file name says what it holds wherever it is found: no two modules of the product
share one (docs/architecture.md, "File names"), but the NKI frontend's pairs listed below,
where ``machine/nki/`` or ``verify/nki/`` names the one meant.  A new pair fails here: name the
new module for what it holds (``cmd_NAME`` for a command, ``task_*`` in the task rooms)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from neuronsim_tests import ROOT

FOLDERS = ("machine", "passes", "verify")
#: file name -> the folders holding it, each pair one the NKI frontend shares with the core
KNOWN_PAIRS = {
    "alloc.py": {"machine/nki", "passes"},
    "dtypes.py": {"machine/ir", "machine/nki"},
    "errors.py": {"machine/ir", "machine/nki"},
    "lifetimes.py": {"passes/analysis", "verify/nki"},
    "schedule.py": {"machine/nki", "passes"},
}


def repeated_names(root: Path) -> dict[str, set[str]]:
    """Every module file name found in more than one folder, with those folders."""
    where: dict[str, set[str]] = defaultdict(set)
    for folder in FOLDERS:
        for path in (root / folder).rglob("*.py"):
            if path.name != "__init__.py" and "__pycache__" not in path.parts:
                where[path.name].add(path.parent.relative_to(root).as_posix())
    return {name: folders for name, folders in where.items() if len(folders) > 1}


def test_no_new_module_shares_a_file_name() -> None:
    repeated = repeated_names(ROOT)
    new = {name: sorted(folders) for name, folders in repeated.items() if KNOWN_PAIRS.get(name) != folders}
    assert not new, f"module file names found in more than one folder: {new}"


def test_the_check_sees_a_planted_pair(tmp_path: Path) -> None:
    for folder in ("verify", "verify/cli", "machine/ir", "machine/nki", "passes"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "verify" / "fuzz.py").write_text("")
    (tmp_path / "verify" / "cli" / "fuzz.py").write_text("")
    (tmp_path / "machine" / "ir" / "errors.py").write_text("")
    (tmp_path / "machine" / "nki" / "errors.py").write_text("")
    assert repeated_names(tmp_path) == {"fuzz.py": {"verify", "verify/cli"},
                                        "errors.py": {"machine/ir", "machine/nki"}}
