"""HBM tensors a kernel declares: one per declaration, shared by the kernel's instances or each
instance's own.

A kernel declares an HBM tensor at a line, and every instance (a program of an SPMD grid, a core
of an LNC=2 launch) runs that line: the declaration is known by the line and how many times the
instance has reached it (:meth:`Tracer.hbm_site`).  What the instances then hold depends on the
buffer, as the ``nki.language`` pages and the SDK's stubs say:

* ``nl.shared_hbm``: one tensor every instance finds at the same declaration (an output each
  program writes its slice of);
* ``nl.private_hbm``, "only visible to each individual kernel instance in the SPMD grid", and
  ``nl.hbm``, "alias of private_hbm": each instance its own tensor (a scratch two programs
  would otherwise overwrite for each other);
* a launch on several ranks (devices): each rank's HBM is its own whatever the buffer.

Kernels return outputs declared ``nl.hbm`` (Stanford CS149's, some on a grid): what the
framework hands back is the one output every instance wrote its part of, so a private
declaration whose tensor the kernel returns is traced again shared (:class:`SharePrivate`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from math import prod
from typing import Any

__all__ = ["HbmTensors", "SharePrivate", "hbm_tensor", "private_returned"]

#: The buffers each instance holds its own tensor of.
PRIVATE_KINDS = ("hbm", "private_hbm")


@dataclass
class HbmTensors:
    """The HBM tensors of a trace by declaration key; ``shared``: private declarations (their
    line and count) traced as shared because the kernel returns them; ``private``: the name of
    each instance's own tensor and its declaration."""

    tensors: dict[tuple, Any] = field(default_factory=dict)
    shared: frozenset[tuple] = frozenset()
    private: dict[str, tuple] = field(default_factory=dict)


class SharePrivate(Exception):  # noqa: N818  (a request to trace again, not an error)
    """Raised when a kernel returns an instance's own HBM tensor: trace again with ``sites``
    (private declarations) shared."""

    def __init__(self, sites: frozenset[tuple]) -> None:
        super().__init__(sites)
        self.sites = sites


def hbm_tensor(tracer: Any, buffer: str, name: str, declare: Callable[[], Any]) -> Any:
    """The HBM tensor of this declaration (the kernel's current line) for the current instance:
    the one found before under its key, else ``declare()``'s."""
    site = tracer.hbm_site(tracer.where()[0])
    key: tuple = site
    if tracer.ranks > 1:  # each rank's HBM is its own
        key = (*site, tracer.cores.rank())
    elif buffer in PRIVATE_KINDS and site not in tracer.hbm.shared:
        if tracer.cores is not None:
            key = (*site, "core", tracer.cores.rank())
        elif prod(tracer.grid) > 1:
            key = (*site, "program", tuple(tracer.program_id))
    found = tracer.hbm.tensors.get(key)
    if found is None:
        found = tracer.hbm.tensors[key] = declare()
        if key != site and tracer.ranks == 1:
            tracer.hbm.private[found.layout.tensor.name] = site
        if name:
            tracer.returned_names[found.layout.tensor.name] = name
    return found


def private_returned(tracer: Any, results: Iterable[Any]) -> frozenset[tuple]:
    """The private declarations whose instance's tensor is among ``results`` (returned tiles)."""
    names = (getattr(getattr(r, "layout", None), "tensor", None) for r in results)
    return frozenset(tracer.hbm.private[t.name] for t in names if t is not None and t.name in tracer.hbm.private)
