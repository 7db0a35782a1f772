"""Unusable input through the command line: exit 2, one located line on stderr, no traceback.

Each case mutates one thing of a small valid program and runs ``neuronsim show`` on it: with
``--json`` in a subprocess (the real exit path: status, both streams), and for people
in-process through click's test runner (to keep the suite fast).  The JSON path in the message and in the
``neuronsim.error/1`` document must be exactly the offending value, and the message must say
what was expected.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from neuronsim.machine.formats.program_json import load_program, loads_program, program_to_json
from neuronsim.machine.formats.validate import validate_program
from neuronsim.verify.cli import cli
from neuronsim_tests.format_kit import BASE  # noqa: F401

#: The format spec's small example programs, shipped in examples/ with their races.
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

CLI = [sys.executable, "-c", "from neuronsim.verify.cli import main; main()"]

# Paths of the nodes above, for readability of the cases.
LOAD, LOOP, MM, SCALE, STORE = "body[0]", "body[1]", "body[1].body[0]", "body[1].body[1]", "body[2]"


def _node(doc: dict, name: str) -> dict:
    """The instruction called ``name`` in a document (searching loop bodies)."""
    stack = list(doc["body"])
    while stack:
        node = stack.pop()
        if node.get("name") == name:
            return node
        stack.extend(node.get("body", []))
    raise KeyError(name)


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], input=stdin, capture_output=True, text=True, timeout=60)


def _edit(fn: Callable[[dict], None]) -> str:
    doc = copy.deepcopy(BASE)
    fn(doc)
    return json.dumps(doc)


def _set(instruction: str, **values) -> Callable[[dict], None]:
    return lambda doc: _node(doc, instruction).update(values)


def _tensor(tensor: str, **values) -> Callable[[dict], None]:
    def edit(doc: dict) -> None:
        for key, value in values.items():
            if value is None:
                del doc["tensors"][tensor][key]
            else:
                doc["tensors"][tensor][key] = value

    return edit


def _access(instruction: str, group: str, index: int, **values) -> Callable[[dict], None]:
    return lambda doc: _node(doc, instruction)[group][index].update(values)


CASES: list[tuple[str, str, str, str]] = [
    # (id, document text, expected JSON path, fragment of what was expected)
    ("malformed-json", '{"format": "neuronsim.program/1", "body": [', "", "malformed JSON at line 1"),
    ("unknown-top-level-key", _edit(lambda d: d.update(bogus=1)), "bogus", "unknown key"),
    ("unknown-tensor-key", _tensor("xs", colour="red"), "tensors.xs.colour", "unknown key in a tensor"),
    ("unknown-access-key", _access("mm", "reads", 1, stride=2), f"{MM}.reads[1].stride", "unknown key in an access"),
    ("unknown-instruction-key", _set("store", priority=3), f"{STORE}.priority", "unknown key in an instruction"),
    ("unknown-dep-key", lambda d: _node(d, "scale")["deps"][0].update(why="x"), f"{SCALE}.deps[0].why",
     "unknown key in a dep"),
    ("unknown-loop-key", lambda d: d["body"][1].update(unroll=True), f"{LOOP}.unroll", "unknown key in a loop"),
    ("unknown-dtype", _tensor("xs", dtype="float64"), "tensors.xs.dtype", "expected one of"),
    ("unknown-engine", _set("scale", engine="tensor"), f"{SCALE}.engine",
     "expected one of ['pe', 'act', 'dve', 'pool', 'sp']"),
    ("unknown-memory", _tensor("xs", memory="hbm"), "tensors.xs.memory", "expected 'dram', 'sbuf' or 'psum'"),
    ("op-on-wrong-engine", _set("mm", engine="dve"), f"{MM}.engine", "runs on ['pe']"),
    ("footprint-offset", _access("store", "reads", 0, offset=2048), f"{STORE}.reads[0].offset", "leaves the tensor"),
    ("footprint-pattern", _access("store", "reads", 0, offset=8, pattern=[[2, 5]]), f"{STORE}.reads[0].pattern",
     "elements [0, 15]"),
    ("footprint-pattern-in-loop", _access("scale", "writes", 0, pattern=[[1, 17]], per_iteration={"k": 0}),
     f"{SCALE}.writes[0].pattern", "elements [0, 16]"),
    ("footprint-offset-with-pattern", _access("store", "reads", 0, offset=16, pattern=[[1, 1]]),
     f"{STORE}.reads[0].offset", "elements [16, 16]"),
    ("footprint-per-iteration", _access("scale", "writes", 0, per_iteration={"k": 9}),
     f"{SCALE}.writes[0].per_iteration", "in some instance"),
    ("footprint-negative-per-iteration", _access("scale", "writes", 0, per_iteration={"k": -1}),
     f"{SCALE}.writes[0].per_iteration", "in some instance"),
    ("footprint-partitions", _access("mm", "reads", 1, partitions=[0, 64, 3]), f"{MM}.reads[1].partitions",
     "reaches partition 189"),
    ("per-iteration-outside-loop", _access("store", "reads", 0, pattern=[[1, 4]], per_iteration={"k": 1}),
     f"{STORE}.reads[0].per_iteration.k", "does not enclose"),
    ("psum-crossing-bank", _tensor("acc", offset=2000), "tensors.acc.offset", "cross the end of bank 1"),
    # (whole banks side by side are a PSUM tensor since NKI 0.4; more than PSUM's eight is not)
    ("psum-larger-than-psum", _tensor("acc", shape=[128, 4608]), "tensors.acc.shape", "PSUM holds 8 banks of 2048"),
    ("psum-banks-past-the-end", _tensor("acc", shape=[128, 4096], bank=1), "tensors.acc.offset",
     "ends inside PSUM"),
    ("too-many-partitions", _tensor("xs", shape=[129, 16]), "tensors.xs.shape[0]", "at most 128"),
    ("partitions-past-128", _tensor("xs", partition=64), "tensors.xs.partition", "run past partition 128"),
    ("placement-past-end-of-sbuf", _tensor("xs", offset=192 * 1024 - 32), "tensors.xs.offset",
     "overlap the end of SBUF"),
    ("duplicate-instruction-names", _set("store", name="load"), f"{STORE}.name", "duplicate name 'load'"),
    ("duplicate-instruction-loop-name", lambda d: d["body"][1].update(loop="load"), f"{LOOP}.loop",
     "duplicate name 'load'"),
    ("dep-on-unknown-name", _set("store", deps=[{"on": "nobody"}]), f"{STORE}.deps[0].on",
     "unknown instruction 'nobody'"),
    ("dep-on-loop", _set("store", deps=[{"on": "k"}]), f"{STORE}.deps[0].on", "is a loop"),
    ("dep-on-later-instance", _set("load", deps=[{"on": "store"}]), f"{LOAD}.deps[0].on", "later in program order"),
    ("dep-on-later-in-loop", _set("mm", deps=[{"on": "scale"}]), f"{MM}.deps[0].on", "later in program order"),
    ("dep-on-itself", _set("mm", deps=[{"on": "mm"}]), f"{MM}.deps[0].on", "loop_carried"),
    ("loop-carried-without-loop", _set("store", deps=[{"on": "load", "loop_carried": True}]),
     f"{STORE}.deps[0].loop_carried", "needs a loop enclosing both"),
    ("loop-carried-from-outside", _set("store", deps=[{"on": "scale", "loop_carried": True}]),
     f"{STORE}.deps[0].loop_carried", "needs a loop enclosing both"),
    ("bad-dep-kind", _set("store", deps=[{"on": "load", "kind": "true"}]), f"{STORE}.deps[0].kind",
     "expected 'flow', 'anti', 'output' or 'ordered'"),
    ("partial-placement-sbuf", _tensor("xs", offset=None), "tensors.xs.offset", "partial placement"),
    ("partial-placement-psum", _tensor("acc", bank=None), "tensors.acc.bank", "partial placement"),
    ("dram-address-and-alias", _tensor("x", alias="g0"), "tensors.x.alias", "exactly one of 'address' and 'alias'"),
    ("placement-key-of-other-memory", _tensor("xs", address=0), "tensors.xs.address",
     "not a placement key of a sbuf tensor"),
    ("queue-on-non-dma-op", _set("scale", queue="dma0"), f"{SCALE}.queue", "only DMA ops"),
    ("unknown-queue", _set("store", queue="dma3"), f"{STORE}.queue", "expected one of ['dma0', 'dma1', 'dma2']"),
    ("pe-writes-sbuf", _access("mm", "writes", 0, tensor="xs"), f"{MM}.writes[0].tensor", "PE writes only PSUM"),
    ("pe-reads-other-psum", lambda d: (d["tensors"].update(acc2={**d["tensors"]["acc"], "bank": 2}),
                                       _node(d, "mm")["reads"].append({"tensor": "acc2"})),
     f"{MM}.reads[2]", "PSUM tile it accumulates into"),
    ("pool-touches-psum", _set("scale", engine="pool", op="tensor_copy", attrs={}), f"{SCALE}.reads[0].tensor",
     "POOL never touches PSUM"),
    ("compute-touches-dram", _access("scale", "reads", 0, tensor="x"), f"{SCALE}.reads[0].tensor",
     "only DMA ops touch DRAM"),
    ("dma-touches-psum", _access("store", "reads", 0, tensor="acc"), f"{STORE}.reads[0].tensor",
     "DMA ops never touch PSUM"),
    ("tensor-tensor-two-psum-reads", _set("scale", engine="dve", op="tensor_tensor", attrs={"op": "add"},
                                          reads=[{"tensor": "acc"}, {"tensor": "acc"}]), f"{SCALE}.reads",
                                          "at most one PSUM operand"),
    ("partition-start-rule", _access("scale", "writes", 0, partitions=[16, 32]), f"{SCALE}.writes[0].partitions",
     "cannot start at partition 16"),
    ("swdge-not-from-pool", _set("store", attrs={"dge": "swdge"}), f"{STORE}.engine", "generated by POOL"),
    ("hwdge-on-trn1", _set("store", attrs={"dge": "hwdge"}), f"{STORE}.attrs.dge", "does not exist on trn1"),
    ("unknown-attr-of-known-op", _set("scale", attrs={"func": "exp", "slope": 2}), f"{SCALE}.attrs.slope",
     "unknown attribute of op 'activation'"),
    ("bad-attr-value", _set("scale", attrs={"func": "softmax"}), f"{SCALE}.attrs.func", "expected one of 'identity'"),
    ("bad-cycles-of-opaque-op", _set("scale", op="my_op", attrs={"cycles": True}), f"{SCALE}.attrs.cycles",
     "non-negative integer"),
    ("wrong-operand-count", _set("store", reads=[]), f"{STORE}.reads", "takes 1..1 reads, got 0"),
    ("unknown-tensor", _access("store", "reads", 0, tensor="nope"), f"{STORE}.reads[0].tensor",
     "unknown tensor 'nope'"),
    ("machine-unknown-preset", lambda d: d.update(machine="trn9"), "machine", "unknown machine preset"),
    ("machine-override-unknown-key", lambda d: d.update(machine={"base": "trn1", "dma_queue": 4}), "machine.dma_queue",
     "unknown machine parameter"),
    ("machine-override-bad-value", lambda d: d.update(machine={"base": "trn2", "dma_queues": 0}), "machine.dma_queues",
     "expected a positive int"),
    ("wrong-format", lambda d: d.update(format="neuronsim.program/2"), "format", "expected 'neuronsim.program/1'"),
    # another document of neuronsim's, or a trace: said as such (its first key was "unknown")
    ("run-report", json.dumps({"format": "neuronsim.run/1", "scenario": "k", "summary": {}}), "format",
     "this is a neuronsim.run/1 document, not a neuronsim.program/1 program"),
    ("perfetto-trace", json.dumps({"traceEvents": [], "displayTimeUnit": "ns"}), "format",
     "missing; this is a trace (traceEvents"),
    ("trip-count-zero", lambda d: d["body"][1].update(trip_count=0), f"{LOOP}.trip_count", "integer >= 1"),
    # (it was blamed on the first access of the tensor)
    ("rotates-with-no-loop", _tensor("xs", **{"x-rotate": {"loop": "nope", "slots": 2, "stride": 64}}),
     "tensors.xs.x-rotate.loop", "no loop 'nope' in the program"),
    ("pattern-not-pairs", _access("store", "reads", 0, pattern=[[1, 2, 3]]), f"{STORE}.reads[0].pattern[0]",
     "[stride, count] pair"),
    ("per-iteration-without-pattern", _access("store", "reads", 0, per_iteration={"k": 1}), f"{STORE}.reads[0].pattern",
     "must give its 'pattern'"),
    ("dram-access-with-partitions", _access("store", "writes", 0, partitions=[0, 1]), f"{STORE}.writes[0].partitions",
     "no partitions"),
]
CASES = [(cid, text if isinstance(text, str) else _edit(text), path, fragment) for cid, text, path, fragment in CASES]


def test_base_document_is_valid():
    program = loads_program(json.dumps(BASE))
    validate_program(program)
    assert [inst.name for inst, _ in program.instructions()] == ["load", "mm", "scale", "store"]


def _one_error_line(stderr: str, path: str, fragment: str) -> None:
    assert "Traceback" not in stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    prefix = f"error: {path}: " if path else "error: "
    assert lines[0].startswith(prefix), (lines[0], prefix)
    assert fragment in lines[0], (lines[0], fragment)


@pytest.mark.parametrize("text,path,fragment", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_exits_2_with_located_message(tmp_path, text, path, fragment):
    source = tmp_path / "bad.json"
    source.write_text(text)
    path = path or str(source)  # an error of the document itself names the file it was read from
    plain = CliRunner().invoke(cli, ["show", str(source)])
    assert plain.exit_code == 2, plain.output
    assert plain.stdout == ""
    _one_error_line(plain.stderr, path, fragment)

    as_json = run_cli("show", "--json", str(source))
    assert as_json.returncode == 2, as_json
    _one_error_line(as_json.stderr, path, fragment)
    document = json.loads(as_json.stdout)
    assert document["format"] == "neuronsim.error/1"
    assert document["path"] == path
    assert fragment in document["message"]
    assert as_json.stderr.strip() == f"error: {path + ': ' if path else ''}{document['message']}"


def test_each_case_breaks_one_thing():
    """The cases are distinct documents, and only the malformed one is not JSON."""
    texts = [text for _, text, _, _ in CASES]
    assert len(set(texts)) == len(texts)
    assert json.dumps(BASE) not in texts


def test_stdin_dash_reads_standard_input():
    good = run_cli("show", "-", stdin=json.dumps(BASE))
    assert good.returncode == 0, good.stderr
    assert good.stdout.startswith("program on trn1: 5 tensors, 4 instructions, 6 instances")
    assert good.stderr == ""
    as_json = run_cli("show", "--json", "-", stdin=json.dumps(BASE))
    assert as_json.returncode == 0
    assert json.loads(as_json.stdout) == program_to_json(loads_program(json.dumps(BASE)))
    bad = run_cli("show", "--json", "-", stdin='{"format": "neuronsim.program/1", "body": [}')
    assert bad.returncode == 2
    assert json.loads(bad.stdout)["path"] == "-"  # the document, named as it was given: standard input
    _one_error_line(bad.stderr, "-", "malformed JSON")


def test_missing_file_is_exit_2_not_a_traceback(tmp_path):
    result = run_cli("show", "--json", str(tmp_path / "absent.json"))
    assert result.returncode == 2
    _one_error_line(result.stderr, "", "cannot read")
    assert json.loads(result.stdout)["format"] == "neuronsim.error/1"


def test_console_script_when_installed():
    script = shutil.which("neuronsim", path=os.path.dirname(sys.executable))
    if script is None:
        pytest.fail("the neuronsim console script is not installed next to the interpreter")
    result = subprocess.run([script, "show", "-"], input="[", capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    _one_error_line(result.stderr, "", "malformed JSON")


EXAMPLE_FILES = sorted(EXAMPLES.glob("*.json"))


def test_examples_exist():
    assert len(EXAMPLE_FILES) >= 3


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.stem for p in EXAMPLE_FILES])
def test_every_example_loads_and_validates(path):
    program = load_program(str(path))
    validate_program(program)
    result = run_cli("show", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0].startswith("program on ")


def test_an_error_of_the_whole_file_names_the_file(tmp_path):
    # the size limit and the encoding checks said what was wrong and not of which file (probe_am)
    nul = tmp_path / "nul.json"
    nul.write_bytes(b"\x00\x00{}")
    _one_error_line(run_cli("check", str(nul)).stderr, str(nul), "the file holds NUL bytes")
    good = tmp_path / "good.json"
    good.write_text(json.dumps(BASE))
    big = run_cli("check", "--json", "--max-input", "10", str(good))
    _one_error_line(big.stderr, str(good), "the input is larger than 10 bytes")
    assert json.loads(big.stdout)["path"] == str(good)


def test_a_key_twice_in_one_object_is_located_at_its_second_place(tmp_path):
    # the message said which key, not where: "malformed JSON: the key 'name' appears twice" (probe_al)
    doc = json.loads(json.dumps(BASE))
    text = json.dumps(doc, indent=1).replace('"name": "', '"name": "x", "name": "', 1)
    source = tmp_path / "twice.json"
    source.write_text(text)
    second = text.index('"name": "', text.index('"name": "') + 1)
    line = text.count("\n", 0, second) + 1
    column = second - (text.rfind("\n", 0, second) + 1) + 1
    _one_error_line(run_cli("check", str(source)).stderr, str(source),
                    f"malformed JSON at line {line} column {column}: the key 'name' appears twice in one object")
