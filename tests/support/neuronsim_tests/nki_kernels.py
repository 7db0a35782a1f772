"""Helpers of the NKI frontend tests: trace a kernel, compile it, simulate it."""

from __future__ import annotations

import os

from neuronsim_tests import ROOT
from typing import Any

import numpy as np

from neuronsim.machine.nki import load_kernel, trace
from neuronsim.machine.sim.simulator import simulate
from neuronsim.passes import compile_program

KERNELS = str(ROOT / "tests" / "nki" / "kernels")


def kernel(spec: str) -> Any:
    """``kernel("current_ops.py::add")`` from tests/nki/kernels."""
    return load_kernel(os.path.join(KERNELS, spec))


def run(kern: Any, *arrays: Any, seeds: tuple[int | None, ...] = (None,), **kw: Any) -> dict[str, np.ndarray]:
    """Trace, compile (default pipeline) and simulate; the outputs of the first run, after
    checking every run agrees with the sequential reference (no race)."""
    traced = trace(kern, *arrays, **kw)
    compiled, _ = compile_program(traced.program)
    sim = simulate(compiled, seeds=seeds, inputs=traced.inputs)
    for result in sim.runs:
        assert not result.differs, f"run {result.seed} differs from the sequential reference"
    return sim.runs[0].outputs


def f32(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


def sources(traced: Any) -> list[dict]:
    return [dict(inst.extras["x-source"]) for inst, _ in traced.program.instructions()]
