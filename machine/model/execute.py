"""One instruction's values: the op table's meaning of each op, from the three modules that
define them (:mod:`.semantics`, :mod:`.semantics_select`, :mod:`.semantics_mx`).

The families build on the base module's helpers; this module joins them, so no module of them
imports another that imports it back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from neuronsim.machine.model.optable import OP_TABLE
from neuronsim.machine.model.semantics import BASE_OPS, Outs, opaque
from neuronsim.machine.model.semantics_mx import OPS as _MX_OPS
from neuronsim.machine.model.semantics_select import OPS as _SELECT_OPS

__all__ = ["execute", "execute_quietly"]

_OPS = {**BASE_OPS, **_SELECT_OPS, **_MX_OPS}
assert set(_OPS) == set(OP_TABLE), "every op of the table has a meaning"


def execute(op: str, attrs: Any, engine: str, reads: Sequence[np.ndarray], outs: Outs, state: Any) -> list[np.ndarray]:
    """Values of the writes of one instruction instance.

    Parameters
    ----------
    op, attrs, engine:
        The instruction's op name, attributes and sequencer.
    reads:
        Values of its reads, in order (typed arrays in each access's element shape).
    outs:
        Live views of its writes (their shape and dtype; their contents for accumulation).
    state:
        The run's :class:`~neuronsim.machine.sim.memory.Memory` (for the engines' random generators).

    Examples
    --------
    >>> import numpy as np
    >>> out = np.zeros((2, 3), np.float32)
    >>> execute("tensor_tensor", {"op": "multiply"}, "dve", [np.ones((2, 3)), np.full((2, 3), 2.0)], [out], None)[0]
    array([[2., 2., 2.],
           [2., 2., 2.]], dtype=float32)
    """
    with np.errstate(all="ignore"):
        return execute_quietly(op, attrs, engine, reads, outs, state)


def execute_quietly(op: str, attrs: Any, engine: str, reads: Sequence[np.ndarray], outs: Outs,
                    state: Any) -> list[np.ndarray]:
    """:func:`execute` for a caller that already ignores floating-point errors
    (``np.errstate(all="ignore")`` around a whole run: entering it per instance cost a few
    per cent of a tiled matmul's sequential run, issue 31)."""
    fn = _OPS.get(op)
    if fn is None:
        return opaque(op, reads, outs)
    return fn(attrs, reads, outs, engine, state)
