"""Registry, spec strings, verification between passes, deps <-> graph."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from typing import ClassVar

import pytest

from neuronsim.machine.ir.edges import EdgeKind
from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.ir.program import Dep
from neuronsim.passes import ALL_PASSES, DEFAULT_PIPELINE, PassContext, parse_pipeline, run_pipeline
from neuronsim.passes.pipeline import Pass, graph_of, with_graph
from neuronsim_tests.passes_kit import dep_set, ins, prog, sb
from neuronsim.verify.strategies import programs
from hypothesis import given


def test_every_registry_key_is_its_class_name():
    assert ALL_PASSES
    for key, cls in ALL_PASSES.items():
        assert key == cls.name
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
        assert hasattr(cls, "__slots__") and cls.__doc__


def test_default_pipeline_parses():
    assert [p.name for p in parse_pipeline(DEFAULT_PIPELINE)] == ["alloc", "build-fdeps", "remove-redundancies",
                                                                  "anti-deps", "dep-reduction"]


def test_options_are_typed_by_their_defaults():
    alloc, anti, fdeps = parse_pipeline("alloc{buffers=3, align=32}, "
                                        "anti-deps{memories=sbuf|dram,skip_ordered=false},build-fdeps{trivial=TRUE}")
    assert (alloc.buffers, alloc.align) == (3, 32)
    assert anti.memories == frozenset({"sbuf", "dram"}) and anti.skip_ordered is False
    assert fdeps.trivial is True


@pytest.mark.parametrize("spec, where", [
    ("nope", "--passes"), ("alloc{buffers=x}", "--passes.alloc.buffers"), ("alloc{colour=red}", "--passes.alloc"),
    ("anti-deps{skip_ordered=maybe}", "--passes.anti-deps.skip_ordered"), ("", "--passes"),
    ("alloc{buffers=0}", "--passes.alloc"),
    ("alloc,,", "--passes"),
])
def test_bad_specs_are_located_errors(spec, where):
    with pytest.raises(ProgramError) as err:
        parse_pipeline(spec)
    assert err.value.path == where


def test_spec_strings_round_trip():
    for spec in ("alloc{buffers=3}", "anti-deps{early_stop=matmul,memories=psum|sbuf}",
                 "remove-redundancies{mode=engine}",
                 "build-fdeps{groups=false,loop_barrier=true}"):
        (p,) = parse_pipeline(spec)
        assert parse_pipeline(p.spec_string()) == [p]


def _program():
    return prog([sb("t"), sb("u", offset=256)],
                ins("w", "act", "memset_like", writes=["t"]),
                ins("r", "dve", "tensor_copy", reads=["t"], writes=["u"]))


@dataclass(frozen=True, slots=True)
class Forward(Pass):
    """A broken pass: makes the first instruction wait on a later one."""

    name: ClassVar[str] = "forward"

    def apply(self, program, ctx):
        return program.map_instructions(lambda i: replace(i, deps=(Dep("r", EdgeKind.FLOW),)) if i.name == "w" else i)


@dataclass(frozen=True, slots=True)
class Unplace(Pass):
    """A broken allocator: claims to place tensors but leaves one virtual."""

    name: ClassVar[str] = "unplace"
    places: ClassVar[bool] = True

    def apply(self, program, ctx):
        tensors = dict(program.tensors)
        tensors["t"] = sb("t", partition=None, offset=None)
        return program.with_tensors(tensors)


def test_verification_names_the_pass_that_broke_the_program():
    registry = {**ALL_PASSES, "forward": Forward, "unplace": Unplace}
    with pytest.raises(ProgramError, match="after pass 'forward'"):
        run_pipeline(_program(), parse_pipeline("build-fdeps,forward", registry))
    with pytest.raises(ProgramError, match="after pass 'unplace': still virtual"):
        run_pipeline(_program(), parse_pipeline("unplace", registry))
    # the switch turns it off
    out = run_pipeline(_program(), parse_pipeline("forward", registry), PassContext(verify=False))
    assert ("w", "r", "flow", False) in dep_set(out)


@dataclass(frozen=True, slots=True)
class Reengine(Pass):
    """A broken pass that changes one instruction and keeps the other objects: ``r``'s copy
    moved to PE, which writes only PSUM."""

    name: ClassVar[str] = "reengine"

    def apply(self, program, ctx):
        return program.map_instructions(lambda i: replace(i, engine="pe") if i.name == "r" else i)


def test_verification_rechecks_what_a_pass_changed_and_keeps_what_it_did_not():
    """After a pass, the instruction objects it kept (same tensors) are not checked again, the
    one it made is: the broken copy is found and located."""
    from neuronsim.machine.formats.validate import validate_program

    program = _program()
    changed = Reengine().apply(program, PassContext())
    kept = [a is b for (a, _), (b, _) in zip(program.instructions(), changed.instructions())]
    assert kept == [True, False]
    with pytest.raises(ProgramError) as caught:
        validate_program(changed, checked=program)
    assert caught.value.path == "body[1].engine"
    with pytest.raises(ProgramError, match="after pass 'reengine'"):
        run_pipeline(program, parse_pipeline("build-fdeps,reengine", {**ALL_PASSES, "reengine": Reengine}))
    validate_program(program, checked=program)  # nothing changed: nothing to find


def _counting_checks(monkeypatch) -> list[str]:
    """The names of the instructions ``validate_program`` checks from now on."""
    import neuronsim.machine.formats.validate as validate

    seen: list[str] = []
    check = validate.check_instruction
    monkeypatch.setattr(validate, "check_instruction", lambda inst, *a: (seen.append(inst.name), check(inst, *a)))
    return seen


def test_a_replaced_tensor_rechecks_the_instructions_on_it_alone(monkeypatch):
    """A pass that replaces one tensor (``u`` moved to DRAM) and keeps the other objects: the
    copy writing ``u`` is checked again and its error located; the memset, which touches only
    the unchanged ``t``, is not checked again."""
    from neuronsim.machine.formats.validate import validate_program
    from neuronsim.machine.ir.program import MemoryKind, Tensor

    program = _program()
    tensors = dict(program.tensors)
    tensors["u"] = Tensor("u", MemoryKind.DRAM, "float32", (128, 64))  # a compute op never touches DRAM
    narrowed = replace(program, tensors=tensors)
    seen = _counting_checks(monkeypatch)
    with pytest.raises(ProgramError) as caught:
        validate_program(narrowed, checked=program)
    assert caught.value.path == "body[1].writes[0].tensor" and seen == ["r"]
    tensors["u"] = sb("u", offset=256)  # an equal tensor, a new object: what its checks read is
    seen.clear()                        # the same (a trace's draft rebuilds its tensors equal), not checked again
    validate_program(replace(program, tensors=tensors), checked=program)
    assert seen == []


def test_a_program_that_passed_is_not_checked_again_and_one_that_failed_is(monkeypatch):
    from neuronsim.machine.formats.validate import validate_program

    program = prog([sb("t"), sb("u", offset=256)],
                   ins("w", "act", "memset_like", writes=["t"]),
                   ins("r", "dve", "tensor_copy", reads=["t"], writes=["u"]))  # prog() validates it
    seen = _counting_checks(monkeypatch)
    validate_program(program)
    validate_program(replace(program))  # an equal program, a new object: checked
    assert seen == ["w", "r"]
    broken = program.map_instructions(lambda i: replace(i, engine="pe") if i.name == "r" else i)
    for _ in range(2):
        with pytest.raises(ProgramError, match="cannot run on 'pe'|PE writes only PSUM"):
            validate_program(broken)


@dataclass(frozen=True, slots=True)
class Misplace(Pass):
    """A broken allocator: moves ``u`` to partition 16, where a 128-partition access cannot start."""

    name: ClassVar[str] = "misplace"
    places: ClassVar[bool] = True

    with_stream: ClassVar[bool] = True

    def apply(self, program, ctx):
        if self.with_stream:
            ctx.stream(program)  # as the real allocator does: the check reuses its access slots
        tensors = dict(program.tensors)
        tensors["u"] = sb("u", 64, partition=16, offset=256)
        return program.with_tensors(tensors)


class MisplaceAlone(Misplace):
    """The same broken allocator without a stream in the context: the check builds one."""

    with_stream: ClassVar[bool] = False


@pytest.mark.parametrize("broken", [Misplace, MisplaceAlone])
def test_a_placement_change_is_checked_per_access_and_located(broken):
    registry = {**ALL_PASSES, "misplace": broken}
    with pytest.raises(ProgramError, match="cannot start at partition 16") as err:
        run_pipeline(_program(), parse_pipeline("misplace", registry))
    assert err.value.path == "r.writes[0].partitions"
    assert "after pass 'misplace'" in str(err.value)


def test_records_say_what_each_pass_did():
    ctx = PassContext()
    run_pipeline(_program(), DEFAULT_PIPELINE, ctx)
    assert [r.spec for r in ctx.records] == ["alloc", "build-fdeps", "remove-redundancies", "anti-deps",
                                             "dep-reduction"]
    assert ctx.records[1].edges == 1 and ctx.records[1].stats["raw"] == 1
    assert all(r.seconds >= 0 for r in ctx.records)


@given(programs(deps="random", max_instructions=8))
def test_graph_round_trip(program):
    graph = graph_of(program)
    again = with_graph(program, graph)
    assert dep_set(again) == dep_set(program)
    assert graph_of(again) == graph


@dataclass(frozen=True, slots=True)
class Append(Pass):
    """A broken pass: appends an instruction on an unknown tensor."""

    name: ClassVar[str] = "append"

    def apply(self, program, ctx):
        return program.with_body((*program.body, ins("extra", "dve", "memset", writes=["nowhere"])))


def test_a_pass_that_adds_instructions_is_fully_validated():
    with pytest.raises(ProgramError, match="after pass 'append': unknown tensor 'nowhere'"):
        run_pipeline(_program(), parse_pipeline("append", {"append": Append}))


def test_an_option_given_twice_in_a_spec_is_refused_at_it():
    """``alloc{buffers=2,buffers=3}`` kept the last; a task pipeline's spec is read the same way."""
    from neuronsim.passes.tasks import parse_task_pipeline

    for parse, spec in ((parse_pipeline, "alloc{buffers=2,buffers=3}"),
                        (parse_task_pipeline, "auto-derive-task-dependencies{faithful=true,faithful=false}")):
        with pytest.raises(ProgramError) as err:
            parse(spec)
        assert err.value.path.endswith("faithful" if "faithful" in spec else "buffers")
        assert "given twice" in err.value.message


def test_without_verify_each_a_run_of_built_in_passes_is_checked_once_after_its_last(monkeypatch):
    """``verify_each=False`` (``run``'s pipeline): the program a run of neuronsim's own passes
    leaves is checked once, for what the run changed together, and a broken pass in it is
    still found, named with the run; a user's pass is checked after itself."""
    import neuronsim.passes.runner as runner

    registry = {**ALL_PASSES, "forward": Forward}
    monkeypatch.setattr(runner, "_ours", lambda p: p.name != "anti-deps")  # the test passes count as built in
    checked: list[str] = []
    verify = runner.verify_state
    monkeypatch.setattr(runner, "verify_state", lambda new, old, **kw: (checked.append(kw["after"]),
                                                                        verify(new, old, **kw)))
    run_pipeline(_program(), parse_pipeline("build-fdeps,remove-redundancies,anti-deps,dep-reduction", registry),
                 PassContext(verify_each=False))
    assert checked == ["build-fdeps, remove-redundancies", "anti-deps", "dep-reduction"]
    checked.clear()
    run_pipeline(_program(), parse_pipeline("build-fdeps,remove-redundancies,anti-deps", registry))
    assert checked == ["build-fdeps", "remove-redundancies", "anti-deps"]  # verify_each (the default)
    with pytest.raises(ProgramError, match="after pass 'build-fdeps, forward'"):
        run_pipeline(_program(), parse_pipeline("build-fdeps,forward", registry), PassContext(verify_each=False))
    # deps changed by one pass of the run and nothing by the next are still checked
    with pytest.raises(ProgramError, match="after pass 'forward, keep'"):
        run_pipeline(_program(), parse_pipeline("forward,keep", {**registry, "keep": Keep}),
                     PassContext(verify_each=False))


@dataclass(frozen=True, slots=True)
class Keep(Pass):
    """A pass that changes nothing."""

    name: ClassVar[str] = "keep"

    def apply(self, program, ctx):
        return program


def test_a_known_option_without_its_value_is_named_with_its_path():
    """``alloc{buffers}`` said "unknown option 'buffers'" of a known option (probe_bad M-F7)."""
    with pytest.raises(ProgramError) as err:
        parse_pipeline("alloc{buffers}")
    assert err.value.path == "--passes.alloc.buffers" and err.value.message == "no value: write buffers=VALUE"
    with pytest.raises(ProgramError) as err:
        parse_pipeline("alloc{bufers}")
    assert err.value.path == "--passes.alloc" and "unknown option 'bufers'" in err.value.message
