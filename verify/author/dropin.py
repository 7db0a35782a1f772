"""NKI's simulator, with neuronsim's checks: change one import in a kernel's test.

``neuronsim.nki.simulate_kernel(kernel, *args, **kwargs)`` has the signature and the return
value of the legacy ``nki.simulate_kernel`` (the kernel's returned arrays: one, a tuple, or
None; written numpy arguments filled in place), and ``neuronsim.nki.simulate(kernel)`` those of
the current ``nki.simulate`` (a callable taking the kernel's arguments).  Both run the kernel
end to end as ``neuronsim run KERNEL.py::FUNC`` does (:func:`neuronsim.verify.nki.run.run_traced`:
NKI findings, compile, race check, four interleavings against the sequential run) and raise
one :class:`KernelFinding` naming the kernel line when anything is wrong (an exception the
kernel's own code raises, its ``assert`` included, reaches the caller as itself, as with NKI's
simulator); otherwise they hand back the simulated outputs.

>>> import numpy as np
>>> from neuronsim.machine.nki import standins
>>> with standins():
...     import nki.language as nl
...     def double(x):
...         out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
...         nl.store(out, nl.add(nl.load(x), nl.load(x)))
...         return out
>>> simulate(double)(np.ones((4, 8), np.float32))[0, :3]
array([2., 2., 2.], dtype=float32)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from neuronsim.machine.nki.errors import NkiError
from neuronsim.verify.nki.run import KernelReport, run_traced, trace_kernel
from neuronsim.verify.nki.simulate import hand_back
from neuronsim.verify.app.scenario_runs import DEFAULT_SEEDS

__all__ = ["KernelFinding", "simulate_kernel", "simulate", "checked_run", "kernel_lines"]

#: ``file.py:LINE`` inside a finding's or a race's text (the instructions' ``x-source``).
_LINE = re.compile(r"([\w./\\-]+\.py):(\d+)")


def kernel_lines(text: str) -> list[str]:
    """The ``file.py:LINE`` locations named in ``text``, first seen first, each once."""
    return list(dict.fromkeys(f"{m.group(1)}:{m.group(2)}" for m in _LINE.finditer(text)))


class KernelFinding(AssertionError):
    """A race, an NKI finding or outputs that differ between interleavings, located at the
    kernel's line.  An ``AssertionError``, so a test runner reports it as a failed check.

    ``problems`` holds every problem (one line each), ``line`` the first kernel line named,
    ``report`` the :class:`~neuronsim.verify.nki.run.KernelReport` behind it (None for a kernel
    that could not be traced: an access past its tensor, a call NKI refuses)."""

    def __init__(self, report: KernelReport | None, problems: Sequence[str]) -> None:
        self.report = report
        self.problems = tuple(problems)
        lines = [line for problem in problems for line in kernel_lines(problem)]
        self.line = lines[0] if lines else None
        said_at = self.line and problems[0].startswith(f"{self.line}: ")  # (a trace refusal says its line: probe_bd)
        head = f"{self.line}: {problems[0]}" if self.line and not said_at else problems[0]
        more = f" (and {len(problems) - 1} more: {'; '.join(problems[1:4])})" if len(problems) > 1 else ""
        super().__init__(f"{head}{more}")


def checked_run(kernel: Any, args: tuple, kwargs: dict, seeds: Sequence[int | None] = DEFAULT_SEEDS
                ) -> tuple[Any, KernelReport]:
    """Trace and run ``kernel`` end to end; ``(what NKI's simulator returns, report)``, or
    :class:`KernelFinding` when the report lists a problem."""
    try:
        traced = trace_kernel(kernel, *args, **kwargs)
    except NkiError as err:
        if err.raised is not None:  # the kernel's own assert or exception: NKI's simulator lets it through
            try:
                err.raised.add_note(f"neuronsim: raised at {err.path}")
            except TypeError:  # (its class made __notes__ something else: the exception as it is, probe_bd)
                pass
            raise err.raised from None
        raise KernelFinding(None, [str(err)]) from None  # a refusal at the kernel's line
    name = getattr(kernel, "__name__", None) or type(kernel).__name__
    kernel_kwargs = {k: v for k, v in kwargs.items() if k not in ("grid", "name", "machine")}
    report = run_traced(traced, name, kwargs=kernel_kwargs, seeds=seeds)
    problems = report.problems()
    if problems:
        raise KernelFinding(report, problems)
    return hand_back(kernel, args, kwargs, traced, dict(report.run.outputs)), report


def simulate_kernel(kernel: Any, *args: Any, **kwargs: Any) -> Any:
    """``nki.simulate_kernel(kernel, *args, **kwargs)`` (legacy API), checked (module doc)."""
    return checked_run(kernel, args, kwargs)[0]


def simulate(kernel: Any) -> Any:
    """``nki.simulate(kernel)`` (current API): a callable running ``kernel`` on its arguments,
    checked (module doc)."""
    def simulated(*args: Any, **kwargs: Any) -> Any:
        return simulate_kernel(kernel, *args, **kwargs)

    simulated.__name__ = f"simulate({getattr(kernel, '__name__', 'kernel')})"
    return simulated
