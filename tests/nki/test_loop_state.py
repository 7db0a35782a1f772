"""A legacy loop body that carries Python state across iterations (tests/nki/kernels/
legacy_loop_state.py): NKI traces it once, so the state changes once; the ``loop-state``
warning names the loop and the line, and stays silent on temporaries and on loops unrolled in
Python (``static_range``)."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from neuronsim.machine.nki import trace
from neuronsim.machine.nki.loop_state import body_carries
from neuronsim.verify.nki.findings import nki_findings
from neuronsim_tests.nki_kernels import KERNELS, f32, kernel, run

FILE = f"{KERNELS}/legacy_loop_state.py"


def _line(text: str, after: str) -> int:
    with open(FILE) as source:
        lines = list(enumerate(source, 1))
    start = next(n for n, line in lines if after in line)
    return next(n for n, line in lines if n > start and text in line)


@pytest.mark.parametrize("name, loop, what", [
    ("doubling_scale", "nl.affine_range", "rebinds Python variable 'scale'"),
    ("column_counter", "for loop over range(...)", "rebinds Python variable 'done'"),
    ("tiles_in_a_list", "nl.sequential_range", "changes in place Python variable 'seen'"),
    ("unrolled_offset", "nl.affine_range", "rebinds Python variable 'bias'"),
])
def test_state_a_body_carries_is_found_at_its_line(name, loop, what):
    found = [f for f in nki_findings(trace(kernel(f"legacy_loop_state.py::{name}"), f32(128, 16)).program)
             if f.kind == "loop-state"]
    assert len(found) == 1 and found[0].severity == "warning", found  # (a kernel may rely on the one change)
    message = found[0].describe()
    assert message.startswith(loop) and what in message
    assert found[0].first.endswith(f"legacy_loop_state.py:{_line('# carried', after=f'def {name}(')}")
    assert found[0].loop.endswith(f":{_line('for ', after=f'def {name}(')}")


@pytest.mark.parametrize("name", ["temporaries", "static_scale"])
def test_temporaries_and_python_unrolled_loops_are_no_finding(name):
    program = trace(kernel(f"legacy_loop_state.py::{name}"), f32(128, 16)).program
    assert [f for f in nki_findings(program) if f.kind == "loop-state"] == []


def test_the_state_changes_once_as_in_nki_and_static_range_carries_it():
    a = f32(128, 16)
    once = run(kernel("legacy_loop_state.py::doubling_scale"), a)["return0"]
    np.testing.assert_allclose(once, a, rtol=1e-6)  # the one trace's scale, 1.0, for every iteration
    carried = run(kernel("legacy_loop_state.py::static_scale"), a)["return0"]
    np.testing.assert_allclose(carried, kernel("legacy_loop_state.py::doubling_reference")(a), rtol=1e-6)


@pytest.mark.parametrize("source, exposed, mutated", [
    ("x = x + 1", {"x"}, set()),
    ("x += 1", {"x"}, set()),
    ("y = 1\nx = y", set(), set()),
    ("t = f(i)\nout[i] = t", {"f", "i", "out"}, {"out"}),
    ("xs.append(1)", {"xs"}, {"xs"}),
    ("r = [v for v in xs]\nv = 2", {"xs"}, set()),
    ("if c:\n    s = s * 2", {"c", "s"}, set()),
])
def test_what_a_body_reads_before_it_binds(source, exposed, mutated):
    carried = body_carries(ast.parse(source).body)
    assert set(carried.exposed) == exposed and set(carried.mutated) == mutated


@pytest.mark.parametrize("unroll_loops", [False, True])
def test_a_rebound_tile_is_the_loops_entry_tile_in_every_iteration_unrolled_or_kept(unroll_loops):
    a = f32(128, 16)
    traced = trace(kernel("legacy_loop_state.py::rebound_tile"), a, unroll_loops=unroll_loops)
    assert [f for f in nki_findings(traced.program) if f.severity == "error"] == []
    out = run(kernel("legacy_loop_state.py::rebound_tile"), a)["return0"]
    np.testing.assert_allclose(out, np.tile(a[:, 0:4] + 1, (1, 4)), rtol=1e-6)
