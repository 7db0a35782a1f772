"""A compiled loop whose body runs no iteration on the inputs (tests/nki/kernels/unrun_bodies.py):
NKI builds the body all the same, so what it refuses there is said, as a warning at the body's
line, from a second trace that runs the body once (machine/nki/unrun.py); the program traced,
and so every output, is the first trace's."""

from __future__ import annotations

import numpy as np
import pytest

import neuronsim.verify.nki  # noqa: F401  (registers the device-value reader)
from neuronsim.machine.nki import trace
from neuronsim_tests.nki_kernels import kernel, run

FILE = "tests/nki/kernels/unrun_bodies.py"
ZERO, DATA = np.zeros((1, 1), np.int32), np.arange(32, dtype=np.float32).reshape(4, 8)


def _line(text: str) -> int:
    with open(FILE) as source:
        return next(n for n, line in enumerate(source, 1) if text in line)


@pytest.mark.parametrize(("func", "args", "mark", "loop", "words"), [
    ("fori_device_zero", (ZERO, DATA), "BAD FORI", "nl.fori_loop", "data1 has 4 partitions and data2 2"),
    ("while_zero", (ZERO, DATA), "BAD WHILE", "nl.while_loop", "are not the same [P, F] tile"),
    ("static_zero_helper", (DATA,), "BAD HELPER", "nl.fori_loop", "data1 has 4 partitions and data2 2"),
    ("dynamic_range_zero", (ZERO, DATA), "BAD DYN", "nl.dynamic_range", "data1 has 4 partitions and data2 2"),
])
def test_a_refusal_inside_a_body_that_never_runs_is_a_warning_at_its_line(func, args, mark, loop, words):
    traced = trace(kernel(f"unrun_bodies.py::{func}"), *args)
    (warning,) = [w for w in traced.call_warnings if w[1] != "generation"]  # (dynamic_range: deprecated in 0.6)
    where, kind, text = warning
    assert where == f"{FILE}:{_line(mark)}" and kind == "unrun" and words in text
    assert f"in the body of the {loop} at {FILE}:" in text and "runs no iteration on these inputs" in text
    out = run(kernel(f"unrun_bodies.py::{func}"), *args)["return0"]
    np.testing.assert_array_equal(out, DATA)  # (the device runs no iteration: the data as loaded)


def test_the_same_body_run_on_the_inputs_is_refused_and_valid_bodies_say_nothing():
    from neuronsim.machine.nki import NkiError

    with pytest.raises(NkiError, match=f"unrun_bodies.py:{_line('BAD FORI')}: .*data1 has 4 partitions"):
        trace(kernel("unrun_bodies.py::fori_device_zero"), np.ones((1, 1), np.int32), DATA)
    assert trace(kernel("unrun_bodies.py::fine_bodies"), ZERO, DATA).call_warnings == ()
    np.testing.assert_array_equal(run(kernel("unrun_bodies.py::fine_bodies"), ZERO, DATA)["return0"], DATA)


def test_a_failure_after_the_loop_that_only_the_bodys_run_causes_is_no_warning():
    """Run once, the fori_loop's body makes the count 1 and the while_loop after it runs away:
    that failure is outside the body, on a path the device never takes."""
    traced = trace(kernel("unrun_bodies.py::body_run_breaks_what_follows"), ZERO, DATA)
    assert traced.call_warnings == ()


def test_a_warning_inside_a_body_that_never_runs_is_said_as_where_it_runs():
    (warning,) = trace(kernel("unrun_bodies.py::keyword_slip_unrun"), DATA).call_warnings
    assert warning[0] == f"{FILE}:{_line('SLIP')}" and warning[1] == "keyword" and "'reverse_operand0'" in warning[2]


def test_the_branch_of_a_device_if_else_the_inputs_do_not_take_is_checked():
    """NKI builds both branches of an if_else on a device value: the one not taken is traced in
    the check trace, and what it refuses is a warning at its line (probe_bad U1: exit 0 before)."""
    traced = trace(kernel("unrun_bodies.py::if_else_untaken_branch"), ZERO, DATA)
    ((where, kind, text),) = traced.call_warnings
    assert where == f"{FILE}:{_line('BAD BRANCH')}" and kind == "unrun" and "data1 has 4 partitions and data2 2" in text
    assert "in the branch of the nl.if_else at" in text and "that these inputs do not take" in text
    np.testing.assert_array_equal(run(kernel("unrun_bodies.py::if_else_untaken_branch"), ZERO, DATA)["return0"], DATA)
    assert trace(kernel("unrun_bodies.py::if_else_on_a_python_value"), DATA).call_warnings == ()
    assert trace(kernel("unrun_bodies.py::if_else_fine_branches"), ZERO, DATA).call_warnings == ()
    np.testing.assert_array_equal(run(kernel("unrun_bodies.py::if_else_fine_branches"), ZERO, DATA)["return0"], DATA)
