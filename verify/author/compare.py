"""Two variants of a kernel side by side: outputs against each other (and a reference),
makespan, busy time per engine, DMA bytes, waits before / after, findings; the makespan
ratio and the lines of B that moved it.

Lines of two variants are matched by their statement (the source text of the line, stripped),
since the variants may live in different files: a statement's critical-path time
(:mod:`neuronsim.nki.line_profile`) in B minus the same statement's in A is what it moved.
Statements of A that B no longer has count as moved by their whole time, with B's time 0.  The
critical-path times of each variant add up to its makespan, so the moves add up to B's
makespan minus A's exactly.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
import os
from dataclasses import dataclass
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
    def faster(self) -> str:
        return self.b.label if self.ratio < 1 else self.a.label

    def to_json(self) -> dict[str, Any]:
        return {"format": "neuronsim.compare/1", "a": self.a.to_json(), "b": self.b.to_json(), "ratio": self.ratio,
                "outputs_equal": None if self.differences is None else not self.differences,
                "differences": None if self.differences is None else list(self.differences),
                "moves": [m.to_json() for m in self.moves]}


def statement_of(where: str, files: Mapping[str, str] | None = None) -> str:
    """The stripped source text of ``file.py:LINE`` (the location itself when unreadable);
    ``files`` maps a file as ``x-source`` names it to its path (a base name outside the
    working folder)."""
    file, _, number = where.rpartition(":")
    lines = source_lines((files or {}).get(file, file)) if where != NO_LINE and number.isdigit() else None
    if lines and int(number) <= len(lines):
        return lines[int(number) - 1].strip()
    return where


def _by_statement(profile: LineProfile, files: Mapping[str, str] | None) -> dict[str, tuple[str, float]]:
    found: dict[str, list] = defaultdict(lambda: [None, 0.0])
    for figures in profile.lines:
        entry = found[statement_of(figures.where, files)]
        entry[0] = entry[0] or figures.where
        entry[1] += figures.critical_ns
    return {k: (v[0], v[1]) for k, v in found.items()}


def compare_reports(a: tuple[str, KernelReport], b: tuple[str, KernelReport], *, rtol: float = 1e-2,
                    atol: float = 1e-2, files: Mapping[str, str] | None = None) -> Comparison:
    """The comparison of two finished runs (``(label, report)`` each; module doc); ``files``
    as for :func:`statement_of`."""
    sides = [Side(label, report, line_profile(report.run.simulation.runs[0].trace, label)) for label, report in (a, b)]
    functional = not (sides[0].report.run.timing_only or sides[1].report.run.timing_only)
    differences = (tuple(compare_outputs(sides[1].report.run.outputs, sides[0].report.run.outputs, rtol, atol))
                   if functional else None)
    in_a, in_b = _by_statement(sides[0].profile, files), _by_statement(sides[1].profile, files)
    moves = [Move(statement=s, where_a=in_a.get(s, (None, 0.0))[0], where_b=in_b.get(s, (None, 0.0))[0],
                  critical_a_ns=in_a.get(s, (None, 0.0))[1], critical_b_ns=in_b.get(s, (None, 0.0))[1])
             for s in dict.fromkeys([*in_b, *in_a])]
    moves.sort(key=lambda m: -abs(m.moved_ns))
    return Comparison(a=sides[0], b=sides[1], differences=differences, moves=tuple(moves))


def compare_kernels(kernel_a: Any, kernel_b: Any, *arrays: Any, functional: bool = True, **kwargs: Any) -> Comparison:
    """Trace both kernels on the same arguments, run each once (nominal timing, findings, race
    check) and compare them (the Python API of ``neuronsim compare``)."""
    from neuronsim.verify.nki.run import run_traced, trace_kernel

    import inspect

    from neuronsim.machine.nki.errors import _display
    from neuronsim.machine.nki.kernel import unwrap

    runs, files = [], {}
    for kernel in (kernel_a, kernel_b):
        path = inspect.getsourcefile(unwrap(kernel)[0]) if not isinstance(kernel, str) else kernel.split("::")[0]
        files[_display(os.path.abspath(path))] = os.path.abspath(path)
        label = getattr(kernel, "__name__", None) or str(kernel).split("::")[-1]
        traced = trace_kernel(kernel, *arrays, **kwargs)
        runs.append((label, run_traced(traced, label, seeds=(None,), functional=functional)))
    return compare_reports(runs[0], runs[1], files=files)
