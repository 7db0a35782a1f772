"""``nl.shared_identity_matrix`` in the current API is "an identity matrix in SBUF" (its API
page), shared per size and dtype: a kernel may hand it to ``nc_matmul`` as an operand, as
nki-library's moe_tkg does.  The legacy API keeps it in HBM (its kernels ``nl.load`` it)."""

from __future__ import annotations

import numpy as np

from neuronsim.machine.ir.program import MemoryKind
from neuronsim.machine.nki import trace
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_the_identity_is_one_shared_sbuf_tile_an_operand_of_matmul():
    col = f32(16, 1)
    kern = kernel("moe_family_identity.py::transpose_column_twice")
    traced = trace(kern, col)
    matmuls = [inst for inst, _ in traced.program.instructions() if inst.op == "matmul"]
    moving = {inst.reads[1].tensor for inst in matmuls}
    assert len(matmuls) == 2 and len(moving) == 1  # both requests name one tile
    assert traced.program.tensors[moving.pop()].memory == MemoryKind.SBUF
    loads = [inst for inst, _ in traced.program.instructions() if inst.op == "dma_copy"
             and any(traced.program.tensors[a.tensor].memory == MemoryKind.DRAM and a.tensor.startswith("const")
                     for a in inst.reads)]
    assert len(loads) == 1  # the constant is brought on chip once
    out = run(kern, col)["return0"]
    np.testing.assert_allclose(out, np.repeat(col.T, 2, axis=0), rtol=1e-6)


def test_the_legacy_identity_stays_in_hbm():
    import neuronsim.machine.nki.language as language
    from neuronsim.machine.nki.tracer import Tracer

    buffers = {}
    for generation in ("legacy", "current"):
        with Tracer("k", "trn1", generation, (1,), frozenset()).active():
            buffers[generation] = language.shared_identity_matrix(8, dtype="float32").buffer
    assert buffers == {"legacy": "hbm", "current": "sbuf"}
