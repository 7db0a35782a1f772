"""Options ``simulate`` and ``run`` share: tolerances, BLAS threads, timing only.

``--rtol`` / ``--atol`` set how far a compared value may be from the reference
(:mod:`neuronsim.machine.sim.tolerance`: beyond ``atol + rtol * |reference|`` is a difference);
``--blas-threads`` sets ``NEURONSIM_BLAS_THREADS`` for the command
(:mod:`neuronsim.machine.sim.blas`: one thread unless told, so no instruction's numerics start a
thread pool); ``--timing-only`` simulates the schedule without computing a value.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable

import click

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.sim.blas import BLAS_THREADS_ENV, DEFAULT_BLAS_THREADS, parse_blas_threads

__all__ = ["tolerance_options", "blas_option", "timing_only_option"]


def _tolerance(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    if value is not None and (not math.isfinite(value) or value < 0):
        raise click.BadParameter(f"expected a finite number >= 0, got {value}")
    return value


def tolerance_options(rtol_help: str, atol_help: str) -> Callable:
    """``--rtol`` and ``--atol`` (None when not given: the command's documented default)."""
    def decorate(fn: Callable) -> Callable:
        fn = click.option("--atol", type=float, callback=_tolerance, metavar="X", help=atol_help)(fn)
        return click.option("--rtol", type=float, callback=_tolerance, metavar="X", help=rtol_help)(fn)
    return decorate


def _blas(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        try:
            parse_blas_threads(value, "--blas-threads")
        except ProgramError as err:
            raise click.BadParameter(err.message) from None
        os.environ[BLAS_THREADS_ENV] = value  # the simulator reads it where it computes (and in workers)
    return value


def blas_option(fn: Callable) -> Callable:
    """``--blas-threads N|default``."""
    return click.option("--blas-threads", "blas_threads", callback=_blas, expose_value=False, metavar="N|default",
                        help=f"BLAS threads while simulating values (default {DEFAULT_BLAS_THREADS}, or "
                             f"${BLAS_THREADS_ENV}; 'default': the BLAS library's own).")(fn)


def timing_only_option(fn: Callable) -> Callable:
    """``--timing-only``."""
    return click.option("--timing-only", is_flag=True,
                        help="Simulate the schedule alone: the makespan and per-engine figures, no values "
                             "computed or compared.")(fn)
