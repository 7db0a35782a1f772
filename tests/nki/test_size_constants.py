"""``sizeinbytes`` of ``nki.language.constants`` (tests/nki/kernels/size_constants.py): the
bytes of one element of a dtype, under both packages' names."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from neuronsim.machine.ir.program import Loop
from neuronsim.machine.nki import trace
from neuronsim.machine.nki.dtypes import sizeinbytes
from neuronsim_tests.nki_kernels import kernel, run


@pytest.mark.parametrize("dtype, columns", [(np.float32, 512), (ml_dtypes.bfloat16, 1024)])
def test_a_kernel_sizes_its_columns_by_the_bytes_of_its_dtype(dtype, columns):
    a = np.arange(128 * 2048, dtype=np.float32).reshape(128, 2048).astype(dtype)
    traced = trace(kernel("size_constants.py::copy_in_2048_byte_columns"), a)
    loops = [node for node in traced.program.body if isinstance(node, Loop)]
    assert [loop.trip_count for loop in loops] == [2048 // columns]
    np.testing.assert_array_equal(run(kernel("size_constants.py::copy_in_2048_byte_columns"), a)["return0"], a)


def test_both_packages_name_it():
    from neuronsim.machine.nki.standins import stand_in_modules

    modules = stand_in_modules()
    assert modules["nki.language.constants"].sizeinbytes is sizeinbytes
    assert modules["neuronxcc.nki.language.constants"].sizeinbytes is sizeinbytes
