"""Shared helpers of the tests, moved from tests/unit/test_tasks_format.py."""

from __future__ import annotations
import copy


LOOP, SUBMIT = "function.body[2]", "function.body[2].body[1]"

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

# the loop's iter_arg starts from an invalid TaskId
BASE["function"]["body"].insert(1, {"let": "t0", "task_invalid": True})

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
    ("unknown dtype", lambda d: d["function"]["params"][0].update(dtype="float64"), "function.params[0].dtype",
     "unknown dtype"),
    ("undefined name", lambda d: _at(d, SUBMIT)["args"].__setitem__(0, "nope"), f"{SUBMIT}.args[0]", "not defined"),
    ("wrong kind", lambda d: _at(d, SUBMIT)["args"].__setitem__(0, "t0"), f"{SUBMIT}.args[0]", "is a TaskId"),
    ("arity", lambda d: _at(d, SUBMIT)["args"].append("x"), f"{SUBMIT}.args", "takes 2 arguments"),
    ("outputs", lambda d: _at(d, SUBMIT)["outputs"].append("o2"), f"{SUBMIT}.outputs", "returns 1 values"),
    ("duplicate var", lambda d: _at(d, SUBMIT).update(task_id="t0"), f"{SUBMIT}.task_id", "defined twice"),
    ("duplicate label", lambda d: _at(d, SUBMIT).update(name="L"), f"{SUBMIT}.name", "duplicate label"),
    ("slice leaves", lambda d: _at(d, LOOP)["body"][0].update(offset=[40, 0]), f"{LOOP}.body[0].offset[0]",
     "leaves dimension 0"),
    ("slice rank", lambda d: _at(d, LOOP)["body"][0].update(shape=[32]), f"{LOOP}.body[0].shape", "has 2 dimensions"),
    ("bad expression", lambda d: _at(d, LOOP)["body"][0].update(offset=["i ** 2", 0]), f"{LOOP}.body[0].offset[0]",
     "unsupported expression"),
    ("yield count", lambda d: _at(d, LOOP).update(**{"yield": []}), f"{LOOP}.yield", "yields 0 values"),
    ("returns count", lambda d: _at(d, LOOP).update(returns=[]), f"{LOOP}.returns", "expected 1 return vars"),
    ("direction", lambda d: _at(d, SUBMIT).update(directions=["inout", "output_existing"]), f"{SUBMIT}.directions[0]",
     "cannot be given"),
    ("dep on tensor", lambda d: _at(d, SUBMIT).update(deps=["buf"]), f"{SUBMIT}.deps[0]", "is a tensor"),
    ("in-loop name after loop", lambda d: d["function"]["body"].append(
        {"call": "k", "name": "k2", "args": ["x", "buf"], "deps": ["t1"]}), "function.body[3].deps[0]",
        "defined in a loop"),
    ("step zero", lambda d: _at(d, LOOP).update(step=0), f"{LOOP}.step", "cannot be 0"),
    ("auto in manual", lambda d: d["function"]["body"].append(
        {"scope": "manual", "body": [{"scope": "auto", "body": []}]}), "function.body[3].body[0].scope", "AUTO scope"),
    ("memref too small", lambda d: d["function"]["params"][0].update(memref={"base": "m", "size": 4}),
     "function.params[0].memref.size", "cannot hold"),
    ("unknown compiler dep", lambda d: _at(d, SUBMIT).update(compiler_deps=[{"on": "zz"}]),
     f"{SUBMIT}.compiler_deps[0].on", "not a TaskId"),
    ("carried outside its loop", lambda d: d["function"]["body"].append(
        {"call": "k", "name": "k2", "args": ["x", "buf"], "compiler_deps": [{"on": "last", "carried": "L"}]}),
     "function.body[3].compiler_deps[0].carried", "not a loop around call 'k2'"),
    ("carried fan-in", lambda d: _at(d, SUBMIT).update(compiler_deps=[{"on": "t1", "loop": "L", "calls": ["k1"],
                                                                       "carried": "L"}]),
     f"{SUBMIT}.compiler_deps[0].carried", "cannot also be loop-carried"),
    ("not a bool", lambda d: d["function"].update(auto_scope="yes"), "function.auto_scope", "true or false"),
    ("kernel returns", lambda d: d["kernels"]["k"].update(returns=["zz"]), "kernels.k.returns[0]",
     "not a tensor parameter"),
]

