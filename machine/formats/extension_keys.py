"""The ``x-`` keys neuronsim itself reads, checked when a program is loaded.

The format allows ``x-`` keys anywhere and leaves them alone (spec, "Document").  Some are
neuronsim's own, written by the NKI frontend or a pass and read back by a later pass or check
(``docs/program-format.md``, "Extensions"): a hand-written or edited program can carry one of
those with a value of another shape, which the reader then trips over (a ``"x-spill": "zz"``
was an internal error in ``dma-place``, exit 3: probe_al).  Each such key's value is checked
here for the shape its readers take, and a value of another shape is a located error, as any
other field's.  Keys neuronsim does not read stay unchecked.

>>> check_extensions({"x-fused-from": ["i", "j"]}, "body[0]", LOOP_KEYS)
>>> try:
...     check_extensions({"x-spill": "zz"}, "body[3]", INSTRUCTION_KEYS)
... except ProgramError as err:
...     print(err)
body[3].x-spill: expected an object {"tensor": NAME, "kind": "store" | "reload"}, got 'zz'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from neuronsim.machine.ir.errors import ProgramError, join_path

__all__ = ["INSTRUCTION_KEYS", "LOOP_KEYS", "check_extensions"]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _marks(second: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """A list of ``[run, X, iteration]`` triples (``X`` checked by ``second``)."""
    return lambda value: isinstance(value, list) and all(
        isinstance(m, list) and len(m) == 3 and _is_int(m[0]) and second(m[1]) and _is_int(m[2]) for m in value)


def _spill(value: Any) -> bool:
    return (isinstance(value, Mapping) and isinstance(value.get("tensor"), str)
            and value.get("kind") in ("store", "reload") and isinstance(value.get("rematerialised", False), bool))


#: Key -> (its check, what it expects), for the keys an instruction carries that neuronsim reads.
INSTRUCTION_KEYS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "x-in-order": (_marks(_is_int), "a list of [run, kept, iteration] integer triples"),
    "x-nki-unrolled-affine": (_marks(lambda v: isinstance(v, str)), "a list of [run, variable, iteration] triples"),
    "x-spill": (_spill, 'an object {"tensor": NAME, "kind": "store" | "reload"}'),
    "x-psum-spill": (_spill, 'an object {"tensor": NAME, "kind": "store" | "reload"}'),
    "x-engines": (lambda v: _names(v) and bool(v), "a non-empty list of engine names"),
    "x-nki-program": (lambda v: isinstance(v, list) and all(_is_int(c) for c in v), "a list of integer coordinates"),
    "x-nki-loop-reduce": (lambda v: v is True or _names(v), "true or a list of loop names"),
}
#: The same for a loop.
LOOP_KEYS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "x-fused-from": (_names, "a list of loop names"),
    "x-unit-deps": (_names, "a list of loop names"),
    "x-peeled-from": (lambda v: isinstance(v, str), "a loop name"),
    "x-nki-range": (lambda v: isinstance(v, str), "a loop kind, such as \"affine\" or \"sequential\""),
}


def check_extensions(extras: Mapping[str, Any] | None, path: Any,
                     keys: Mapping[str, tuple[Callable[[Any], bool], str]]) -> None:
    """Raise a :class:`ProgramError` at ``path.KEY`` for the first key of ``keys`` in ``extras``
    whose value is not of the shape its readers take."""
    for key, value in (extras or {}).items():
        known = keys.get(key)
        if known is not None and not known[0](value):
            shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
            raise ProgramError(join_path(path, key), f"expected {known[1]}, got {shown}")
