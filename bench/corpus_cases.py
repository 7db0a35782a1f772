"""The case table of the corpus run (``bench/bench_corpus.py``): for each kernel function of the
public NKI corpus, the arguments it is run with and, where the corpus's tests or docs say what
it computes, a numpy reference written here.

Shapes, dtypes and scalar arguments are the ones the corpus's tests or docs use (or a smaller
shape of the same structure where theirs would take minutes); the references are our own
numpy.  The corpus itself stays out of the repository: a case names a kernel by
``path/in/corpus.py::function`` and holds nothing of its code.

An array argument is written as a spec string (:func:`array`):

* ``"f32[128,512]"`` - uniform in [0, 1) (``f16``, ``bf16``, ``f8e4m3``, ``f8e5m2``, ``f64``
  likewise); ``"f32[128,512]~"`` standard normal;
* ``"i32[128,1]<10"`` - integers in [0, 10) (``i8``, ``i16``, ``i64``, ``u8``, ``u16``,
  ``u32`` likewise);
* ``"0:f32[128,512]"`` - zeros (an output the kernel writes).

``api("nl.add")`` is a name of the kernel's own NKI module (an ALU op, a dtype, an engine),
looked up in the kernel's globals when the case runs (the NKI modules exist only then).
Everything else (numbers, strings, numpy dtypes, tuples) is passed to the kernel as it is.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import ml_dtypes
import numpy as np

__all__ = ["Case", "case", "failing", "api", "not_written", "array", "CASES", "inputs_of"]

DTYPES: dict[str, Any] = {
    "f64": np.float64, "f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
    "f8e4m3": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2,
    "i64": np.int64, "i32": np.int32, "i16": np.int16, "i8": np.int8,
    "u32": np.uint32, "u16": np.uint16, "u8": np.uint8, "bool": np.bool_,
}
_SPEC = re.compile(r"^(?P<zero>0:)?(?P<dtype>[a-z0-9]+)\[(?P<shape>[0-9, ]*)\](?:(?P<normal>~)|<(?P<high>-?\d+))?$")


@dataclass(frozen=True, slots=True)
class Case:
    """How one kernel function is run."""

    args: tuple[Any, ...] = ()
    """Positional arguments (spec strings become arrays)."""
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    """Keyword arguments (spec strings become arrays)."""
    grid: tuple[int, ...] | None = None
    """An SPMD launch grid, as the corpus's test launches the kernel."""
    reference: Callable[..., Any] | None = None
    """numpy: the kernel's input arrays and scalar arguments by parameter name -> its outputs
    (one array, a tuple in output order, or a dict by output name)."""
    note: str = ""
    """Where the shapes come from, when not the kernel's own test."""
    standalone: bool = True
    """False for a function decorated as a kernel but called only from another kernel with
    on-chip tiles or internal configuration objects (it runs in its caller's case)."""
    tolerance: tuple[float, float] | None = None
    """(rtol, atol) of the comparison with the reference where the kernel's numerics are coarser
    than the run's default 1e-2 (MX quantization); None: the default."""
    refusal: str = ""
    """For a kernel whose corpus test expects it to fail: text of the error that test expects;
    a refusal containing it is the outcome ``as expected`` (a right answer without a run)."""
    caller: str = ""
    """For a subkernel: the key of the kernel whose case runs it; the run's TOTAL counts the
    subkernel by that kernel's outcome (``bench_corpus.by_caller``)."""
    missing: str = ""
    """Why no case is written yet (the run reports ``no case`` with this reason)."""
    machine: str | None = None
    """The machine the kernel is traced for (``trace(machine=)``); None: the kernel's own target
    (``@nki.jit(platform_target=...)``), else trn1, as ``neuronsim run`` does.  ``"trn2"`` where the corpus's
    test runs the kernel only on Trn2 and the kernel's own SBUF plan needs Trn2's 224 KiB a
    partition (nki-library's all-expert MoE TKG places its tiles below byte 200,000)."""
    ranks: int = 1
    """Devices the kernel is launched on (``trace(ranks=)``): a kernel whose collectives run
    across ranks, with the count of its test's smallest row."""
    memory_mb: int = 0
    """The worker's address-space cap (MiB) where the corpus file itself needs more than
    ``bench_corpus.py --memory-mb`` (a module-level numpy check run at import); 0: that cap."""
    decode: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    """For a kernel whose output packs values the comparison must unpack first (rmsnorm_quant
    stores each row's fp32 scale as four fp8 bytes): the simulated outputs by name -> the values
    compared with the reference (which states them so); None: the outputs as they are."""


@dataclass(frozen=True, slots=True)
class Api:
    """A name of the kernel's NKI module, as the kernel file imports it (``"nl.add"``)."""

    text: str


def api(text: str) -> Api:
    return Api(text=text)


def case(*args: Any, grid: tuple[int, ...] | None = None, ref: Callable[..., Any] | None = None,
         note: str = "", tolerance: tuple[float, float] | None = None, ranks: int = 1, **kwargs: Any) -> Case:
    """A :class:`Case` from the kernel's arguments as a test would call it."""
    return Case(args=args, kwargs=kwargs, grid=grid, reference=ref, note=note, tolerance=tolerance, ranks=ranks)


def failing(*args: Any, refusal: str, note: str = "", **kwargs: Any) -> Case:
    """A :class:`Case` of a kernel its corpus test expects to fail with ``refusal`` in the error."""
    return Case(args=args, kwargs=kwargs, note=note, refusal=refusal)


def not_written(reason: str) -> Case:
    """A kernel found whose case is not written yet, and why."""
    return Case(missing=reason)


def is_spec(value: Any) -> bool:
    return isinstance(value, str) and _SPEC.match(value) is not None


def array(spec: str, rng: np.random.Generator) -> np.ndarray:
    """The array a spec string describes (module doc), drawn from ``rng``."""
    match = _SPEC.match(spec)
    if match is None:
        raise ValueError(f"not an array spec: {spec!r}")
    dtype = DTYPES[match["dtype"]]
    shape = tuple(int(s) for s in match["shape"].replace(" ", "").split(",") if s)
    if match["zero"]:
        return np.zeros(shape, dtype)
    if match["high"] is not None:
        return rng.integers(0, int(match["high"]), size=shape).astype(dtype)
    if np.issubdtype(np.dtype(dtype), np.integer):
        return rng.integers(0, 100, size=shape).astype(dtype)
    if dtype is np.bool_:
        return rng.random(shape) < 0.5
    values = rng.standard_normal(shape) if match["normal"] else rng.random(shape)
    return values.astype(np.float32).astype(dtype)


def inputs_of(key: str, entry: Case, names: Mapping[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The case's positional and keyword arguments with every spec drawn, from a generator
    seeded by the kernel's key (the same arrays on every run), and every :func:`api` name
    looked up in ``names`` (the kernel's globals)."""
    rng = np.random.default_rng(zlib.crc32(key.encode()))

    def value(v: Any) -> Any:
        if is_spec(v):
            return array(v, rng)
        if isinstance(v, Api):
            return eval(v.text, dict(names))  # noqa: S307 - a dotted name of our own table
        return v

    return tuple(value(a) for a in entry.args), {k: value(v) for k, v in entry.kwargs.items()}


def _table() -> dict[str, Case]:
    from corpus_cases_collectives import CASES as COLLECTIVES
    from corpus_cases_library import CASES as LIBRARY
    from corpus_cases_samples import CASES as SAMPLES
    from corpus_cases_sdk import CASES as SDK
    from corpus_cases_transformer import CASES as TRANSFORMER

    table: dict[str, Case] = {}
    for part in (SDK, SAMPLES, LIBRARY, TRANSFORMER, COLLECTIVES):
        clash = table.keys() & part.keys()
        assert not clash, f"cases given twice: {sorted(clash)}"
        table.update(part)
    return table


#: Every case, by ``path/in/corpus.py::function``.
CASES: dict[str, Case] = _table()
