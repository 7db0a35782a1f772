"""The documented ``x-`` annotations neuronsim's own tools write, checked where a program is read.

The program format keeps every ``x-`` key untouched (a tool that does not know one ignores it),
but the keys of ``docs/program-format.md``'s table are read back by neuronsim itself: a kernel
line names a finding (``x-source``), the scheduler picks an engine (``x-engines``), ``dep-opt``
falls back to a total order (``x-too-many-spills``).  A malformed value there would be read
some other way in silence (``"x-engines": "dve"`` as the engines ``d``, ``v`` and ``e``), or
trip its reader (``"x-spill": "zz"`` was an internal error in ``dma-place``, exit 3: probe_al),
so each is checked for its documented shape, at its JSON path, when the program is loaded.

>>> try:
...     check_annotations({"x-engines": ["dve", "gpu"]}, "body[2]", "instruction")
... except ProgramError as err:
...     print(err.path, "|", err.message)
body[2].x-engines[1] | unknown engine 'gpu'; expected one of pe, act, dve, pool, sp
>>> check_annotations({"x-source": {"file": "k.py", "line": 7, "indices": {"i": 3}}}, "body[0]", "instruction")
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from neuronsim.machine.ir.errors import ProgramError, join_path
from neuronsim.machine.ir.program import SEQUENCERS

__all__ = ["check_annotations"]


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _integer(value: Any, path: str, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        raise ProgramError(path, f"expected {what}, a whole number >= 0, got {_show(value)}")


def _text(value: Any, path: str) -> None:
    if not isinstance(value, str) or not value:
        raise ProgramError(path, f"expected a non-empty string, got {_show(value)}")


def _object(value: Any, path: str, keys: Mapping[str, bool]) -> dict:
    """``value`` as an object whose keys are among ``keys`` (those mapped to True required)."""
    if not isinstance(value, dict):
        raise ProgramError(path, f"expected an object, got {_show(value)}")
    for key in value:
        if key not in keys and not key.startswith("x-"):
            raise ProgramError(join_path(path, key), f"unknown key; expected one of {sorted(keys)}")
    for key, required in keys.items():
        if required and key not in value:
            raise ProgramError(join_path(path, key), "missing")
    return value


def _source(value: Any, path: str) -> None:
    """``{"file", "line", "call"?, "indices"?, "variable"?}``: a kernel line (line 0: the file)."""
    found = _object(value, path, {"file": True, "line": True, "call": False, "indices": False, "variable": False})
    _text(found["file"], join_path(path, "file"))
    _integer(found["line"], join_path(path, "line"), "a line number")
    for key in ("call", "variable"):
        if found.get(key) is not None:
            _text(found[key], join_path(path, key))
    if "indices" in found:
        indices = found["indices"]
        if not isinstance(indices, dict):
            raise ProgramError(join_path(path, "indices"), f"expected an object, got {_show(indices)}")
        for name, index in indices.items():  # a value as the kernel's frame held it: any scalar
            if isinstance(index, (dict, list)):
                raise ProgramError(join_path(join_path(path, "indices"), name),
                                   f"expected a loop index or a kept loop's name, got {_show(index)}")


def _engines(value: Any, path: str) -> None:
    if not isinstance(value, list) or not value:
        raise ProgramError(path, f"expected a list of engines, got {_show(value)}")
    for k, engine in enumerate(value):
        if engine not in SEQUENCERS:
            raise ProgramError(join_path(path, k), f"unknown engine {_show(engine)}; expected one of "
                                                   f"{', '.join(SEQUENCERS)}")


def _core(value: Any, path: str) -> None:
    found = _object(value, path, {"rank": True, "epoch": False, "ranks": False})
    _integer(found["rank"], join_path(path, "rank"), "a rank")
    if "epoch" in found:
        _integer(found["epoch"], join_path(path, "epoch"), "an epoch")
    if "ranks" in found:
        _flag(found["ranks"], join_path(path, "ranks"))


def _list_of(what: str, check_item: Callable[[Any, str], None]) -> Callable[[Any, str], None]:
    """A list of ``what``, each item checked by ``check_item`` at its index."""
    def check(value: Any, path: str) -> None:
        if not isinstance(value, list):
            raise ProgramError(path, f"expected a list of {what}, got {_show(value)}")
        for k, item in enumerate(value):
            check_item(item, join_path(path, k))
    return check


_scope = _list_of("loop names", _text)


def _flag(value: Any, path: str) -> None:
    if not isinstance(value, bool):
        raise ProgramError(path, f"expected true or false, got {_show(value)}")


def _depth(value: Any, path: str) -> None:
    _integer(value, path, "a loop depth")


def _marks(second: str, check_second: Callable[[Any, str], None]) -> Callable[[Any, str], None]:
    """A list of ``[run, SECOND, iteration]`` triples: the legacy loops the trace unrolled
    around an instruction (``x-in-order``: the kept loops' depth; ``x-nki-unrolled-affine``:
    the loop's variable)."""
    def check(value: Any, path: str) -> None:
        if not isinstance(value, list):
            raise ProgramError(path, f"expected a list of [run, {second}, iteration], got {_show(value)}")
        for k, mark in enumerate(value):
            at = join_path(path, k)
            if not isinstance(mark, list) or len(mark) != 3:
                raise ProgramError(at, f"expected [run, {second}, iteration], got {_show(mark)}")
            _integer(mark[0], join_path(at, 0), "a run")
            check_second(mark[1], join_path(at, 1))
            _integer(mark[2], join_path(at, 2), "an iteration")
    return check


def _spill(value: Any, path: str) -> None:
    """``{"tensor", "kind": "store" | "reload", "rematerialised"?}``: a transfer ``alloc`` added."""
    found = _object(value, path, {"tensor": True, "kind": True, "rematerialised": False})
    _text(found["tensor"], join_path(path, "tensor"))
    if found["kind"] not in ("store", "reload"):
        raise ProgramError(join_path(path, "kind"), f"expected \"store\" or \"reload\", got {_show(found['kind'])}")
    if "rematerialised" in found:
        _flag(found["rematerialised"], join_path(path, "rematerialised"))


_coordinates = _list_of("grid coordinates", lambda value, path: _integer(value, path, "a coordinate"))


def _reduced(value: Any, path: str) -> None:
    if value is not True and not isinstance(value, list):
        raise ProgramError(path, f"expected true or a list of loop names, got {_show(value)}")
    if value is not True:
        _scope(value, path)


#: Per place in the document, the annotations read back and the check of each.
_CHECKS: dict[str, dict[str, Callable[[Any, str], None]]] = {
    "instruction": {"x-source": _source, "x-engines": _engines, "x-nki-core": _core, "x-nki-program": _coordinates,
                    "x-in-order": _marks("depth", _depth), "x-nki-unrolled-affine": _marks("variable", _text),
                    "x-spill": _spill, "x-psum-spill": _spill, "x-nki-loop-reduce": _reduced},
    "tensor": {"x-source": _source, "x-nki-scope": _scope},
    "loop": {"x-fused-from": _scope, "x-unit-deps": _scope, "x-peeled-from": _text, "x-nki-range": _text},
    # x-scheduled holds the name of the pass that ordered the program (``schedule`` writes its own)
    "document": {"x-too-many-spills": _flag, "x-scheduled": _text},
}


def check_annotations(raw: Mapping[str, Any], path: str, where: str) -> None:
    """Check the documented annotations of ``raw`` (an instruction, a tensor, a loop or the
    document, as ``where`` says) at ``path``; a malformed one is a :class:`ProgramError` at its key."""
    for key, check in _CHECKS[where].items():
        if key in raw:
            check(raw[key], join_path(path, key))
