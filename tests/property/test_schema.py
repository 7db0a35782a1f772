"""The JSON Schema of the format (``docs/schema/program.schema.json``) against the loader.

Everything the loader accepts and :func:`neuronsim.machine.formats.program_json.save_program` writes validates; a
sample of what the loader rejects (one structural mutation of a valid document) is rejected
by the schema as well; ``x-`` keys validate wherever the format allows extensions.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.formats.program_json import dumps_program, loads_program, program_to_json
from neuronsim_tests.docs_kit import ROOT, program_validator
from neuronsim.verify.strategies import programs

SHIPPED = sorted([*ROOT.glob("examples/*.json"), *(p for p in ROOT.glob("scenarios/*.json")
                                                   if not p.name.endswith(".golden.json"))])


def _errors(doc) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in program_validator().iter_errors(doc)]


def test_shipped_programs_are_found():
    assert {p.parent.name for p in SHIPPED} == {"examples", "scenarios"} and len(SHIPPED) >= 9


@pytest.mark.parametrize("path", SHIPPED, ids=[f"{p.parent.name}/{p.stem}" for p in SHIPPED])
def test_every_shipped_program_validates(path: Path):
    doc = json.loads(path.read_text())
    assert _errors(doc) == []
    assert _errors(program_to_json(loads_program(path.read_bytes()))) == []


@settings(max_examples=120)
@given(st.one_of(programs(deps="random", virtual=True, machine=None),
                 programs(deps="sequential", max_loops=3, max_depth=3),
                 programs(deps="none", virtual=True, placed=False)))
def test_what_save_program_writes_validates(program):
    text = dumps_program(program)
    loads_program(text)  # the loader accepts it too: the two agree on a valid document
    assert _errors(json.loads(text)) == []


# -- mutations the loader rejects ----------------------------------------------------------
def _objects(doc: dict, kind: str) -> list[dict]:
    """Every object of ``kind`` in a saved document."""
    found = {"document": [doc], "tensor": list(doc["tensors"].values()), "instruction": [], "loop": [],
             "access": [], "dep": []}
    stack = list(doc["body"])
    while stack:
        node = stack.pop()
        if "loop" in node:
            found["loop"].append(node)
            stack.extend(node["body"])
            continue
        found["instruction"].append(node)
        found["access"] += node["reads"] + node["writes"]
        found["dep"] += node.get("deps", [])
    return found[kind]


def _set(key: str, value) -> Callable[[dict], None]:
    return lambda obj: obj.__setitem__(key, value)


def _drop(key: str) -> Callable[[dict], None]:
    return lambda obj: obj.pop(key)


#: (what, object kind, applies to this object?, mutation): each makes a document the loader rejects.
MUTATIONS = [
    ("unknown document key", "document", lambda o: True, _set("flavour", 1)),
    ("wrong format", "document", lambda o: True, _set("format", "neuronsim.program/2")),
    ("unknown preset", "document", lambda o: True, _set("machine", "trn9")),
    ("unknown machine parameter", "document", lambda o: True, _set("machine", {"base": "trn1", "warp": 2})),
    ("zero DMA queues", "document", lambda o: True, _set("machine", {"base": "trn2", "dma_queues": 0})),
    ("body missing", "document", lambda o: True, _drop("body")),
    ("unknown tensor key", "tensor", lambda o: True, _set("colour", "red")),
    ("unknown memory", "tensor", lambda o: True, _set("memory", "hbm")),
    ("unknown dtype", "tensor", lambda o: True, _set("dtype", "float64")),
    ("empty shape", "tensor", lambda o: True, _set("shape", [])),
    ("zero extent", "tensor", lambda o: True, _set("shape", [0])),
    ("dtype missing", "tensor", lambda o: True, _drop("dtype")),
    ("bank on sbuf", "tensor", lambda o: o["memory"] == "sbuf", _set("bank", 0)),
    ("partial sbuf placement", "tensor", lambda o: o["memory"] == "sbuf" and "offset" in o, _drop("offset")),
    ("partition on dram", "tensor", lambda o: o["memory"] == "dram", _set("partition", 0)),
    ("address and alias", "tensor", lambda o: o["memory"] == "dram" and "address" in o, _set("alias", "g9")),
    ("role on psum", "tensor", lambda o: o["memory"] == "psum", _set("role", "output")),
    ("unknown instruction key", "instruction", lambda o: True, _set("priority", 3)),
    ("unknown engine", "instruction", lambda o: True, _set("engine", "tensor")),
    ("empty op", "instruction", lambda o: True, _set("op", "")),
    ("queue on a compute op", "instruction", lambda o: not o["op"].startswith("dma"), _set("queue", "dma0")),
    ("unknown attr of a known op", "instruction", lambda o: o["op"] in ("matmul", "memset", "dma_copy", "iota"),
     lambda o: o.setdefault("attrs", {}).__setitem__("colour", 1)),
    ("negative cycles", "instruction", lambda o: True, lambda o: o.setdefault("attrs", {}).__setitem__("cycles", -1)),
    ("reads not a list", "instruction", lambda o: True, _set("reads", {})),
    ("unknown loop key", "loop", lambda o: True, _set("unroll", True)),
    ("zero trip count", "loop", lambda o: True, _set("trip_count", 0)),
    ("unknown access key", "access", lambda o: True, _set("stride", 2)),
    ("negative offset", "access", lambda o: True, _set("offset", -1)),
    ("pattern pair of one", "access", lambda o: True, _set("pattern", [[1]])),
    ("empty pattern", "access", lambda o: True, _set("pattern", [])),
    ("partitions of one", "access", lambda o: True, _set("partitions", [0])),
    ("zero partition count", "access", lambda o: True, _set("partitions", [0, 0])),
    ("tensor missing", "access", lambda o: True, _drop("tensor")),
    ("unknown dep kind", "dep", lambda o: True, _set("kind", "strong")),
    ("loop_carried not a bool", "dep", lambda o: True, _set("loop_carried", "yes")),
    ("unknown dep key", "dep", lambda o: True, _set("why", "x")),
]


@settings(max_examples=200)
@given(programs(deps="random", virtual=True), st.data())
def test_the_schema_rejects_what_the_loader_rejects(program, data):
    doc = program_to_json(program)
    applicable = [(what, kind, mutate) for what, kind, fits, mutate in MUTATIONS
                  if any(fits(obj) for obj in _objects(doc, kind))]
    what, kind, mutate = data.draw(st.sampled_from(applicable), label="mutation")
    bad = copy.deepcopy(doc)
    fits = next(f for w, _, f, _ in MUTATIONS if w == what)
    target = data.draw(st.sampled_from([o for o in _objects(bad, kind) if fits(o)]), label="object")
    mutate(target)
    with pytest.raises(ProgramError):
        loads_program(json.dumps(bad))
    assert _errors(bad), f"the schema accepts a document the loader rejects ({what})"


def test_every_mutation_is_tried_on_the_base_document():
    """Each mutation applies somewhere in one rich document and both reject the result there."""
    from neuronsim_tests.format_kit import BASE

    doc = program_to_json(loads_program(json.dumps(BASE)))
    doc["body"][1]["body"][0]["deps"] = [{"on": "mm", "kind": "flow", "loop_carried": True}]
    for what, kind, fits, mutate in MUTATIONS:
        bad = copy.deepcopy(doc)
        targets = [o for o in _objects(bad, kind) if fits(o)]
        assert targets, what
        mutate(targets[0])
        with pytest.raises(ProgramError):
            loads_program(json.dumps(bad))
        assert _errors(bad), what


def test_x_keys_validate_wherever_the_format_allows_extensions():
    from neuronsim_tests.format_kit import BASE

    doc = copy.deepcopy(BASE)
    doc["x-producer"] = {"tool": "mycompiler"}
    doc["machine"] = {"base": "trn1", "dma_queues": 3, "x-note": "default queues"}
    doc["tensors"]["xs"]["x-rotation"] = [0, 1]
    loop = doc["body"][1]
    loop["x-iterations"] = {"from": 0, "to": 2}
    mm = loop["body"][0]
    mm["x-dep-distance"] = 1
    mm["attrs"]["x-tile"] = "t0"
    mm["reads"][0]["x-layout"] = "k-major"
    mm["deps"][0]["x-why"] = "flow through xs"
    loads_program(json.dumps(doc))
    assert _errors(doc) == []
    saved = program_to_json(loads_program(json.dumps(doc)))
    assert saved["x-producer"] == {"tool": "mycompiler"} and _errors(saved) == []
