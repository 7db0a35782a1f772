"""The shipped scenarios written in NKI (``scenarios/nki/``) beside their builder versions.

For every kernel of ``tests/nki/test_scenarios_nki.py``: trace seconds, instruction instances,
races, the sync minimum of the traced program, of the builder scenario given the traced DMA
triggers, and of the builder scenario as shipped (its golden file), the loops kept, and
whether the simulated outputs equal the builder's.  The test asserts these; this prints them.
It reads the test's own case table, so it lives with the tests (bench/ imports the installed
package only).

Usage::

    PYTHONPATH=tests/support .venv/bin/python -m neuronsim_tests.nki_scenarios_table
    PYTHONPATH=tests/support .venv/bin/python -m neuronsim_tests.nki_scenarios_table softmax mamba   # some cases
"""

from __future__ import annotations

import json
import sys
import time

from neuronsim.machine.ir.program import Loop
from neuronsim_tests.nki_kit import (SCENARIO_KERNELS, close, retarget_dmas, run_program, trace_file,
                               zeros_like_tensor)
from neuronsim_tests.nki_scenarios_kit import CASES
from neuronsim.verify.app.scenario_runs import SCENARIO_DIR, get_scenario


def row(case) -> list[str]:
    scenario = get_scenario(case.scenario)
    program = scenario.build()
    values = scenario.inputs(0)
    outputs = [n for n, t in program.tensors.items() if t.role == "output"]
    arrays = dict(values)
    if case.legacy:
        arrays.update({n: zeros_like_tensor(program, n) for n in outputs})
    start = time.perf_counter()
    traced = trace_file(SCENARIO_KERNELS / case.file, case.func, arrays)
    seconds = time.perf_counter() - start
    tol = dict(rtol=getattr(scenario, "rtol", 0.0), atol=getattr(scenario, "atol", 0.0))
    inputs = {n: v for n, v in traced.inputs.items() if n not in outputs}
    mine = run_program(case.id, traced.program, inputs, scenario.reference, **tol)
    theirs = run_program(case.scenario, retarget_dmas(program, traced.program)[0], values, scenario.reference, **tol)
    golden = json.loads((SCENARIO_DIR / f"{case.scenario}.golden.json").read_text())
    kept = sum(isinstance(node, Loop) for node, _ in traced.program.walk())
    same = all(close(mine.outputs[n], theirs.outputs[n], **tol) for n in outputs)
    m, t = mine.summary(), theirs.summary()
    return [case.id, "legacy" if case.legacy else "current", f"{seconds:.2f}", str(m["instances"]),
            f"{m['races']['final']}/{t['races']['final']}", str(m["waits"]["minimum"]), str(t["waits"]["minimum"]),
            str(golden["waits"]["minimum"]), f"{kept}/{sum(isinstance(n, Loop) for n, _ in program.walk())}",
            "yes" if same and not mine.problems() else "NO"]


def main(argv: list[str]) -> int:
    cases = [c for c in CASES if not argv or c.id in argv or c.scenario in argv]
    head = ["kernel", "API", "trace s", "instances", "races", "min NKI", "min builder*", "min golden", "loops",
            "outputs"]
    rows = [head] + [row(c) for c in cases]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)))
    print("* builder scenario with the traced kernel's DMA triggers; loops: kept by the trace / the builder's")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
