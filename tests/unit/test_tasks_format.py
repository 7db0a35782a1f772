"""``neuronsim.tasks/1``: builder output round-trips, and every kind of bad input is a located error."""

from __future__ import annotations

import json

import pytest

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.tasks import dumps_tasks, loads_tasks, parse_tasks
from neuronsim.machine.tasks.task_builder import In, InOut, MemRef, Out, Scalar, TaskBuilder, View, no_dep
from neuronsim.machine.tasks.expr import Op, Sym
from neuronsim.machine.tasks.ir import ArgDirection, For, If, RuntimeScope, While
from neuronsim_tests.tasks_format_kit import BAD, BASE, SUBMIT, _at, _edit


def _every_construct():
    tb = TaskBuilder("layer")
    mm = tb.kernel("matmul", In("a"), In("b"), Out("c"), returns="c", cost=900)
    add = tb.kernel("add", In("bias"), InOut("y"), Scalar("k"), returns="y", cost=200)
    x = tb.param("x", (256, 64))
    w = tb.param("w", (64, 64), view=View(layout="dn"))
    off = tb.scalar("off", value=0)
    bias = tb.param("bias", (64, 64), memref=MemRef("hbm", off, 64 * 64 * 4))
    out = tb.param("out", (256, 64), direction="out")
    n = tb.scalar("n", value=4)
    arr = tb.task_array(4)
    for i, (last,) in tb.range(n, init=(tb.task_invalid(),)):
        (y,), t = tb.submit(mm, [x[i * 64: i * 64 + 64, :], w, out[i * 64: i * 64 + 64, :]], deps=[last])
        arr[i] = t
        tb.call(add, [bias, y, i + 1])
        with tb.if_(i % 2 == 0):
            r = tb.yield_(t)
        with tb.else_():
            tb.yield_(last)
        done = tb.yield_(r)
    with tb.manual_scope():
        tb.call(add, [bias, out, 3], deps=[arr[0], arr], assign=False)
    with tb.scope(name="tail"):
        for j in tb.parallel(4):
            tb.call(add, [bias, no_dep(out[j * 64: j * 64 + 64, :]), j])
    for c, tt in tb.while_(lambda c, tt: c < n, init=(0, done)):
        _, t3 = tb.submit(mm, [x[0:64, :], w, out[0:64, :]], deps=[tt])
        tb.yield_(c + 1, t3)
    g = tb.indexed(x, (8, 64), (off, 0))
    whole = tb.assemble(out, g, (0, 0))
    tb.task_dummy([tb.alias(done)])
    tb.call(add, [bias, whole, tb.let(n * 2)], directions=["input", "output_existing", "scalar"])
    _ = off
    return tb.program()


def test_builder_program_round_trips_through_json():
    program = _every_construct()
    text = dumps_tasks(program)
    again = loads_tasks(text)
    assert again == program
    assert dumps_tasks(again) == text


def test_builder_resolves_scalars_and_marks():
    program = _every_construct()
    kinds = [type(s).__name__ for s in program.function.body]
    assert "For" in kinds and "While" in kinds and "RuntimeScope" in kinds
    loop = next(s for s in program.function.body if isinstance(s, For))
    assert loop.stop == Sym("n") and loop.static_trip_count is None
    add0 = program.call_map()["add0"]
    assert add0.args[2] == Op("+", (Sym(loop.var), 1))
    branch = next(s for s in loop.body if isinstance(s, If))
    assert branch.else_body == () and branch.returns == loop.yields
    scope = next(s for s in program.function.body if isinstance(s, RuntimeScope) and s.name == "tail")
    par = scope.body[0]
    assert par.parallel and par.body[-1].no_dep == (1,)
    assert program.call_map()["add3"].directions == (ArgDirection.INPUT, ArgDirection.OUTPUT_EXISTING,
                                                     ArgDirection.SCALAR)
    assert any(isinstance(s, While) for s in program.function.body)


def test_static_trip_counts():
    assert For("l", "i", 0, 8, 2).static_trip_count == 4
    assert For("l", "i", 8, 0, -3).static_trip_count == 3
    assert For("l", "i", 5, 5).static_trip_count == 0
    assert For("l", "i", 0, Sym("n")).static_trip_count is None










@pytest.mark.parametrize("what, edit, path, fragment", BAD, ids=[b[0] for b in BAD])
def test_bad_documents_name_the_path(what, edit, path, fragment):
    with pytest.raises(ProgramError) as info:
        parse_tasks(_edit(edit))
    assert info.value.path == path, info.value
    assert fragment in info.value.message


def test_the_base_document_is_valid():
    program = parse_tasks(BASE)
    assert [c.name for c, _ in program.calls()] == ["k1"]


def test_a_loop_carried_compiler_dep_round_trips():
    doc = _edit(lambda d: _at(d, SUBMIT).update(compiler_deps=[{"on": "t1", "carried": "L"}]))
    program = parse_tasks(doc)
    (call, _), = program.calls()
    assert call.compiler_deps[0].carried == "L" and call.compiler_deps[0].loop is None
    assert json.loads(dumps_tasks(program))["function"]["body"][2]["body"][1]["compiler_deps"] == [
        {"on": "t1", "carried": "L"}]
    assert loads_tasks(dumps_tasks(program)) == program


@pytest.mark.parametrize("text, fragment", [
    ('{"format": "neuronsim.tasks/1", "format": 1}', "appears twice"),
    ('{"format": NaN}', "NaN is not a JSON number"),
    ('{"format": ', "malformed JSON at line 1"),
])
def test_malformed_json(text, fragment):
    with pytest.raises(ProgramError, match=fragment):
        loads_tasks(text)


def test_dumps_is_canonical_json():
    doc = json.loads(dumps_tasks(parse_tasks(BASE)))
    assert doc["function"]["body"][2]["for"] == "i" and "start" not in doc["function"]["body"][2]
