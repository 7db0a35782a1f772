"""The tutorial kernels of ``scenarios/nki/published/`` (timed by ``bench/bench_published.py``)
compute what their numpy references say, race free and without NKI findings (but the Mamba
kernels' one warning, which the tutorial's own loops draw), at small shapes of the same structure.

Each kernel is run end to end as ``neuronsim run KERNEL.py::FUNC --reference`` runs it
(:func:`neuronsim.verify.nki.run.run_kernel`: NKI findings, default pipeline, race checks,
interleavings, outputs against the sequential run and against the reference beside the
kernel), with inputs drawn from a fixed seed.
"""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from neuronsim.machine.nki import load_kernel, trace
from neuronsim.verify.nki.run import run_kernel
from neuronsim_tests.nki_kit import ROOT, kernel_module

PUBLISHED = ROOT / "scenarios" / "nki" / "published"


def _matmul_inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    # K = 2 blocks of 8 tiles for matmul_blocked_k, M = one block of 16 tiles; values in
    # [0, 1/8) keep the bf16 sums of the K blocks well inside the tolerance.
    k, m, n = 2048, 2048, 1024
    return {"lhsT": (rng.random((k, m)) / 8).astype(ml_dtypes.bfloat16),
            "rhs": (rng.random((k, n)) / 8).astype(ml_dtypes.bfloat16)}


def _layernorm_inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    rows, cols = 300, 1000  # the published shape: a masked last row tile and bn_stats chunk
    return {"x": rng.random((rows, cols), dtype=np.float32), "gamma": rng.random(cols, dtype=np.float32),
            "beta": rng.random(cols, dtype=np.float32), "y": np.zeros((rows, cols), np.float32)}


def _mamba_inputs(rng: np.random.Generator) -> dict[str, np.ndarray]:
    batch, channels, seq, states = 1, 256, 1024, 3

    def draw(*shape: int) -> np.ndarray:
        return (rng.random(shape, dtype=np.float32) * 0.5).astype(np.float32)

    return {"delta": draw(batch, channels, seq), "u": draw(batch, channels, seq), "A": -draw(channels, states),
            "B": draw(batch, states, seq), "C": draw(batch, states, seq)}


CASES = [
    ("matmul.py", "matmul_tiled", _matmul_inputs),
    ("matmul.py", "matmul_hoisted", _matmul_inputs),
    ("matmul.py", "matmul_blocked", _matmul_inputs),
    ("matmul.py", "matmul_blocked_k", _matmul_inputs),
    ("matmul.py", "matmul_blocked_k_open", _matmul_inputs),
    ("layernorm.py", "layernorm_v1", _layernorm_inputs),
    ("layernorm.py", "layernorm_v2", _layernorm_inputs),
    ("mamba.py", "mamba_v1", _mamba_inputs),
    ("mamba.py", "mamba_v2", _mamba_inputs),
    ("mamba.py", "mamba_v3", _mamba_inputs),
]


@pytest.mark.parametrize("file, func, inputs", CASES, ids=[c[1] for c in CASES])
def test_published_kernel_matches_its_reference(file: str, func: str, inputs) -> None:
    path: Path = PUBLISHED / file
    arrays = inputs(np.random.default_rng(7))
    module = kernel_module(path)
    outputs, report = run_kernel(load_kernel(f"{path}::{func}"), *arrays.values(), reference=module.reference,
                                 seeds=(None, 1))
    assert not report.run.problems(), report.render()
    # no NKI finding: ``+=`` into SBUF here adds into a slice of each iteration's own
    # (``sums[m, i, j] += acc``) or into a tile made in the loop body; but the Mamba kernels sum
    # their states into one accumulator in an ``affine_range``, as the tutorial does, which is
    # the documented ``sbuf-accumulate`` warning (its sources disagree), on that accumulator alone
    if func.startswith("mamba"):
        assert report.findings and all(f.kind == "sbuf-accumulate" and f.loop == "s" and not f.is_error
                                       for f in report.findings), report.render()
    else:
        assert not report.findings, report.render()
    assert report.user_reference
    expected = next(iter(module.reference(**{k: v for k, v in arrays.items() if k != "y"}).values()))
    assert np.allclose(np.asarray(outputs, np.float64), expected.astype(np.float64), rtol=1e-2, atol=1e-2)


def test_the_tutorial_spelling_is_lowered_as_the_variant_writes_it() -> None:
    """``nl.zeros(..., buffer=nl.psum)`` then ``+=`` of matmuls is lowered as
    ``matmul_blocked_k_open`` writes it by hand (:mod:`neuronsim.machine.nki.groups`): no
    ``memset`` on a PSUM tile, the group's first matmul peeled out of the kept K loop, and the
    same instruction nodes otherwise."""
    arrays = _matmul_inputs(np.random.default_rng(0))
    programs = {f: trace(load_kernel(f"{PUBLISHED / 'matmul.py'}::{f}"), **arrays).program
                for f in ("matmul_blocked_k", "matmul_blocked_k_open")}

    def counts(program) -> dict[str, int]:
        found: dict[str, int] = {}
        for node, _ in program.walk():
            op = getattr(node, "op", None)
            if op is not None:
                writes_psum = any(program.tensors[w.tensor].memory.name == "PSUM" for w in node.writes)
                key = f"{op}{'@psum' if writes_psum else ''}"
                found[key] = found.get(key, 0) + 1
        return found

    tutorial, variant = counts(programs["matmul_blocked_k"]), counts(programs["matmul_blocked_k_open"])
    assert "memset@psum" not in tutorial and tutorial["matmul@psum"] == 2
    assert tutorial == variant
    matmuls = [(inst.attrs["accumulate"], loops[-1].name, loops[-1].trip_count)
               for inst, loops in programs["matmul_blocked_k"].instructions() if inst.op == "matmul"]
    assert matmuls == [(False, "i", 16), (True, "k_2", 7)]  # BK = 8: one opening, seven adding
