"""No room reads the kernel builder's private fields: a frontend (the NKI tracer) or a scenario
uses the builder's public API (``tensors``, ``amend_extras``, ``mark`` / ``emitted_since``,
``move_since``, ``trial``, ``draft``, ...), so the builder can change how it keeps its state
without breaking a room it cannot see.  Reads of ``kb._x`` / ``builder._x`` / ``tracer.kb._x``
outside ``machine/build/`` are flagged."""

from __future__ import annotations

import re
from pathlib import Path

from neuronsim_tests import ROOT

ROOMS = ("machine", "passes", "verify", "scenarios", "bench")
#: A builder held as ``kb`` or ``builder`` (the names every room gives it), then a private field.
PRIVATE = re.compile(r"\b(?:kb|builder)\._[a-z]\w*")


def private_reaches(path: Path) -> list[str]:
    return [f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{number}: {hit.group(0)}"
            for number, line in enumerate(path.read_text().splitlines(), 1) for hit in PRIVATE.finditer(line)]


def test_no_room_reads_the_builders_private_fields() -> None:
    found = [hit for room in ROOMS for path in sorted((ROOT / room).rglob("*.py"))
             if (ROOT / "machine" / "build") not in path.parents for hit in private_reaches(path)]
    assert not found, "use the builder's public API (machine/build/builder.py):\n" + "\n".join(found)


def test_the_scan_sees_a_planted_reach(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("body = tracer.kb._bodies[-1]\nsize = builder._dram_end\nok = kb.tensors\nkb2._x = 1\n")
    assert [hit.split(": ", 1)[1] for hit in private_reaches(planted)] == ["kb._bodies", "builder._dram_end"]
