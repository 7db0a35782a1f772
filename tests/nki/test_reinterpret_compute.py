"""Views of another dtype (``.view(dtype)``, ``.ap(dtype=)``) read and written by engines: the
NKI API reference has them as views consumed by ISA instructions that read the same storage as
the new dtype.  Expectations are numpy's ``.view`` of the same bytes (kernels:
tests/nki/kernels/reinterpret_compute.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from neuronsim.machine.formats.program_json import dumps_program, loads_program
from neuronsim.machine.ir.dtypes import READ_AS_KEY
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import KERNELS, kernel, run
from neuronsim_tests.nki_kit import line_of

SOURCE = Path(KERNELS) / "reinterpret_compute.py"
RNG = np.random.default_rng(28)


def _bf16(shape: tuple[int, int]) -> np.ndarray:
    return RNG.normal(size=shape).astype(ml_dtypes.bfloat16)


def test_same_size_words_read_as_bf16_by_the_vector_engine():
    values = _bf16((16, 8))
    out = run(kernel("reinterpret_compute.py::words_as_bf16_doubled"), values.view(np.uint16))
    np.testing.assert_array_equal(out["out"], (values.astype(np.float32) * 2).astype(ml_dtypes.bfloat16))


def test_float32_read_as_bf16_halves_by_a_compute_engine():
    values = RNG.normal(size=(16, 8)).astype(np.float32)
    out = run(kernel("reinterpret_compute.py::floats_as_halves"), values)
    np.testing.assert_array_equal(out["out"].view(np.uint16), values.view(np.uint16))


def test_bf16_pairs_read_as_int32_by_a_compute_engine():
    halves = _bf16((16, 8))
    out = run(kernel("reinterpret_compute.py::halves_as_words"), halves)
    np.testing.assert_array_equal(out["out"], halves.view(np.int32))


def test_the_reinterpreted_read_keeps_the_footprint_of_the_same_bytes():
    traced = trace(kernel("reinterpret_compute.py::floats_as_halves"), np.zeros((16, 8), np.float32))
    (copy,) = [inst for inst, _ in traced.program.instructions() if inst.op == "tensor_copy"]
    read = copy.reads[0]
    assert read.extras.get(READ_AS_KEY) == "bfloat16"
    # the pattern counts the tile's own float32 elements: 8 a partition, the whole row
    assert read.pattern in (None, ((1, 8),)), read


def test_an_engine_writes_through_a_view_of_another_size():
    halves = _bf16((16, 8))
    out = run(kernel("reinterpret_compute.py::written_as_halves"), halves)
    np.testing.assert_array_equal(out["out"].view(np.uint16), halves.view(np.uint16))


def test_dma_transpose_moves_whole_elements_of_the_dtype_read():
    tokens = RNG.integers(0, 2**15, size=(12, 1)).astype(np.int32)  # bytes no float NaN: the input is bf16
    rows = np.concatenate([_bf16((12, 6)), tokens.view(ml_dtypes.bfloat16)], axis=1)
    out = run(kernel("reinterpret_compute.py::trailing_words_transposed"), rows)
    np.testing.assert_array_equal(out["out"], tokens.T)


def test_a_view_without_a_contiguous_run_is_one_line_at_the_kernel_line():
    with pytest.raises(NkiError) as info:
        trace(kernel("reinterpret_compute.py::strided_view"), np.zeros((16, 8), ml_dtypes.bfloat16))
    message = str(info.value)
    assert "\n" not in message
    assert re.match(rf"\S*reinterpret_compute\.py:{line_of(SOURCE, 'strided view refused here')}: ", message), message
    assert "contiguous innermost dimension" in message, message


@pytest.mark.parametrize("read_as, pattern, reason", [
    ("bfloat16", None, None),  # the traced program round-trips through the format as it is
    ("bogus", None, "unknown dtype 'bogus'"),
    ("bfloat16", [[2, 4]], r"contiguous innermost run of whole bfloat16 elements, not 4 elements with stride 2"),
])
def test_the_format_checks_x_read_as_at_its_json_path(read_as, pattern, reason):
    traced = trace(kernel("reinterpret_compute.py::floats_as_halves"), np.zeros((16, 8), np.float32))
    doc = json.loads(dumps_program(traced.program))
    (copy,) = [node for node in doc["body"] if node.get("op") == "tensor_copy"]
    copy["reads"][0][READ_AS_KEY] = read_as
    if pattern is not None:
        copy["reads"][0]["pattern"] = pattern
    if reason is None:
        assert loads_program(json.dumps(doc)).body is not None
        return
    with pytest.raises(ProgramError) as info:
        loads_program(json.dumps(doc))
    assert re.search(reason, str(info.value)) and f"reads[0].{READ_AS_KEY}" in str(info.value), str(info.value)
