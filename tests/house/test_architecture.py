"""docs/architecture.md names every room of the package and no room that does not exist."""

from __future__ import annotations

import re
import tomllib

from neuronsim_tests import ROOT

PAGE = ROOT / "docs" / "architecture.md"


def rooms_on_the_page(text: str) -> set[str]:
    """The first cell of every row of the rooms table."""
    table = text.split("## The rooms", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `(neuronsim(?:\.\w+)*)` \|", table, re.M))


def installed_rooms() -> set[str]:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return set(setuptools["packages"])


def test_the_page_names_every_room_and_only_rooms() -> None:
    page, installed = rooms_on_the_page(PAGE.read_text()), installed_rooms()
    assert not installed - page, f"rooms missing from docs/architecture.md: {sorted(installed - page)}"
    assert not page - installed, f"docs/architecture.md names rooms that do not exist: {sorted(page - installed)}"


def test_the_check_sees_a_missing_room() -> None:
    text = PAGE.read_text()
    dropped = re.sub(r"^\| `neuronsim\.machine\.sim` \|.*\n", "", text, flags=re.M)
    assert "neuronsim.machine.sim" in installed_rooms() - rooms_on_the_page(dropped)
