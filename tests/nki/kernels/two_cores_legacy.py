"""A legacy two-core kernel swapping tiles with the pre-release ``sendrecv`` that NxD's released
LNC=2 kernels import from ``neuronxcc.nki._private.private_api`` (tests/nki/test_two_cores.py)."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
from neuronxcc.nki._private.private_api import sendrecv


@nki.jit
def max_of_both_halves(x):
    """Each core loads its own half of ``x``'s columns, swaps it with the other core's and keeps
    the larger: both halves of the output hold the elementwise maximum of the two halves."""
    out = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.shared_hbm)
    core = nl.program_id(0)
    mine = nl.load(x[:, nl.ds(core * 32, 32)])
    theirs = nl.ndarray((128, 32), dtype=x.dtype)
    sendrecv(src=mine, dst=theirs, send_to_rank=1 - core, recv_from_rank=1 - core, pipe_id=0)
    nl.store(out[:, nl.ds(core * 32, 32)], value=nl.maximum(mine, theirs))
    return out
