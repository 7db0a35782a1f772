"""``--inputs`` arrays hold a tensor row by row: its shape (dimensions of 1 aside) or flat.  Any
other shape of as many elements was reshaped in silence: a transpose ran on scrambled values,
exit 0 (probe_al)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.formats.program_json import loads_program
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.sim.simulator import simulate


def _copy_program():
    """x [128, 64] loaded into SBUF and stored to o."""
    return loads_program("""{"format": "neuronsim.program/1",
      "tensors": {"x": {"memory": "dram", "dtype": "float32", "shape": [128, 64], "address": 0, "role": "input"},
                  "t": {"memory": "sbuf", "dtype": "float32", "shape": [128, 64], "partition": 0, "offset": 0},
                  "o": {"memory": "dram", "dtype": "float32", "shape": [128, 64], "address": 65536, "role": "output"}},
      "body": [{"name": "ld", "engine": "sp", "op": "dma_copy", "reads": [{"tensor": "x"}],
                "writes": [{"tensor": "t"}]},
               {"name": "st", "engine": "sp", "op": "dma_copy", "reads": [{"tensor": "t"}], "writes": [{"tensor": "o"}],
                "deps": [{"on": "ld"}]}]}""")


@pytest.mark.parametrize("shape", [(128, 64), (8192,), (1, 128, 64), (128, 1, 64)])
def test_the_tensors_shape_or_a_flat_array_is_taken_row_by_row(shape):
    values = np.arange(128 * 64, dtype=np.float32)
    run = simulate(_copy_program(), inputs={"x": values.reshape(shape)}, functional=True)
    np.testing.assert_array_equal(np.asarray(run.runs[0].outputs["o"]).reshape(-1), values)


def test_another_shape_of_as_many_elements_is_refused_at_its_name():
    values = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    with pytest.raises(ProgramError) as err:
        simulate(_copy_program(), inputs={"x": values.T}, functional=True)
    assert err.value.path == "inputs.x" and "has shape [64, 128]; tensor 'x' has shape [128, 64]" in err.value.message
