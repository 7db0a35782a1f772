"""``shared_hbm`` outputs made under an ``if`` (the legacy errors page's
err_shared_hbm_must_in_kernel_level, whose example branches on ``nl.program_id``): under a
test Python decides alike for every program (the shipped flash_fwd's ``if config.training:``)
the tensor is made or not by the trace; under one on the program's coordinates it is refused."""

from neuronxcc import nki
import neuronxcc.nki.language as nl


@nki.jit
def with_optional_output(x, training=True):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    if training:
        stats = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=t)
    if training:
        nl.store(stats, value=nl.multiply(t, 2.0))
        return out, stats
    return out


@nki.jit
def per_program_output(x):
    pid = nl.program_id(0)
    first = pid == 0
    if first:
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x))
    return out
