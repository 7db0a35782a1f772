"""Every shipped scenario, written as an NKI kernel (``scenarios/nki/``), gives the builder
version's races, sync minimum and outputs.

Each kernel file is traced (``neuronsim.machine.nki.trace`` of ``FILE::FUNC`` on the builder scenario's
own inputs) and run end to end as ``neuronsim run`` runs a scenario
(:func:`neuronsim.verify.app.scenario_runs.run_scenario`: default pipeline, race check of the compiled and final
programs, four interleavings, sync counts, outputs against the scenario's numpy reference).
The builder scenario is run the same way, with one change: its DMAs are triggered from the
engine and queue the traced kernel uses for the same DRAM tensor (``nl.load`` / ``nl.store``
name no trigger, and the sync minimum depends on which queue runs what in order; see
:func:`tests.nki.nki_kit.retarget_dmas`).  Then:

* both are race free, as the builder's golden summary says, and the traced run has no problem
  at all (interleavings agree, outputs within the scenario's tolerance);
* the traced program executes as many instruction instances as the builder's;
* the sync minimum is the builder's (where it cannot be, the case says why and what holds);
* the simulated outputs equal the builder's simulated outputs, and the kernel file's own
  numpy ``reference`` within the scenario's tolerance.
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import numpy as np
import pytest

from neuronsim.machine.ir.program import Loop
from neuronsim_tests.nki_kit import (ROOT, SCENARIO_KERNELS, close, kernel_module, retarget_dmas, run_program,
                                     trace_file, zeros_like_tensor)
from neuronsim.verify.app.scenario_runs import SCENARIO_DIR, get_scenario
from neuronsim_tests.nki_scenarios_kit import CASES, Case, SHARED_BANK, UNROLLED  # noqa: F401






def test_every_shipped_scenario_has_an_nki_kernel():
    shipped = {p.stem for p in SCENARIO_DIR.glob("*.py") if (SCENARIO_DIR / f"{p.stem}.golden.json").exists()}
    assert shipped == {case.scenario for case in CASES}
    assert {case.file for case in CASES} == {p.name for p in SCENARIO_KERNELS.glob("*.py")}


def test_readme_lists_every_kernel():
    readme = (SCENARIO_KERNELS / "README.md").read_text()
    for case in CASES:
        assert f"`{case.file}`" in readme, case.file


def _golden(scenario: str) -> dict:
    return json.loads((SCENARIO_DIR / f"{scenario}.golden.json").read_text())


def _run_both(case: Case):
    scenario = get_scenario(case.scenario)
    builder_program = scenario.build()
    values = scenario.inputs(0)
    outputs = sorted(n for n, t in builder_program.tensors.items() if t.role == "output")
    arrays = dict(values)
    if case.legacy:
        arrays.update({name: zeros_like_tensor(builder_program, name) for name in outputs})
    traced = trace_file(SCENARIO_KERNELS / case.file, case.func, arrays)
    tol = dict(rtol=getattr(scenario, "rtol", 0.0), atol=getattr(scenario, "atol", 0.0))
    inputs = {name: traced.inputs[name] for name in traced.inputs if name not in outputs}
    nki_run = run_program(case.id, traced.program, inputs, scenario.reference, **tol)
    retargeted, changes = retarget_dmas(builder_program, traced.program)
    builder_run = run_program(case.scenario, retargeted, values, scenario.reference, **tol)
    return scenario, traced, nki_run, builder_run, changes, outputs, tol


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_scenario_kernel_matches_builder(case):
    scenario, traced, nki_run, builder_run, changes, outputs, tol = _run_both(case)
    # the traced kernel is correct on its own: no race, interleavings agree, outputs right
    assert nki_run.problems() == [], nki_run.problems()[:5]
    assert sorted(traced.outputs) == outputs
    assert builder_run.problems() == [], builder_run.problems()[:5]

    mine, theirs, golden = nki_run.summary(), builder_run.summary(), _golden(case.scenario)
    assert mine["races"] == theirs["races"] == golden["races"]
    assert mine["instances"] == theirs["instances"] == golden["instances"]
    assert mine["waits"]["minimum"] == theirs["waits"]["minimum"] + case.extra_waits, (case.minimum_note, changes)
    if not changes:
        assert theirs["waits"]["minimum"] == golden["waits"]["minimum"]

    # outputs: the builder's simulated values, and the kernel file's own numpy reference
    for name in outputs:
        assert close(nki_run.outputs[name], builder_run.outputs[name], **tol), name
    module = kernel_module(SCENARIO_KERNELS / case.file)
    params = inspect.signature(module.reference).parameters
    expected = module.reference(*(scenario.inputs(0)[p] for p in params))
    assert sorted(expected) == outputs
    for name in outputs:
        assert close(nki_run.outputs[name], expected[name], **tol), name


@pytest.mark.parametrize("case", [c for c in CASES if c.legacy], ids=[c.id for c in CASES if c.legacy])
def test_legacy_kernels_keep_their_affine_loops(case):
    """A legacy kernel's ``affine_range`` / ``sequential_range`` loops stay loops of the program
    (marked with their range kind), one for each loop of the builder scenario (the kernels
    unroll with ``static_range`` / Python loops exactly where the builder unrolls)."""
    scenario = get_scenario(case.scenario)
    program = scenario.build()
    arrays = dict(scenario.inputs(0))
    arrays.update({n: zeros_like_tensor(program, n) for n, t in program.tensors.items() if t.role == "output"})
    traced = trace_file(SCENARIO_KERNELS / case.file, case.func, arrays)
    kept = [node for node, _ in traced.program.walk() if isinstance(node, Loop)]
    assert kept, "no loop kept"
    assert {loop.extras.get("x-nki-range") for loop in kept} <= {"affine", "sequential"}
    builder_loops = len([node for node, _ in program.walk() if isinstance(node, Loop)])
    assert len(kept) == (builder_loops if case.kept_loops is None else case.kept_loops), case.loops_note


CLEAN = [c for c in CASES if not c.findings_note]


@pytest.mark.parametrize("case", CLEAN, ids=[c.id for c in CLEAN])
def test_nki_findings_leave_the_correct_kernels_alone(case):
    """The builder scenarios are race free with the right outputs: neuronsim's NKI-specific
    findings (carried dependences in affine loops, += into SBUF, direct-allocation races and
    clobbers) must not flag their NKI versions.  The cases left out say why (known false
    positives of the findings)."""
    from neuronsim.verify.nki.findings import nki_findings

    scenario = get_scenario(case.scenario)
    program = scenario.build()
    arrays = dict(scenario.inputs(0))
    if case.legacy:
        arrays.update({n: zeros_like_tensor(program, n) for n, t in program.tensors.items() if t.role == "output"})
    traced = trace_file(SCENARIO_KERNELS / case.file, case.func, arrays)
    assert [f.describe() for f in nki_findings(traced.program)] == []


@pytest.mark.parametrize("case", [CASES[2], CASES[3]], ids=["softmax", "softmax_current"])
def test_run_command_runs_a_scenario_kernel_against_the_reference_beside_it(case, tmp_path):
    """``neuronsim run scenarios/nki/FILE::FUNC --inputs IN.npz --reference FILE:reference`` as the
    README says: a legacy kernel's npz holds its output parameter too (zeros)."""
    scenario = get_scenario(case.scenario)
    arrays = dict(scenario.inputs(0))
    if case.legacy:
        arrays["y"] = np.zeros_like(arrays["x"])
    np.savez(tmp_path / "in.npz", **arrays)
    kernel = (SCENARIO_KERNELS / case.file).relative_to(ROOT)
    cli = [sys.executable, "-c", "from neuronsim.verify.cli import main; main()"]
    done = subprocess.run([*cli, "run", f"{kernel}::{case.func}", "--inputs", str(tmp_path / "in.npz"),
                           "--reference", f"{kernel}:reference", "--out", str(tmp_path / "out"), "--json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    summary = json.loads(done.stdout)["summary"]
    assert summary["outputs_match"] and summary["user_reference"] and summary["nki_findings"] == 0
    assert summary["races"] == _golden(case.scenario)["races"]
    assert summary["waits"]["minimum"] == _golden(case.scenario)["waits"]["minimum"] + case.extra_waits
