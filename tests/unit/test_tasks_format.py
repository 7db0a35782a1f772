"""``neuronsim.tasks/1``: builder output round-trips, and every kind of bad input is a located error."""

from __future__ import annotations

import copy
import json

import pytest

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.tasks import dumps_tasks, loads_tasks, parse_tasks
from neuronsim.machine.tasks.builder import In, InOut, MemRef, Out, Scalar, TaskBuilder, View, no_dep
from neuronsim.machine.tasks.expr import Op, Sym
from neuronsim.machine.tasks.ir import ArgDirection, For, If, RuntimeScope, While


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
    assert program.call_map()["add3"].directions == (ArgDirection.INPUT, ArgDirection.OUTPUT_EXISTING, ArgDirection.SCALAR)
    assert any(isinstance(s, While) for s in program.function.body)


def test_static_trip_counts():
    assert For("l", "i", 0, 8, 2).static_trip_count == 4
    assert For("l", "i", 8, 0, -3).static_trip_count == 3
    assert For("l", "i", 5, 5).static_trip_count == 0
    assert For("l", "i", 0, Sym("n")).static_trip_count is None


BASE = {
    "format": "neuronsim.tasks/1",
    "kernels": {"k": {"params": [{"name": "a", "direction": "in"}, {"name": "b", "direction": "out"}],
                      "returns": ["b"], "cost": 10}},
    "function": {
        "params": [{"name": "x", "shape": [64, 64], "dtype": "float32"}, {"name": "n", "scalar": "int", "value": 2}],
        "body": [
            {"let": "buf", "create": {"shape": [64, 64], "dtype": "float32"}},
            {"for": "i", "name": "L", "stop": "n", "iter_args": [{"name": "prev", "init": "t0"}], "body": [
                {"let": "xs", "slice": "x", "shape": [32, 64], "offset": ["i * 32", 0]},
                {"submit": "k", "name": "k1", "args": ["xs", "buf"], "outputs": ["o"], "task_id": "t1",
                 "deps": ["prev"]},
            ], "yield": ["t1"], "returns": ["last"]},
        ],
    },
}
BASE["function"]["body"].insert(1, {"let": "t0", "task_invalid": True})
LOOP, SUBMIT = "function.body[2]", "function.body[2].body[1]"


def _edit(fn) -> dict:
    doc = copy.deepcopy(BASE)
    fn(doc)
    return doc


def _at(doc, path: str):
    node = doc
    for part in path.replace("]", "").replace("[", ".").split("."):
        node = node[int(part)] if part.isdigit() else node[part]
    return node


BAD = [
    ("unknown top-level key", lambda d: d.update(bogus=1), "bogus", "unknown key"),
    ("unknown statement key", lambda d: _at(d, SUBMIT).update(priority=1), f"{SUBMIT}.priority", "unknown key"),
    ("unknown statement", lambda d: d["function"]["body"].append({"loop": 1}), "function.body[3]", "unknown statement"),
    ("wrong format", lambda d: d.update(format="neuronsim.program/1"), "format", "neuronsim.tasks/1"),
    ("unknown dtype", lambda d: d["function"]["params"][0].update(dtype="float64"), "function.params[0].dtype", "unknown dtype"),
    ("undefined name", lambda d: _at(d, SUBMIT)["args"].__setitem__(0, "nope"), f"{SUBMIT}.args[0]", "not defined"),
    ("wrong kind", lambda d: _at(d, SUBMIT)["args"].__setitem__(0, "t0"), f"{SUBMIT}.args[0]", "is a TaskId"),
    ("arity", lambda d: _at(d, SUBMIT)["args"].append("x"), f"{SUBMIT}.args", "takes 2 arguments"),
    ("outputs", lambda d: _at(d, SUBMIT)["outputs"].append("o2"), f"{SUBMIT}.outputs", "returns 1 values"),
    ("duplicate var", lambda d: _at(d, SUBMIT).update(task_id="t0"), f"{SUBMIT}.task_id", "defined twice"),
    ("duplicate label", lambda d: _at(d, SUBMIT).update(name="L"), f"{SUBMIT}.name", "duplicate label"),
    ("slice leaves", lambda d: _at(d, LOOP)["body"][0].update(offset=[40, 0]), f"{LOOP}.body[0].offset[0]", "leaves dimension 0"),
    ("slice rank", lambda d: _at(d, LOOP)["body"][0].update(shape=[32]), f"{LOOP}.body[0].shape", "has 2 dimensions"),
    ("bad expression", lambda d: _at(d, LOOP)["body"][0].update(offset=["i ** 2", 0]), f"{LOOP}.body[0].offset[0]", "unsupported expression"),
    ("yield count", lambda d: _at(d, LOOP).update(**{"yield": []}), f"{LOOP}.yield", "yields 0 values"),
    ("returns count", lambda d: _at(d, LOOP).update(returns=[]), f"{LOOP}.returns", "expected 1 return vars"),
    ("direction", lambda d: _at(d, SUBMIT).update(directions=["inout", "output_existing"]), f"{SUBMIT}.directions[0]", "cannot be given"),
    ("dep on tensor", lambda d: _at(d, SUBMIT).update(deps=["buf"]), f"{SUBMIT}.deps[0]", "is a tensor"),
    ("in-loop name after loop", lambda d: d["function"]["body"].append(
        {"call": "k", "name": "k2", "args": ["x", "buf"], "deps": ["t1"]}), "function.body[3].deps[0]", "defined in a loop"),
    ("step zero", lambda d: _at(d, LOOP).update(step=0), f"{LOOP}.step", "cannot be 0"),
    ("auto in manual", lambda d: d["function"]["body"].append(
        {"scope": "manual", "body": [{"scope": "auto", "body": []}]}), "function.body[3].body[0].scope", "AUTO scope"),
    ("memref too small", lambda d: d["function"]["params"][0].update(memref={"base": "m", "size": 4}), "function.params[0].memref.size", "cannot hold"),
    ("unknown compiler dep", lambda d: _at(d, SUBMIT).update(compiler_deps=[{"on": "zz"}]), f"{SUBMIT}.compiler_deps[0].on", "not a TaskId"),
    ("carried outside its loop", lambda d: d["function"]["body"].append(
        {"call": "k", "name": "k2", "args": ["x", "buf"], "compiler_deps": [{"on": "last", "carried": "L"}]}),
     "function.body[3].compiler_deps[0].carried", "not a loop around call 'k2'"),
    ("carried fan-in", lambda d: _at(d, SUBMIT).update(compiler_deps=[{"on": "t1", "loop": "L", "calls": ["k1"],
                                                                       "carried": "L"}]),
     f"{SUBMIT}.compiler_deps[0].carried", "cannot also be loop-carried"),
    ("not a bool", lambda d: d["function"].update(auto_scope="yes"), "function.auto_scope", "true or false"),
    ("kernel returns", lambda d: d["kernels"]["k"].update(returns=["zz"]), "kernels.k.returns[0]", "not a tensor parameter"),
]


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
