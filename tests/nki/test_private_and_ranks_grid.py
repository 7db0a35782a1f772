"""A private name of ``nki.isa`` is refused at the kernel's line, and ``nl.program_id`` is 0 in a
launch on ranks with a grid of one program (tests/nki/kernels/private_and_ranks_grid.py): both
failed inside neuronsim (exit 3)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_a_private_isa_call_is_refused_at_its_line():
    with pytest.raises(NkiError, match=r"private_and_ranks_grid.py:\d+: nisa._tiled_offloaded_memcpy is not supported "
                                       r"\(a private name of the module"):
        trace(kernel("private_and_ranks_grid.py::private_copy"), f32(128, 64))


@pytest.mark.parametrize("grid", [(1,), (1, 1)])
def test_the_program_id_of_a_launch_on_ranks_with_a_grid_of_one(grid):
    x = f32(2, 128, 64)
    out = run(kernel("private_and_ranks_grid.py::row_of_the_program"), x, grid=grid, ranks=2)
    for name in ("return0", "return0_rank1"):
        np.testing.assert_array_equal(out[name][0], x[0] + 1, err_msg=name)
