"""``nki.language``'s SPMD and loop names: a kernel instance's place in its launch grid
(``nl.program_id``, ``nl.num_programs``, the legacy ``nl.spmd_dim`` / ``nl.nc``), the loop
ranges NKI keeps or unrolls (``nl.affine_range``, ``nl.sequential_range``,
``nl.static_range``; each a loop of the tracer, :meth:`~neuronsim.machine.nki.tracer.Tracer.loop`)
and ``nl.no_reorder``.  Shared by both API generations (:mod:`neuronsim.machine.nki.lang_names`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from neuronsim.machine.nki import ops
from neuronsim.machine.nki.errors import fail, shown
from neuronsim.machine.nki.indexing import SymIndex
from neuronsim.machine.nki.tracer import current
from neuronsim.machine.build.views import is_int

__all__ = ["program_id", "num_programs", "nc", "spmd_dim", "program_ndim", "affine_range", "sequential_range",
           "static_range", "no_reorder", "reduced_loops"]


# -- SPMD ----------------------------------------------------------------------------------
def program_id(axis: int = 0) -> int:
    if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise fail(f"nl.program_id({shown(axis)}): the axis is an integer")
    return current().program_id_of(int(axis))


def num_programs(axes: Any = None) -> int:
    """Programs along ``axes`` (an axis or a tuple of axes; all of the grid when None)."""
    grid = current().grid
    if axes is None:
        return int(np.prod(grid)) if grid else 1
    picked = axes if isinstance(axes, (tuple, list)) else (axes,)
    for axis in picked:  # as nl.program_id refuses them (a string was an internal error, 5 was 1: probe_bf)
        if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
            raise fail(f"nl.num_programs({shown(axes)}): an axis is an integer")
        if not 0 <= axis < max(len(grid), 1):
            raise fail(f"nl.num_programs({shown(axes)}): the grid has {len(grid)} dimensions")
    return int(np.prod([grid[int(a)] if int(a) < len(grid) else 1 for a in picked]))


def nc(n: int) -> int:
    """Legacy ``nl.nc(n)``: a grid dimension spread over ``n`` physical cores; neuronsim runs
    every instance on one core, so it is a dimension of ``n``."""
    return int(n)


def spmd_dim(*sizes: int) -> int:
    """Legacy ``nl.spmd_dim(a, nl.nc(b))``: one grid dimension tiled into sub-dimensions (its
    size is their product; the instances run one after another on one core)."""
    return int(np.prod([int(s) for s in sizes]))


def program_ndim() -> int:
    return len(current().grid)


# -- loops ---------------------------------------------------------------------------------
def _bounds(start: Any, stop: Any, step: Any) -> tuple[Any, ...]:
    return (start,) if stop is None and step == 1 else (0 if stop is None else start, start if stop is None else stop,
                                                        step)


def affine_range(start: Any, stop: Any = None, step: Any = 1, **_kw: Any):
    return current().loop("affine", _bounds(start, stop, step))


def sequential_range(start: Any, stop: Any = None, step: Any = 1, **_kw: Any):
    return current().loop("sequential", _bounds(start, stop, step))


def static_range(start: Any, stop: Any = None, step: Any = 1, **_kw: Any):
    return current().loop("static", _bounds(start, stop, step))


@contextmanager
def no_reorder(*_args: Any, **_kw: Any) -> Iterator[None]:
    """``with nl.no_reorder():``: the block's instructions run in the kernel's order, which
    the compiler keeps; each waits (an ``ordered`` dep) for the one before it in the block
    (:func:`~neuronsim.machine.nki.ops.in_program_order`).  As a loop's ``directives=`` it
    is never entered and orders nothing."""
    tracer = current()
    tracer.flush()
    start = tracer.kb.mark()
    yield
    tracer.flush()
    tracer.kb.replace_since(start, ops.in_program_order(tracer.kb.emitted_since(start)))


def reduced_loops(loop_indices: Any) -> list[str] | bool:
    """The enclosing loops an ``nl.loop_reduce`` names in ``loop_indices``, as the carried-value
    sweep names them (a kept loop by its name, an unrolled one by its variable: every
    variable whose value the index equals, where two loops may hold the same one); True, every
    loop, when the indices name none (what the call declared cannot be read)."""
    picked = loop_indices if isinstance(loop_indices, (list, tuple)) else [loop_indices]
    names: list[str] = []
    for index in picked:
        if isinstance(index, SymIndex):
            names.extend(name for name, _coefficient in index.index.terms)
        elif is_int(index):
            names.extend(var for var, value in current().loops if not isinstance(value, str) and value == index)
    return list(dict.fromkeys(names)) or True
