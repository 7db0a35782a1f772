"""A kernel of many instances for the findings' cost (``bench/bench_nki_findings.py`` and
``tests/nki/test_findings_semantics.py``): an ``affine_range`` loop of ``outer`` iterations
around a ``sequential_range`` loop of ``inner`` ones, each loading a narrow tile and adding it
with ``+=`` into one SBUF tile shared by every iteration (a warning: the ``+=`` carries across
the affine loop), the shape of a student's kernel of 33k instances whose findings once
outgrew 24 GB.  ``outer * inner * 2`` instances, plus two."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

WIDTH = 4


@nki.jit
def many_sums(x, out, outer=8, inner=2048):
    acc = nl.zeros((128, WIDTH), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(outer):
        for j in nl.sequential_range(inner):
            start = (i * inner + j) * WIDTH
            acc += nl.load(x[:, start:start + WIDTH])
    nl.store(out, acc)


def inputs(outer=8, inner=2048, seed=0):
    x = np.random.default_rng(seed).uniform(-1, 1, (128, outer * inner * WIDTH)).astype(np.float32)
    return {"x": x, "out": np.zeros((128, WIDTH), np.float32)}
