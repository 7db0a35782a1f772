"""The host a command runs on: the memory it has, and figures as people read them.

The commands refuse work that would not fit (:func:`neuronsim.verify.cli.common.guard_size`,
from :func:`neuronsim.machine.order.work_estimate.estimate_size`); what "fits" means is read here,
from the operating system: the machine's physical memory or its control group's limit when
lower (:func:`machine_memory`), what the kernel can give now (:func:`available_memory`) and
this process's virtual size (:func:`address_space`, for the address-space cap).  Each returns
None when the system does not say (then no limit applies), never raises.
"""

from __future__ import annotations

import os

from neuronsim.machine.ir.program import Program
from neuronsim.machine.ir.source import source_line
from neuronsim.machine.order.work_estimate import SizeEstimate

__all__ = ["machine_memory", "available_memory", "address_space", "format_bytes", "format_count",
           "describe_instances"]


def _cgroup_limit() -> int | None:
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path, encoding="ascii") as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:
            return int(text)
    return None


def machine_memory() -> int | None:
    """Physical memory of the machine, or its control group's limit when lower; None when
    neither can be read (then no memory limit applies)."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        total = None
    limit = _cgroup_limit()
    if total is None or total <= 0:
        return limit
    return min(total, limit) if limit is not None else total


def _proc_kib(path: str, key: str) -> int | None:
    try:
        with open(path, encoding="ascii") as fh:
            for line in fh:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def available_memory() -> int | None:
    """Memory the kernel can give now without swapping (``MemAvailable``), or None."""
    return _proc_kib("/proc/meminfo", "MemAvailable:")


def address_space() -> int | None:
    """This process's virtual size now (``VmSize``), or None."""
    return _proc_kib("/proc/self/status", "VmSize:")


def format_bytes(n: int) -> str:
    """``"1.5 GiB"``.

    >>> format_bytes(1536 * 2**20), format_bytes(512)
    ('1.5 GiB', '512 B')
    """
    if n < 1024:
        return f"{n} B"
    for power, unit in enumerate(("KiB", "MiB", "GiB", "TiB", "PiB"), start=1):
        if n < 1024 ** (power + 1):
            return f"{n / 1024 ** power:.1f} {unit}"
    return f"{format_count(n // 1024 ** 5)} PiB"


def format_count(n: int) -> str:
    """``"1,000,000"``, or ``"about 10^40"`` past 24 digits (a count of any size prints).

    >>> format_count(10**6), format_count(2**200)
    ('1,000,000', 'about 10^60')
    """
    if n < 10**24:
        return f"{n:,}"
    return f"about 10^{int(n.bit_length() * 0.30103)}"


def describe_instances(size: SizeEstimate) -> str:
    """``"1,000,000,000 instances (the most: ld with 1,000,000,000, inside loop i)"``."""
    text = f"{format_count(size.instances)} instances"
    if size.largest is not None and size.instructions > 1:
        name, count, loops = size.largest
        inside = f", inside loop{'s' if len(loops) > 1 else ''} {' x '.join(loops)}" if loops else ""
        text += f" (the most: {name} with {format_count(count)}{inside})"
    return text


def kernel_site(program: Program, size: SizeEstimate) -> str | None:
    """``file:line`` of the kernel call behind the instruction with the most instances (a
    traced kernel's ``x-source``; None for a program not traced from a kernel), so that a size
    refused names the kernel's line: ``nl.fori_loop(0, 10**9, body)`` said only the option."""
    if size.largest is None:
        return None
    for inst, _loops in program.instructions():
        if inst.name == size.largest[0]:
            return source_line(inst)
    return None
