"""Text of a line profile: the kernel's source with the figures of each line beside it.

>>> row_text(None, 7, "    x = nl.load(a)")
'     7 |       |                      |                      |           |        |     x = nl.load(a)'
"""

from __future__ import annotations

import os

from neuronsim.nki.line_profile import NO_LINE, LineFigures, LineProfile

__all__ = ["HEADER", "row_text", "profile_text", "source_lines"]

HEADER = (f"{'line':>6} | {'instr':>5} | {'busy ns (engine)':<20} | {'waited ns (on)':<20} | {'DMA bytes':>9} | "
          f"{'crit %':>6} | source")


def _short(name: str) -> str:
    """``k.py:33 (pe)`` -> ``L33 pe``: what a wait was on, short enough for its column."""
    where, _, engine = name.partition(" (")
    line = where.rpartition(":")[2]
    return f"L{line} {engine.rstrip(')')}" if engine and line.isdigit() else name


def _top(figures: dict[str, float]) -> str:
    """The largest entry and how many others: ``1,234.5 pe +1``."""
    if not figures:
        return ""
    name, value = max(figures.items(), key=lambda kv: kv[1])
    name = _short(name)
    more = f" +{len(figures) - 1}" if len(figures) > 1 else ""
    text = f"{value:,.1f} {name}{more}"
    return text if len(text) <= 20 else text[:19] + "~"


def row_text(figures: LineFigures | None, number: int | None, code: str, makespan: float = 0.0) -> str:
    """One line of the listing (``figures`` None: a line that issued nothing)."""
    label = f"{number:>6}" if number is not None else f"{'':>6}"
    if figures is None:
        return f"{label} | {'':>5} | {'':<20} | {'':<20} | {'':>9} | {'':>6} | {code}"
    share = 100 * figures.critical_ns / makespan if makespan else 0.0
    return (f"{label} | {figures.instructions:>5} | {_top(figures.busy_ns):<20} | {_top(figures.waited_on):<20} | "
            f"{figures.dma_bytes:>9,} | {share:>6.1f} | {code}")


def source_lines(display: str) -> list[str] | None:
    """The lines of a kernel file named as its ``x-source`` names it (relative to the working
    folder, or a base name), None when it cannot be read."""
    try:
        with open(display, encoding="utf-8") as handle:
            return handle.read().splitlines()
    except OSError:
        return None


def profile_text(profile: LineProfile, span: tuple[int, int] | None = None, kernel_file: str | None = None,
                 source: list[str] | None = None) -> str:
    """The listing: the kernel file's lines ``span`` (first, last) with the figures of each,
    then every other line that issued instructions (helpers in other files, :data:`NO_LINE`)."""
    out = [HEADER]
    shown = set()
    if kernel_file is not None and source is not None and span is not None:
        for number in range(span[0], min(span[1], len(source)) + 1):
            where = f"{kernel_file}:{number}"
            shown.add(where)
            out.append(row_text(profile.line(where), number, source[number - 1], profile.makespan_ns))
    for figures in profile.lines:
        if figures.where in shown:
            continue
        file, _, number = figures.where.rpartition(":")
        text = source_lines(file) if figures.where != NO_LINE else None
        code = text[int(number) - 1].strip() if text and number.isdigit() and int(number) <= len(text) else ""
        out.append(row_text(figures, None, f"{figures.where}: {code}" if code else figures.where, profile.makespan_ns))
    return "\n".join(out)


def kernel_span(func) -> tuple[str, tuple[int, int]] | None:
    """``(file, (first, last line))`` of a kernel function's source, None when unknown."""
    import inspect

    try:
        lines, first = inspect.getsourcelines(func)
        path = inspect.getsourcefile(func)
    except (OSError, TypeError):
        return None
    return os.path.abspath(path), (first, first + len(lines) - 1)
