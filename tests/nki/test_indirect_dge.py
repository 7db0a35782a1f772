"""``dge_mode`` of an indirect ``dma_copy`` (tests/nki/kernels/indirect_dge.py): ``swdge`` and
``unknown`` gather; ``hwdge`` and ``none`` are refused at the line with the DGE page's words
(they ran, as software DGE)."""

from __future__ import annotations

import numpy as np
import pytest

import neuronsim.verify.nki  # noqa: F401  (registers the device-value reader: the offsets are read)
from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import f32, kernel, run

ROWS = np.random.default_rng(3).integers(0, 128, size=(64, 1)).astype(np.int32)


@pytest.mark.parametrize("mode", ["swdge", "unknown"])
def test_an_indirect_gather_on_software_dge(mode):
    table = f32(128, 512)
    out = run(kernel("indirect_dge.py::gather"), table, ROWS, mode=mode)["return0"]
    np.testing.assert_array_equal(out, table[ROWS[:, 0]])


@pytest.mark.parametrize("mode", ["hwdge", "none"])
def test_an_indirect_gather_on_another_dge_mode_is_refused(mode):
    with pytest.raises(NkiError, match=rf"indirect_dge.py:\d+: nisa.dma_copy\(dge_mode={mode}\) of an indirect "
                                       r"access .*: the DGE page gives it swdge or unknown only"):
        trace(kernel("indirect_dge.py::gather"), f32(128, 512), ROWS, mode=mode)
