"""Real names neuronsim does not model, imported and not used (they import as NKI's do), and
one that is used (refused at its line); a harness import from ``neuronxcc.starfish``."""

import numpy as np

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc.nki.isa import nc_stream_shuffle
from neuronxcc.nki.language import gather_flattened  # noqa: F401
from neuronxcc.starfish.support.util import allclose  # noqa: F401


@nki.jit
def copy_only(x, out):
    nl.store(out, nl.load(x))


@nki.jit
def uses_shuffle(x, out):
    t = nl.load(x)
    nl.store(out, nc_stream_shuffle(t, shuffle_mask=np.arange(32)))


@nki.jit
def misspelled(x, out):
    nl.store(out, nisa.tensor_copyy(nl.load(x)))
