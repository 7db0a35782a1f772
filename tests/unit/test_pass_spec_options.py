"""Pass options of a spec string, converted by the field's annotation as the built-in passes'
options are (a float, a None-able, a list reached a user's pass as text), and the spec strings
a probe found meaning something else than they said: a trailing comma, an empty option value
(``anti-deps{memories=}`` turned the analysis off and compiled a racy program, exit 0), a
no-break space taken as a separator; and a pass file that is a FIFO.
"""

from __future__ import annotations

import json
import os
import typing
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.passes import parse_pipeline
from neuronsim_tests.bad_inputs import VALID
from neuronsim_tests.bad_inputs import refused_in_one_line as _refused


def _program(tmp_path: Path, doc: dict = VALID) -> str:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    return str(path)


# -- pass options by their annotation, and spec strings that meant something else ------------

@dataclass(frozen=True)
class Typed:
    factor: float = 1.0
    limit: int | None = None
    scale: typing.Optional[float] = None  # noqa: UP045 - the older spelling, converted alike
    names: list[str] = field(default_factory=list)
    sizes: tuple[int, ...] = (1,)
    mode: typing.Literal["fast", "exact"] = "fast"

    def apply(self, program, ctx):
        return program


def test_options_are_converted_by_their_annotation():
    (made,) = parse_pipeline("typed{factor=2.5,limit=none,scale=0.5,names=a|b,sizes=2|3,mode=exact}",
                             {"typed": Typed})
    typed = made.step  # (a dataclass with apply, not a Pass: wrapped as one)
    assert (typed.factor, typed.limit, typed.scale, typed.names, typed.sizes, typed.mode) == (
        2.5, None, 0.5, ["a", "b"], (2, 3), "exact")
    (made,) = parse_pipeline("typed{limit=7}", {"typed": Typed})
    typed = made.step
    assert typed.limit == 7 and typed.scale is None


def test_a_users_pass_by_its_address_gets_a_float(tmp_path):
    (tmp_path / "up.py").write_text(
        "from dataclasses import dataclass\n\n\n@dataclass(frozen=True)\nclass Scaled:\n    factor: float = 1.0\n\n"
        "    def apply(self, program, ctx):\n        return program\n")
    (made,) = parse_pipeline(f"{tmp_path}/up.py:Scaled{{factor=2.5}}")
    assert made.step.factor == 2.5


@pytest.mark.parametrize("spec, where, words", [
    ("typed{factor=abc}", "--passes.typed.factor", "expected a finite number"),
    ("typed{factor=nan}", "--passes.typed.factor", "expected a finite number"),
    ("typed{limit=1.5}", "--passes.typed.limit", "expected an integer"),
    ("typed{sizes=2|x}", "--passes.typed.sizes", "expected an integer"),
    ("typed{mode=slow}", "--passes.typed.mode", "expected one of fast, exact"),
    ("alloc,", "--passes", "a trailing comma"),
    ("alloc{buffers=3,}", "--passes.alloc", "an empty option"),
    ("anti-deps{memories=}", "--passes.anti-deps.memories", "an empty value"),
    ("anti-deps{memories=sbuf||psum}", "--passes.anti-deps.memories", "an empty item"),
    ("alloc{buffers=\u00a03}", "--passes.alloc.buffers", "expected an integer"),
    ("alloc{buffers=\u0663}", "--passes.alloc.buffers", "expected an integer"),
    ("alloc\u00a0", "--passes", "cannot parse"),
])
def test_spec_strings_that_meant_something_else_are_refused(spec, where, words):
    from neuronsim.passes import ALL_PASSES

    with pytest.raises(ProgramError) as err:
        parse_pipeline(spec, {**ALL_PASSES, "typed": Typed})
    assert err.value.path == where and words in err.value.message, (err.value.path, err.value.message)


def test_an_empty_memories_option_does_not_compile_a_racy_program(tmp_path):
    _refused(["compile", _program(tmp_path), "-o", str(tmp_path / "o.json"), "--passes",
              "alloc,build-fdeps,anti-deps{memories=}"], "--passes.anti-deps.memories", "an empty value")
    assert not (tmp_path / "o.json").exists()


def test_a_pass_file_that_is_a_fifo_is_named_as_such(tmp_path, monkeypatch):
    os.mkfifo(tmp_path / "fifo.py")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ProgramError) as err:
        parse_pipeline("alloc,fifo.py:P")
    assert err.value.path == "--passes" and "fifo.py is a named pipe (FIFO)" in err.value.message
