"""Where an instruction came from: the ``x-source`` extension, read and written as text.

A program traced from a kernel (the NKI frontend) records on every instruction the kernel
line that made it::

    "x-source": {"file": "attention.py", "line": 88, "call": "nisa.nc_matmul", "indices": {"i": 3}}

``indices`` holds the values of the (unrolled) loop variables at that point; for a loop the
program keeps, the variable names the loop instead (``{"i": "i"}``) and an instance fills in its
own index; ``"i+1"`` names a loop whose first iteration was peeled off (its index plus one).
Reports name instructions by this location when they have it, by their name when they do not
(programs written by hand print as before).

>>> from neuronsim.machine.ir.program import Instruction, frozen_mapping
>>> inst = Instruction("mm", "pe", "matmul", extras={"x-source": {"file": "attention.py", "line": 88,
...     "call": "nisa.nc_matmul", "indices": {"i": "i", "j": 2}}})
>>> source_text(inst, {"i": 3})
'nisa.nc_matmul at attention.py:88 [i=3, j=2]'
>>> source_text(inst), source_line(inst)
('nisa.nc_matmul at attention.py:88 [i=i, j=2]', 'attention.py:88')
>>> source_text(Instruction("ld", "sp", "dma_copy")) is None
True
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from neuronsim.machine.ir.program import Instruction, frozen_mapping

__all__ = ["SOURCE_KEY", "PROGRAM_KEY", "shown_path", "shown_document", "declared_name", "SourceRef", "source_of",
           "source_text", "source_line", "instance_source", "instance_label", "source_json", "bind_source"]

#: The extension key of an instruction's kernel location.
SOURCE_KEY = "x-source"
#: The extension key of the SPMD grid program (its coordinates) that issued an instruction.
PROGRAM_KEY = "x-nki-program"
#: Which core of a two-core (LNC=2) kernel issued an instruction: ``{"rank", "epoch", "ranks"}``.
CORE_KEY = "x-nki-core"


def shown_path(path: str) -> str:
    """A user's file as messages and reports name it: relative to the working folder when under
    it, else absolute.  A base name alone could name another file of the working folder (a
    kernel run from elsewhere whose helper shares a local file's name).

    >>> os.path.join("a", "k.py") == shown_path(os.path.join(os.getcwd(), "a", "k.py"))
    True
    >>> shown_path("/nowhere/k.py"), shown_path(os.path.join(os.pardir, "k.py")) == os.path.abspath("../k.py")
    ('/nowhere/k.py', True)
    """
    try:
        here = os.getcwd()
    except OSError:  # the working folder was removed under the process
        return path
    path = os.path.join(here, path)  # (an absolute path stays itself)
    # ``..`` after a symbolic link is the link target's parent, which the text's own parent is not
    # (lnk/../bad.json named another bad.json: a probe); without one the text is resolved as written
    path = os.path.realpath(path) if os.pardir in path.split(os.sep) else os.path.normpath(path)
    relative = os.path.relpath(path, here)
    return path if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative


def shown_document(source: object) -> str:
    """A document argument (a path, or ``-`` for standard input) as an error names it when no
    place inside it is at fault; "" for anything else.

    >>> shown_document("-"), shown_document(None), shown_document(os.path.join(os.getcwd(), "p.json"))
    ('-', '', 'p.json')
    """
    if not isinstance(source, str) or not source:
        return ""
    return source if source == "-" else shown_path(source)


@dataclass(frozen=True, slots=True)
class SourceRef:
    """A parsed ``x-source``: file, line, the call, and loop variable -> value or loop name."""

    file: str
    line: int
    call: str = ""
    indices: tuple[tuple[str, int | str], ...] = ()

    @property
    def where(self) -> str:
        """``file:line``."""
        return f"{self.file}:{self.line}"

    def bound(self, iteration: Mapping[str, int] | None) -> tuple[tuple[str, int | str], ...]:
        """The indices with kept loops' names replaced by ``iteration``'s values."""
        iteration = iteration or {}
        return tuple((var, _bind(value, iteration)) for var, value in self.indices)

    def text(self, iteration: Mapping[str, int] | None = None) -> str:
        """``CALL at FILE:LINE [i=3]`` (the call and the indices when known)."""
        head = f"{self.call} at {self.where}" if self.call else self.where
        indices = self.bound(iteration)
        if indices:
            head += " [" + ", ".join(f"{var}={value}" for var, value in indices) + "]"
        return head


def _bind(value: int | str, iteration: Mapping[str, int]) -> int | str:
    """A kernel index: ``value`` itself, or the iteration of the loop it names (``"i"``), plus
    the offset it adds (``"i+1"``).

    >>> _bind("i", {"i": 2}), _bind("i+1", {"i": 2}), _bind("i+1", {}), _bind(5, {"i": 2})
    (2, 3, 'i+1', 5)
    """
    if not isinstance(value, str):
        return value
    if value in iteration:
        return iteration[value]
    loop, plus, offset = value.rpartition("+")
    if plus and loop in iteration and offset.isdigit() and len(offset) <= 18:  # (a longer one stays text:
        return iteration[loop] + int(offset)  # Python will not even print a 4,301-digit int)
    return value


def source_of(inst: Instruction) -> SourceRef | None:
    """The instruction's ``x-source``, or None when absent or not of the documented shape
    (a foreign tool's value is carried, never trusted)."""
    raw = inst.extras.get(SOURCE_KEY) if inst.extras else None
    if not _is_mapping(raw):
        return None
    file, line = raw.get("file"), raw.get("line")
    if not isinstance(file, str) or not isinstance(line, int) or isinstance(line, bool):
        return None
    call = raw.get("call")
    indices = raw.get("indices")
    kept = tuple((str(k), v) for k, v in indices.items()
                 if isinstance(v, (int, str)) and not isinstance(v, bool)) if _is_mapping(indices) else ()
    return SourceRef(file, line, call if isinstance(call, str) else "", kept)


def _is_mapping(value: Any) -> bool:
    """A mapping (a plain dict answered without the ABC's subclass check: a flattened kernel's
    every instance asks, issue 31)."""
    return type(value) is dict or isinstance(value, Mapping)


def source_text(inst: Instruction, iteration: Mapping[str, int] | None = None) -> str | None:
    """:meth:`SourceRef.text` of ``inst``, or None without ``x-source``."""
    ref = source_of(inst)
    return None if ref is None else ref.text(iteration)


def source_line(inst: Instruction) -> str | None:
    """``FILE:LINE`` of ``inst``, or None."""
    ref = source_of(inst)
    return None if ref is None else ref.where


def instance_source(stream: Any, i: int) -> str | None:
    """The location of instance ``i`` of an :class:`~neuronsim.machine.order.stream.InstanceStream` (its loop
    indices filled in), or None when its instruction has no ``x-source``."""
    inst = stream.instrs[int(stream.instr[i])]
    if not inst.extras or SOURCE_KEY not in inst.extras:
        return None
    return source_text(inst, stream.iteration(i))


def instance_label(stream: Any, i: int) -> str:
    """The location of instance ``i`` when known, else its name (``mm[0]``)."""
    return instance_source(stream, i) or stream.instance_name(i)


def bind_source(extras: Mapping[str, Any], iteration: Mapping[str, int]) -> Mapping[str, Any]:
    """``extras`` with ``x-source``'s kept-loop indices replaced by ``iteration``'s values (an
    instance unrolled out of its loops keeps its location, concrete).

    >>> bind_source({"x-source": {"file": "k.py", "line": 3, "indices": {"i": "i"}}}, {"i": 2})["x-source"]
    {'file': 'k.py', 'line': 3, 'indices': {'i': 2}}
    """
    raw = extras.get(SOURCE_KEY) if extras else None
    if not iteration or not _is_mapping(raw) or not _is_mapping(raw.get("indices")):
        return extras
    indices = {k: _bind(v, iteration) for k, v in raw["indices"].items()}
    return frozen_mapping({**extras, SOURCE_KEY: {**raw, "indices": indices}})


def source_json(inst: Instruction, iteration: Mapping[str, int] | None = None) -> dict[str, Any] | None:
    """The location as a JSON object (indices bound to ``iteration``), or None."""
    ref = source_of(inst)
    if ref is None:
        return None
    return {"file": ref.file, "line": ref.line, "call": ref.call, "indices": dict(ref.bound(iteration))}


def declared_name(tensor: Any) -> str:
    """A tensor as its kernel names it: ``t (t_10, made at k.py:10)`` for a tile a trace named
    after its variable, else its name (probe_bad M-F11: a message named only ``t_10``).

    >>> from neuronsim.machine.ir.program import MemoryKind, Tensor
    >>> src = {"x-source": {"file": "k.py", "line": 10, "variable": "t"}}
    >>> declared_name(Tensor("t_10", MemoryKind.SBUF, "float32", (128, 64), extras=src))
    't (t_10, made at k.py:10)'
    """
    source = dict(tensor.extras or {}).get(SOURCE_KEY) or {}
    variable, line = source.get("variable"), source.get("line")
    if not variable or variable == tensor.name or not line:
        return tensor.name
    return f"{variable} ({tensor.name}, made at {source.get('file', '')}:{line})"
