"""BLAS threads while the simulator computes values: one per process unless told otherwise.

The functional simulator computes one instruction at a time, and an instruction's product is
small (a 128x128x512 tile is 0.4 ms on one core).  OpenBLAS, numpy's default BLAS, starts and
spins its thread pool for such products: on a busy 2-core machine a tile product then costs
tens of milliseconds instead of a fraction of one (issue 31 measured a 4096^3 matmul kernel's
``run`` at 455 s with the default threads, 29.8 s with one).  So :func:`blas_limited` holds the
BLAS pools (through threadpoolctl) at :func:`blas_threads` threads around the simulator's
numerics, and gives the process its own settings back afterwards: a user's numpy code around
a simulation keeps its threads.

``NEURONSIM_BLAS_THREADS`` sets the count: a positive integer, or ``default`` to leave the
BLAS library as it is (its own thread count, the OPENBLAS_NUM_THREADS it was started with).
``neuronsim simulate`` / ``run`` take ``--blas-threads`` for the same.

>>> with blas_limited(1):
...     pass
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from neuronsim.machine.ir.errors import ProgramError

__all__ = ["BLAS_THREADS_ENV", "DEFAULT_BLAS_THREADS", "blas_threads", "blas_limited", "parse_blas_threads"]

BLAS_THREADS_ENV = "NEURONSIM_BLAS_THREADS"
DEFAULT_BLAS_THREADS = 1

_controller = None


def parse_blas_threads(text: str, where: str = BLAS_THREADS_ENV) -> int | None:
    """``"4"`` -> 4, ``"default"`` -> None (leave BLAS alone); anything else is a located
    :class:`ProgramError` (exit 2).

    >>> parse_blas_threads("2"), parse_blas_threads(" default ")
    (2, None)
    """
    value = text.strip().lower()
    if value == "default":
        return None
    if not (value.isascii() and value.isdigit()) or int(value) < 1 or len(value) > 6:  # ('²' is a digit to isdigit)
        raise ProgramError(where, f"expected a number of threads from 1 to 999999 or 'default', got {text!r}")
    return int(value)


def blas_threads() -> int | None:
    """The BLAS threads simulations use: ``NEURONSIM_BLAS_THREADS`` or 1 (None: BLAS's own)."""
    raw = os.environ.get(BLAS_THREADS_ENV)
    return DEFAULT_BLAS_THREADS if raw is None or not raw.strip() else parse_blas_threads(raw)


def _blas_controller():
    """One threadpoolctl controller per process: finding the loaded BLAS libraries costs
    0.6 ms, a limit through a kept controller 0.06 ms (the fuzzer simulates per example)."""
    global _controller
    if _controller is None:
        import numpy  # noqa: F401 - its BLAS must be loaded before the libraries are looked up
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    return _controller


@contextmanager
def blas_limited(threads: int | None | str = "env") -> Iterator[None]:
    """Hold the BLAS pools at ``threads`` (default: :func:`blas_threads`) inside the block."""
    count = blas_threads() if threads == "env" else threads
    if count is None:
        yield
        return
    with _blas_controller().limit(limits=count, user_api="blas"):
        yield
