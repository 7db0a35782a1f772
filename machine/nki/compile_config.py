"""The per-kernel configuration of ``nki.compiler`` (NKI 0.7 on): ``CompileConfig`` and
``SpecializationConfig``, passed as ``@nki.jit(compile_config=..., specialization_config=...)``,
and the enums their options take.

The documentation (the ``nki.compiler`` API pages and the CompileConfig reference and
troubleshooting pages, 2026-11) describes options that choose how neuronx-cc or NKI itself
allocates and schedules the kernel after it is traced.  They change nothing in the trace, and
neuronsim's compiler model is its own (``TRACED_PIPELINE``), so a kernel that sets them loads
and runs as one that does not.  What the configuration itself refuses before compilation, the
troubleshooting page's configuration errors, is refused here the same way: an enum option given
anything but a member of its enum (``TypeError``), and ``scheduling=True`` without
``allocation=Allocation.LINEAR`` (``ValueError``), so the kernel's file and line are named.

>>> CompileConfig(allocation=Allocation.LINEAR, prefetch_auto=True).prefetch_auto
True
>>> CompileConfig(allocation="LINEAR")
Traceback (most recent call last):
TypeError: allocation must be an nki.compiler.Allocation, got 'LINEAR'
"""

from __future__ import annotations

import enum
from typing import Any

__all__ = ["compiler_config_names", "CompileConfig", "SpecializationConfig", "Allocation", "AllocationMode",
           "OptLevel", "SchedulingHeuristic", "AddressRotation"]


class Allocation(enum.Enum):
    """Who places the tiles: ``COLORING`` (neuronx-cc, after the trace) or ``LINEAR`` (NKI, by
    linear scan, first write to last read)."""
    COLORING = "coloring"
    LINEAR = "linear"


class AllocationMode(enum.Enum):
    """How NKI's allocation picks an address (``experimental_allocation_mode``)."""
    RING = "ring"
    FAST = "fast"
    MAX_REUSE = "max_reuse"


class OptLevel(enum.Enum):
    O0 = 0
    O1 = 1
    O2 = 2


class SchedulingHeuristic(enum.Enum):
    """How NKI's scheduling picks the next ready instruction (``experimental_scheduling_heuristic``)."""
    ASAP = "asap"
    CRITICAL_PATH = "critical_path"
    DMA_PREFETCH = "dma_prefetch"
    TRIVIAL = "trivial"


class AddressRotation(enum.Enum):
    AUTO = "auto"
    ENABLE = "enable"
    DISABLE = "disable"


#: The options whose value is an enum member (None too, where the page allows "or None").
_ENUM_OPTIONS: dict[str, tuple[type[enum.Enum], bool]] = {
    "allocation": (Allocation, True), "opt_level": (OptLevel, False), "address_rotation": (AddressRotation, False),
    "experimental_allocation_mode": (AllocationMode, True),
    "experimental_scheduling_heuristic": (SchedulingHeuristic, True),
}


class _Config:
    """Options by keyword, kept as attributes (an option never set reads None)."""

    def __init__(self, *args: Any, **options: Any) -> None:
        if args:
            raise TypeError(f"{type(self).__name__} takes its options by keyword")
        self.__dict__.update(options)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.__dict__.items())})"


class CompileConfig(_Config):
    """``@nki.jit(compile_config=CompileConfig(...))``: checked as the page says, then kept."""

    def __init__(self, *args: Any, **options: Any) -> None:
        super().__init__(*args, **options)
        for name, (kind, may_be_none) in _ENUM_OPTIONS.items():
            value = options.get(name)
            if name in options and not isinstance(value, kind) and not (value is None and may_be_none):
                raise TypeError(f"{name} must be an nki.compiler.{kind.__name__}, got {value!r}")
        if options.get("scheduling") and options.get("allocation") is not Allocation.LINEAR:
            raise ValueError("scheduling=True needs allocation=Allocation.LINEAR, got allocation="
                             f"{options.get('allocation')}")


class SpecializationConfig(_Config):
    """``@nki.jit(specialization_config=SpecializationConfig(...))``: kept."""


def compiler_config_names() -> dict[str, Any]:
    """The names ``nki.compiler`` adds for the per-kernel configuration."""
    return {cls.__name__: cls for cls in (CompileConfig, SpecializationConfig, Allocation, AllocationMode, OptLevel,
                                          SchedulingHeuristic, AddressRotation)}
