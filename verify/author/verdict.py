"""The machine-readable verdict of one run, ``neuronsim.run/1`` (schema:
``docs/schema/run.schema.json``): what an optimization loop needs from a candidate kernel in
place of a device run, in one strict JSON document.

* ``ok``: nothing wrong (no race, no NKI error finding, outputs as expected);
* ``correctness``: outputs against the reference (the user's numpy function, the scenario's,
  or, for a kernel run without one, the sequential run) with the largest error, and whether
  the interleavings agree with the sequential run;
* ``findings``: NKI findings and races, each with the kernel lines it names;
* ``timing``: the nominal makespan, its spread over the interleavings, the model's stated
  accuracy (:data:`ACCURACY`), busy time per engine and DMA queue, and DMA bytes.

The keys of ``neuronsim.run/1`` only grow: a key is never renamed or dropped under this
format name (a change that would is ``neuronsim.run/2``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from neuronsim.machine.sim.accuracy import load_accuracy
from neuronsim.machine.sim.trace import summarize
from neuronsim.verify.nki.finding import NkiFinding
from neuronsim.verify.app.scenario_runs import ScenarioRun

__all__ = ["FORMAT", "ACCURACY", "run_verdict", "verdict_fields", "finding_entries"]

FORMAT = "neuronsim.run/1"

def _stated_accuracy() -> dict[str, Any]:
    """What docs/timing.md states of the timing model, by the scripts behind it: the calibration
    micro-cases (bench/bench_timing.py, worst deviation 8.2 %) and the held-out tutorial kernels
    at their published shapes through the traced pipeline, as bench/bench_published.py last
    wrote them to machine/model/accuracy.json (count, tolerance, lowest and highest simulated /
    published ratio).  Makespans rank variants; they are not a device's latency."""
    stored = load_accuracy()
    held = None if stored is None else {
        "within": stored.within, "of": stored.cases, "tolerance": stored.tolerance,
        "ratio_range": list(stored.ratio_range) if stored.ratio_range else None}
    return {"source": "docs/timing.md", "calibration_worst_deviation": 0.082, "held_out": held}


ACCURACY = _stated_accuracy()


def finding_entries(run: ScenarioRun, findings: Sequence[NkiFinding] = ()) -> list[dict[str, Any]]:
    """NKI findings, then the races of the compiled and the final program, each with the
    ``file.py:LINE`` locations it names (empty for a program without kernel lines)."""
    from neuronsim.nki.dropin import kernel_lines

    out = [{"kind": f.kind, "severity": f.severity, "message": f.describe(),
            "lines": kernel_lines(f"{f.first} / {f.second}")} for f in findings]
    races = [p for p in run.problems() if " program: race " in p]
    out += [{"kind": "race", "severity": "error", "message": p, "lines": kernel_lines(p)} for p in races]
    return out


def verdict_fields(run: ScenarioRun, findings: Sequence[NkiFinding] = (), *, user_reference: bool = True
                   ) -> dict[str, Any]:
    """``ok``, ``correctness``, ``findings`` and ``timing`` of ``run`` (module doc)."""
    entries = finding_entries(run, findings)
    problems = [f for f in findings if f.is_error] + run.problems()
    summary = run.summary()
    checked = not run.timing_only
    runs = run.simulation.runs
    nominal = summarize(runs[0].trace)
    span = nominal.makespan_ns or 1.0
    reference = "sequential" if not user_reference else "numpy"
    correctness = {
        "checked": checked,
        "reference": reference if checked else None,
        "outputs_match": summary["outputs_match"] if checked else None,
        "interleavings_agree": summary["interleavings_agree"] if checked else None,
        "largest_error": run.reference_errors().to_json() if checked else None,
        "interleavings_largest_error": run.simulation.errors.to_json() if checked else None,
        "tolerance": {"rtol": run.rtol, "atol": run.atol},
        "outputs": [{"name": name, "shape": list(value.shape), "dtype": str(value.dtype)}
                    for name, value in sorted(run.outputs.items())],
    }
    timing = {
        "makespan_ns": nominal.makespan_ns,
        "makespan_range_ns": [min(r.makespan for r in runs), max(r.makespan for r in runs)],
        "interleavings": len(runs),
        "accuracy": ACCURACY,
        "engines": [{"name": c.name, "instances": c.instances, "busy_ns": c.busy_ns, "busy_share": c.busy_ns / span,
                     "active_ns": c.active_ns, "active_share": (c.active_ns or 0.0) / span,
                     "wait_ns": c.wait_ns, "dma_bytes": c.bytes} for c in nominal.components if c.instances],
        "dma_bytes": nominal.dma_bytes,
        "waits": {"before": summary["waits"]["before"], "after": summary["waits"]["after"]},
    }
    return {"format": FORMAT, "ok": not problems, "correctness": correctness, "findings": entries, "timing": timing}


def run_verdict(kernel: Any, *arrays: Any, reference=None, **kwargs: Any) -> dict[str, Any]:
    """The ``neuronsim.run/1`` document of ``kernel`` run on ``arrays`` (the Python API of
    ``neuronsim run KERNEL.py::FUNC --json``); ``reference`` as for
    :func:`neuronsim.verify.nki.run.run_kernel`."""
    from neuronsim.verify.nki.run import run_kernel

    _outputs, report = run_kernel(kernel, *arrays, reference=reference, **kwargs)
    return {"kernel": report.name, "summary": report.summary(), "problems": report.problems(),
            **verdict_fields(report.run, report.findings, user_reference=report.user_reference)}
