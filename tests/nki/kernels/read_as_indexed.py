"""A view read as a dtype of another element size, then indexed in the elements of the dtype
read (nki-samples' rmsnorm quantization, ``t[g].view(nl.uint8)[:, :4]``)."""

from neuronxcc import nki
import neuronxcc.nki.language as nl


@nki.jit
def second_float_bytes(x, first=4, last=8):  # x (128, 2) float32: the bytes of its second column
    out = nl.ndarray((128, last - first), dtype=nl.uint8, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=t.view(nl.uint8)[:, first:last])
    return out


@nki.jit
def bytes_by_reinterpret_cast(x):  # NKI 0.7's NkiTensor.reinterpret_cast, listed beside view
    out = nl.ndarray((128, 8), dtype=nl.uint8, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(x).reinterpret_cast(nl.uint8))
    return out
