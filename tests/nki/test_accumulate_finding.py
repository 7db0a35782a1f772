"""The ``sbuf-accumulate`` finding: ``+=`` into SBUF inside an affine loop is reported only when
the accumulated bytes are shared by the loop's iterations (``tests/nki/kernels/legacy_accumulate.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.verify.nki.findings import nki_findings
from neuronsim_tests.nki_kit import GROUP_KERNELS, kernel_module, trace_file

KERNELS = GROUP_KERNELS / "legacy_accumulate.py"
X = np.random.default_rng(3).random((128, 512), dtype=np.float32)


def _findings(func: str):
    traced = trace_file(KERNELS, func, {"x": X, "out": np.zeros((128, 256), np.float32)})
    return nki_findings(traced.program)


@pytest.mark.parametrize("func", ["own_slices", "tile_per_iteration"])
def test_accumulating_into_bytes_of_each_iteration_is_no_finding(func: str) -> None:
    assert _findings(func) == []


def test_accumulating_into_one_tile_across_affine_iterations_is_reported_at_its_line() -> None:
    found = _findings("shared_tile")
    line = next(i for i, text in enumerate(KERNELS.read_text().splitlines(), 1) if "acc += nl.load(x[:, t * 64" in text)
    assert [(f.kind, f.dependence, f.loop, f.distance) for f in found] == [("sbuf-accumulate", "RAW", "t", 1)]
    assert found[0].first.endswith(f"legacy_accumulate.py:{line} [t=0]")
    assert found[0].second.endswith(f"legacy_accumulate.py:{line} [t=1]")


@pytest.mark.parametrize("func", ["own_slices", "tile_per_iteration"])
def test_the_correct_kernels_compute_their_reference(func: str) -> None:
    from neuronsim.machine.nki import load_kernel
    from neuronsim.verify.nki.simulate import simulate_kernel

    out = np.zeros((128, 256), np.float32)
    simulate_kernel(load_kernel(f"{KERNELS}::{func}"), X, out)
    assert np.allclose(out, kernel_module(KERNELS).reference(X)["out"], rtol=1e-6)
