"""Two variants of a kernel side by side: outputs against each other (and a reference),
makespan, busy time per engine, DMA bytes, waits before / after, findings; the makespan
ratio and the lines of B that moved it.

Lines of two variants are matched by their statement, since the variants may live in different
files: the whole Python statement a line belongs to (a call over several lines is one, its
spaces normalised), and among statements of the same text the first of A with the first of B,
the second with the second.  A statement's critical-path time
(:mod:`neuronsim.nki.line_profile`) in B minus the same statement's in A is what it moved.
Statements of A that B no longer has count as moved by their whole time, with B's time 0.  The
critical-path times of each variant add up to its makespan, so the moves add up to B's
makespan minus A's exactly.  (Matched by the text of a line's first line alone, every
``nisa.dma_copy(`` of a file was one statement, its time named at the first one: probe_t.)
"""

from __future__ import annotations

import ast
import os
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from neuronsim.nki.line_profile import NO_LINE, LineProfile, line_profile
from neuronsim.nki.render import source_lines
from neuronsim.verify.nki.run import KernelReport
from neuronsim.verify.app.scenario_runs import compare_outputs

__all__ = ["Side", "Move", "Comparison", "compare_reports", "compare_kernels", "statement_of"]


@dataclass(frozen=True, slots=True)
class Side:
    """One variant's run and line profile."""

    label: str
    report: KernelReport
    profile: LineProfile

    def to_json(self) -> dict[str, Any]:
        summary = self.report.run.summary()
        return {"kernel": self.label, "makespan_ns": self.profile.makespan_ns, "busy_ns": self.profile.busy_ns,
                "dma_bytes": sum(f.dma_bytes for f in self.profile.lines), "instances": len(self.profile.trace),
                "waits": {"before": summary["waits"]["before"], "after": summary["waits"]["after"]},
                "findings": [f.to_json() for f in self.report.findings], "problems": self.report.problems()}


@dataclass(frozen=True, slots=True)
class Move:
    """One statement's critical-path time in A and in B."""

    statement: str
    where_a: str | None
    where_b: str | None
    critical_a_ns: float
    critical_b_ns: float

    @property
    def moved_ns(self) -> float:
        return self.critical_b_ns - self.critical_a_ns

    def to_json(self) -> dict[str, Any]:
        return {"statement": self.statement, "line_a": self.where_a, "line_b": self.where_b,
                "critical_a_ns": self.critical_a_ns, "critical_b_ns": self.critical_b_ns, "moved_ns": self.moved_ns}


@dataclass(frozen=True, slots=True)
class Comparison:
    a: Side
    b: Side
    differences: tuple[str, ...] | None
    """Where B's outputs differ from A's (empty: equal; None: values not computed)."""
    moves: tuple[Move, ...]
    """Statements by how much they moved the makespan, largest first."""

    @property
    def ratio(self) -> float:
        """B's makespan over A's (below 1: B is faster)."""
        return self.b.profile.makespan_ns / self.a.profile.makespan_ns if self.a.profile.makespan_ns else float("inf")

    @property
    def faster(self) -> str | None:
        """The label of the variant with the shorter makespan; None when they are equal."""
        if self.b.profile.makespan_ns == self.a.profile.makespan_ns:
            return None
        return self.b.label if self.ratio < 1 else self.a.label

    def to_json(self) -> dict[str, Any]:
        return {"format": "neuronsim.compare/1", "a": self.a.to_json(), "b": self.b.to_json(), "ratio": self.ratio,
                "outputs_equal": None if self.differences is None else not self.differences,
                "differences": None if self.differences is None else list(self.differences),
                "moves": [m.to_json() for m in self.moves]}


def statement_of(where: str, files: Mapping[str, str] | None = None) -> str:
    """The text of the statement at ``file.py:LINE``: the innermost Python statement holding the
    line, spaces normalised (a compound one by its first line alone); the line's own text when
    the file does not parse; the location itself when it cannot be read.  ``files`` maps a file
    as ``x-source`` names it to its path (a base name outside the working folder)."""
    return _statement(where, files)[2]


def _statement(where: str, files: Mapping[str, str] | None) -> tuple[str, str, str]:
    """``(where the statement at ``where`` starts, the key two variants' statements match by, its
    text)`` (:func:`statement_of`): the key is its syntax tree (``ast.dump``: ``f(a, b)`` written on
    one line or three is one statement)."""
    file, _, number = where.rpartition(":")
    if where == NO_LINE or not number.isdigit():
        return where, where, where
    spans = _statements((files or {}).get(file, file))
    if spans is None or int(number) > len(spans):
        return where, where, where
    start, key, text = spans[int(number) - 1]
    return f"{file}:{start}", key, text


@lru_cache(maxsize=64)
def _statements(path: str) -> list[tuple[int, str, str]] | None:
    """Per line of the file (from 1): the first line of the innermost statement holding it, the
    statement's key (its syntax tree; a compound statement's first line) and its text."""
    lines = source_lines(path)
    if lines is None:
        return None
    spans = [(k + 1, line.strip(), line.strip()) for k, line in enumerate(lines)]
    try:
        tree = ast.parse("\n".join(lines))
    except (SyntaxError, ValueError):
        return spans
    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and n.end_lineno is not None]
    for node in sorted(nodes, key=lambda n: n.lineno - n.end_lineno):  # the widest first, the innermost last
        if hasattr(node, "body"):  # a compound statement: its header line
            last, text = node.lineno, lines[node.lineno - 1].strip()
            key = text
        else:
            last = node.end_lineno
            text = " ".join(" ".join(lines[k].strip() for k in range(node.lineno - 1, last)).split())
            key = ast.dump(node)
        for line in range(node.lineno, last + 1):
            spans[line - 1] = (node.lineno, key, text)
    return spans


def _by_statement(profile: LineProfile,
                  files: Mapping[str, str] | None) -> dict[tuple[str, int], tuple[str, str, float]]:
    """Critical-path ns by ``(statement key, occurrence)``: statements of one key numbered in
    file and line order, each with where it starts and its text."""
    found: dict[tuple[str, str], list] = {}
    for figures in profile.lines:
        start, key, text = _statement(figures.where, files)
        found.setdefault((key, start), [text, 0.0])[1] += figures.critical_ns
    seen: dict[str, int] = defaultdict(int)
    out = {}
    for key, start in sorted(found, key=lambda k: (k[0], _place(k[1]))):
        text, ns = found[(key, start)]
        out[(key, seen[key])] = (start, text, ns)
        seen[key] += 1
    return out


def _place(where: str) -> tuple[str, int]:
    file, _, number = where.rpartition(":")
    return (file, int(number)) if number.isdigit() else (where, 0)


def compare_reports(a: tuple[str, KernelReport], b: tuple[str, KernelReport], *, rtol: float = 1e-2,
                    atol: float = 1e-2, files: Mapping[str, str] | None = None) -> Comparison:
    """The comparison of two finished runs (``(label, report)`` each; module doc); ``files``
    as for :func:`statement_of`."""
    sides = [Side(label, report, line_profile(report.run.simulation.runs[0].trace, label)) for label, report in (a, b)]
    functional = not (sides[0].report.run.timing_only or sides[1].report.run.timing_only)
    differences = (tuple(_dtypes_differ(sides[0].report, sides[1].report)
                         + compare_outputs(sides[1].report.run.outputs, sides[0].report.run.outputs, rtol, atol,
                                           ("B", "A")))
                   if functional else _shapes_differ(sides[0].report, sides[1].report))
    in_a, in_b = _by_statement(sides[0].profile, files), _by_statement(sides[1].profile, files)
    none = (None, "", 0.0)
    moves = [Move(statement=(in_b.get(key) or in_a[key])[1], where_a=in_a.get(key, none)[0],
                  where_b=in_b.get(key, none)[0], critical_a_ns=in_a.get(key, none)[2],
                  critical_b_ns=in_b.get(key, none)[2])
             for key in dict.fromkeys([*in_b, *in_a])]
    moves.sort(key=lambda m: -abs(m.moved_ns))
    return Comparison(a=sides[0], b=sides[1], differences=differences, moves=tuple(moves))


def _shapes_differ(a: KernelReport, b: KernelReport) -> tuple[str, ...] | None:
    """Without values, whether B's outputs are not A's by name, shape or dtype (one line, and
    then a difference); None when they are (values not computed).  Two variants whose outputs
    differ so were compared with exit 0 under ``--timing-only`` (probe_t)."""
    def outputs(report: KernelReport) -> dict[str, tuple]:
        return {name: (tuple(report.program.tensors[name].shape), report.program.tensors[name].dtype)
                for name in report.output_names}

    mine, theirs = outputs(a), outputs(b)
    if mine == theirs:
        return None
    return (f"B's outputs {_shown(theirs)} are not A's {_shown(mine)} (names, shapes, dtypes; values not computed)",)


def _dtypes_differ(a: KernelReport, b: KernelReport) -> list[str]:
    """An output both kernels write in different dtypes: a difference whatever the values (a
    bfloat16 output against a float32 one was "equal" by value and DIFFER by signature under
    ``--timing-only``: probe_bad U2)."""
    out = []
    for name in sorted(set(a.output_names) & set(b.output_names)):
        mine, theirs = a.program.tensors[name].dtype, b.program.tensors[name].dtype
        if mine != theirs:
            out.append(f"{name}: B writes {theirs}, A {mine}")
    return out


def _shown(outputs: dict[str, tuple]) -> str:
    return ", ".join(f"{name} {list(shape)} {dtype}" for name, (shape, dtype) in outputs.items()) or "none"


def compare_kernels(kernel_a: Any, kernel_b: Any, *arrays: Any, functional: bool = True, **kwargs: Any) -> Comparison:
    """Trace both kernels on the same arguments, run each once (nominal timing, findings, race
    check) and compare them (the Python API of ``neuronsim compare``)."""
    from neuronsim.verify.nki.run import run_traced, trace_kernel

    import inspect

    from neuronsim.machine.ir.source import shown_path
    from neuronsim.machine.nki.kernel import unwrap

    runs, files = [], {}
    for kernel in (kernel_a, kernel_b):
        path = inspect.getsourcefile(unwrap(kernel)[0]) if not isinstance(kernel, str) else kernel.split("::")[0]
        files[shown_path(os.path.abspath(path))] = os.path.abspath(path)
        label = getattr(kernel, "__name__", None) or str(kernel).split("::")[-1]
        traced = trace_kernel(kernel, *arrays, **kwargs)
        runs.append((label, run_traced(traced, label, seeds=(None,), functional=functional)))
    return compare_reports(runs[0], runs[1], files=files)
