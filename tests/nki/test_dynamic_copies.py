"""``nisa.tensor_copy_dynamic_src`` / ``_dst`` (tests/nki/kernels/dynamic_copies.py): the copy
with an offset read at run time, bit-exact, and charged the page's ``max(MIN_II_DYNAMIC, N)``
with MIN_II_DYNAMIC "roughly 600 engine cycles" (they were refused, "dynamic addresses")."""

from __future__ import annotations

import numpy as np
import pytest

import neuronsim.verify.nki  # noqa: F401  (registers the device-value reader: the offset is read)
from neuronsim.machine.model.cost import instruction_cost
from neuronsim.machine.model.presets import resolve_machine
from neuronsim.machine.nki import trace
from neuronsim_tests.nki_kernels import f32, kernel, run

OFFSET = np.array([[13]], dtype=np.int32)


def test_a_window_read_at_a_runtime_offset():
    data = f32(128, 64)
    out = run(kernel("dynamic_copies.py::window_from"), data, OFFSET)["return0"]
    np.testing.assert_array_equal(out, data[:, 13:21])


def test_a_window_written_at_a_runtime_offset():
    data = f32(128, 64)
    expected = np.zeros_like(data)
    expected[:, 13:21] = data[:, 0:8]
    np.testing.assert_array_equal(run(kernel("dynamic_copies.py::window_into"), data, OFFSET)["return0"], expected)


@pytest.mark.parametrize(("func", "side"), [("window_from", "src"), ("window_into", "dst")])
def test_a_dynamic_copy_costs_the_pages_minimum_interval(func, side):
    program = trace(kernel(f"dynamic_copies.py::{func}"), f32(128, 64), OFFSET).program
    (copy,) = [inst for inst, _ in program.instructions() if inst.op == "tensor_copy"]
    assert copy.attrs["dynamic"] == side
    assert instruction_cost(copy, program.tensors, resolve_machine(program.machine)).cycles == 600.0
