"""An NkiScalar indexes a tensor at its value on the traced inputs (a slice bound, as nl.ds),
while int() / range() / a Python list's index of it are refused at the line
(tests/nki/test_new_api_mistakes.py): NKI's tracer raises TypeError for those alone."""

from __future__ import annotations

import numpy as np

import neuronsim.verify.nki  # noqa: F401  (registers the reader of device values)
from neuronsim.machine.nki import load_kernel
from neuronsim_tests.nki_kernels import run

KERNEL = '''
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def window(data, start):
    out = nl.ndarray((1, 4), dtype=data.dtype, buffer=nl.shared_hbm)
    s = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=s, src=start)
    n = nisa.scalar_load(s)
    t = nl.ndarray((1, 4), dtype=data.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=data[0:1, n:n + 4])
    nisa.dma_copy(dst=out, src=t)
    return out
'''


def test_a_slice_bounded_by_a_device_scalar_reads_at_its_value(tmp_path):
    (tmp_path / "k.py").write_text(KERNEL)
    data = np.arange(16, dtype=np.float32).reshape(1, 16)
    out = run(load_kernel(f"{tmp_path / 'k.py'}::window"), data, np.array([[5]], np.int32))["return0"]
    np.testing.assert_array_equal(out, data[:, 5:9])
