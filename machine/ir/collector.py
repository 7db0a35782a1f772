"""The cyclic garbage collector paused around work that allocates many small acyclic objects.

Simulations, unrolled task graphs and race checks build millions of tuples and small records
and no reference cycles; Python's full collections, whose cost grows with the heap, would scan
them over and over and find nothing (performance notes, section 0), making a 1e5-task check
quadratic.  :func:`collector_paused` turns the collector off for a block and back on after it
only if it was on.

>>> import gc
>>> with collector_paused():
...     gc.isenabled()
False
>>> gc.isenabled()
True
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
