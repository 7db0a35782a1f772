"""NKI frontend: run NKI kernels (current ``nki`` and legacy ``neuronxcc.nki`` APIs) unmodified
and trace them into neuronsim programs (see docs/nki.md).

>>> from neuronsim.machine.nki import load_kernel, trace, TracedKernel, NkiError, standins
"""

from neuronsim.machine.nki.errors import NkiError, TraceTooLarge
from neuronsim.machine.nki.kernel import Kernel, jit
from neuronsim.machine.nki.loader import load_kernel
from neuronsim.machine.nki.standins import importing, standins
from neuronsim.machine.nki.frontend import TracedKernel, trace
from neuronsim.machine.nki.watch import TraceStalled, watched

__all__ = ["load_kernel", "trace", "TracedKernel", "NkiError", "TraceTooLarge", "standins", "importing", "Kernel",
           "jit", "watched", "TraceStalled"]
