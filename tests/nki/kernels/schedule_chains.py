"""Three independent activations on ACT ordered by ``with_schedule`` edges (consumer, producer)
against program order: act2, then act1, then act0, whichever order the edges are listed in;
and two edges that ask for each other."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def three(a, b, c):
    results = []
    for i, x in enumerate((a, b, c)):
        t = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        o = nl.ndarray(x.shape, x.dtype, buffer=nl.sbuf)
        nisa.activation(dst=o, data=t, op=nl.exp, name=f"act{i}")
        r = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=r, src=o)
        results.append(r)
    return tuple(results)


chain_listed_first_to_last = three.with_schedule([("act0", "act1"), ("act1", "act2")])
chain_listed_last_to_first = three.with_schedule([("act1", "act2"), ("act0", "act1")])
each_after_the_other = three.with_schedule([("act0", "act1"), ("act1", "act0")])
