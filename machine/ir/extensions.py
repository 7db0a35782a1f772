"""The project's ``x-`` extensions of ``neuronsim.program/1`` for loop kernels.

The spec fixes version 1 and lets projects extend it under ``x-`` keys.  These extensions let a
program say what real loop kernels need without unrolling them.  Each one only *relaxes* a
plain reading: a tool that ignores them waits more or places more conservatively, never less.

``x-distance`` (dep, with ``loop_carried``)
    ``{"on": "B", "loop_carried": true, "x-distance": 2}`` waits on the instances of B two
    iterations back in the loops enclosing both (the lexicographic predecessor taken twice),
    and on nothing in the first two iterations.  1 is plain ``loop_carried``.
``x-iterations`` (dep)
    ``{"on": "B", "x-iterations": {"k": [1, 8]}}``: the dep applies only at the instances whose
    index on loop ``k`` (which must enclose the waiter) lies in ``[1, 8)``; several loops
    combine with *and*.  "First iteration only" is ``[0, 1]``, "all but the first" ``[1, N]``.
    Two deps on one B merge (into the stronger kind) when they agree on ``loop_carried``,
    ``x-distance`` and ``x-iterations``.
``x-rotate`` (placed tensor)
    ``{"loop": "i", "slots": 2, "stride": 1024}``: inside loop ``i`` the tensor sits
    ``(i mod slots) * stride`` bytes after its placement (within each partition for SBUF and
    PSUM, an address offset for DRAM): a buffer with ``slots`` rotating slots, one per
    iteration (double buffering, PSUM bank rotation with ``stride`` 2048).  Every access to it
    must be inside loop ``i``; every slot must fit (a PSUM slot may not cross a bank).
``x-partitions_per_iteration`` (access)
    ``{"i": 32}``: inside loop ``i`` the access's first partition moves by 32 per iteration,
    like ``per_iteration`` moves its offset.
Non-finite numbers (attrs)
    JSON has no infinities: a numeric attribute of a known op may be written ``"inf"``,
    ``"-inf"`` or ``"nan"``; saving writes non-finite floats that way, loading reads them back.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from neuronsim.machine.ir.errors import ProgramError, join_path
from neuronsim.machine.ir.program import Rotation

__all__ = ["DEP_KEYS", "TENSOR_KEYS", "ACCESS_KEYS", "parse_distance", "parse_iterations", "parse_rotation",
           "parse_partition_steps", "dep_json", "rotation_json", "decode_number", "encode_attrs", "NON_FINITE"]

DEP_KEYS = ("x-distance", "x-iterations")
TENSOR_KEYS = ("x-rotate",)
ACCESS_KEYS = ("x-partitions_per_iteration",)
NON_FINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


#: The largest ``x-distance``, ``x-rotate`` slot count and ``x-partitions_per_iteration``
#: step read (far beyond any kernel; bounded so that nothing downstream meets a figure near
#: 2**63: the numpy index types, a loop over slots).
MAX_DISTANCE = 2**31 - 1
MAX_SLOTS = 2**16
MAX_PARTITION_STEP = 2**16
#: The largest ``x-rotate`` stride (bytes; a DRAM address offset at most).
MAX_STRIDE = 2**48


def _int(value: Any, path: str, minimum: int | None = None, maximum: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ProgramError(path, f"expected an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise ProgramError(path, f"expected an integer >= {minimum}, got {value}")
    if maximum is not None and abs(value) > maximum:
        shown = str(value) if len(str(value)) <= 30 else f"one of {len(str(abs(value)))} digits"
        raise ProgramError(path, f"expected an integer of magnitude at most {maximum:,}, got {shown}")
    return value


def parse_distance(item: Mapping[str, Any], loop_carried: bool, path: str) -> int:
    """``x-distance`` of a dep (1 when absent)."""
    if "x-distance" not in item:
        return 1
    where = join_path(path, "x-distance")
    if not loop_carried:
        raise ProgramError(where, "only a loop-carried dep has a distance (add \"loop_carried\": true)")
    return _int(item["x-distance"], where, minimum=1, maximum=MAX_DISTANCE)


def parse_iterations(item: Mapping[str, Any], path: str) -> tuple[tuple[str, int, int], ...]:
    """``x-iterations`` of a dep: ``((loop, lo, hi), ...)`` in the order given."""
    if "x-iterations" not in item:
        return ()
    where = join_path(path, "x-iterations")
    raw = item["x-iterations"]
    if not isinstance(raw, dict) or not raw:
        raise ProgramError(where, "expected an object {LOOP: [lo, hi]}")
    out = []
    for loop, bounds in raw.items():
        bpath = join_path(where, loop)
        if not isinstance(bounds, list) or len(bounds) != 2:
            raise ProgramError(bpath, "expected [lo, hi], a half-open range of iteration indices")
        lo, hi = _int(bounds[0], join_path(bpath, 0), minimum=0), _int(bounds[1], join_path(bpath, 1), minimum=1)
        if hi <= lo:
            raise ProgramError(bpath, f"empty range [{lo}, {hi})")
        out.append((loop, lo, hi))
    return tuple(out)


def parse_rotation(raw: Mapping[str, Any], path: str) -> Rotation | None:
    """``x-rotate`` of a tensor, or None."""
    if "x-rotate" not in raw:
        return None
    where = join_path(path, "x-rotate")
    value = raw["x-rotate"]
    if not isinstance(value, dict) or set(value) != {"loop", "slots", "stride"}:
        raise ProgramError(where, "expected {\"loop\": LOOP, \"slots\": N, \"stride\": BYTES}")
    loop = value["loop"]
    if not isinstance(loop, str) or not loop:
        raise ProgramError(join_path(where, "loop"), "expected a loop name")
    return Rotation(loop, _int(value["slots"], join_path(where, "slots"), minimum=1, maximum=MAX_SLOTS),
                    _int(value["stride"], join_path(where, "stride"), minimum=0, maximum=MAX_STRIDE))


def parse_partition_steps(raw: Mapping[str, Any], path: str) -> tuple[tuple[str, int], ...]:
    """``x-partitions_per_iteration`` of an access."""
    if "x-partitions_per_iteration" not in raw:
        return ()
    where = join_path(path, "x-partitions_per_iteration")
    value = raw["x-partitions_per_iteration"]
    if not isinstance(value, dict):
        raise ProgramError(where, "expected an object {LOOP: PARTITIONS}")
    return tuple((loop, _int(step, join_path(where, loop), maximum=MAX_PARTITION_STEP)) for loop, step in value.items())


def dep_json(distance: int, loop_carried: bool, iterations: tuple[tuple[str, int, int], ...]) -> dict[str, Any]:
    """The extension keys of a dep (empty for a plain one)."""
    out: dict[str, Any] = {}
    if loop_carried and distance != 1:
        out["x-distance"] = distance
    if iterations:
        out["x-iterations"] = {loop: [lo, hi] for loop, lo, hi in iterations}
    return out


def rotation_json(rotation: Rotation) -> dict[str, Any]:
    return {"x-rotate": {"loop": rotation.loop, "slots": rotation.slots, "stride": rotation.stride}}


def decode_number(value: Any) -> Any:
    """``"inf"``, ``"-inf"``, ``"nan"`` as floats; anything else unchanged.

    >>> decode_number("-inf"), decode_number(2), decode_number("exp")
    (-inf, 2, 'exp')
    """
    if isinstance(value, str):
        return NON_FINITE.get(value, value)
    return value


def encode_attrs(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """``attrs`` with non-finite floats written as strings (JSON has no infinities)."""
    out = {}
    for key, value in attrs.items():
        if isinstance(value, float) and not math.isfinite(value):
            value = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        out[key] = value
    return out
