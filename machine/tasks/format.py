"""Load and save ``neuronsim.tasks/1`` documents (``docs/tasks-format.md``).

Strict like ``neuronsim.program/1``: unknown keys other than ``x-…`` are errors, duplicate
keys and NaN / Infinity are malformed JSON, and every error is a
:class:`~neuronsim.machine.ir.errors.ProgramError` naming the JSON path (``function.body[2].args[1]``).
:func:`loads_tasks` parses, then validates (:func:`neuronsim.machine.tasks.task_validate.validate_tasks`),
which resolves identifiers naming scalar variables to :class:`~neuronsim.machine.tasks.expr.Sym`.
:func:`dumps_tasks` writes the canonical form (fixed key order, ``x-`` keys kept).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, TextIO

from neuronsim.machine.ir.dtypes import DTYPES, itemsize
from neuronsim.machine.ir.errors import ProgramError, join_path
from neuronsim.machine.formats.jsonio import decode_strict, deepest_bracket, dumps_strict, line_column, read_source
from neuronsim.machine.model.presets import FLOAT_FIGURE_RANGE
from neuronsim.machine.tasks.expr import INT64_RANGE, ScalarExpr, parse_expr
from neuronsim.machine.tasks.ir import (
    EMPTY, INDEXED_OPS, LAYOUTS, PADS, Alias, ArgDirection, Assemble, Call, CompilerDep, Create, For,
    Function, GetSlot, If, IndexedView, IterArg, Kernel, KernelParam, MemRef, Operand, ParamDirection,
    Runtime, RuntimeScope, ScalarLet, ScalarParam, SetSlot, Slice, Stmt, TaskArray, TaskDummy, TaskInvalid,
    TaskProgram, TensorParam, TensorType, TensorView, While,
)

__all__ = ["FORMAT", "parse_tasks", "loads_tasks", "load_tasks", "is_task_document"]

FORMAT = "neuronsim.tasks/1"
#: The most a kernel's cost may be: a simulated run's times stay finite doubles (as the
#: float figures of a machine, :data:`neuronsim.machine.model.presets.FLOAT_FIGURE_RANGE`).
MAX_COST_NS = FLOAT_FIGURE_RANGE[1]
#: Worker cores of the simulated runtime at most (far beyond any device's).
MAX_CORES = 4096
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_LET_KINDS = ("create", "slice", "assemble", "indexed", "alias", "scalar", "task_array", "get", "task_invalid",
              "task_dummy")


class _Obj:
    """A JSON object being read: typed getters that name the path, unknown keys rejected."""

    def __init__(self, raw: Any, path: str, allowed: set[str], what: str) -> None:
        if not isinstance(raw, dict):
            raise ProgramError(path, f"expected {what} (a JSON object), got {_show(raw)}")
        for key in raw:
            if key not in allowed and not key.startswith("x-"):
                raise ProgramError(join_path(path, key), f"unknown key in {what}; expected one of {sorted(allowed)} "
                                                         "or an 'x-' extension")
        self.raw, self.path, self.what = raw, path, what

    def at(self, key: str) -> str:
        return join_path(self.path, key)

    def has(self, key: str) -> bool:
        return key in self.raw

    def need(self, key: str) -> Any:
        if key not in self.raw:
            raise ProgramError(self.at(key), f"missing in {self.what}")
        return self.raw[key]

    def name(self, key: str, default: str | None = None) -> str:
        value = self.raw.get(key, default) if default is not None else self.need(key)
        if not isinstance(value, str) or not _IDENT.match(value):
            raise ProgramError(self.at(key), f"expected a name (letters, digits, '_'), got {_show(value)}")
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.raw.get(key, default)
        if not isinstance(value, bool):
            raise ProgramError(self.at(key), f"expected true or false, got {_show(value)}")
        return value

    def items(self, key: str, default: list | None = None) -> list[tuple[str, Any]]:
        value = self.raw.get(key, default) if default is not None else self.need(key)
        if not isinstance(value, list):
            raise ProgramError(self.at(key), f"expected a list, got {_show(value)}")
        return [(join_path(self.at(key), i), v) for i, v in enumerate(value)]

    def names(self, key: str) -> tuple[str, ...]:
        return tuple(_name(v, p) for p, v in self.items(key, []))

    def exprs(self, key: str, default: list | None = None) -> tuple[ScalarExpr, ...]:
        return tuple(parse_expr(v, p) for p, v in self.items(key, default))

    def extras(self) -> Mapping[str, Any]:
        found = {k: v for k, v in self.raw.items() if k.startswith("x-")}
        return found or EMPTY


def _show(value: Any) -> str:
    text = dumps_strict(value) if not isinstance(value, float) or math.isfinite(value) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _name(value: Any, path: str) -> str:
    if not isinstance(value, str) or not _IDENT.match(value):
        raise ProgramError(path, f"expected a name (letters, digits, '_'), got {_show(value)}")
    return value


def _operand(value: Any, path: str) -> Operand:
    """A variable name (kept as text; validation decides tensor / TaskId / scalar) or an expression."""
    if isinstance(value, str) and _IDENT.match(value.strip()):
        return value.strip()
    return parse_expr(value, path)


def _enum(value: Any, path: str, cls: type, what: str) -> Any:
    try:
        return cls(value)
    except ValueError:
        raise ProgramError(path, f"unknown {what} {_show(value)}; expected one of {[m.value for m in cls]}") from None


def _one_of(value: Any, names) -> bool:
    """``value`` is one of the texts ``names`` (a list or an object is none of them, and no error)."""
    return isinstance(value, str) and value in names


def _int(value: Any, path: str, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ProgramError(path, f"expected an integer >= {minimum}, got {_show(value)}")
    return value


# -- types ---------------------------------------------------------------------------------
def _view(raw: Any, path: str) -> TensorView:
    o = _Obj(raw, path, {"layout", "strides", "valid_shape", "pad"}, "a view")
    layout = o.raw.get("layout", "nd")
    if not _one_of(layout, LAYOUTS):
        raise ProgramError(o.at("layout"), f"unknown layout {_show(layout)}; expected one of {list(LAYOUTS)}")
    strides = tuple(_int(v, p, 0) for p, v in o.items("strides")) if o.has("strides") else None
    valid = o.exprs("valid_shape") if o.has("valid_shape") else None
    pad = o.raw.get("pad")
    if pad is not None and not _one_of(pad, PADS):
        raise ProgramError(o.at("pad"), f"unknown pad {_show(pad)}; expected one of {list(PADS)}")
    return TensorView(layout, strides, valid, pad)


def _memref(raw: Any, path: str) -> MemRef:
    o = _Obj(raw, path, {"base", "offset", "size"}, "a memref")
    offset = parse_expr(o.raw.get("offset", 0), o.at("offset"))
    if isinstance(offset, int) and offset < 0:
        raise ProgramError(o.at("offset"), f"expected a byte offset >= 0, got {offset}")
    return MemRef(o.name("base"), offset, _int(o.need("size"), o.at("size"), 1))


def _type(o: _Obj) -> TensorType:
    dtype = o.need("dtype")
    if not _one_of(dtype, DTYPES):
        raise ProgramError(o.at("dtype"), f"unknown dtype {_show(dtype)}; expected one of {list(DTYPES)}")
    shape = o.exprs("shape")
    if not shape:
        raise ProgramError(o.at("shape"), "expected at least one dimension")
    if all(isinstance(d, int) for d in shape) and math.prod(shape) * itemsize(dtype) > INT64_RANGE[1]:
        raise ProgramError(o.at("shape"), f"a tensor of shape {list(shape)} would hold more than 2**63 bytes")
    view = _view(o.raw["view"], o.at("view")) if o.has("view") else None
    memref = _memref(o.raw["memref"], o.at("memref")) if o.has("memref") else None
    return TensorType(shape, dtype, view, memref)


# -- kernels and parameters ----------------------------------------------------------------
def _kernel(name: str, raw: Any, path: str) -> Kernel:
    o = _Obj(raw, path, {"params", "returns", "cost", "fn"}, "a kernel")
    params = []
    for ppath, praw in o.items("params"):
        p = _Obj(praw, ppath, {"name", "direction"}, "a kernel parameter")
        params.append(KernelParam(p.name("name"), _enum(p.need("direction"), p.at("direction"), ParamDirection,
                                                        "direction")))
    cost = o.raw.get("cost", 1.0)
    if isinstance(cost, bool) or not isinstance(cost, (int, float)) or not 0 <= cost <= MAX_COST_NS:
        raise ProgramError(o.at("cost"), f"expected a cost in ns between 0 and {MAX_COST_NS:g}, got {_show(cost)}")
    fn = o.raw.get("fn")
    if fn is not None and (not isinstance(fn, str) or fn.count(":") != 1 or not all(fn.split(":"))):
        raise ProgramError(o.at("fn"), f"expected 'module:function', got {_show(fn)}")
    return Kernel(name, tuple(params), o.names("returns"), float(cost), fn, None, o.extras())


def _param(raw: Any, path: str) -> TensorParam | ScalarParam:
    if isinstance(raw, dict) and "scalar" in raw:
        o = _Obj(raw, path, {"name", "scalar", "value"}, "a scalar parameter")
        if o.raw["scalar"] != "int":
            raise ProgramError(o.at("scalar"), f"expected \"int\", got {_show(o.raw['scalar'])}")
        value = o.raw.get("value")
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise ProgramError(o.at("value"), f"expected an integer, got {_show(value)}")
        if value is not None and not INT64_RANGE[0] <= value <= INT64_RANGE[1]:  # integers are INT64 (the format)
            raise ProgramError(o.at("value"), f"{value} is beyond INT64 (integers are INT64)")
        return ScalarParam(o.name("name"), value, o.extras())
    o = _Obj(raw, path, {"name", "shape", "dtype", "view", "memref", "direction"}, "a tensor parameter")
    direction = _enum(o.raw.get("direction", "in"), o.at("direction"), ParamDirection, "direction")
    if direction == ParamDirection.SCALAR:
        raise ProgramError(o.at("direction"), "a tensor parameter is 'in', 'out' or 'inout'")
    return TensorParam(o.name("name"), _type(o), direction, o.extras())


# -- statements ----------------------------------------------------------------------------
def _body(o: _Obj, key: str) -> tuple[Stmt, ...]:
    return tuple(_stmt(raw, path) for path, raw in o.items(key))


def _iter_args(o: _Obj) -> tuple[IterArg, ...]:
    out = []
    for path, raw in o.items("iter_args", []):
        a = _Obj(raw, path, {"name", "init"}, "an iter_arg")
        out.append(IterArg(a.name("name"), _operand(a.need("init"), a.at("init"))))
    return tuple(out)


def _operands(o: _Obj, key: str) -> tuple[Operand, ...]:
    return tuple(_operand(v, p) for p, v in o.items(key, []))


def _let(raw: dict, path: str) -> Stmt:
    kinds = [k for k in _LET_KINDS if k in raw]
    if len(kinds) != 1:
        raise ProgramError(join_path(path, "let"), f"a 'let' needs exactly one of {list(_LET_KINDS)}, got {kinds}")
    kind = kinds[0]
    extra = {"create": set(), "slice": {"shape", "offset", "view"}, "assemble": {"value", "offset"},
             "indexed": {"op", "shape", "offset"}, "alias": set(), "scalar": set(), "task_array": set(),
             "get": {"index"}, "task_invalid": set(), "task_dummy": set()}[kind]
    o = _Obj(raw, path, {"let", kind, *extra}, f"a '{kind}' statement")
    var, x = o.name("let"), o.extras()
    if kind == "create":
        t = _Obj(o.raw["create"], o.at("create"), {"shape", "dtype", "view", "memref"}, "a tensor type")
        return Create(var, _type(t), x)
    if kind == "slice":
        view = _view(o.raw["view"], o.at("view")) if o.has("view") else None
        return Slice(var, o.name("slice"), o.exprs("shape"), o.exprs("offset"), view, x)
    if kind == "assemble":
        return Assemble(var, o.name("assemble"), o.name("value"), o.exprs("offset"), x)
    if kind == "indexed":
        op = o.raw.get("op", "gather")
        if not _one_of(op, INDEXED_OPS):
            raise ProgramError(o.at("op"), f"unknown indexed op {_show(op)}; expected one of {list(INDEXED_OPS)}")
        return IndexedView(var, op, o.name("indexed"), o.exprs("shape"), o.exprs("offset"), x)
    if kind == "alias":
        return Alias(var, o.name("alias"), x)
    if kind == "scalar":
        return ScalarLet(var, parse_expr(o.raw["scalar"], o.at("scalar")), x)
    if kind == "task_array":
        return TaskArray(var, parse_expr(o.raw["task_array"], o.at("task_array")), x)
    if kind == "get":
        return GetSlot(var, o.name("get"), parse_expr(o.need("index"), o.at("index")), x)
    if kind == "task_invalid":
        if o.raw["task_invalid"] is not True:
            raise ProgramError(o.at("task_invalid"), "expected true")
        return TaskInvalid(var, x)
    return TaskDummy(var, o.names("task_dummy"), x)


def _compiler_dep(raw: Any, path: str) -> CompilerDep:
    o = _Obj(raw, path, {"on", "loop", "calls", "carried"}, "a compiler dep")
    loop = o.name("loop") if o.has("loop") else None
    calls = o.names("calls")
    if (loop is None) != (not calls):
        raise ProgramError(o.at("calls" if loop else "loop"), "a loop fan-in needs both 'loop' and 'calls'")
    carried = o.name("carried") if o.has("carried") else None
    if carried is not None and loop is not None:
        raise ProgramError(o.at("carried"), "a loop fan-in cannot also be loop-carried")
    return CompilerDep(o.name("on"), loop, calls, carried)


def _call(raw: dict, path: str, submit: bool) -> Call:
    key = "submit" if submit else "call"
    allowed = {key, "name", "args", "outputs", "deps", "directions", "no_dep", "compiler_deps",
               "compiler_manual_candidate"} | ({"task_id"} if submit else set())
    o = _Obj(raw, path, allowed, f"a '{key}' statement")
    directions = None
    if o.has("directions"):
        directions = tuple(_enum(v, p, ArgDirection, "argument direction") for p, v in o.items("directions"))
    no_dep = tuple(_int(v, p, 0) for p, v in o.items("no_dep", []))
    deps = tuple(_compiler_dep(v, p) for p, v in o.items("compiler_deps", []))
    return Call(o.name("name"), o.name(key), _operands(o, "args") if o.has("args") else (), o.names("outputs"),
                o.name("task_id") if submit else None, submit, o.names("deps"), directions, no_dep, deps,
                o.flag("compiler_manual_candidate", False), o.extras())


def _stmt(raw: Any, path: str) -> Stmt:
    if not isinstance(raw, dict):
        raise ProgramError(path, f"expected a statement (a JSON object), got {_show(raw)}")
    if "let" in raw:
        return _let(raw, path)
    if "submit" in raw or "call" in raw:
        return _call(raw, path, "submit" in raw)
    if "set" in raw:
        o = _Obj(raw, path, {"set", "index", "value"}, "a 'set' statement")
        return SetSlot(o.name("set"), parse_expr(o.need("index"), o.at("index")), o.name("value"), o.extras())
    if "scope" in raw:
        o = _Obj(raw, path, {"scope", "name", "owner", "body"}, "a scope")
        mode, owner = o.raw["scope"], o.raw.get("owner", "user")
        if not _one_of(mode, ("auto", "manual")):
            raise ProgramError(o.at("scope"), f"expected \"auto\" or \"manual\", got {_show(mode)}")
        if not _one_of(owner, ("user", "compiler")):
            raise ProgramError(o.at("owner"), f"expected \"user\" or \"compiler\", got {_show(owner)}")
        return RuntimeScope(_body(o, "body"), mode == "manual", o.name("name") if o.has("name") else "", owner,
                            o.extras())
    if "for" in raw:
        o = _Obj(raw, path, {"for", "name", "start", "stop", "step", "parallel", "iter_args", "body", "yield",
                             "returns"}, "a 'for' loop")
        return For(o.name("name"), o.name("for"), parse_expr(o.raw.get("start", 0), o.at("start")),
                   parse_expr(o.need("stop"), o.at("stop")), parse_expr(o.raw.get("step", 1), o.at("step")),
                   o.flag("parallel", False), _iter_args(o), _body(o, "body"), _operands(o, "yield"),
                   o.names("returns"), o.extras())
    if "while" in raw:
        o = _Obj(raw, path, {"while", "name", "iter_args", "body", "yield", "returns"}, "a 'while' loop")
        return While(o.name("name"), parse_expr(o.raw["while"], o.at("while")), _iter_args(o), _body(o, "body"),
                     _operands(o, "yield"), o.names("returns"), o.extras())
    if "if" in raw:
        o = _Obj(raw, path, {"if", "name", "then", "else", "then_yield", "else_yield", "returns"}, "an 'if'")
        return If(parse_expr(o.raw["if"], o.at("if")), _body(o, "then"), _body(o, "else") if o.has("else") else None,
                  _operands(o, "then_yield"), _operands(o, "else_yield"), o.names("returns"),
                  o.name("name") if o.has("name") else "", o.extras())
    raise ProgramError(path, "unknown statement; expected one with 'let', 'set', 'submit', 'call', 'scope', "
                             "'for', 'while' or 'if'")


# -- documents -----------------------------------------------------------------------------
def is_task_document(doc: Any) -> bool:
    """True for a decoded document that declares this format (how commands tell the formats apart)."""
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def parse_tasks(doc: Any, *, validate: bool = True) -> TaskProgram:
    """A :class:`TaskProgram` from a decoded JSON document, checked fully."""
    if isinstance(doc, dict) and doc.get("format") == "neuronsim.program/1":  # the other format: say so, once
        raise ProgramError("format", "this is a neuronsim.program/1 program (instruction level), not a "
                                     "neuronsim.tasks/1 one; the commands that take it are check, compile, simulate, "
                                     "footprint, report, loops and show")
    if isinstance(doc, dict) and doc.get("format") != FORMAT:  # the format first: a document of another kind
        raise ProgramError("format", f"expected {FORMAT!r}, got {_show(doc.get('format'))}")
    o = _Obj(doc, "", {"format", "kernels", "function", "runtime"}, "a task-program document")
    kernels_raw = o.need("kernels")
    if not isinstance(kernels_raw, dict):
        raise ProgramError("kernels", "expected an object mapping kernel names to kernels")
    kernels = {_name(k, join_path("kernels", k)): _kernel(k, v, join_path("kernels", k))
               for k, v in kernels_raw.items()}
    f = _Obj(o.need("function"), "function", {"name", "auto_scope", "params", "body", "compiler_manual_layer"},
             "the orchestration function")
    params = tuple(_param(v, p) for p, v in f.items("params", []))
    function = Function(f.name("name", "main"), params, _body(f, "body"), f.flag("auto_scope", True),
                        f.flag("compiler_manual_layer", False), f.extras())
    runtime = Runtime()
    if o.has("runtime"):
        r = _Obj(o.raw["runtime"], "runtime", {"cores"}, "the runtime")
        cores = _int(r.raw.get("cores", 4), r.at("cores"), 1)
        if cores > MAX_CORES:  # each core is a simulated process: 10**9 of them hung simulate
            raise ProgramError(r.at("cores"), f"expected at most {MAX_CORES:,} worker cores, got {cores:,}")
        runtime = Runtime(cores)
    program = TaskProgram(kernels, function, runtime, o.extras())
    if validate:
        from neuronsim.machine.tasks.task_validate import validate_tasks

        program, _ = validate_tasks(program)
    return program


def loads_tasks(text: str | bytes, *, validate: bool = True) -> TaskProgram:
    """Parse a JSON text (strictly: duplicate keys and NaN are errors naming where they are;
    statements nested past what the parser's recursion follows, at the deepest one's line)."""
    document = decode_strict(text)
    try:
        return parse_tasks(document, validate=validate)
    except RecursionError:  # (it said "nests too deeply" with no place: a probe's 250 nested fors)
        shown = bytes(text).decode("utf-8-sig", "replace") if isinstance(text, (bytes, bytearray)) else text
        at, depth = deepest_bracket(shown)
        raise ProgramError("", f"the task program nests {depth} deep at {line_column(shown, at)}, deeper than "
                               "neuronsim's walk of it follows") from None


def load_tasks(source: str | TextIO, *, validate: bool = True) -> TaskProgram:
    """Load a task program from a path (``-`` for standard input) or an open text file."""
    return loads_tasks(read_source(source), validate=validate)
