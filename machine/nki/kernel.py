"""Kernel objects: ``@nki.jit`` / ``@nki.baremetal`` / ``@nki.benchmark`` and SPMD grids.

A decorated kernel is a :class:`Kernel`; ``kernel[g0, g1]`` is the same kernel launched on a
grid (the instances run one after another, see :mod:`neuronsim.machine.nki.frontend`).  Called inside a
trace a kernel is a plain function call (a kernel calling another); called outside one with
numpy arrays it runs as ``nki.simulate_kernel`` would.
"""

from __future__ import annotations

import ast
import functools
import linecache
import sys
from typing import Any

from neuronsim.machine.nki import tracer
from neuronsim.machine.ir.source import shown_path
from neuronsim.machine.nki.errors import NkiError, line_of
from neuronsim.machine.nki.frames import mark_kernel_call
from neuronsim.machine.nki.kernel_range import legacy_range
from neuronsim.machine.nki.indexing import concrete

__all__ = ["Kernel", "HostLaunch", "jit", "launch_hint", "launched", "unwrap", "schedule_of", "simulation_mode",
           "set_eager_runner", "run_eagerly"]

#: How a kernel called outside a trace runs: set by :mod:`neuronsim.verify.nki.simulate` (placing
#: tiles needs the allocation pass, which this package, below the passes, cannot import).
_EAGER_RUNNER: list[Any] = []


def set_eager_runner(runner: Any) -> None:
    """Make ``runner(kernel, *args, **kwargs)`` what a kernel called outside a trace does."""
    _EAGER_RUNNER[:] = [runner]


def run_eagerly(kernel: Any, *args: Any, **kwargs: Any) -> Any:
    """Run ``kernel`` on numpy arrays as NKI's ``simulate_kernel`` does (see :func:`set_eager_runner`)."""
    if not _EAGER_RUNNER:
        raise NkiError(getattr(unwrap(kernel)[0], "__qualname__", "kernel"),
                       "a kernel called outside a trace runs on neuronsim's simulator: import "
                       "neuronsim.verify.nki.simulate (simulate_kernel) first, or trace() it")
    return _EAGER_RUNNER[0](kernel, *args, **kwargs)


class Kernel:
    """An NKI kernel function and its launch grid."""

    def __init__(self, func: Any, grid: tuple[int, ...] = (), options: dict | None = None) -> None:
        self.func = func
        self.grid = grid
        self.options = options or {}
        functools.update_wrapper(self, func)

    def __getitem__(self, grid: Any) -> Kernel:
        grid = grid if isinstance(grid, tuple) else (grid,)
        return Kernel(self.func, tuple(concrete(g, "a grid size") for g in grid), self.options)

    def with_schedule(self, edges: Any, kind: Any = None) -> Kernel:
        """``kernel.with_schedule([("plus1", "recip"), ...])`` (NKI 0.2+): the same kernel with
        extra order edges between its named ``nisa`` calls, each ``(consumer, producer)`` or
        ``(consumer, [producers])`` (:mod:`neuronsim.machine.nki.schedule` applies them to the
        traced program); ``kind``: a ``nisa.dependency``."""
        site = line_of(sys._getframe(1))
        previous = self.options.get("schedule", ())
        return Kernel(self.func, self.grid, {**self.options, "schedule": (*previous, (edges, kind, site))})

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if tracer.tracing():
            active = tracer.current()
            if self.grid:
                if active.host_wrapper and not active.kb.emitted:  # `return _kernel[n](q, k, v)`: the launch
                    raise HostLaunch(self, args, kwargs, line_of(sys._getframe(1)))
                raise active.refuse("launching an SPMD grid from inside a kernel", launch_hint(self))
            if active.host_wrapper:  # a host function calls the kernel: the kernel's API rules from here
                active.generation = active.host_wrapper(self.func)
                with legacy_range(self.func, active):
                    return self.func(*args, **kwargs)
            return self.func(*args, **kwargs)
        return run_eagerly(self, *args, **kwargs)

    def __repr__(self) -> str:
        return f"<NKI kernel {self.func.__qualname__}{list(self.grid) if self.grid else ''}>"


mark_kernel_call(Kernel.__call__.__code__)  # a host function's call of a kernel: the kernel's top level below


class HostLaunch(Exception):  # noqa: N818  (a request to trace again, not an error)
    """Raised when the function traced is a host wrapper (no ``@nki.jit`` of its own) whose
    first act is to launch a kernel on a grid, ``return _kernel[n](q, k, v)``, as users write
    the entry point of an SPMD kernel: :func:`~neuronsim.machine.nki.frontend.trace` traces
    that launch instead (``site``: the wrapper's line)."""

    def __init__(self, kernel: Kernel, args: tuple, kwargs: dict, site: Any) -> None:
        super().__init__(kernel.func.__name__)
        self.kernel, self.args, self.kwargs, self.site = kernel, args, kwargs, site


def launch_hint(kernel: Kernel) -> str:
    """How to run a launched kernel on its own: ``FILE.py::NAME --grid N``, the file named as
    the error's location names it (relative to the working folder when inside it), so that
    the command runs from where the user ran theirs."""
    code = getattr(kernel.func, "__code__", None)
    where = f"{shown_path(code.co_filename)}::{kernel.func.__name__}" if code else "the kernel"
    return f"run the launched kernel itself at top level: {where} --grid {'x'.join(map(str, kernel.grid))}"


def launched(launch: HostLaunch, active: Any, wrapper: Any) -> tuple[Kernel, tuple, dict]:
    """The kernel a host wrapper launches, with the arguments the trace gives it: the arrays
    the wrapper was given, and plain values.  Refused at the wrapper's line (with the command
    that runs the launched kernel itself) unless the launch is what the wrapper returns, on one
    line, and each argument is one of those: anything else the wrapper does would be lost."""
    def refused(why: str) -> NkiError:
        return NkiError(str(launch.site), f"launching an SPMD grid from inside a kernel is not supported ({why}: "
                                          f"{launch_hint(launch.kernel)})")

    text = linecache.getline(launch.site.path or launch.site.file, launch.site.line).strip()
    try:
        statement = ast.parse(text).body
    except SyntaxError:
        statement = []
    if not (len(statement) == 1 and isinstance(statement[0], ast.Return) and isinstance(statement[0].value, ast.Call)
            and isinstance(statement[0].value.func, ast.Subscript)):
        raise refused(f"{getattr(wrapper, '__name__', 'the function')} does more than return the launch")

    def given(value: Any) -> Any:
        if id(value) in active.parameters:
            return active.parameters[id(value)]
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        raise refused("the launch is given a value the wrapper made, not one of its own arguments")

    return (launch.kernel, tuple(given(a) for a in launch.args),
            {key: given(value) for key, value in launch.kwargs.items()})


def jit(fn: Any = None, **options: Any) -> Any:
    """``@nki.jit`` or ``@nki.jit(mode=..., ...)`` (options are accepted and ignored)."""
    if fn is None:
        return lambda f: Kernel(f, (), options)
    if not callable(fn):  # (@nki.jit(1): a kernel of 1, an internal error when traced: a probe)
        raise NkiError(line_of(sys._getframe(1)), f"nki.jit({fn!r}): it takes the kernel function, and its "
                                                  "options by keyword (@nki.jit, @nki.jit(mode=...))")
    return Kernel(fn, (), options)


def unwrap(kernel: Any) -> tuple[Any, tuple[int, ...]]:
    """The Python function and grid of a kernel, a decorated kernel or a plain function."""
    grid: tuple[int, ...] = ()
    while isinstance(kernel, Kernel):
        grid = grid or kernel.grid
        kernel = kernel.func
    return kernel, grid


def schedule_of(kernel: Any) -> tuple[Any, ...]:
    """The ``with_schedule`` calls made on ``kernel`` (``(edges, kind, site)`` each)."""
    while isinstance(kernel, Kernel):
        if kernel.options.get("schedule"):
            return kernel.options["schedule"]
        kernel = kernel.func
    return ()


def platform_of(kernel: Any) -> str | None:
    """The ``platform_target`` a kernel was jitted for (``@nki.jit(platform_target="trn2")``), if any."""
    while isinstance(kernel, Kernel):
        if kernel.options.get("platform_target"):
            return str(kernel.options["platform_target"])
        kernel = kernel.func
    return None


def simulation_mode(kernel: Any) -> bool:
    """True for a legacy ``@nki.jit(mode="simulation")`` kernel: NKI's simulator runs it and hands
    back the values of whatever it returns, on-chip tiles included (the SDK's ``range_select``
    test returns an SBUF tile and compares it with numpy)."""
    while isinstance(kernel, Kernel):
        if kernel.options.get("mode") == "simulation":
            return True
        kernel = kernel.func
    return False
