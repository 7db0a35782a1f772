"""A user's pass that changes the program it was given in place (the IR's objects are frozen,
but ``object.__setattr__`` gets past that) is refused by name, after the pass: the check
after a pass compared its result with that same, changed input and saw nothing, so
``compile`` wrote a program ``check`` then refused, and ``fuzz`` reported an ``IndexError``
of the simulator (a probe).  A pass that leaves its input alone and returns a new program
still runs."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.passes import parse_pipeline, run_pipeline
from neuronsim.passes.base import FunctionPass, PassContext
from neuronsim.machine.formats.program_json import load_program
from neuronsim_tests.bad_inputs import cli_child, one_error_line

PASSES = '''import dataclasses

def empties_writes(program):
    """Empties, in place, the writes of the last instruction that writes."""
    for last in [i for i, _ in program.instructions() if i.writes][-1:]:
        object.__setattr__(last, "writes", ())
    return program

def drops_deps(program):
    """Drops, in place, every wait of every instruction."""
    for i, _ in program.instructions():
        object.__setattr__(i, "deps", ())
    return program

def copies(program):
    """Returns a new program, its input untouched."""
    return dataclasses.replace(program)
'''


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "mine.py").write_text(PASSES)
    done = cli_child(tmp_path, "examples", "ex")
    assert done.returncode == 0, done.stderr[-2000:]
    return tmp_path


@pytest.mark.parametrize("name", ["empties_writes", "drops_deps"])
def test_compile_refuses_a_pass_that_changed_its_input_in_place(folder, name):
    done = cli_child(folder, "compile", "ex/matmul_k_loop_racy.json", "-o", "out.json",
                     "--passes", f"alloc,build-fdeps,mine.py:{name}")
    one_error_line(done, "--passes", f"the pass 'mine.py:{name}' changed the program it was given in place")
    assert not (folder / "out.json").exists()


def test_a_pass_that_returns_a_new_program_still_runs(folder):
    done = cli_child(folder, "compile", "ex/matmul_k_loop_racy.json", "-o", "out.json",
                     "--passes", "alloc,build-fdeps,mine.py:copies")
    assert done.returncode == 0 and (folder / "out.json").exists(), done.stderr[-2000:]


def test_fuzz_reports_the_change_in_place_as_the_pass_s_failure(folder):
    done = cli_child(folder, "fuzz", "--pass", "mine:empties_writes", "--replace", "dep-reduction",
                     "--examples", "4", "--workers", "1", "--out", "found", timeout=300)
    said = done.stdout + done.stderr
    assert done.returncode == 1, (done.returncode, said[-2000:])
    assert "changed the program it was given in place" in said, said[-2000:]
    # the fuzzer's user gave --pass: neither the other command's option nor the error's class
    assert "--passes" not in said and "ProgramError" not in said and "IndexError" not in said, said[-2000:]
    assert list((folder / "found").glob("failure-error-*.json")), said[-2000:]


def test_the_pipeline_refuses_it_with_verification_on_and_lets_it_by_with_verification_off(folder):
    program = load_program(str(folder / "ex" / "matmul_k_loop_racy.json"))

    def empties(p):
        last = [i for i, _ in p.instructions() if i.writes][-1]
        object.__setattr__(last, "writes", ())
        return p

    passes = [*parse_pipeline("alloc,build-fdeps"), FunctionPass(name="empties", step=empties)]
    with pytest.raises(ProgramError, match="the pass 'empties' changed the program it was given in place"):
        run_pipeline(program, passes)
    again = load_program(str(folder / "ex" / "matmul_k_loop_racy.json"))
    out = run_pipeline(again, passes, PassContext(verify=False))  # (--no-verify: the user's own risk)
    assert dataclasses.is_dataclass(out)
