"""neuronsim for kernel authors, installed as ``neuronsim.nki``: a drop-in for NKI's simulator
in a kernel's tests (:func:`simulate_kernel`, :func:`simulate`, :class:`KernelFinding`), the
pytest plugin behind ``pytest --neuronsim`` (:mod:`.pytest_plugin`), a kernel's line profile
(:mod:`.line_profile`), two variants side by side (:mod:`.compare`) and the machine-readable
verdict ``neuronsim.run/1`` (:mod:`.verdict`).  ``docs/kernel-authors.md`` walks through them.

The names load when first used: pytest imports this package for its plugin in every session
of an environment that has neuronsim, and a session without ``--neuronsim`` should not pay for
numpy, simpy and the passes.

>>> from neuronsim.nki import KernelFinding
>>> issubclass(KernelFinding, AssertionError)
True
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["simulate_kernel", "simulate", "KernelFinding", "run_verdict", "profile_kernel", "compare_kernels"]

_HOME = {"simulate_kernel": "dropin", "simulate": "dropin", "KernelFinding": "dropin", "run_verdict": "verdict",
         "profile_kernel": "line_profile", "compare_kernels": "compare"}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'neuronsim.nki' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value
