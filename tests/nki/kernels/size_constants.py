"""``nki.language.constants.sizeinbytes``, as nki-samples' neuron-team convolutions size their
free dimensions (``MAX_F // sizeinbytes(img.dtype)``): it was refused, "not modelled"."""

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
from neuronxcc.nki.language.constants import sizeinbytes


@nki.jit
def copy_in_2048_byte_columns(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    width = 2048 // sizeinbytes(a.dtype)
    for j in nl.affine_range(a.shape[1] // width):
        nl.store(out[:, j * width:(j + 1) * width], nl.load(a[:, j * width:(j + 1) * width]))
    return out
