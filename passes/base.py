"""The pass base class, the pass context, pass records and the registry.

A pass is a small frozen dataclass with a class-level kebab-case ``name``; its fields are its
options.  It implements one of two methods:

``apply(program, ctx) -> Program``
    the documented API (``docs/writing-a-pass.md``): a whole program in, a whole program out;
``run(state, ctx) -> PipelineState``
    the pipeline's own form (:class:`~neuronsim.passes.state.PipelineState`): the pass says what
    it changed by returning ``state.with_deps(...)``, ``state.with_placements(...)`` or
    ``state.with_structure(...)``, and the program's structure, deps and instance stream go
    on to the next pass without being rebuilt.

Each is available on every pass: :meth:`Pass.run` of an ``apply`` pass hands it the state's
whole program and reads what changed from what it returns (its class's :attr:`Pass.preserves`
may declare more), and :meth:`Pass.apply` of a ``run`` pass wraps the program in a state.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from neuronsim.machine.formats.pyfile import exit_call, shown
from neuronsim.machine.ir.errors import ProgramError, message_of
from neuronsim.machine.ir.program import Program
from neuronsim.machine.model.presets import MachineSpec, resolve_machine
from neuronsim.machine.order.deptable import DepTable
from neuronsim.machine.order.stream import InstanceStream

from neuronsim.passes.state import PipelineState

__all__ = ["Pass", "PassContext", "PassRecord", "PassResultError", "FunctionPass", "as_pass", "AfterPass",
           "program_unread", "PASS_REGISTRY"]


def _state_run(cls: type) -> Callable[..., PipelineState] | None:
    """The nearest ``run`` of ``cls`` that works on the state itself (not :meth:`Pass.run`,
    which calls ``apply``), or None."""
    for klass in cls.__mro__:
        run = klass.__dict__.get("run")
        if run is not None and run is not Pass.run:
            return run
    return None


class Pass:
    """Base of every pass: subclasses are ``@dataclass(frozen=True, slots=True)``."""

    __slots__ = ()
    name: ClassVar[str] = ""
    #: True for passes that place every virtual tensor (verification then insists on it).
    places: ClassVar[bool] = False
    #: What an ``apply`` pass leaves alone, of ``structure``, ``placements`` and ``deps``
    #: (:mod:`neuronsim.passes.state`): a pass that preserves the structure and the placements
    #: has its result's deps checked and nothing else.  A ``run`` pass says it per call instead.
    preserves: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # A subclass that overrides ``apply`` of a pass implementing ``run`` (a user's variant
        # of anti-deps, say) means its ``apply`` to run in a pipeline: the pipeline calls ``run``,
        # so the inherited ``run`` would silently ignore the override.
        super().__init_subclass__(**kwargs)
        if "apply" in cls.__dict__ and "run" not in cls.__dict__:
            cls.run = Pass.run

    def apply(self, program: Program, ctx: PassContext | None = None) -> Program:
        """The pass on a whole program (for a pass that implements :meth:`run`)."""
        run = _state_run(type(self))
        if run is None:
            raise NotImplementedError(f"{type(self).__name__} implements neither apply nor run")
        ctx = ctx or PassContext()
        return run(self, PipelineState.of(program, ctx.machine(program)), ctx).program

    def run(self, state: PipelineState, ctx: PassContext) -> PipelineState:
        """The pass on a pipeline state (for a pass that implements :meth:`apply`)."""
        given = state.program
        ctx.state = state
        try:
            result = self.apply(given, ctx)
        finally:
            ctx.state = None
        if not isinstance(result, Program):  # a user's pass: said as such, not as its state's AttributeError
            if inspect.iscoroutine(result):
                result.close()  # (never awaited: Python's warning would add lines to the one)
            raise PassResultError("--passes", f"the pass {self.name!r} returned {type(result).__name__}, not the "
                                              "Program it was given (a pass returns what it ran on, changed or not)")
        return state.after(given, result, self.preserves)

    def spec_string(self) -> str:
        """The pass as a spec-string item, listing options that differ from the defaults."""
        changed = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value != f.default:
                if isinstance(value, frozenset):
                    value = "|".join(sorted(value))
                changed.append(f"{f.name}={str(value).lower() if isinstance(value, bool) else value}")
        return self.name + ("{" + ",".join(changed) + "}" if changed else "")


class PassResultError(ProgramError):
    """A pass returned something other than a :class:`Program` (a user's pass: its own mistake)."""


@dataclass(frozen=True, slots=True)
class PassRecord:
    """What one pass did: its spec item, wall time, edge count after it and its counters."""

    spec: str
    seconds: float
    edges: int
    stats: Mapping[str, int]


@dataclass(slots=True)
class PassContext:
    """Mutable working state shared by the passes of one pipeline run: the machine, options,
    counters and records (the program itself travels as a :class:`PipelineState`).

    ``record`` turns on provenance: for every edge a pass adds, the rules that justified it
    (``ctx.provenance[(waiter, former, loop_carried)]``), used by ``--explain`` and tests.
    ``state`` is the state whose program an ``apply`` pass is running on (None otherwise).
    """

    spec: MachineSpec | None = None
    verify: bool = True
    verify_each: bool = True
    """With ``verify``: check every pass's result (LLVM's ``-verify-each``); False: check a run
    of neuronsim's own passes once, after its last one, for what the run changed together (a
    user's pass is checked after itself either way).  The final program is checked as fully;
    only a broken built-in pass is named less precisely (the run's passes)."""
    record: bool = False
    stats: dict[str, dict[str, int]] = field(default_factory=dict)
    provenance: dict[tuple[str, str, bool], set[str]] = field(default_factory=dict)
    records: list[PassRecord] = field(default_factory=list)
    placed: bool = False
    state: PipelineState | None = None

    def machine(self, program: Program) -> MachineSpec:
        if self.spec is None:
            self.spec = resolve_machine(program.machine)
        return self.spec

    def count(self, pass_name: str, key: str, amount: int = 1) -> None:
        row = self.stats.setdefault(pass_name, {})
        row[key] = row.get(key, 0) + amount

    def note(self, waiter: str, former: str, loop_carried: bool, rule: str) -> None:
        """Record why an edge exists (only when ``record``)."""
        self.provenance.setdefault((waiter, former, loop_carried), set()).add(rule)

    def stream(self, program: Program) -> InstanceStream:
        """The :class:`~neuronsim.machine.order.stream.InstanceStream` of ``program``: the pipeline
        state's when ``program`` has its instructions (equal bodies), recompiled for its
        placements when those differ, else a new one."""
        state = self.state
        if state is not None and program.body == state.program.body:
            if program.tensors == state.structure.tensors:
                return state.stream
            return state.stream.for_placement(program)
        return InstanceStream(program, self.machine(program))

    def deps(self, program: Program) -> DepTable:
        """The deps of ``program`` as a :class:`~neuronsim.machine.order.deptable.DepTable`."""
        return DepTable.of_program(program, self.stream(program))


#: Pass name -> pass class; filled by the package (``passes/__init__.py``: the built-in passes
#: and the plugins), so this module needs none of them (the passes import it).
PASS_REGISTRY: dict[str, type] = {}


@dataclass(frozen=True, slots=True)
class FunctionPass(Pass):
    """A user's step in a pipeline: any object with ``apply(program, ctx)``, or a plain
    ``fn(program) -> program``, under a slot ``name`` (the pass it replaces, or ``user``)."""

    name: str = "user"  # type: ignore[misc] - an instance field here, a ClassVar on real passes
    step: Any = None

    def apply(self, program: Program, ctx: PassContext | None = None) -> Program:
        if hasattr(self.step, "apply"):
            return self.step.apply(program, ctx)
        return self.step(program)

    def spec_string(self) -> str:
        return self.name


def as_pass(user: Any, name: str = "user", option: str = "--pass") -> Pass:
    """``user`` as a pipeline item: a :class:`Pass` as is, a pass class instantiated, anything
    else with ``apply`` or a plain function wrapped in :class:`FunctionPass` named ``name``;
    anything else (a class whose objects neither apply nor are called: ``builtins:int``) is the
    error of ``option``."""
    if isinstance(user, type):
        if not (issubclass(user, Pass) or hasattr(user, "apply")
                or any("__call__" in vars(k) for k in user.__mro__ if k is not object)):
            raise ProgramError(option, f"{name}: {shown(user)} is a class whose objects have neither apply nor "
                                       "__call__, neither a pass nor a function")
        user = build_users_pass(user, {}, name, option)
    if isinstance(user, Pass):
        return user
    if hasattr(user, "apply") or callable(user):
        return FunctionPass(name, user)
    raise ProgramError(option, f"{name}: {shown(user)} is neither a pass nor a function")


def build_users_pass(cls: type, kwargs: dict[str, Any], name: str, option: str) -> Any:
    """``cls(**kwargs)`` of a pass class given by its address: whatever its ``__init__`` or
    ``__post_init__`` raises (a required argument, a TypeError of its own) is the error of
    ``option``, one line; it was an internal error, exit 3."""
    if issubclass(cls, Pass) and not dataclasses.is_dataclass(cls):  # (spec_string read its fields: exit 3)
        raise ProgramError(option if option != "--passes" else f"--passes.{name}",
                           "a Pass subclass is a dataclass (@dataclass(frozen=True)): its options are its fields")
    try:
        return cls(**kwargs)
    except KeyboardInterrupt:
        raise
    except (Exception, SystemExit) as err:  # noqa: BLE001 - the user's class: their input
        what = exit_call(err) if isinstance(err, SystemExit) else f"{type(err).__name__}: {message_of(err)}"
        raise ProgramError(option if option != "--passes" else f"--passes.{name}",
                           f"cannot build the pass {name!r}: {what}") from None


#: ``after_pass(pass, program, ctx)``: called after each pass and its verification.  A hook
#: marked :func:`program_unread` is given None for the program: writing a state's deps into a
#: whole program costs a walk of every instruction (0.2 s for 25 k, issue 31), which a hook
#: that only counts passes would pay after every pass.
AfterPass = Callable[[Pass, Program, PassContext], None]


def program_unread(hook: AfterPass) -> AfterPass:
    """Mark ``hook`` as one that ignores the program it is given (see :data:`AfterPass`)."""
    hook.reads_program = False  # type: ignore[attr-defined]
    return hook
