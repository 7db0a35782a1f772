"""What a simulated makespan is: scheduled or as traced, and how close the timing model came to
the public figures it was checked against.

The figures are ``bench/bench_published.py``'s held-out verdict (tutorial kernels at their
published shapes and latencies), written by that script with ``--write-accuracy`` to
``accuracy.json`` beside this module, never by hand; ``neuronsim run``'s table,
``simulate --json`` and the HTML report quote them next to every makespan.

>>> a = Accuracy(within=9, cases=12, worst_ratio=1.2, median_ratio=1.01, tolerance=0.15,
...              pipeline="alloc,schedule", script="bench/bench_published.py")
>>> a.text()
'model vs 12 published kernel latencies: 9 within 15 %, median ratio 1.01, worst 1.2 (bench/bench_published.py)'
>>> from neuronsim.machine.ir.program import Program
>>> makespan_kind(Program({}, (), extras={"x-scheduled": "schedule"})), makespan_kind(Program({}))
('scheduled', 'in source order')
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from neuronsim.machine.formats.jsonio import dumps_strict

__all__ = ["ACCURACY_FILE", "SCHEDULED_KEY", "Accuracy", "accuracy_json", "load_accuracy", "makespan_kind",
           "makespan_label"]

#: Program extras key the ``schedule`` pass sets: the program's order is the scheduler's.
SCHEDULED_KEY = "x-scheduled"

ACCURACY_FILE = Path(__file__).resolve().parent.parent / "model" / "accuracy.json"
FORMAT = "neuronsim.accuracy/1"


@dataclass(frozen=True, slots=True)
class Accuracy:
    """The held-out verdict of the timing model on the published figures."""

    within: int
    cases: int
    worst_ratio: float
    """simulated / published of the case farthest from 1."""
    median_ratio: float
    tolerance: float
    pipeline: str
    """The pipeline the kernels were compiled with."""
    script: str
    ratio_range: tuple[float, float] | None = None
    """The lowest and the highest simulated / published ratio (None in a file written before
    the script recorded them)."""

    def text(self) -> str:
        return (f"model vs {self.cases} published kernel latencies: {self.within} within "
                f"{100 * self.tolerance:.0f} %, median ratio {self.median_ratio:g}, worst {self.worst_ratio:g} "
                f"({self.script})")

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, **asdict(self)}

    def write(self, path: Path = ACCURACY_FILE) -> None:
        path.write_text(dumps_strict(self.to_json(), indent=2) + "\n")


def load_accuracy(path: Path = ACCURACY_FILE) -> Accuracy | None:
    """The stored verdict, or None when the file is missing or not this format."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.pop("format", None) != FORMAT:
        return None
    if isinstance(data.get("ratio_range"), list):
        data["ratio_range"] = tuple(data["ratio_range"])
    try:
        return Accuracy(**data)
    except TypeError:
        return None


def makespan_kind(program: Any) -> str:
    """``"scheduled"`` when the ``schedule`` pass ordered ``program`` (its ``x-scheduled``
    extra), else ``"in source order"`` (a traced kernel as traced, a program as written)."""
    return "scheduled" if getattr(program, "extras", {}).get(SCHEDULED_KEY) else "in source order"


def makespan_label(program: Any) -> str:
    """The makespan's row label, e.g. ``makespan (nominal, scheduled)``."""
    return f"makespan (nominal, {makespan_kind(program)})"


def accuracy_json(program: Any) -> dict[str, Any]:
    """What ``simulate --json`` and ``run --json`` say of a makespan: its kind and the model's
    measured accuracy (None when no verdict is stored)."""
    stored = load_accuracy()
    return {"kind": makespan_kind(program), "model_accuracy": stored.to_json() if stored else None}
