"""NKI frontend: run NKI kernels (current ``nki`` and legacy ``neuronxcc.nki`` APIs) unmodified
and trace them into neuronsim programs (see docs/nki.md).

>>> from machine.nki import load_kernel, trace, TracedKernel, NkiError, standins
"""

from machine.nki.errors import NkiError
from machine.nki.kernel import Kernel, jit
from machine.nki.loader import load_kernel
from machine.nki.standins import standins
from machine.nki.frontend import TracedKernel, simulate_kernel, trace

__all__ = ["load_kernel", "trace", "TracedKernel", "NkiError", "simulate_kernel", "standins", "Kernel", "jit"]
