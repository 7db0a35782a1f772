"""Bad input to the NKI constructs taken in at the twenty-fourth session (a helper's probe of
418 cases found 38 ending as internal errors): each mistake is one line at its kernel line
(tests/nki/kernels/new_api_mistakes.py); and what was refused though legal now runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import neuronsim.verify.nki  # noqa: F401  (registers the reader of device values)
from neuronsim.machine.nki import trace
from neuronsim.machine.nki.errors import NkiError
from neuronsim_tests.nki_kernels import f32, kernel

KERNELS = Path(__file__).parent / "kernels" / "new_api_mistakes.py"
MISTAKES = {
    "transpose_order": "transpose_axes",
    "transpose_type": "transpose_axes",
    "like_of_a_number": "x is a tensor",
    "grid_float_bound": "bounds and step are ints",
    "grid_zero_step": "bounds and step are ints",
    "block_shape_int": "block_shape is a tuple",
    "element_shape_int": "element_shape is a tuple",
    "block_shape_none": "block_shape (tiles per block",
    "address_text": "address",
    "rearrange_size_text": "positive int",
    "rearrange_size_unnamed": "does not name",
    "rearrange_size_disagrees": "its dimension has",
    "negative_shift": "not negative",
    "scalar_of_text": "holds an int",
    "scalar_load_none": "1x1",
    "unroll_array": "unroll is True or False",
    "grid_field_set": "setting data of a grid",
    "grid_iterated": "not iterable",
    "int_too_wide": "does not fit",
    # NKI's tracer raises TypeError: a device value is no Python number (neuronsim took its value on the inputs)
    "range_of_a_scalar": "it is no Python number",
    "int_of_a_loop_index": "it is no Python number",
}


def _line(func: str) -> int:
    lines = KERNELS.read_text().splitlines()
    start = next(k for k, text in enumerate(lines) if text.startswith(f"def {func}("))
    return next(k + 1 for k in range(start, len(lines)) if "# mistake" in lines[k])


@pytest.mark.parametrize("func", sorted(MISTAKES))
def test_each_mistake_is_one_line_at_its_kernel_line(func):
    with pytest.raises(NkiError) as caught:
        trace(kernel(f"new_api_mistakes.py::{func}"), f32(256, 256), np.array([[5, 2]], np.int32))
    assert caught.value.path.endswith(f"new_api_mistakes.py:{_line(func)}"), caught.value
    assert MISTAKES[func] in caught.value.message, caught.value
