"""``quick_init`` keeps the generated constructor's meaning: each record class it is applied to
builds, from the same arguments, the same values as the ``__init__`` dataclasses generates for
the same declaration, stays frozen, pickles and shows the same signature; classes it does not cover are
refused; ``cached`` computes once."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import pytest
from hypothesis import given, settings, strategies as st

from neuronsim.machine.build.views import Index, View
from neuronsim.machine.ir.fast_dataclasses import cached, quick_init
from neuronsim.machine.ir.program import Access, Dep, Instruction, Loop, MemoryKind, Tensor
from neuronsim.machine.nki.alloc import TileSpec
from neuronsim.machine.nki.errors import SourceLine

CLASSES = (Access, Dep, Instruction, Loop, Tensor, Index, View, TileSpec, SourceLine)


def _plain(cls: type) -> type:
    """The same declaration with the ``__init__`` dataclasses generates."""
    fields = [(f.name, f.type, dataclasses.field(default=f.default, default_factory=f.default_factory))
              for f in dataclasses.fields(cls)]
    return dataclasses.make_dataclass(f"Plain{cls.__name__}", fields, frozen=True)


def _values(obj) -> tuple:
    return tuple(getattr(obj, f.name) for f in dataclasses.fields(obj))


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_quick_init_is_installed_and_keeps_the_signature(cls) -> None:
    assert "_FROM_FACTORY" in cls.__init__.__globals__  # quick_init's scope, not the dataclasses module's
    plain = inspect.signature(_plain(cls))
    ours = inspect.signature(cls)
    assert list(ours.parameters) == list(plain.parameters)
    assert [p.default is inspect.Parameter.empty for p in ours.parameters.values()] == \
           [p.default is inspect.Parameter.empty for p in plain.parameters.values()]


@settings(max_examples=60, deadline=None)
@given(name=st.text(min_size=1, max_size=4), partitions=st.none() | st.tuples(st.integers(0, 127), st.integers(1, 128),
                                                                               st.just(1)),
       offset=st.none() | st.integers(0, 1 << 20), keyword=st.booleans())
def test_access_and_instruction_build_what_the_generated_init_builds(name, partitions, offset, keyword) -> None:
    args = (name, partitions, offset)
    access = Access(tensor=name, partitions=partitions, offset=offset) if keyword else Access(*args)
    assert _values(access) == _values(_plain(Access)(*args))
    inst = Instruction(name, "pe", "matmul", reads=(access,)) if keyword else \
        Instruction(name, "pe", "matmul", (access,))
    assert _values(inst) == _values(_plain(Instruction)(name, "pe", "matmul", (access,)))
    assert inst == Instruction(name, "pe", "matmul", (access,)) and hash(access) == hash(Access(*args))


def test_defaults_factories_frozen_and_pickled() -> None:
    a, b = Access("t"), Access("t")
    assert a.extras is b.extras and len(a.extras) == 0  # the factory's shared empty mapping
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.offset = 3  # type: ignore[misc]
    tensor = Tensor("t", MemoryKind.SBUF, "float32", (128, 4))
    assert dataclasses.replace(tensor, offset=64).offset == 64 and tensor.offset is None
    assert pickle.loads(pickle.dumps(Index(3, (("i", 2),)))) == Index(3, (("i", 2),))
    with pytest.raises(TypeError):
        Access()  # type: ignore[call-arg]  # a required field stays required


def test_classes_it_does_not_cover_are_refused() -> None:
    @dataclasses.dataclass
    class Open:
        x: int

    @dataclasses.dataclass(frozen=True)
    class WithInitVar:
        x: int
        y: dataclasses.InitVar[int] = 0

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class KeywordOnly:
        x: int

    @dataclasses.dataclass(frozen=True)
    class Computed:
        x: int
        y: int = dataclasses.field(init=False, default=0)

    for cls in (Open, WithInitVar, KeywordOnly, Computed):
        with pytest.raises(TypeError, match="quick_init"):
            quick_init(cls)


def test_post_init_runs_and_cached_computes_once() -> None:
    seen = []

    @quick_init
    @dataclasses.dataclass(frozen=True)
    class Box:
        side: int

        def __post_init__(self) -> None:
            seen.append(self.side)

        @cached
        def area(self) -> int:
            seen.append("area")
            return self.side * self.side

    box = Box(3)
    assert (box.area, box.area) == (9, 9) and seen == [3, "area"]
