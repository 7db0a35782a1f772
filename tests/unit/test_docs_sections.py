"""Section citations stay true: code and docs that cite ``docs/machine-model.md``,
``docs/kernel-patterns.md``, ``docs/performance-notes.md`` or ``docs/task-rules.md`` by section
number name a section the page has, and each page numbers its sections once, in order.
``docs/task-rules.md`` is cited by item too: "section 3 item 7" is its heading 3.7."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from neuronsim_tests.docs_kit import ROOT

PAGES = ("machine-model", "kernel-patterns", "performance-notes", "task-rules")
_NUMBER = r"\d+(?:\.\d+)?"

#: ``machine-model.md`` section 1.4 / ``kernel-patterns.md 7.1, 7.6`` / ``kernel-patterns.md`` 7.1-7.3
_CITE = re.compile(rf"({'|'.join(PAGES)})\.md`*\)?,?\s*(?:sections?\s+)?({_NUMBER}(?:\s*(?:-|,|and)\s*{_NUMBER})*)")
#: "performance notes, section 2.3" / "performance notes 1.4"
_PROSE = re.compile(rf"performance notes,?\s*(?:sections?\s+)?({_NUMBER})")
#: ``[2.1]`` / ``[1.1, 4]`` / ``[1.4 PerfSim constants, unconfirmed]`` in a source file (not a
#: test: tests hold list literals) that cites machine-model.md
_BRACKET = re.compile(rf"(?<=[\s(])\[(\d+\.\d+(?:,\s*{_NUMBER})*)(?:\s[^\]]*)?\]")
#: ``docs/task-rules.md`` section 3 item 7 / section 3 items 4, 7-9 and 12 / section 3 (item 7)
_ITEMS = re.compile(r"task-rules\.md`*\)?,?\s*section\s+(\d+),?\s+\(?items?\s+(\d+(?:\s*(?:-|,|and)\s*\d+)*)")
#: the citation style ``docs/task-rules.md`` replaced; the test cannot check what it points at
_OLD_STYLE = re.compile(r"rules reference", re.I)


def _expand(first: str, last: str | None) -> list[str]:
    """``2.3``-``2.5`` -> 2.3, 2.4, 2.5 (a range of subsections of one section)."""
    if last is None:
        return [first]
    major, lo = first.split(".")
    return [f"{major}.{minor}" for minor in range(int(lo), int(last.split(".")[1]) + 1)]


def page_sections(name: str) -> list[str]:
    """Section numbers of ``docs/NAME.md`` in the order they appear.

    >>> page_sections("machine-model")[:3]
    ['0', '1', '1.1']
    """
    text = (ROOT / "docs" / f"{name}.md").read_text()
    headings = re.findall(rf"^#{{2,3}} ({_NUMBER})(?:-({_NUMBER}))?[. ]", text, re.M)
    return [number for first, last in headings for number in _expand(first, last or None)]


def _numbers(listing: str) -> list[str]:
    return re.findall(_NUMBER, listing)


def _items(listing: str) -> list[int]:
    """``4, 7-9 and 12`` -> 4, 7, 8, 9, 12."""
    items = []
    for first, last in re.findall(r"(\d+)(?:\s*-\s*(\d+))?", listing):
        items += range(int(first), int(last or first) + 1)
    return items


def _sources() -> list[Path]:
    skip = {".git", ".venv", "venv", "node_modules", "__pycache__"}
    own = Path(__file__).resolve()
    return [p for pattern in ("*.py", "*.md") for p in ROOT.rglob(pattern)
            if not skip & set(p.relative_to(ROOT).parts) and p.resolve() != own]


def citations() -> list[tuple[str, str, str]]:
    """``(file, page, section)`` for every section citation of the four pages (an item M of
    section N of ``task-rules`` as section ``N.M``)."""
    found = []
    for path in _sources():
        text = path.read_text(errors="replace")
        where = str(path.relative_to(ROOT))
        for page, listing in _CITE.findall(text):
            found += [(where, page, n) for n in _numbers(listing)]
        found += [(where, "performance-notes", n) for n in _PROSE.findall(text)]
        for section, listing in _ITEMS.findall(text):
            found += [(where, "task-rules", f"{section}.{item}") for item in _items(listing)]
        if path.suffix == ".py" and "machine-model.md" in text and "tests" not in path.relative_to(ROOT).parts:
            for listing in _BRACKET.findall(text):
                found += [(where, "machine-model", n) for n in _numbers(listing)]
    return found


@pytest.mark.parametrize("name", PAGES)
def test_each_page_numbers_its_sections_once_and_in_order(name):
    numbers = page_sections(name)
    assert len(numbers) >= 8, f"docs/{name}.md has too few numbered sections"
    assert len(set(numbers)) == len(numbers), f"docs/{name}.md numbers a section twice"
    keys = [tuple(int(part) for part in n.split(".")) for n in numbers]
    assert keys == sorted(keys), f"docs/{name}.md sections out of order"


def missing_sections(found: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The citations among ``found`` whose page has no such section."""
    sections = {name: set(page_sections(name)) for name in PAGES}
    return [(where, page, n) for where, page, n in found if n not in sections[page]]


def test_every_section_citation_names_a_section_of_its_page():
    found = citations()
    assert not missing_sections(found), f"citations of sections that do not exist: {missing_sections(found)}"
    assert len(found) >= 1   # the pages cite each other at least


def test_a_citation_of_a_missing_section_is_caught():
    sample = "see `docs/kernel-patterns.md` sections 7.1, 7.6 and machine-model.md 1.4-1.5"
    assert [n for _, listing in _CITE.findall(sample) for n in _numbers(listing)] == ["7.1", "7.6", "1.4", "1.5"]
    assert _BRACKET.findall("clock [1.3]: and [1.1, 4] but not reads[0] or [1.4 PerfSim, x]") == ["1.3", "1.1, 4",
                                                                                                  "1.4"]
    cited = [("x.py", "kernel-patterns", "7.6"), ("x.py", "kernel-patterns", "12.1"),
             ("y.py", "machine-model", "2.9")]
    assert missing_sections(cited) == cited[1:]


def test_task_rules_keeps_the_numbering_the_code_cites():
    """Sections 2-4 and items 1-12 of section 3, as in the rules the passes were written from."""
    expected = {"2", "3", "4"} | {f"3.{item}" for item in range(1, 13)}
    assert expected <= set(page_sections("task-rules"))


def test_the_task_passes_cite_task_rules_by_item():
    cited = {(where, n) for where, page, n in citations() if page == "task-rules"}
    assert ("passes/tasks/loops.py", "3.7") in cited
    assert ("machine/sim/tensormap.py", "4") in cited
    assert {n for _, n in cited} >= {f"3.{item}" for item in range(1, 13)}


def test_no_citation_in_the_old_uncheckable_style():
    old = [str(p.relative_to(ROOT)) for p in _sources() if _OLD_STYLE.search(p.read_text(errors="replace"))]
    assert old == [], f"cite ``docs/task-rules.md`` section N item M instead of the rules reference: {old}"


def test_a_task_rules_item_citation_is_read_and_checked():
    sample = ("see ``docs/task-rules.md`` section 3 items 4, 7-9 and 12, (`docs/task-rules.md`\n"
              "section 3 (item 7)) and ``docs/task-rules.md`` section 4, step A")
    assert [(s, _items(listing)) for s, listing in _ITEMS.findall(sample)] == [("3", [4, 7, 8, 9, 12]), ("3", [7])]
    assert [n for _, listing in _CITE.findall(sample) for n in _numbers(listing)] == ["3", "3", "4"]
    cited = [("x.py", "task-rules", "3.12"), ("x.py", "task-rules", "3.13"), ("x.py", "task-rules", "5.1")]
    assert missing_sections(cited) == cited[1:]
