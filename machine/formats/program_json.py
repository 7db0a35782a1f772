"""Load and save ``neuronsim.program/1`` documents (``docs/program-format.md``).

:func:`load_program` checks the syntax of the document and every rule that can be checked
without unrolling (names, placement, hardware constraints, footprint bounds, dep targets) and
raises a located :class:`~neuronsim.machine.ir.errors.ProgramError` on the first problem.  :func:`save_program`
writes the canonical form: fixed key order, defaults made explicit where the spec gives them
(PSUM ``offset``, DMA ``queue``, dep ``kind``), duplicate deps merged, ``x-…`` keys kept.
"""

from __future__ import annotations

import codecs
import unicodedata
from collections.abc import Mapping
from math import prod
from typing import Any, TextIO

from neuronsim.machine.ir.dtypes import DTYPES
from neuronsim.machine.ir.edges import KIND_NAMES, kind_from_name
from neuronsim.machine.model.opcodes import check_opcode
from neuronsim.machine.formats.annotations import check_annotations
from neuronsim.machine.ir.errors import ProgramError, join_path
from neuronsim.machine.formats.inputs import check_encoding, read_input
from neuronsim.machine.formats.jsonio import dumps_strict, line_column, loads_strict, write_text
from neuronsim.machine.ir.program import (
    MEMORY_NAMES,
    SEQUENCERS,
    Access,
    Dep,
    Instruction,
    Loop,
    MemoryKind,
    Node,
    Program,
    Tensor,
    frozen_mapping,
    is_dma_op,
    queue_problem,
)
from neuronsim.machine.ir import extensions as ext
from neuronsim.machine.model.optable import OP_TABLE
from neuronsim.machine.model.presets import resolve_machine

__all__ = ["FORMAT", "load_program", "loads_program", "parse_program", "save_program", "dumps_program",
           "program_to_json"]

FORMAT = "neuronsim.program/1"

_DOC_KEYS = {"format", "machine", "tensors", "body"}
_TENSOR_KEYS = {"memory", "dtype", "shape", "partition", "offset", "bank", "address", "alias", "role"}
_ACCESS_KEYS = {"tensor", "partitions", "offset", "pattern", "per_iteration"}
#: Bounds of an access pattern: its pairs (each a dimension of the value view, numpy having at
#: most 64) and the elements it walks a partition (a stride-0 pair repeats one; past 2**40 no
#: value array of it can be made).
MAX_PATTERN_PAIRS, MAX_PATTERN_ELEMENTS = 32, 1 << 40
_INSTR_KEYS = {"name", "engine", "op", "queue", "reads", "writes", "attrs", "deps"}
_LOOP_KEYS = {"loop", "trip_count", "body"}
_DEP_KEYS = {"on", "kind", "loop_carried"}
_ROLES = ("input", "output", "internal")
#: Integers beyond a signed 64-bit word have no meaning anywhere in the format (trip counts,
#: shapes, offsets, addresses); rejecting them keeps every later product and numpy array exact.
INT_LIMIT = 2**63
#: Characters a name may not hold: bidirectional overrides reorder what a terminal shows.
_BIDI = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


# -- small typed readers ----------------------------------------------------------------
def _obj(value: Any, path: str, allowed: set[str], what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ProgramError(path, f"expected {what} (a JSON object), got {type(value).__name__}")
    for key in value:
        if key not in allowed and not key.startswith("x-"):
            raise ProgramError(join_path(path, key),
                               f"unknown key in {what}; expected one of {sorted(allowed)} or an 'x-' extension")
    return value


def _extras(value: dict[str, Any], parsed: tuple[str, ...] = (), *, where: str | None = None,
            path: str = "") -> Mapping[str, Any]:
    """The ``x-`` keys carried through untouched (those in ``parsed`` are the project's
    extensions, read into fields: :mod:`neuronsim.machine.ir.extensions`); ``where`` (an
    instruction, a tensor, the document) has the annotations neuronsim reads back checked at
    ``path`` (:mod:`~neuronsim.machine.formats.annotations`)."""
    extras = frozen_mapping({k: v for k, v in value.items() if k.startswith("x-") and k not in parsed})
    if extras and where is not None:
        check_annotations(extras, path, where)
    return extras


def _int(value: Any, path: str, *, minimum: int | None = None) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ProgramError(path, f"expected an integer, got {dumps_strict(value)}")
    if minimum is not None and value < minimum:
        raise ProgramError(path, f"expected an integer >= {minimum}, got {value}")
    if not -INT_LIMIT <= value < INT_LIMIT:
        digits = len(str(abs(value)))
        shown = str(value) if digits <= 30 else f"one of {digits} digits"
        raise ProgramError(path, f"expected an integer below 2**63 in magnitude, got {shown}")
    return value


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise ProgramError(path, f"expected a non-empty string, got {dumps_strict(value)}")
    return value


def check_name(value: Any, path: str) -> str:
    """A name: a non-empty string without control characters, line breaks, bidirectional
    overrides or lone surrogates (names are printed on terminals and in files as they are).

    >>> check_name("mm_0", "body[0].name")
    'mm_0'
    >>> check_name("a\x1b[31m", "body[0].name")
    Traceback (most recent call last):
    neuronsim.machine.ir.errors.ProgramError: body[0].name: a name may not hold the control character U+001B
    """
    value = _str(value, path)
    for char in value:
        category = unicodedata.category(char)
        if category in ("Cc", "Cs", "Zl", "Zp") or char in _BIDI:
            what = {"Cs": "lone surrogate", "Zl": "line separator", "Zp": "paragraph separator"}.get(
                category, "bidirectional override" if char in _BIDI else "control character")
            raise ProgramError(path, f"a name may not hold the {what} U+{ord(char):04X}")
    return value


def _choice(value: Any, options: Mapping[str, Any] | tuple[str, ...], path: str, what: str,
            expected: str | None = None) -> Any:
    """``value`` when it is one of ``options`` (a string); a located error otherwise."""
    if isinstance(value, str) and value in options:
        return value
    shown = repr(value) if isinstance(value, str) else _show(value)
    raise ProgramError(path, f"unknown {what} {shown}; expected {expected or f'one of {list(options)}'}")


def _show(value: Any) -> str:
    """A short printable form of any decoded JSON value, for messages."""
    try:
        text = dumps_strict(value)
    except ValueError:  # an integer too long to print
        text = "a number"
    return text if len(text) <= 60 else text[:57] + "..."


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise ProgramError(path, f"expected a list, got {dumps_strict(value)[:40]}")
    return value


# -- tensors ----------------------------------------------------------------------------
def _parse_tensor(name: str, raw: Any, path: str) -> Tensor:
    raw = _obj(raw, path, _TENSOR_KEYS, "a tensor")
    if "memory" not in raw:
        raise ProgramError(join_path(path, "memory"), "missing; expected 'dram', 'sbuf' or 'psum'")
    memory = MEMORY_NAMES[_choice(raw["memory"], MEMORY_NAMES, join_path(path, "memory"), "memory",
                                 "'dram', 'sbuf' or 'psum'")]
    dtype = _choice(raw.get("dtype"), DTYPES, join_path(path, "dtype"), "dtype")
    shape_path = join_path(path, "shape")
    shape = tuple(_int(d, join_path(shape_path, i), minimum=1)
                  for i, d in enumerate(_list(raw.get("shape"), shape_path)))
    if not shape:
        raise ProgramError(shape_path, "expected at least one dimension")

    def opt_int(key: str, minimum: int = 0) -> int | None:
        return None if key not in raw else _int(raw[key], join_path(path, key), minimum=minimum)

    forbidden = {
        MemoryKind.DRAM: ("partition", "offset", "bank"),
        MemoryKind.SBUF: ("bank", "address", "alias", "role"),
        MemoryKind.PSUM: ("address", "alias", "role"),
    }[memory]
    for key in forbidden:
        if key in raw:
            what = ("applies to dram tensors only" if key == "role"
                    else f"is not a placement key of a {raw['memory']} tensor")
            raise ProgramError(join_path(path, key), what)
    role = raw.get("role", "internal")
    if not isinstance(role, str) or role not in _ROLES:
        raise ProgramError(join_path(path, "role"), f"expected one of {list(_ROLES)}, got {_show(role)}")
    partition, offset, bank = opt_int("partition"), opt_int("offset"), opt_int("bank")
    address = opt_int("address")
    alias = None if "alias" not in raw else check_name(raw["alias"], join_path(path, "alias"))
    if memory == MemoryKind.SBUF and (partition is None) != (offset is None):
        missing = "offset" if offset is None else "partition"
        raise ProgramError(join_path(path, missing),
                           "partial placement: an sbuf tensor needs both 'partition' and 'offset', or neither")
    if memory == MemoryKind.PSUM:
        if (partition is None) != (bank is None) or (offset is not None and bank is None):
            missing = "bank" if bank is None else "partition"
            raise ProgramError(join_path(path, missing),
                               "partial placement: a psum tensor needs 'partition' and 'bank' (offset defaults to 0), "
                               "or none of them")
        if bank is not None and offset is None:
            offset = 0
    if memory == MemoryKind.DRAM and address is not None and alias is not None:
        raise ProgramError(join_path(path, "alias"), "a dram tensor has exactly one of 'address' and 'alias'")
    rotation = ext.parse_rotation(raw, path)
    unplaced = (memory == MemoryKind.DRAM and address is None) or (memory != MemoryKind.DRAM and partition is None)
    if rotation is not None and unplaced:
        raise ProgramError(join_path(path, "x-rotate"),
                           "only a placed tensor rotates (an alias-group or virtual tensor has no address to rotate)")
    extras = _extras(raw, ext.TENSOR_KEYS, where="tensor", path=path)
    return Tensor(name=name, memory=memory, dtype=dtype, shape=shape, partition=partition, offset=offset, bank=bank,
                  address=address, alias=alias, role=role, extras=extras, rotate=rotation)


# -- accesses ---------------------------------------------------------------------------
def _parse_access(raw: Any, path: str) -> Access:
    raw = _obj(raw, path, _ACCESS_KEYS, "an access")
    tensor = check_name(raw.get("tensor"), join_path(path, "tensor"))
    partitions = None
    if "partitions" in raw:
        ppath = join_path(path, "partitions")
        items = _list(raw["partitions"], ppath)
        if len(items) not in (2, 3):
            raise ProgramError(ppath, "expected [start, count] or [start, count, step]")
        start = _int(items[0], join_path(ppath, 0), minimum=0)
        count = _int(items[1], join_path(ppath, 1), minimum=1)
        step = _int(items[2], join_path(ppath, 2), minimum=1) if len(items) == 3 else 1
        partitions = (start, count, step)
    offset = None if "offset" not in raw else _int(raw["offset"], join_path(path, "offset"), minimum=0)
    pattern = None
    if "pattern" in raw:
        ppath = join_path(path, "pattern")
        pairs = []
        for i, pair in enumerate(_list(raw["pattern"], ppath)):
            ipath = join_path(ppath, i)
            if not isinstance(pair, list) or len(pair) != 2:
                raise ProgramError(ipath, "expected a [stride, count] pair")
            pairs.append((_int(pair[0], join_path(ipath, 0)), _int(pair[1], join_path(ipath, 1), minimum=1)))
        if not pairs:
            raise ProgramError(ppath, "expected at least one [stride, count] pair")
        if len(pairs) > MAX_PATTERN_PAIRS:
            raise ProgramError(ppath, f"{len(pairs)} [stride, count] pairs: at most {MAX_PATTERN_PAIRS} (a value "
                                      "view has a dimension per pair, and numpy's at most 64)")
        elements = prod(count for _stride, count in pairs)
        if elements > MAX_PATTERN_ELEMENTS:
            raise ProgramError(ppath, f"the pattern walks {elements:,} elements a partition: more than "
                                      f"{MAX_PATTERN_ELEMENTS:,} (2**40), which no memory holds")
        pattern = tuple(pairs)
    per_iteration: tuple[tuple[str, int], ...] = ()
    if "per_iteration" in raw:
        ipath = join_path(path, "per_iteration")
        shifts = raw["per_iteration"]
        if not isinstance(shifts, dict):
            raise ProgramError(ipath, "expected an object {LOOP: ELEMENTS}")
        per_iteration = tuple((check_name(loop, join_path(ipath, loop)), _int(v, join_path(ipath, loop)))
                              for loop, v in shifts.items())
        if pattern is None:
            raise ProgramError(join_path(path, "pattern"), "an access with 'per_iteration' must give its 'pattern'")
    partition_steps = ext.parse_partition_steps(raw, path)
    if partition_steps and pattern is None:
        raise ProgramError(join_path(path, "pattern"),
                           "an access with 'x-partitions_per_iteration' must give its 'pattern'")
    return Access(tensor, partitions, offset, pattern, per_iteration, _extras(raw, ext.ACCESS_KEYS), partition_steps)


# -- nodes ------------------------------------------------------------------------------
def _parse_deps(raw: Any, path: str, names: dict[str, str]) -> tuple[Dep, ...]:
    merged: dict[tuple, Dep] = {}
    for i, item in enumerate(_list(raw, path)):
        ipath = join_path(path, i)
        item = _obj(item, ipath, _DEP_KEYS, "a dep")
        on = check_name(item.get("on"), join_path(ipath, "on"))
        on = names.setdefault(on, on)
        kind_name = item.get("kind", "ordered")
        if not isinstance(kind_name, str) or kind_name not in ("flow", "anti", "output", "ordered"):
            raise ProgramError(join_path(ipath, "kind"),
                               f"expected 'flow', 'anti', 'output' or 'ordered', got {_show(kind_name)}")
        lc = item.get("loop_carried", False)
        if not isinstance(lc, bool):
            raise ProgramError(join_path(ipath, "loop_carried"), "expected true or false")
        dep = Dep(on, kind_from_name(kind_name), lc, _extras(item, ext.DEP_KEYS), ext.parse_distance(item, lc, ipath),
                  ext.parse_iterations(item, ipath))
        # Two deps on the same B with the same loop_carried (and extensions) merge into the
        # stronger kind.
        merged[dep.key] = _merge_dep(merged.get(dep.key), dep)
    return tuple(merged.values())


def _merge_dep(previous: Dep | None, dep: Dep) -> Dep:
    """One dep of the stronger kind, keeping the ``x-`` keys of both."""
    if previous is None:
        return dep
    extras = {**previous.extras, **dep.extras} if dep.extras else previous.extras
    return Dep(dep.on, max(previous.kind, dep.kind), dep.loop_carried, frozen_mapping(extras), dep.distance,
               dep.iterations)


def _parse_node(raw: Any, path: str, nqueues: int, names: dict[str, str]) -> Node:
    """One node; ``names`` holds one string object per instruction name met so far, so a dep
    names its instruction by the very object of the instruction's name (the dep table matches
    them by identity: :func:`neuronsim.machine.order.deptable.positions_of`)."""
    if isinstance(raw, dict) and "loop" in raw:
        raw = _obj(raw, path, _LOOP_KEYS, "a loop")
        name = check_name(raw["loop"], join_path(path, "loop"))
        trip = _int(raw.get("trip_count"), join_path(path, "trip_count"), minimum=1)
        bpath = join_path(path, "body")
        body = tuple(_parse_node(n, join_path(bpath, i), nqueues, names)
                     for i, n in enumerate(_list(raw.get("body"), bpath)))
        return Loop(name, trip, body, _extras(raw, where="loop", path=path))
    raw = _obj(raw, path, _INSTR_KEYS, "an instruction (or a loop with a 'loop' key)")
    name = check_name(raw.get("name"), join_path(path, "name"))
    name = names.setdefault(name, name)
    engine = _choice(raw.get("engine"), SEQUENCERS, join_path(path, "engine"), "engine")
    op = check_name(raw.get("op"), join_path(path, "op"))
    queue = None
    if is_dma_op(op) or "queue" in raw:  # a transfer's default queue is dma0
        queue = raw.get("queue", "dma0")
        problem = queue_problem(op, queue, tuple(f"dma{i}" for i in range(nqueues)))
        if problem:
            raise ProgramError(join_path(path, "queue"), problem)
    reads = tuple(_parse_access(a, join_path(join_path(path, "reads"), i))
                  for i, a in enumerate(_list(raw.get("reads", []), join_path(path, "reads"))))
    writes = tuple(_parse_access(a, join_path(join_path(path, "writes"), i))
                   for i, a in enumerate(_list(raw.get("writes", []), join_path(path, "writes"))))
    attrs = raw.get("attrs", {})
    if not isinstance(attrs, dict):
        raise ProgramError(join_path(path, "attrs"), "expected an object")
    if op in OP_TABLE:  # numeric attrs may be written "inf", "-inf" or "nan"
        attrs = {k: ext.decode_number(v) for k, v in attrs.items()}
    deps = _parse_deps(raw.get("deps", []), join_path(path, "deps"), names)
    check_opcode(raw, path)
    return Instruction(name=name, engine=engine, op=op, reads=reads, writes=writes, attrs=frozen_mapping(attrs),
                       deps=deps, queue=queue, extras=_extras(raw, where="instruction", path=path))


# -- documents --------------------------------------------------------------------------
def _not_a_program(doc: dict) -> str:
    """What a JSON object whose ``format`` is not a program's is, as far as it says (another
    neuronsim document, a trace a profiler reads), for the one error line."""
    found = doc.get("format")
    if isinstance(found, str) and found.startswith("neuronsim.") and not found.startswith("neuronsim.program/"):
        return f"this is a {found} document, not a {FORMAT} program"
    if found is None and "traceEvents" in doc:
        return f"missing; this is a trace (traceEvents, for Perfetto or chrome://tracing), not a {FORMAT} program"
    return f"expected {FORMAT!r}, got {dumps_strict(found)}"


def parse_program(doc: Any, *, validate: bool = True) -> Program:
    """Build a :class:`Program` from a decoded JSON document, checking it fully."""
    if isinstance(doc, dict) and doc.get("format") == "neuronsim.tasks/1":  # the other format: say so, once
        raise ProgramError("format", "this is a neuronsim.tasks/1 program (task level), not a neuronsim.program/1 "
                                     "one; the commands that take it are check, simulate, footprint, tasks and fuzz "
                                     "--tasks")
    if isinstance(doc, dict) and doc.get("format") != FORMAT:  # before its keys: another document is no program
        raise ProgramError("format", _not_a_program(doc))
    doc = _obj(doc, "", _DOC_KEYS, "a program document")
    machine_value = doc.get("machine", "trn1")
    if machine_value is None:  # the JSON Schema's reading: absent means trn1, null is no machine at all
        raise ProgramError("machine", "expected a preset name or an object with 'base' and overrides, got null")
    spec = resolve_machine(machine_value)
    tensors_raw = doc.get("tensors", {})
    if not isinstance(tensors_raw, dict):
        raise ProgramError("tensors", "expected an object mapping names to tensors")
    tensors = {check_name(name, join_path("tensors", name)): _parse_tensor(name, raw, join_path("tensors", name))
               for name, raw in tensors_raw.items()}
    body_raw = _list(doc.get("body"), "body")
    names: dict[str, str] = {}
    body = tuple(_parse_node(n, join_path("body", i), spec.dma_queues, names) for i, n in enumerate(body_raw))
    program = Program(frozen_mapping(tensors), body, machine_value, _extras(doc, where="document"))
    if validate:
        from neuronsim.machine.formats.validate import validate_program

        validate_program(program, spec)
    return program


def _decode(data: bytes, *, partial: bool = False) -> str:
    """UTF-8 text (a UTF-8 byte-order mark is skipped); UTF-16 / UTF-32 and invalid UTF-8
    (including encoded surrogates) are located errors."""
    check_encoding(data)
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    try:
        return codecs.getincrementaldecoder("utf-8")().decode(data, final=not partial)
    except UnicodeDecodeError as err:
        where = line_column(data[:err.start].decode("utf-8", "replace"), err.start)
        raise ProgramError("", f"not UTF-8 text at {where} (byte {err.start}): {err.reason}") from None


def loads_program(text: str | bytes, *, validate: bool = True) -> Program:
    """Parse a JSON text; malformed JSON is a :class:`ProgramError` naming line and column."""
    if isinstance(text, (bytes, bytearray)):
        text = _decode(bytes(text))
    doc = loads_strict(text)
    return parse_program(doc, validate=validate)


def load_program(source: str | TextIO, *, validate: bool = True) -> Program:
    """Load a program from a path (``-`` for standard input) or an open text file; a path
    or ``-`` is read by :func:`neuronsim.machine.formats.inputs.read_input` (bounded, closed input located)."""
    if hasattr(source, "read"):
        return loads_program(source.read(), validate=validate)
    return loads_program(read_input(source), validate=validate)


# -- saving -----------------------------------------------------------------------------
def _tensor_json(t: Tensor) -> dict[str, Any]:
    out: dict[str, Any] = {"memory": t.memory.name.lower(), "dtype": t.dtype, "shape": list(t.shape)}
    for key in ("partition", "bank", "offset", "address", "alias"):
        value = getattr(t, key)
        if value is not None:
            out[key] = value
    if t.memory == MemoryKind.DRAM and t.role != "internal":
        out["role"] = t.role
    if t.rotate is not None:
        out.update(ext.rotation_json(t.rotate))
    out.update(t.extras)
    return out


def _access_json(a: Access) -> dict[str, Any]:
    out: dict[str, Any] = {"tensor": a.tensor}
    if a.partitions is not None:
        start, count, step = a.partitions
        out["partitions"] = [start, count] if step == 1 else [start, count, step]
    if a.offset is not None:
        out["offset"] = a.offset
    if a.pattern is not None:
        out["pattern"] = [list(p) for p in a.pattern]
    if a.per_iteration:
        out["per_iteration"] = dict(a.per_iteration)
    if a.partitions_per_iteration:
        out["x-partitions_per_iteration"] = dict(a.partitions_per_iteration)
    out.update(a.extras)
    return out


def _node_json(node: Node) -> dict[str, Any]:
    if isinstance(node, Loop):
        out: dict[str, Any] = {"loop": node.name, "trip_count": node.trip_count,
                               "body": [_node_json(n) for n in node.body]}
        out.update(node.extras)
        return out
    out = {"name": node.name, "engine": node.engine, "op": node.op}
    if node.queue is not None:
        out["queue"] = node.queue
    out["reads"] = [_access_json(a) for a in node.reads]
    out["writes"] = [_access_json(a) for a in node.writes]
    if node.attrs:
        out["attrs"] = ext.encode_attrs(node.attrs)
    if node.deps:
        merged: dict[tuple, Dep] = {}
        for dep in node.deps:
            merged[dep.key] = _merge_dep(merged.get(dep.key), dep)
        out["deps"] = [
            {"on": d.on, "kind": KIND_NAMES[d.kind], **({"loop_carried": True} if d.loop_carried else {}),
             **ext.dep_json(d.distance, d.loop_carried, d.iterations), **d.extras}
            for d in merged.values()
        ]
    out.update(node.extras)
    return out


def program_to_json(program: Program) -> dict[str, Any]:
    """The canonical JSON document of ``program``."""
    doc: dict[str, Any] = {"format": FORMAT, "machine": program.machine}
    doc["tensors"] = {name: _tensor_json(t) for name, t in program.tensors.items()}
    doc["body"] = [_node_json(n) for n in program.body]
    doc.update(program.extras)
    return doc


def dumps_program(program: Program, *, indent: int | None = 1) -> str:
    """The canonical JSON text of ``program`` (what :func:`save_program` writes)."""
    return dumps_strict(program_to_json(program), indent=indent, refuse_non_finite=True) + "\n"


def save_program(program: Program, target: str | TextIO) -> None:
    """Write ``program``; a path is written atomically (nothing half-written on error)."""
    write_text(dumps_program(program), target)
