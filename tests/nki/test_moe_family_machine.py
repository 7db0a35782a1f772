"""The machine a kernel is traced for sets its SBUF: nki-library's all-expert MoE TKG places
its heap below byte 200,000 of each partition, which trn2 (224 KiB a partition) has and trn1
(192 KiB) has not; ``nl.tile_size``'s SBUF figures follow the machine too (below the
compiler's reserve)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim.machine.nki.language import tile_size
from neuronsim.machine.nki.tracer import Tracer
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_a_tile_below_byte_200000_fits_trn2_and_is_refused_on_trn1_at_its_line():
    x = f32(128, 256)
    kern = kernel("moe_family_identity.py::heap_below_200000")
    np.testing.assert_array_equal(run(kern, x, machine="trn2")["return0"], x)
    with pytest.raises(NkiError, match=r"moe_family_identity.py:\d+: .*bytes \[198976, 200000\) overlap the end of "
                                       r"SBUF \(196608 bytes per partition\)"):
        trace(kern, x)


@pytest.mark.parametrize(("machine", "usable"), [("trn1", 192 * 1024 - 16384), ("trn2", 224 * 1024 - 16384 - 8)])
def test_tile_size_follows_the_traced_machine(machine: str, usable: int):
    """The usable bytes of a partition, below the compiler's reserve (nki-library's MLP sizes
    its SBUF as ``224 * 1024 - 16384 - 8 - 256`` on trn2)."""
    with Tracer("k", machine, "current", (1,), frozenset()).active():
        assert tile_size.total_available_sbuf_size == usable
        assert tile_size.sbuf_fmax == usable // 4
    assert tile_size.total_available_sbuf_size == 192 * 1024 - 16384  # outside a trace: trn1
