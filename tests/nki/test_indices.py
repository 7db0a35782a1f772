"""The loop indices of ``x-source``: every loop in force, Python ``range`` ones included."""

from __future__ import annotations

import numpy as np

from neuronsim.machine.ir.source import source_text
from neuronsim.machine.nki import trace
from neuronsim_tests.nki_kernels import f32, kernel, run, sources


def test_python_range_loops_and_a_helpers_loop_are_the_indices():
    a = f32(256, 64)
    traced = trace(kernel("current_range_loops.py::copy_tiles"), a)
    indices = [s["indices"] for s in sources(traced)]
    expected = [{"row": r, "col": c, "half": h} for r in range(2) for c in range(2) for h in range(2)]
    assert indices == [e for e in expected for _ in range(2)]  # load and store of each half
    assert [list(i) for i in indices[:1]] == [["row", "col", "half"]]  # outermost first
    first_store = next(inst for inst, _ in traced.program.instructions()
                       if inst.extras["x-source"]["indices"] == {"row": 1, "col": 0, "half": 1}
                       and inst.writes[0].tensor == "return0")
    assert source_text(first_store) == \
        "nisa.dma_copy at tests/nki/kernels/current_range_loops.py:18 [row=1, col=0, half=1]"
    np.testing.assert_array_equal(run(kernel("current_range_loops.py::copy_tiles"), a)["return0"], a)


def test_comprehension_and_enumerate_indices():
    a = f32(384, 16)
    traced = trace(kernel("current_range_loops.py::comprehension"), a)
    by_call = [(s["call"], s["indices"]) for s in sources(traced)]
    assert by_call == [("nl.load", {"r": r}) for r in range(3)] + [("nl.store", {"r": r}) for r in range(3)]

