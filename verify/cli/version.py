"""The version ``neuronsim --version`` prints.

The installed distribution's version (:func:`importlib.metadata.version` of ``neuronsim``);
run from a source tree that is not installed, the ``version`` of its ``pyproject.toml``, said
as such.

>>> version().split()[0][0].isdigit()
True
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["version", "DISTRIBUTION"]

DISTRIBUTION = "neuronsim"


def version() -> str:
    """``0.1.0``, or ``0.1.0 (source tree, not installed)``."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed(DISTRIBUTION)
    except PackageNotFoundError:
        pass
    import tomllib

    for folder in Path(__file__).resolve().parents:
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            try:
                project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
            except (OSError, tomllib.TOMLDecodeError):
                break
            if project.get("name") == DISTRIBUTION and "version" in project:
                return f"{project['version']} (source tree, not installed)"
            break
    return "unknown (not installed)"
