"""Reading an attribute an NKI tensor does not have is the kernel's error, reported at its line
(not an internal error of neuronsim), while ``hasattr`` / ``getattr`` with a default still see
an ordinary missing attribute."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, standins, trace
from neuronsim.nki import simulate_kernel


def test_an_unknown_tensor_attribute_is_the_kernels_error_at_its_line():
    with standins():
        import nki.isa as nisa
        import nki.language as nl

        def kernel(weight):
            out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
            tile = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=tile, src=weight.storage)  # not an NkiTensor attribute
            nisa.dma_copy(dst=out, src=tile)
            return out

        with pytest.raises(NkiError) as err:
            trace(kernel, np.ones((128, 64), np.float32))
    message = str(err.value)
    # the kernel's own line (the read of weight.storage), one line, no traceback
    assert message.split(": ", 1)[0].endswith("test_tensor_attribute_errors.py:22"), message
    assert "an NKI tensor has no attribute 'storage'" in message
    assert "Traceback" not in message and "\n" not in message


def test_hasattr_and_getattr_defaults_still_work_on_tensors():
    seen = []
    with standins():
        import nki.isa as nisa
        import nki.language as nl

        def kernel(weight):
            seen.append((hasattr(weight, "storage"), getattr(weight, "storage", "absent"),
                         hasattr(weight, "shape")))
            out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
            tile = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=tile, src=weight)
            nisa.dma_copy(dst=out, src=tile)
            return out

        traced = trace(kernel, np.ones((128, 64), np.float32))
    assert seen == [(False, "absent", True)]
    assert sum(1 for _ in traced.program.instructions()) == 2


def test_base_tensor_of_a_view_is_the_whole_tensor_it_views():
    # nki-library's Trn3 kernels read .base_tensor of argument tensors (as of their TensorView)
    seen = []
    with standins():
        import nki.isa as nisa
        import nki.language as nl

        def kernel(weight):
            whole = weight[0:64, 0:32].base_tensor
            seen.append((whole.shape, weight.base_tensor.shape))
            out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
            tile = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
            nisa.dma_copy(dst=tile, src=whole)
            nisa.dma_copy(dst=out, src=tile)
            return out

        x = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
        out = simulate_kernel(kernel, x)
    assert seen[0] == ((128, 64), (128, 64))
    np.testing.assert_array_equal(out, x)  # the copy read the whole tensor, not the 64 x 32 view
