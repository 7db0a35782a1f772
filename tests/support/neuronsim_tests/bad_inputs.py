"""The bad inputs of issue #13, each a file's bytes with the JSON path and the words its error
must give.  Shared by the loader tests and the all-commands acceptance test.

Each case breaks one thing of a small valid program (:data:`VALID`, a race-free copy
through SBUF in a loop).  Cases JSON cannot express (integers of thousands of digits, numbers
beyond a double, lone surrogates, other encodings) are written as text.
"""

from __future__ import annotations

import re

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass

VALID: dict = {
    "format": "neuronsim.program/1",
    "machine": "trn1",
    "tensors": {
        "x": {"memory": "dram", "dtype": "float32", "shape": [128, 16], "address": 0, "role": "input"},
        "y": {"memory": "dram", "dtype": "float32", "shape": [128, 16], "address": 8192, "role": "output"},
        "xs": {"memory": "sbuf", "dtype": "float32", "shape": [128, 16], "partition": 0, "offset": 0},
    },
    "body": [
        {"loop": "k", "trip_count": 2, "body": [
            {"name": "load", "engine": "sp", "op": "dma_copy", "queue": "dma0",
             "reads": [{"tensor": "x"}], "writes": [{"tensor": "xs"}],
             "deps": [{"on": "store", "kind": "anti", "loop_carried": True}]},
            {"name": "scale", "engine": "act", "op": "activation", "reads": [{"tensor": "xs"}],
             "writes": [{"tensor": "xs"}], "attrs": {"func": "exp", "scale": 0.5},
             "deps": [{"on": "load", "kind": "flow"}]},
            {"name": "store", "engine": "sp", "op": "dma_copy", "queue": "dma1", "reads": [{"tensor": "xs"}],
             "writes": [{"tensor": "y"}], "deps": [{"on": "scale", "kind": "flow"}]},
        ]},
    ],
}
LOOP, LOAD, SCALE, STORE = "body[0]", "body[0].body[0]", "body[0].body[1]", "body[0].body[2]"

#: A task program: one kernel writing its tensor, with a scalar parameter.
TASKS: dict = {
    "format": "neuronsim.tasks/1",
    "kernels": {"produce": {"params": [{"name": "dst", "direction": "out"}, {"name": "k", "direction": "scalar"}],
                            "returns": ["dst"], "cost": 400}},
    "function": {"name": "f", "params": [{"name": "x", "shape": [64, 64], "dtype": "float32", "direction": "out"},
                                         {"name": "n", "scalar": "int", "value": 4}],
                 "body": [{"submit": "produce", "name": "p", "args": ["x", 1], "task_id": "t"}]},
}


@dataclass(frozen=True)
class BadInput:
    id: str
    data: bytes
    path: str
    """The JSON path the error names ("" for the document)."""
    fragment: str
    """Words the message must hold."""


def _doc(edit: Callable[[dict], None]) -> dict:
    doc = copy.deepcopy(VALID)
    edit(doc)
    return doc


def _text(edit: Callable[[dict], None] = lambda d: None) -> str:
    return json.dumps(_doc(edit))


def _marked(edit: Callable[[dict], None], raw: str) -> bytes:
    """The document with the string value ``"@RAW@"`` replaced by ``raw`` (text JSON cannot
    produce from Python values)."""
    return _text(edit).replace('"@RAW@"', raw).encode("utf-8")


def _scale(d: dict, value) -> None:
    d["body"][0]["body"][1]["attrs"]["scale"] = value


def _name(d: dict, value) -> None:
    d["body"][0]["body"][1]["name"] = value  # scale: nothing refers to it but store's dep
    d["body"][0]["body"][2]["deps"] = []


def _machine(**figures) -> Callable[[dict], None]:
    return lambda d: d.update(machine={"base": "trn1", **figures})


def _tensor(name: str, **values) -> Callable[[dict], None]:
    return lambda d: d["tensors"][name].update(values)


BAD_INPUTS: list[BadInput] = [
    BadInput("int-of-5000-digits", _marked(lambda d: d["body"][0].update(trip_count="@RAW@"), "7" * 5000),
             "", "an integer of 5000 digits"),
    BadInput("int-of-5000-digits-in-shape", _marked(_tensor("xs", shape=[128, "@RAW@"]), "1" + "0" * 4999),
             "", "line 1 column"),
    BadInput("huge-int-as-machine-figure", _text(_machine(pe_ghz=10**400)).encode(), "machine.pe_ghz",
             "within the range of a double"),
    BadInput("huge-int-as-attr-number", _text(lambda d: _scale(d, 10**400)).encode(), f"{SCALE}.attrs.scale",
             "expected a number"),
    BadInput("infinite-machine-figure", _marked(_machine(pe_ghz="@RAW@"), "1e999"), "", "beyond the range of a double"),
    BadInput("infinite-attr-number", _marked(lambda d: _scale(d, "@RAW@"), "-1e400"), "",
             "beyond the range of a double"),
    BadInput("nan-machine-figure", _marked(_machine(dve_ghz="@RAW@"), "NaN"), "", "NaN is not a JSON number"),
    BadInput("unhashable-memory", _text(_tensor("xs", memory=["sbuf"])).encode(), "tensors.xs.memory",
             "unknown memory"),
    BadInput("unhashable-dtype", _text(_tensor("xs", dtype={"f": 32})).encode(), "tensors.xs.dtype", "unknown dtype"),
    BadInput("unhashable-engine", _text(lambda d: d["body"][0]["body"][1].update(engine=["act"])).encode(),
             f"{SCALE}.engine", "unknown engine"),
    BadInput("unhashable-queue", _text(lambda d: d["body"][0]["body"][0].update(queue={"q": 0})).encode(),
             f"{LOAD}.queue", "unknown DMA queue"),
    BadInput("unhashable-dep-kind", _text(lambda d: d["body"][0]["body"][1]["deps"][0].update(kind=["flow"])).encode(),
             f"{SCALE}.deps[0].kind", "expected 'flow'"),
    BadInput("unhashable-role", _text(_tensor("x", role=["input"])).encode(), "tensors.x.role", "expected one of"),
    BadInput("unhashable-machine", _text(lambda d: d.update(machine=["trn1"])).encode(), "machine", "preset name"),
    BadInput("trip-count-2**63", _text(lambda d: d["body"][0].update(trip_count=2**63)).encode(),
             f"{LOOP}.trip_count", "below 2**63"),
    BadInput("negative-rng-seed", _text(lambda d: d["body"][0]["body"].insert(0, {
        "name": "seed_rng", "engine": "pool", "op": "set_rand_state", "attrs": {"seed": -1}})).encode(),
        f"{LOOP}.body[0].attrs.seed", "non-negative integer"),
    BadInput("lone-surrogate-name", _marked(lambda d: _name(d, "@RAW@"), '"sc\\ud800ale"'), f"{SCALE}.name",
             "lone surrogate U+D800"),
    BadInput("ansi-escape-in-name", _text(lambda d: _name(d, "\x1b[31mred")).encode(), f"{SCALE}.name",
             "control character U+001B"),
    BadInput("newline-in-loop-name", _text(lambda d: d["body"][0].update(loop="k\nj")).encode(), f"{LOOP}.loop",
             "control character U+000A"),
    BadInput("bidi-override-in-tensor-name",
             _text(lambda d: d["tensors"].update({"t\u202e": d["tensors"]["xs"]})).encode(),
             "tensors.t\u202e", "bidirectional override"),
    BadInput("empty-tensor-name", _text(lambda d: d["tensors"].update({"": d["tensors"]["xs"]})).encode(),
             "tensors[\"\"]", "non-empty string"),
    BadInput("empty-instruction-name", _text(lambda d: _name(d, "")).encode(), f"{SCALE}.name", "non-empty string"),
    BadInput("utf-16-with-bom", _text().encode("utf-16"), "", "UTF-16"),
    BadInput("utf-32-with-bom", _text().encode("utf-32"), "", "UTF-32"),
    BadInput("utf-16-without-bom", _text().encode("utf-16-le"), "", "NUL bytes"),
    BadInput("invalid-utf-8", _text().replace('"exp"', '"e\udcffp"').encode("utf-8", "surrogateescape"), "",
             "not UTF-8 text at line 1"),
    BadInput("encoded-surrogate", _text().replace('"exp"', '"e\ud800p"').encode("utf-8", "surrogatepass"), "",
             "not UTF-8 text"),
    BadInput("dma-copy-unequal-counts", _text(lambda d: d["body"][0]["body"][2].update(
        writes=[{"tensor": "y", "pattern": [[1, 4]]}])).encode(), f"{STORE}.writes[0]",
        "writes 4 elements but reads 2048"),
    BadInput("dram-tensor-larger-than-dram", _text(lambda d: d["tensors"].update(
        big={"memory": "dram", "dtype": "float32", "shape": [2**40], "alias": "g"})).encode(), "tensors.big.shape",
        "the DRAM of trn1 holds"),
    # issue 23: extension figures near 2**63 (an int32 overflow, a silent acceptance, a hang)
    BadInput("x-distance-near-2**63", _text(lambda d: d["body"][0]["body"][0]["deps"][0].update(
        {"x-distance": 2**63 - 1})).encode(), f"{LOAD}.deps[0].x-distance", "at most 2,147,483,647"),
    BadInput("x-rotate-slots-near-2**63", _text(_tensor("xs", **{"x-rotate": {"loop": "k", "slots": 2**63 - 1,
                                                                             "stride": 0}})).encode(),
             "tensors.xs.x-rotate.slots", "at most 65,536"),
    BadInput("psum-x-rotate-of-10**18-slots", _text(lambda d: d["tensors"].update(ps={
        "memory": "psum", "dtype": "float32", "shape": [128, 16], "partition": 0, "bank": 0,
        "x-rotate": {"loop": "k", "slots": 10**18, "stride": 0}})).encode(), "tensors.ps.x-rotate.slots",
             "at most 65,536"),
    BadInput("negative-stride-below-element-0", _text(lambda d: d["body"][0]["body"][1]["reads"][0].update(
        {"offset": 3, "pattern": [[-1, 8]]})).encode(), f"{SCALE}.reads[0].pattern", "reaches elements [-4, 3]"),
    BadInput("x-partitions_per_iteration-near-2**63", _text(lambda d: d["body"][0]["body"][1]["reads"][0].update(
        {"pattern": [[1, 16]], "x-partitions_per_iteration": {"k": 2**63 - 1}})).encode(),
             f"{SCALE}.reads[0].x-partitions_per_iteration.k", "at most 65,536"),
    # the sweep of round 4, eighteenth session: documented annotations neuronsim reads back, malformed
    BadInput("x-source-not-an-object", _text(lambda d: d["body"][0]["body"][1].update({"x-source": "here"})).encode(),
             f"{SCALE}.x-source", "expected an object"),
    BadInput("x-source-line-not-a-number", _text(lambda d: d["body"][0]["body"][1].update(
        {"x-source": {"file": "k.py", "line": "x"}})).encode(), f"{SCALE}.x-source.line", "a line number"),
    BadInput("x-engines-a-string", _text(lambda d: d["body"][0]["body"][1].update({"x-engines": "dve"})).encode(),
             f"{SCALE}.x-engines", "expected a list of engines"),
    BadInput("x-engines-unknown", _text(lambda d: d["body"][0]["body"][1].update({"x-engines": ["act", "gpu"]})
                                        ).encode(), f"{SCALE}.x-engines[1]", "unknown engine 'gpu'"),
    BadInput("x-nki-core-rank-a-string", _text(lambda d: d["body"][0]["body"][1].update(
        {"x-nki-core": {"rank": "a"}})).encode(), f"{SCALE}.x-nki-core.rank", "a whole number"),
    BadInput("x-nki-scope-a-string", _text(_tensor("xs", **{"x-nki-scope": "k"})).encode(), "tensors.xs.x-nki-scope",
             "a list of loop names"),
    BadInput("x-too-many-spills-a-string", _text(lambda d: d.update({"x-too-many-spills": "maybe"})).encode(),
             "x-too-many-spills", "true or false"),
    BadInput("x-scheduled-a-number", _text(lambda d: d.update({"x-scheduled": 1})).encode(), "x-scheduled",
             "non-empty string"),
    # JSON nested deeper than the decoder follows: the line and column of the deepest bracket
    BadInput("nested-past-the-decoder", _marked(lambda d: d.update({"x-deep": "@RAW@"}), "[" * 100_000 + "]" * 100_000),
             "", "nest 100001 deep"),
]


#: The smallest NKI kernel: a copy of its input (a kernel file the bad-input tests place).
COPY_KERNEL = '''
import nki
import nki.language as nl


@nki.jit
def cp(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.load(x))
    return out
'''


def valid_text() -> str:
    return _text()


def refused_in_one_line(args: list[str], *fragments: str, seconds: float = 30.0) -> str:
    """``neuronsim ARGS`` (click's test runner, the group the console script runs) exits 2
    with one located ``error:`` line holding ``fragments`` (no internal error, no traceback),
    within ``seconds`` (refused up front, not after the work it guards); the line."""
    import time

    from click.testing import CliRunner

    from neuronsim.verify.cli import cli

    started = time.monotonic()
    result = CliRunner().invoke(cli, args)
    assert time.monotonic() - started < seconds, "refused, but not up front"
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    # a stage that took 2 s says so ("trace: done in 2.0 s"): progress, on a loaded machine, not the error
    lines = [line for line in result.stderr.splitlines() if not _PROGRESS.match(line)]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


#: The progress lines of a long stage (verify/app/progress.py): its start and its end.
_PROGRESS = re.compile(r"^(?!error:)[a-z][a-z ]*: (done in [\d.]+ s|.+ \.\.\.)$")


def one_error_line(run, *fragments: str) -> str:
    """A finished ``neuronsim`` process (``subprocess.CompletedProcess``, text) exited 2 with
    one ``error:`` line on standard error holding ``fragments``, no traceback and no internal
    error; the line."""
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("error: "), run.stderr[-2000:]
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def cli_child(folder, *args: str, timeout: float = 60.0):
    """``neuronsim ARGS`` in a process of its own, run from ``folder`` (its real descriptors:
    what an in-memory runner cannot show), text output captured."""
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", "from neuronsim.verify.cli import main; main()", *args], cwd=folder,
                          capture_output=True, text=True, timeout=timeout, env=dict(os.environ, PYTHONPATH=""))
