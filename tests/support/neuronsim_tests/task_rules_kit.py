"""Helpers of the task-rule tests: a builder with the usual kernels, and short summaries of a result.

Kernels: ``w`` writes its ``Out`` parameter and returns it; ``r`` reads; ``rw`` reads and writes
(``InOut``) and returns it; ``copy`` reads one tensor and writes another; ``r2`` reads two.

Summaries are what a person writes down from a rule: :func:`deps` gives each call's compiler
deps as text (``"t"``, ``"t^L"`` for a dep carried in loop ``L``, ``"R@L[c1,c2]"`` for a loop
fan-in), :func:`dirs` each call's directions as short codes (``in``, ``out``, ``oe``, ``io``, ``nd``,
``s``), :func:`scopes` the scope each call ends in (``manual/compiler``, ``auto/user``, ``implicit``...).
"""

from __future__ import annotations

from types import SimpleNamespace

from neuronsim.machine.tasks.task_builder import In, InOut, Out, Scalar, TaskBuilder
from neuronsim.machine.tasks.ir import TaskProgram
from neuronsim.passes.tasks import (
    DEFAULT_TASK_PIPELINE, FAITHFUL_TASK_PIPELINE, analyze_dependencies, compile_tasks, derive_directions,
)

CODES = {"input": "in", "output": "out", "output_existing": "oe", "inout": "io", "no_dep": "nd", "scalar": "s"}


def kit(name: str = "f", *, auto_scope: bool = True) -> tuple[TaskBuilder, SimpleNamespace]:
    tb = TaskBuilder(name, auto_scope=auto_scope)
    k = SimpleNamespace(
        w=tb.kernel("w", Out("o"), returns="o"),
        r=tb.kernel("r", In("i")),
        rw=tb.kernel("rw", InOut("io"), returns="io"),
        copy=tb.kernel("copy", In("i"), Out("o"), returns="o"),
        r2=tb.kernel("r2", In("a"), In("b")),
        ws=tb.kernel("ws", Out("o"), Scalar("k"), returns="o"),
    )
    return tb, k


def compiled(program: TaskProgram, *, faithful: bool = False, spec: str | None = None) -> TaskProgram:
    spec = spec or (FAITHFUL_TASK_PIPELINE if faithful else DEFAULT_TASK_PIPELINE)
    return compile_tasks(program, spec)[0]


def analysis(program: TaskProgram, *, faithful: bool = False):
    return analyze_dependencies(derive_directions(program), faithful=faithful)


def deps(program: TaskProgram) -> dict[str, list[str]]:
    out = {}
    for call, _ in program.calls():
        out[call.name] = [f"{d.on}@{d.loop}[{','.join(d.calls)}]" if d.loop else f"{d.on}^{d.carried}" if d.carried
                          else d.on for d in call.compiler_deps]
    return out


def dirs(program: TaskProgram) -> dict[str, str]:
    return {c.name: ",".join(CODES[d.value] for d in c.directions or ()) for c, _ in program.calls()}


def scopes(program: TaskProgram) -> dict[str, str]:
    return {name: "implicit" if s is None else f"{'manual' if s.manual else 'auto'}/{s.owner}"
            for name, s in program.scopes_of_calls().items()}


def fallback_reasons(program: TaskProgram, *, faithful: bool = False) -> dict[str, str | None]:
    """Region key -> fallback reason code (None when it did not fall back)."""
    a = analysis(program, faithful=faithful)
    return {key: (r.fallback.reason if r.fallback else None) for key, r in a.regions.items()}


def merge_of_five_roots(tb):
    """A variable that may be any of five parameters (nested ifs): more roots than the analysis keeps."""
    roots = [tb.param(f"p{i}", (4, 4)) for i in range(5)]
    c = tb.scalar("c", value=0)
    current = roots[0]
    for i, nxt in enumerate(roots[1:]):
        with tb.if_(c == i):
            merged = tb.yield_(current)
        with tb.else_():
            tb.yield_(nxt)
        current = merged
    return current
