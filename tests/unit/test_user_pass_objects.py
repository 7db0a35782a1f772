"""A pass given by its address (``--passes FILE.py:NAME`` / ``MODULE:NAME``, ``fuzz --pass``) is
the user's code: whatever object it is, however it fails to be built or described, the command
answers with one line at ``--passes``, exit 2, or runs it; never an internal error (exit 3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from neuronsim.passes import parse_pipeline
from neuronsim.verify.cli import cli
from neuronsim_tests.bad_inputs import refused_in_one_line, valid_text

PASSES = '''from dataclasses import dataclass


@dataclass(frozen=True)
class Plain:  # a pass by its shape (name-less, apply), not derived from neuronsim's Pass
    f: int = 1

    def apply(self, program, ctx=None):
        assert self.f in (1, 3)
        return program


@dataclass(frozen=True)
class Inert:  # neither apply nor __call__
    f: int = 1
'''


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "upass.py").write_text(PASSES)
    (tmp_path / "p.json").write_text(valid_text())
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("spec", ["upass.py:Plain", "upass.py:Plain{f=3}"])
def test_a_dataclass_pass_not_derived_from_pass_runs(folder, spec):
    """It was exit 3, ``no attribute 'spec_string'``, though ``fuzz --pass`` took it."""
    (item,) = parse_pipeline(spec)
    assert item.name == spec.split("{")[0]
    result = CliRunner().invoke(cli, ["compile", "p.json", "-o", "c.json", "--passes", f"alloc,{spec}"])
    assert result.exit_code == 0, (result.output, result.exception)
    assert (folder / "c.json").exists()


def test_a_dataclass_that_is_no_pass_is_refused_at_passes(folder):
    refused_in_one_line(["compile", "p.json", "-o", "c.json", "--passes", "upass.py:Inert{f=3}"],
                        "--passes: upass.py:Inert", "neither a pass nor a function")
    assert not (folder / "c.json").exists()


BROKEN = '''import dataclasses
import sys


class InitRaises:
    def __init__(self):
        raise RuntimeError("init fails")

    def apply(self, program, ctx=None):
        return program


class InitNeedsArg:
    def __init__(self, a):
        pass

    def apply(self, program, ctx=None):
        return program


@dataclasses.dataclass(frozen=True)
class PostInit:
    n: int = 1

    def __post_init__(self):
        if self.n > 1:
            raise TypeError("n too big")

    def apply(self, program, ctx=None):
        return program


class Mute(Exception):
    def __str__(self):
        raise RuntimeError("str fails")


class NoRepr:
    def __repr__(self):
        raise RuntimeError("repr fails")


no_repr = NoRepr()


def mute(program):
    raise Mute()


def exits(program):
    sys.exit(NoRepr())
'''


@pytest.mark.parametrize("spec, fragments", [
    ("broken.py:InitRaises", ["--passes.broken.py:InitRaises", "RuntimeError: init fails"]),
    ("broken.py:InitNeedsArg", ["--passes.broken.py:InitNeedsArg", "TypeError", "required positional argument"]),
    ("broken.py:PostInit{n=5}", ["--passes.broken.py:PostInit", "TypeError: n too big"]),
    ("broken.py:no_repr", ["--passes: broken.py:no_repr: ... is neither a pass nor a function"]),
    ("broken.py:mute", ["the pass 'broken.py:mute' raised Mute: (its message could not be made", "broken.py:"]),
    ("broken.py:exits", ["the pass 'broken.py:exits' ends the process (sys.exit(...))"]),
])
def test_a_pass_that_cannot_be_built_or_described_is_refused_at_passes(folder, spec, fragments):
    """Each was exit 3: an ``__init__`` raising or needing an argument, a ``__post_init__``'s
    TypeError, a ``repr`` or an exception's ``__str__`` raising as the message was made."""
    (folder / "broken.py").write_text(BROKEN)
    refused_in_one_line(["compile", "p.json", "-o", "c.json", "--passes", f"alloc,{spec}"], *fragments)
    assert not (folder / "c.json").exists()


MALFORMED = '''import dataclasses
import types


def body_none(program):
    return dataclasses.replace(program, body=None)


def deps_a_string(program):
    first = []

    def spoil(instruction):
        first.append(instruction)
        return dataclasses.replace(instruction, deps="ld") if len(first) == 1 else instruction
    return program.map_instructions(spoil)


def tensor_dropped(program):
    tensors = dict(program.tensors)
    tensors.pop(next(iter(tensors)))
    return dataclasses.replace(program, tensors=types.MappingProxyType(tensors))
'''


@pytest.mark.parametrize("name, words", [
    ("body_none", "--passes: after pass 'bad.py:body_none': the program it returned is not well formed (TypeError"),
    ("deps_a_string", "after pass 'bad.py:deps_a_string': the program it returned is not well formed"),
    ("tensor_dropped", "after pass 'bad.py:tensor_dropped': unknown tensor"),
])
def test_a_users_pass_returning_a_malformed_program_is_its_mistake(folder, name, words):
    """A program not made of the IR's objects failed the checks themselves (exit 3), and a
    tensor dropped passed them as a placement change, failing later in footprint's analyses."""
    (folder / "bad.py").write_text(MALFORMED)
    for command in (["compile", "p.json", "-o", "c.json"], ["footprint", "p.json"]):
        refused_in_one_line([*command, "--passes", f"alloc,bad.py:{name}"], words)
    assert not (folder / "c.json").exists()
