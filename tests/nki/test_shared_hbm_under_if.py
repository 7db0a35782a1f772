"""shared_hbm outputs under an ``if`` (tests/nki/kernels/shared_hbm_under_if.py): a trace-time
test makes the output or not (it was refused, as every ``if`` was); a test reading
``nl.program_id``, directly or through names bound from it, is refused at the declaration."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import f32, kernel, run


@pytest.mark.parametrize("training", [True, False])
def test_an_output_made_under_a_trace_time_flag(training):
    x = f32(128, 64)
    out = run(kernel("shared_hbm_under_if.py::with_optional_output"), x, training=training)
    np.testing.assert_array_equal(out["return0"], x)
    assert ("return1" in out) == training
    if training:
        np.testing.assert_array_equal(out["return1"], 2 * x)


def test_an_output_made_under_a_test_of_the_program_id_is_refused():
    with pytest.raises(NkiError, match=r"shared_hbm_under_if.py:\d+: a shared_hbm tensor made under an if on the "
                                       r"program's coordinates"):
        trace(kernel("shared_hbm_under_if.py::per_program_output"), f32(128, 64))
