"""Python's ``range`` in a legacy kernel: a sequential loop, as neuronx-cc reads it.

The legacy ``nki.language.sequential_range`` page: "Inside a NKI kernel, any use of Python
range(...) will be replaced with sequential_range(...) by Neuron compiler", which "informs
Neuron compiler to respect inter-loop dependency and perform much more conservative loop-level
optimizations compared to affine_range".

While a legacy kernel is traced, its module's ``range`` is :class:`KernelRange`: the same
sequence (length, indexing, membership, equality, ``isinstance``, the same errors for bad
arguments).  A ``for`` statement directly over it is the tracer's sequential loop
(``Tracer.loop``): kept, its body traced once, where the tracer keeps loops; unrolled where the
body needs the index's value, and then Python's own loop (``break`` leaves it, the kernel's
Python state is Python's).  Any other iteration of it (a list of it, ``zip``, ``reversed``)
is Python's.  Each unrolled iteration marks the instructions recorded in it
(``extras["x-in-order"]``), which the scheduler keeps in order on each engine
(:mod:`neuronsim.passes.iteration_order`) and ``load-elim`` reads.  A module that defines its
own ``range`` keeps it; NKI 0.7 kernels keep Python's (the current API unrolls every loop
before the compiler).

>>> r = KernelRange(0, 10, 4)
>>> list(r), len(r), r[-1], 8 in r, r == range(0, 10, 4), r.step
([0, 4, 8], 3, 8, True, True, 4)
>>> isinstance(range(3), KernelRange), list(reversed(r)), r[1:], r[1:] == r[1:]
(True, [8, 4, 0], range(4, 12, 4), True)
>>> import copy, pickle
>>> copy.deepcopy(r) is r, pickle.loads(pickle.dumps(r))
(True, range(0, 10, 4))
"""

from __future__ import annotations

import dis
import linecache
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from neuronsim.machine.nki.kernel_frames import the_kernels

__all__ = ["IN_ORDER_KEY", "KernelRange", "in_order", "legacy_range", "range_length"]

#: The instruction extra: ``[[run, kept, iteration], ...]``, one per sequential loop around it
#: that the trace unrolled (outermost first); ``run`` numbers the loop's runs in the trace,
#: ``kept`` counts the program loops around that run (each of their iterations runs it again).
IN_ORDER_KEY = "x-in-order"
_FOR_RANGE = re.compile(r"^\s*for\s+[A-Za-z_]\w*\s+in\s+range\s*\(")
_GET_ITER = dis.opmap["GET_ITER"]


class _RangeType(type):
    """``isinstance(x, range)`` in a kernel holds for Python's ranges and the kernel's alike."""

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, range) or type.__instancecheck__(KernelRange, obj)  # (no hook again)


class KernelRange(metaclass=_RangeType):
    """``range(...)`` as a legacy kernel sees it (module doc): built from ``range``'s arguments;
    the class :func:`legacy_range` makes for a trace names its ``tracer``."""

    __slots__ = ("values",)
    tracer: Any = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs:
            raise the_kernels(TypeError("range() takes no keyword arguments"))
        try:
            self.values = range(*args)
        except (TypeError, ValueError) as err:  # range(2.5), range(0, 4, 0): Python's errors, the kernel's
            raise the_kernels(err) from None

    def __iter__(self) -> Iterator[int]:
        if self.tracer is None:
            return iter(self.values)
        caller = sys._getframe(1)
        if caller.f_code.co_code[caller.f_lasti] == _GET_ITER and \
                _FOR_RANGE.match(linecache.getline(caller.f_code.co_filename, caller.f_lineno)):
            # `for i in range(...)` itself (not a list, zip or comprehension of it): the compiler's
            # sequential_range, kept (its body traced once) where the tracer keeps loops, else
            # unrolled with its iterations marked (the tracer decides)
            return self.tracer.loop("python", (self.values.start, self.values.stop, self.values.step))
        return in_order(self.tracer, iter(self.values))

    def __reversed__(self) -> Iterator[int]:
        return iter(self[::-1])

    def __getitem__(self, key: Any) -> Any:
        try:
            item = self.values[key]
        except (TypeError, ValueError, IndexError, OverflowError) as err:  # range(5)[10], [::0]
            raise the_kernels(err) from None
        return type(self)(item.start, item.stop, item.step) if isinstance(item, range) else item

    def __len__(self) -> int:
        try:
            return len(self.values)
        except OverflowError as err:  # len(range(10**20)): Python's error, the kernel's
            raise the_kernels(err) from None

    def __bool__(self) -> bool:  # (by len(), range(10**20) overflowed where Python says True: probe_bd)
        return bool(self.values)

    def __contains__(self, value: Any) -> bool:
        return value in self.values

    def __eq__(self, other: object) -> bool:
        return self.values == (other if type(other) is range else getattr(other, "values", other))

    def __hash__(self) -> int:
        return hash(self.values)

    def __repr__(self) -> str:
        return repr(self.values)

    def __getattr__(self, name: str) -> Any:  # start, stop, step, index, count
        if name.startswith("__"):  # (copy and pickle probe for hooks: none but those below)
            raise AttributeError(name)
        return getattr(self.values, name)

    def __copy__(self) -> KernelRange:
        return self

    def __deepcopy__(self, _memo: dict) -> KernelRange:  # immutable: never a copy of the tracer
        return self

    def __reduce__(self) -> tuple:  # pickled as Python's range
        return range, (self.values.start, self.values.stop, self.values.step)


def in_order(tracer: Any, values: Iterator[Any]) -> Iterator[Any]:
    """``values``, each step marked as the next iteration of a new run of a sequential loop:
    what the tracer records meanwhile carries ``[run, kept, iteration]`` in its :data:`IN_ORDER_KEY`."""
    tracer.flush()  # (a call made before the loop is not its: it was marked iteration -1 of it, a JSON refused)
    tracer.in_order_runs += 1
    entry = [tracer.in_order_runs, tracer.kb.depth - 1, -1]  # (the kept loops around this run)
    (runs := tracer.in_order).append(entry)  # (this core's list: another's may be in force at its end)
    try:
        for value in values:
            entry[2] += 1
            yield value
    finally:
        runs.remove(entry)
        close = getattr(values, "close", None)
        if close is not None:  # a loop left by break / return: the inner generator's exit runs now
            close()


@contextmanager
def legacy_range(func: Any, tracer: Any) -> Iterator[None]:
    """While ``tracer`` traces a legacy kernel, its module's ``range(...)`` makes a
    :class:`KernelRange` (unless the module has a ``range`` of its own)."""
    module = getattr(getattr(func, "func", func), "__globals__", None)
    if tracer.generation != "legacy" or not isinstance(module, dict) or "range" in module:
        yield
        return

    kernel_range = _RangeType("range", (KernelRange,), {"__slots__": (), "tracer": tracer})
    module["range"] = kernel_range
    try:
        yield
    finally:
        kernel_range.tracer = None  # a range kept past the trace iterates as Python's
        if module.get("range") is kernel_range:
            del module["range"]


def range_length(values: range) -> int:
    """``len(values)``, also past the 2**63 iterations ``len`` takes (a kernel's
    ``nl.affine_range(2**64)``: refused at the instance limit, not an ``OverflowError``).

    >>> range_length(range(2**64)), range_length(range(10, 0, -3))
    (18446744073709551616, 4)
    """
    return max(0, -(-(values.stop - values.start) // values.step))
