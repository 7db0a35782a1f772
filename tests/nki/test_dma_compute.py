"""``nisa.dma_compute``: ``dst = sum of srcs`` by the DMA engines (the API page: only ``nl.add``,
every scale 1.0; a source that is ``dst`` makes it a read-modify-write, an indirect source a
gather).  Expectations are numpy sums (kernels: tests/nki/kernels/dma_compute.py)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import neuronsim.verify.nki  # noqa: F401  (registers the reader of device values: the gathers' indices)
from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import KERNELS, kernel, run
from neuronsim_tests.nki_kit import line_of

SOURCE = Path(KERNELS) / "dma_compute.py"
RNG = np.random.default_rng(136)


def test_gather_read_modify_write_sums_the_named_rows():
    data = RNG.normal(size=(24, 16)).astype(np.float32)
    rows = RNG.integers(0, 24, size=(8, 3)).astype(np.int32)
    out = run(kernel("dma_compute.py::gathered_rows_summed"), data, rows)
    np.testing.assert_allclose(out["out"], data[rows].sum(axis=1), rtol=1e-6, atol=1e-6)


def test_two_sources_neither_the_destination():
    a, b = RNG.normal(size=(2, 16, 8)).astype(np.float32)
    traced = trace(kernel("dma_compute.py::two_sources_summed"), a, b)
    rmw = [inst for inst, _ in traced.program.instructions() if inst.op.startswith("dma")]
    # one transfer reads both and adds them in float32 (the page: one cast at the end), then the store
    assert [inst.op for inst in rmw] == ["dma_accumulate", "dma_copy"], [inst.op for inst in rmw]
    np.testing.assert_allclose(run(kernel("dma_compute.py::two_sources_summed"), a, b)["out"], a + b, rtol=1e-6)


def test_another_reduce_op_is_one_line_at_the_call():
    a = np.zeros((16, 8), np.float32)
    with pytest.raises(NkiError) as info:
        trace(kernel("dma_compute.py::maximum_of_sources"), a, a)
    message = str(info.value)
    assert "\n" not in message
    assert re.match(rf"\S*dma_compute\.py:{line_of(SOURCE, 'max refused here')}: ", message), message
    assert "nl.add" in message, message


@pytest.mark.parametrize("unique, rows, warned", [(True, [0] * 8, True), (True, list(range(8)), False),
                                                  (False, [0] * 8, False)])
def test_a_repeated_row_under_unique_indices_is_a_warning(unique, rows, warned):
    # a scatter-add of every row onto one ran summed without a word (probe_ba): unique_indices
    # (the default) makes unique rows the condition of a correct result on the device
    x = RNG.normal(size=(8, 4)).astype(np.float32)
    idx = np.array(rows, np.int32).reshape(-1, 1)
    traced = trace(kernel("dma_compute.py::scattered_add"), x, idx, unique=unique)
    said = [(where.rsplit("/", 1)[-1], text) for where, kind, text in traced.call_warnings if kind == "indices"]
    line = line_of(SOURCE, "nisa.dma_compute(dst=dst, srcs=[dst, values]")
    assert said == ([(f"dma_compute.py:{line}", "nisa.dma_compute: unique_indices=True, but row 0 is scattered to "
                      "8 times in one call: the repeats need not all add on the device (nki-library's scatter-add "
                      "keeps a tile's indices unique for correctness); pass unique_indices=False, or combine the "
                      "repeats first")] if warned else [])
    out = run(kernel("dma_compute.py::scattered_add"), x, idx, unique=unique)["out"]
    expected = np.zeros_like(x)
    np.add.at(expected, idx[:, 0], x)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
