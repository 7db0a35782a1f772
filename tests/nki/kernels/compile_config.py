"""An NKI 0.7 kernel with a per-kernel configuration (the CompileConfig reference page's
example, in our words): NKI allocation, prefetching, an optimisation level and the
specialization config."""

import nki
import nki.isa as nisa
import nki.language as nl
from nki.compiler import (AddressRotation, Allocation, AllocationMode, CompileConfig, OptLevel,
                          SchedulingHeuristic, SpecializationConfig)


@nki.jit(compile_config=CompileConfig(allocation=Allocation.LINEAR, scheduling=True, opt_level=OptLevel.O2,
                                      prefetch_auto=True, address_rotation=AddressRotation.AUTO,
                                      experimental_allocation_mode=AllocationMode.RING,
                                      experimental_scheduling_heuristic=SchedulingHeuristic.CRITICAL_PATH),
         specialization_config=SpecializationConfig(allow_nested_config_override=True))
def add_one(x):
    tile = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    result = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(dst=result, data=tile, op0=nl.add, operand0=1.0)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=result)
    return out
