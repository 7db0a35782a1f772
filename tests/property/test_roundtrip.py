"""Load and save are inverse on canonical programs; deps merge; ``x-`` keys survive.

Canonical = what :func:`neuronsim.machine.formats.program_json.dumps_program` writes.  Properties:

* ``load(save(p)) == p`` for generated :class:`~neuronsim.machine.ir.program.Program` objects;
* ``save(load(t)) == t`` for canonical texts ``t`` (byte for byte, key order included);
* a canonical document with ``x-`` keys added at every level and duplicate deps added loads
  and saves to the same document with the duplicates merged into the stronger kind
  (flow > output > anti > ordered), per ``(on, loop_carried)``, at the first one's place.
"""

from __future__ import annotations

import copy
import json
from itertools import product

import pytest
from hypothesis import given
from hypothesis import strategies as st

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.formats.program_json import (dumps_program, load_program, loads_program, program_to_json,
                                                    save_program)
from neuronsim.machine.ir.program import Dep, Instruction, Loop, MemoryKind, Program, Tensor
from neuronsim.verify.strategies import programs

KINDS = ("ordered", "anti", "output", "flow")
STRENGTH = {name: rank for rank, name in enumerate(KINDS)}


@given(programs(machine=None, virtual=True))
def test_load_inverts_save(program):
    text = dumps_program(program)
    again = loads_program(text)
    assert again == program
    assert dumps_program(again) == text  # the canonical text is a fixed point


@given(programs(deps="sequential", max_loops=3, max_depth=3))
def test_save_inverts_load_on_canonical_text(program):
    text = dumps_program(program)
    assert dumps_program(loads_program(text)) == text
    assert json.loads(text)["format"] == "neuronsim.program/1"


def _nodes(body):
    for node in body:
        yield node
        if "loop" in node:
            yield from _nodes(node["body"])


def _decorate(doc: dict, data) -> tuple[dict, dict]:
    """``(input, expected)``: ``doc`` with ``x-`` keys everywhere the format has objects, and
    with duplicate deps in the input that the expected canonical output has merged."""
    expected = copy.deepcopy(doc)
    counter = iter(range(10**6))

    def tag(obj: dict) -> None:
        if data.draw(st.booleans(), label="tag"):
            value = data.draw(st.sampled_from([1, "note", [1, 2], {"a": None}, True]))
            obj[f"x-ext{next(counter)}"] = value

    tag(expected)
    if data.draw(st.booleans(), label="machine object"):
        expected["machine"] = {"base": expected["machine"], "x-origin": "test"}
    for tensor in expected["tensors"].values():
        tag(tensor)
    for node in _nodes(expected["body"]):
        tag(node)
        for access in node.get("reads", []) + node.get("writes", []):
            tag(access)
        for dep in node.get("deps", []):
            tag(dep)
        if "attrs" in node:
            tag(node["attrs"])
    given_doc = copy.deepcopy(expected)
    for node in _nodes(given_doc["body"]):
        deps = node.get("deps", [])
        extra = []
        for dep in deps:
            if data.draw(st.booleans(), label="duplicate"):
                kind = data.draw(st.sampled_from(KINDS))
                duplicate = {"on": dep["on"], "kind": kind}
                if dep.get("loop_carried"):
                    duplicate["loop_carried"] = True
                elif data.draw(st.booleans(), label="explicit false"):
                    duplicate["loop_carried"] = False
                extra.append(duplicate)
        if extra:
            node["deps"] = deps + extra
            expected_node = next(n for n in _nodes(expected["body"]) if n.get("name") == node["name"])
            for dup in extra:
                for dep in expected_node["deps"]:
                    if dep["on"] == dup["on"] and bool(dep.get("loop_carried")) == bool(dup.get("loop_carried")):
                        if STRENGTH[dup["kind"]] > STRENGTH[dep["kind"]]:
                            dep["kind"] = dup["kind"]
    return given_doc, expected


@given(programs(deps="random"), st.data())
def test_extensions_kept_and_duplicate_deps_merged(program, data):
    given_doc, expected = _decorate(program_to_json(program), data)
    loaded = loads_program(json.dumps(given_doc))
    assert dumps_program(loaded) == json.dumps(expected, indent=1) + "\n"
    for inst, _ in loaded.instructions():
        keys = [(d.on, d.loop_carried) for d in inst.deps]
        assert len(keys) == len(set(keys))


def _two_dep_doc(first: dict, second: dict) -> str:
    return json.dumps({
        "format": "neuronsim.program/1",
        "tensors": {},
        "body": [{"loop": "i", "trip_count": 2, "body": [
            {"name": "a", "engine": "dve", "op": "noop_a"},
            {"name": "b", "engine": "act", "op": "noop_b", "deps": [first, second]},
        ]}],
    })


@pytest.mark.parametrize("first,second", list(product(KINDS, KINDS)))
def test_two_deps_on_one_instruction_merge_into_the_stronger(first, second):
    program = loads_program(_two_dep_doc({"on": "a", "kind": first}, {"on": "a", "kind": second}))
    b = program.instruction_map()["b"]
    stronger = first if STRENGTH[first] >= STRENGTH[second] else second
    assert b.deps == (Dep("a", EdgeKind[stronger.upper()], False),)
    assert program_to_json(program)["body"][0]["body"][1]["deps"] == [{"on": "a", "kind": stronger}]


def test_default_kind_is_ordered_and_merges_as_weakest():
    program = loads_program(_two_dep_doc({"on": "a"}, {"on": "a", "kind": "anti"}))
    assert program.instruction_map()["b"].deps == (Dep("a", EdgeKind.ANTI),)
    program = loads_program(_two_dep_doc({"on": "a"}, {"on": "a", "loop_carried": False}))
    assert program.instruction_map()["b"].deps == (Dep("a", EdgeKind.ORDERED),)


def test_loop_carried_and_plain_deps_do_not_merge():
    program = loads_program(_two_dep_doc({"on": "a", "kind": "flow"}, {"on": "a", "loop_carried": True}))
    assert program.instruction_map()["b"].deps == (Dep("a", EdgeKind.FLOW), Dep("a", EdgeKind.ORDERED, True))
    deps = program_to_json(program)["body"][0]["body"][1]["deps"]
    assert deps == [{"on": "a", "kind": "flow"}, {"on": "a", "kind": "ordered", "loop_carried": True}]


def test_saving_a_program_object_with_duplicate_deps_writes_one():
    body = (Instruction("a", "dve", "noop"),
            Instruction("b", "act", "noop", deps=(Dep("a", EdgeKind.ANTI), Dep("a", EdgeKind.FLOW), Dep("a"))))
    doc = program_to_json(Program({}, body))
    assert doc["body"][1]["deps"] == [{"on": "a", "kind": "flow"}]


def test_extension_keys_everywhere_are_preserved():
    doc = {
        "format": "neuronsim.program/1",
        "machine": {"base": "trn2", "dma_queues": 4, "x-tuned": True},
        "tensors": {
            "d": {"memory": "dram", "dtype": "uint8", "shape": [64], "alias": "g", "x-origin": "collective"},
            "s": {"memory": "sbuf", "dtype": "uint8", "shape": [32, 64], "partition": 32, "offset": 0, "x-pool": 1},
        },
        "body": [
            {"loop": "i", "trip_count": 2, "body": [
                {"name": "ld", "engine": "sp", "op": "dma_copy", "queue": "dma3",
                 "reads": [{"tensor": "d", "x-hint": "contiguous"}], "writes": [{"tensor": "s", "partitions": [0, 1]}],
                 "attrs": {"dge": "hwdge", "x-cost-model": "v3"},
                 "deps": [{"on": "ld", "kind": "anti", "loop_carried": True, "x-why": "WAR on s"}],
                 "x-line": 12},
            ], "x-unroll": False},
        ],
        "x-compiler": {"name": "test", "version": [1, 2]},
    }
    program = loads_program(json.dumps(doc))
    assert program_to_json(program) == doc
    assert dumps_program(program) == json.dumps(doc, indent=1) + "\n"


def test_save_and_load_through_files(tmp_path):
    tensors = {"t": Tensor("t", MemoryKind.PSUM, "float32", (4, 8), partition=0, offset=0, bank=7)}
    body = (Loop("i", 3, (Instruction("w", "act", "memset_like", writes=()),)),)
    program = Program(tensors, body, "trn1")
    path = tmp_path / "p.json"
    save_program(program, str(path))
    assert load_program(str(path)) == program
    assert [p.name for p in tmp_path.iterdir()] == ["p.json"]  # no temporary left behind


def test_psum_offset_and_dma_queue_defaults_are_made_explicit():
    doc = {
        "format": "neuronsim.program/1",
        "tensors": {"p": {"memory": "psum", "dtype": "float32", "shape": [1, 4], "partition": 0, "bank": 2},
                    "s": {"memory": "sbuf", "dtype": "float32", "shape": [1, 4], "partition": 0, "offset": 0}},
        "body": [{"name": "c", "engine": "pool", "op": "dma_copy", "reads": [{"tensor": "s", "partitions": [0, 1, 1]}],
                  "writes": [{"tensor": "s"}]}],
    }
    saved = program_to_json(loads_program(json.dumps(doc)))
    assert saved["machine"] == "trn1"
    assert saved["tensors"]["p"]["offset"] == 0
    assert saved["body"][0]["queue"] == "dma0"
    assert saved["body"][0]["reads"][0]["partitions"] == [0, 1]
    assert dumps_program(loads_program(json.dumps(saved))) == json.dumps(saved, indent=1) + "\n"
