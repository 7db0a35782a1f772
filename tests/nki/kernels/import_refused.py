"""Real names neuronsim does not model, imported and not used (they import as NKI's do), and
one that is used (refused at its line); a harness import from ``neuronxcc.starfish``."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc.nki.isa import sendrecv
from neuronxcc.nki.language import atomic_rmw  # noqa: F401
from neuronxcc.starfish.support.util import allclose  # noqa: F401


@nki.jit
def copy_only(x, out):
    nl.store(out, nl.load(x))


@nki.jit
def uses_sendrecv(x, out):
    t = nl.load(x)
    sendrecv(src=t, dst=t, send_to_rank=1, recv_from_rank=1, pipe_id=0)
    nl.store(out, t)


@nki.jit
def misspelled(x, out):
    nl.store(out, nisa.tensor_copyy(nl.load(x)))
