"""Passes, the pass context, pipeline spec strings and verification between passes.

A pass is a small frozen dataclass with a class-level kebab-case ``name``; its fields are its
options and ``apply(program, ctx) -> Program`` runs it.  The algorithm lives in pure
functions beside the class; the docstring states the contract (requires / guarantees).

Pipeline spec strings name passes in order, with options in braces::

    alloc,build-fdeps,remove-redundancies,anti-deps
    alloc{buffers=3},build-fdeps,anti-deps{memories=sbuf|psum,early_stop=pe-order}

Option values are parsed after the type of the field's default: ``true``/``false``, integers,
strings, and ``a|b|c`` for sets.  :func:`run_pipeline` verifies the program after every pass
unless told not to: the structure (:func:`neuronsim.machine.formats.validate.validate_program`), no virtual
tensor once an allocating pass has run, and deps that point backwards (a non-loop-carried dep
on an instruction earlier in document order, a loop-carried one inside a common loop), which
makes the instruction-level edge set acyclic.

Examples
--------
>>> [type(p).name for p in parse_pipeline("alloc,build-fdeps")]
['alloc', 'build-fdeps']
>>> parse_pipeline("anti-deps{memories=sbuf|psum, skip_ordered=false}")[0].memories == {"sbuf", "psum"}
True
"""

from __future__ import annotations

import dataclasses
import gc
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Any, ClassVar

import numpy as np

from neuronsim.machine.order.deptable import DeferredProgram, DepTable, Ranges, dep_table
from neuronsim.machine.ir.edges import DepGraph, EdgeKind
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import Dep, Instruction, Program
from neuronsim.machine.model.presets import MachineSpec, resolve_machine
from neuronsim.machine.order.stream import InstanceStream, stream_of
from neuronsim.machine.formats.validate import validate_placement_change, validate_program

__all__ = [
    "Pass", "PassContext", "PassRecord", "parse_pipeline", "run_pipeline", "verify_program",
    "graph_of", "graph_rows", "with_graph", "DEFAULT_PIPELINE", "FunctionPass", "as_pass", "AfterPass", "edge_table",
]

#: The default pipeline of ``neuronsim compile``: allocation (a no-op when nothing is
#: virtual), dependence construction, then the exact transitive reduction.
CONSTRUCTION_PIPELINE = "alloc,build-fdeps,remove-redundancies,anti-deps"
DEFAULT_PIPELINE = CONSTRUCTION_PIPELINE + ",dep-reduction"


class Pass:
    """Base of every pass: subclasses are ``@dataclass(frozen=True, slots=True)``."""

    __slots__ = ()
    name: ClassVar[str] = ""
    #: True for passes that place every virtual tensor (verification then insists on it).
    places: ClassVar[bool] = False

    def apply(self, program: Program, ctx: PassContext) -> Program:  # pragma: no cover - abstract
        raise NotImplementedError

    def spec_string(self) -> str:
        """The pass as a spec-string item, listing options that differ from the defaults."""
        changed = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value != f.default:
                if isinstance(value, frozenset):
                    value = "|".join(sorted(value))
                changed.append(f"{f.name}={str(value).lower() if isinstance(value, bool) else value}")
        return self.name + ("{" + ",".join(changed) + "}" if changed else "")


@dataclass(frozen=True, slots=True)
class PassRecord:
    """What one pass did: its spec item, wall time, edge count after it and its counters."""

    spec: str
    seconds: float
    edges: int
    stats: Mapping[str, int]


@dataclass(slots=True)
class PassContext:
    """Mutable working state shared by the passes of one pipeline run.

    ``record`` turns on provenance: for every edge a pass adds, the rules that justified it
    (``ctx.provenance[(waiter, former, loop_carried)]``), used by ``--explain`` and tests.
    """

    spec: MachineSpec | None = None
    verify: bool = True
    record: bool = False
    stats: dict[str, dict[str, int]] = field(default_factory=dict)
    provenance: dict[tuple[str, str, bool], set[str]] = field(default_factory=dict)
    records: list[PassRecord] = field(default_factory=list)
    placed: bool = False
    _stream: tuple[Program, Any] | None = None

    def machine(self, program: Program) -> MachineSpec:
        if self.spec is None:
            self.spec = resolve_machine(program.machine)
        return self.spec

    def count(self, pass_name: str, key: str, amount: int = 1) -> None:
        row = self.stats.setdefault(pass_name, {})
        row[key] = row.get(key, 0) + amount

    def note(self, waiter: str, former: str, loop_carried: bool, rule: str) -> None:
        """Record why an edge exists (only when ``record``)."""
        self.provenance.setdefault((waiter, former, loop_carried), set()).add(rule)

    def stream(self, program: Program) -> InstanceStream:
        """The :class:`~neuronsim.machine.order.stream.InstanceStream` of ``program``: shared by every
        program a dep-only pass derives from it (:func:`neuronsim.machine.order.deptable.with_deps`)."""
        if self._stream is not None and self._stream[0] is program:
            return self._stream[1]
        if self._stream is not None and _same_body(self._stream[0], program) \
                and self._stream[1].spec == self.machine(program) and not hasattr(program, "source"):
            stream = self._stream[1].for_placement(program)  # only placements changed (alloc)
        else:
            stream = stream_of(program, self.machine(program))
        self._stream = (program, stream)
        return stream

    def deps(self, program: Program) -> DepTable:
        """The deps of ``program`` as a :class:`~neuronsim.machine.order.deptable.DepTable` (without building
        the body of a deferred program)."""
        return dep_table(program, self.stream(program))


def _same_body(a: Program, b: Program) -> bool:
    return (getattr(a, "source", None) or a).body is (getattr(b, "source", None) or b).body


def edge_table(edges: Mapping[tuple[int, int, int], int],
               ranges: Mapping[tuple[int, int, int], Sequence[Ranges]] | None = None) -> DepTable:
    """Deps from ``{(former, waiter, distance): kind}`` over instruction ids, in the canonical
    order: by waiter, ordinary deps before loop-carried ones, each in document order of the
    instruction waited on (then by distance).  ``ranges[key]``, when given, lists the
    iteration restrictions of that dep (one row each; default: one unrestricted row)."""
    keys = sorted(edges, key=lambda k: (k[1], k[2] > 0, k[0], k[2]))
    ranges = ranges or {}
    return DepTable.build([(y, x, int(edges[(x, y, d)]), d, box) for x, y, d in keys
                           for box in ranges.get((x, y, d), ((),))])


# -- deps <-> graph ----------------------------------------------------------------------
def graph_of(program: Program) -> DepGraph:
    """The program's deps as a :class:`~neuronsim.machine.ir.edges.DepGraph` (kinds merged by max)."""
    graph = DepGraph()
    for inst, _ in program.instructions():
        for dep in inst.deps:
            graph.add_dependency(inst.name, dep.on, dep.kind, dep.loop_carried)
    return graph


def graph_rows(graph: DepGraph) -> tuple[dict[str, dict[str, EdgeKind]], dict[str, dict[str, EdgeKind]]]:
    """The graph's two edge sets, ``rows[loop_carried][waiter][former] = kind``, read-only
    (:meth:`~neuronsim.machine.ir.edges.DepGraph.rows`: iterating ``edges()`` builds one object per edge,
    which dominates at a million instructions)."""
    return graph.rows()


def with_graph(program: Program, graph: DepGraph, order: Mapping[str, int] | None = None,
               changed: set[str] | None = None) -> Program:
    """``program`` whose deps are exactly ``graph``'s, listed in document order of the
    instruction waited on, ordinary deps before loop-carried ones.

    ``order`` maps names to document order (computed when not given); ``changed``, when
    given, names the only instructions whose deps may differ from the program's.
    """
    if order is None:
        order = {inst.name: k for k, (inst, _) in enumerate(program.instructions())}
    rows = graph_rows(graph)
    plain, carried = rows[False], rows[True]
    made: dict[tuple[str, EdgeKind, bool], Dep] = {}  # one Dep object per distinct value

    def dep(former: str, kind: EdgeKind, flag: bool) -> Dep:
        key = (former, kind, flag)
        d = made.get(key)
        if d is None:
            d = made[key] = Dep(former, kind, flag)
        return d

    def rebuild(inst: Instruction) -> Instruction:
        if changed is not None and inst.name not in changed:
            return inst
        row, lc_row = plain.get(inst.name), carried.get(inst.name)
        if not row and not lc_row and not inst.deps:
            return inst
        deps: list[Dep] = []
        if row:
            deps.extend(dep(f, row[f], False) for f in (sorted(row, key=order.__getitem__) if len(row) > 1 else row))
        if lc_row:
            deps.extend(dep(f, lc_row[f], True) for f in sorted(lc_row, key=order.__getitem__))
        if inst.deps:  # a dep that survives unchanged keeps its object (and its x- keys)
            old = {(d.on, d.loop_carried, d.kind): d for d in inst.deps}
            deps = [old.get((d.on, d.loop_carried, d.kind), d) for d in deps]
        return Instruction(inst.name, inst.engine, inst.op, inst.reads, inst.writes, inst.attrs, tuple(deps),
                           inst.queue, inst.extras)

    return program.map_instructions(rebuild)


# -- spec strings ------------------------------------------------------------------------
_ITEM = re.compile(r"\s*([a-z][a-z0-9-]*|[A-Za-z_][\w.]*:[A-Za-z_]\w*)\s*(?:\{([^}]*)\})?\s*(?:,|$)")


def _imported_pass(address: str) -> Any:
    """``MODULE:NAME`` of a spec string: a pass class (or object, or function) imported from the
    current folder or the installed packages, so an unregistered pass runs by its address."""
    import importlib
    import os
    import sys

    module, _, attr = address.partition(":")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as err:
        raise ProgramError("--passes", f"cannot load the pass {address!r}: {err}") from None


def _convert(raw: str, default: Any, where: str) -> Any:
    raw = raw.strip()
    if isinstance(default, bool):
        if raw.lower() not in ("true", "false"):
            raise ProgramError(where, f"expected true or false, got {raw!r}")
        return raw.lower() == "true"
    if isinstance(default, int):
        try:
            return int(raw)
        except ValueError:
            raise ProgramError(where, f"expected an integer, got {raw!r}") from None
    if isinstance(default, frozenset):
        return frozenset(v.strip() for v in raw.split("|") if v.strip())
    return raw


#: Pass name -> pass class; filled by the package (``passes/__init__.py``: the built-in passes
#: and the plugins), so this module needs none of them (the passes import it).
PASS_REGISTRY: dict[str, type] = {}


def parse_pipeline(spec: str, registry: Mapping[str, type] | None = None) -> list[Pass]:
    """Pass objects for a spec string; a bad name or option is a located ProgramError."""
    if registry is None:
        registry = PASS_REGISTRY
    passes: list[Pass] = []
    pos = 0
    text = spec.strip()
    while pos < len(text):
        m = _ITEM.match(text, pos)
        if m is None or m.end() == pos:
            raise ProgramError("--passes", f"cannot parse {text[pos:]!r}; expected NAME, MODULE:NAME or "
                                           f"NAME{{key=value,...}}")
        name, options = m.group(1), m.group(2)
        cls = registry.get(name)
        if cls is None and ":" in name:
            cls = _imported_pass(name)
            if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):  # an object or a function: no options
                if options and options.strip():
                    raise ProgramError(f"--passes.{name}", "options need a pass class (a dataclass)")
                passes.append(as_pass(cls, name))
                pos = m.end()
                continue
        if cls is None:
            raise ProgramError("--passes", f"unknown pass {name!r}; expected one of {sorted(registry)} "
                                           f"(or MODULE:NAME, a pass class imported by its address)")
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
        kwargs: dict[str, Any] = {}
        for item in filter(None, (o.strip() for o in (options or "").split(","))):
            key, sep, value = item.partition("=")
            key = key.strip()
            if not sep or key not in defaults:
                raise ProgramError(f"--passes.{name}", f"unknown option {item!r}; expected key=value with key in {sorted(defaults)}")
            kwargs[key] = _convert(value, defaults[key], f"--passes.{name}.{key}")
        try:
            passes.append(cls(**kwargs))
        except ValueError as err:
            raise ProgramError(f"--passes.{name}", str(err)) from None
        pos = m.end()
    if not passes:
        raise ProgramError("--passes", "empty pipeline")
    return passes


# -- verification --------------------------------------------------------------------------
def _root(program: Program) -> Program:
    return program.source if isinstance(program, DeferredProgram) else program


def _same_but_deps(old: Program, new: Program) -> bool:
    """Did a pass change nothing but deps?  (Identity checks: cheap.)"""
    if new.tensors is not old.tensors or new.machine is not old.machine:
        return False
    if isinstance(new, DeferredProgram) and _root(old) is new.source:
        return True
    if isinstance(new, DeferredProgram) or isinstance(old, DeferredProgram):
        old, new = _root(old), _root(new)
    end = (None, ())
    for (a, _), (b, _) in zip_longest(old.walk(), new.walk(), fillvalue=end):
        if a is b:
            continue
        if a is None or b is None:
            return False
        if type(a) is not type(b) or a.name != b.name:
            return False
        if isinstance(a, Instruction):
            if a.reads is not b.reads or a.writes is not b.writes or a.attrs is not b.attrs or a.op != b.op \
                    or a.engine != b.engine or a.queue != b.queue:
                return False
        elif a.trip_count != b.trip_count or len(a.body) != len(b.body):
            return False
    return True


def verify_program(program: Program, spec: MachineSpec, *, placed: bool, after: str, before: Program | None = None,
                   stream: InstanceStream | None = None) -> None:
    """Check a pass's output; raise a ProgramError naming the pass on the first problem.

    When ``before`` is given and the pass changed nothing but deps, only the deps are
    checked (the rest was verified before and is the very same objects); when it changed
    nothing but placements (the same body), only the placements (``stream``, ``before``'s
    instance stream when at hand, lets that check visit each distinct access once).
    """
    deps_only = before is not None and _same_but_deps(before, program)
    same_body = before is not None and _root(before).body is _root(program).body
    if not deps_only:
        try:
            if same_body:
                validate_placement_change(program, before, spec, stream)  # an allocation: only placements changed
            else:
                validate_program(program, spec)
        except ProgramError as err:
            raise ProgramError(err.path, f"after pass {after!r}: {err.message}") from None
    if placed:
        for name, tensor in program.tensors.items():
            if tensor.is_virtual:
                raise ProgramError(f"tensors.{name}", f"after pass {after!r}: still virtual")
    if same_body and not deps_only and not isinstance(program, DeferredProgram):
        return  # the very same instructions, deps included, as the verified input
    if isinstance(program, DeferredProgram) and program.materialized is None:
        _verify_table(program, after)
        return
    # Deps point backwards (acyclic); a loop-carried one needs a loop enclosing both.
    position: dict[str, tuple[int, tuple]] = {}
    for k, (inst, loops) in enumerate(program.instructions()):
        position[inst.name] = (k, loops)
    for inst, loops in program.instructions():
        k = position[inst.name][0]
        for dep in inst.deps:
            target = position.get(dep.on)
            if target is None:
                raise ProgramError(f"{inst.name}.deps", f"after pass {after!r}: waits on unknown instruction {dep.on!r}")
            if dep.loop_carried:
                other = target[1]
                if not (loops and other and loops[0] is other[0]):
                    raise ProgramError(f"{inst.name}.deps", f"after pass {after!r}: loop-carried dep on {dep.on!r} outside any common loop")
            elif target[0] >= k:
                raise ProgramError(f"{inst.name}.deps", f"after pass {after!r}: waits on {dep.on!r}, which is not earlier")


@dataclass(frozen=True, slots=True)
class FunctionPass(Pass):
    """A user's step in a pipeline: any object with ``apply(program, ctx)``, or a plain
    ``fn(program) -> program``, under a slot ``name`` (the pass it replaces, or ``user``)."""

    name: str = "user"  # type: ignore[misc] - an instance field here, a ClassVar on real passes
    step: Any = None

    def apply(self, program: Program, ctx: PassContext) -> Program:
        if hasattr(self.step, "apply"):
            return self.step.apply(program, ctx)
        return self.step(program)

    def spec_string(self) -> str:
        return self.name


def as_pass(user: Any, name: str = "user") -> Pass:
    """``user`` as a pipeline item: a :class:`Pass` as is, a pass class instantiated, anything
    else with ``apply`` or a plain function wrapped in :class:`FunctionPass` named ``name``."""
    if isinstance(user, type):
        user = user()
    if isinstance(user, Pass):
        return user
    if hasattr(user, "apply") or callable(user):
        return FunctionPass(name, user)
    raise ProgramError("--pass", f"{user!r} is neither a pass nor a function")


#: ``after_pass(pass, program, ctx)``: called after each pass and its verification.
AfterPass = Callable[[Pass, Program, PassContext], None]


def _verify_table(program: DeferredProgram, after: str) -> None:
    """The deps rules of :func:`verify_program` on a deferred program's table, vectorised."""
    stream = stream_of(program)
    table = program.table
    names = stream.names
    plain = table.distance == 0
    bad = np.flatnonzero(plain & (table.former >= table.waiter))
    if len(bad):
        r = int(bad[0])
        raise ProgramError(f"{names[table.waiter[r]]}.deps", f"after pass {after!r}: waits on {names[table.former[r]]!r}, "
                                                              "which is not earlier")
    for r in np.flatnonzero(~plain | (table.when >= 0)).tolist():
        y, x = int(table.waiter[r]), int(table.former[r])
        if table.distance[r] and not stream.common(x, y):
            raise ProgramError(f"{names[y]}.deps", f"after pass {after!r}: loop-carried dep on {names[x]!r} outside any "
                                                  "common loop")
        loops = {loop.name: loop.trip_count for loop in stream.loops_of[y]}
        for loop, lo, hi in table.iterations(r):
            if loop not in loops or hi > loops[loop] or lo >= hi:
                raise ProgramError(f"{names[y]}.deps", f"after pass {after!r}: iteration range {loop} [{lo}, {hi}) does "
                                                      "not lie in a loop enclosing the waiter")


def run_pipeline(program: Program, passes: Sequence[Pass] | str = DEFAULT_PIPELINE, ctx: PassContext | None = None,
                 *, after_pass: AfterPass | None = None,
                 verifier: Callable[[Any, Any, str], None] | None = None) -> Program:
    """Run ``passes`` in order, verifying between them when ``ctx.verify``.

    The input must be valid (:func:`neuronsim.machine.formats.program.load_program` checks what it loads;
    :func:`verify_program` checks a program built in memory).  The cyclic garbage collector
    is paused while a pass and its verification run (the passes allocate millions of small tuples and no
    cycles: performance notes, section 0).  ``after_pass`` is the pipeline's one hook: it
    sees each pass's verified result (the fuzzer checks stage contracts there, the CLI
    reports progress); an exception it raises stops the pipeline.  ``verifier(after, before,
    pass_name)`` replaces the instruction-program checks for other kinds of program (task
    programs: :func:`neuronsim.passes.tasks.verify_tasks`); their edge count is ``program.dep_count``.
    """
    ctx = ctx or PassContext()
    if isinstance(passes, str):
        passes = parse_pipeline(passes)
    spec = ctx.machine(program) if verifier is None else None
    for p in passes:
        started = time.perf_counter()
        before = {k: dict(v) for k, v in ctx.stats.items()}
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            result = p.apply(program, ctx)
            seconds = time.perf_counter() - started
            ctx.placed = ctx.placed or p.places
            if ctx.verify and verifier is not None:
                verifier(result, program, p.name)
            elif ctx.verify:
                known = ctx._stream[1] if ctx._stream is not None and ctx._stream[0] is program else None
                verify_program(result, spec, placed=ctx.placed,  # type: ignore[arg-type]
                               after=p.name, before=program, stream=known)
        finally:
            if was_enabled:
                gc.enable()
        program = result
        if verifier is not None:
            edges = program.dep_count  # type: ignore[attr-defined]
        elif isinstance(program, DeferredProgram) and program.materialized is None:
            edges = len(program.table)
        elif ctx._stream is not None and _same_body(ctx._stream[0], program):
            edges = sum(len(i.deps) for i in ctx._stream[1].instrs)  # a list: no walk of the tree
        else:
            edges = sum(len(i.deps) for i, _ in program.instructions())
        row = ctx.stats.get(p.name, {})
        delta = {k: v - before.get(p.name, {}).get(k, 0) for k, v in row.items()}
        ctx.records.append(PassRecord(p.spec_string(), seconds, edges, delta))
        if after_pass is not None:
            after_pass(p, program, ctx)
    return program
