"""Records made by the hundred thousand: a faster frozen-dataclass ``__init__``, a lock-free
cached property.

A frozen dataclass's generated ``__init__`` stores each field with
``object.__setattr__(self, "name", value)``, which looks the attribute up by name through the
class's MRO for every field of every object; an :class:`~neuronsim.machine.ir.program.Access`
of seven fields cost about 0.8 us to build, and building records was about a tenth of tracing
an unrolled kernel and a sixth of building the same program with the KernelBuilder (issue 31,
docs/performance-notes.md section 2.17).  :func:`quick_init` gives the class an ``__init__`` of the
same parameters, defaults and default factories that stores each field through its slot's own
descriptor, found once when the class is made, or into the instance's dict for a class without
slots (about 0.52 us for the same access: ``bench/bench_records.py``).  The objects are the
same: frozen (assignment still raises), equal, hashed and pickled as before.

>>> from dataclasses import dataclass, field, FrozenInstanceError
>>> @quick_init
... @dataclass(frozen=True, slots=True)
... class Point:
...     x: int
...     y: int = 0
...     tags: tuple = field(default_factory=tuple)
>>> p = Point(1, tags=("a",))
>>> p, p == Point(1, 0, ("a",)), Point(2).tags
(Point(x=1, y=0, tags=('a',)), True, ())
>>> try:
...     p.x = 3
... except FrozenInstanceError:
...     print("frozen")
frozen
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["cached", "quick_init"]

C = TypeVar("C", bound=type)
T = TypeVar("T")

#: Stands for "not given" where a field's default is made by its factory.
_FROM_FACTORY = object()


def quick_init(cls: C) -> C:
    """``cls`` (a frozen dataclass) with the faster ``__init__`` (module doc): each field stored
    through its slot's descriptor, or into the instance's dict when the class has no slots.

    Guard first: a class this does not cover (not frozen, an ``InitVar``, a field left out of
    ``__init__``, a keyword-only field) is refused, so that every class it accepts keeps the
    generated constructor's meaning exactly."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen:
        raise TypeError(f"quick_init: {cls.__name__} is not a frozen dataclass")
    every = cls.__dataclass_fields__.values()  # (InitVar and ClassVar pseudo-fields included)
    fields = dataclasses.fields(cls)
    if len(fields) != sum(1 for f in every if f._field_type is not dataclasses._FIELD_CLASSVAR):
        raise TypeError(f"quick_init: {cls.__name__} has an InitVar")
    if any(not f.init or f.kw_only for f in fields):
        raise TypeError(f"quick_init: {cls.__name__} has a field left out of __init__ or keyword-only")
    slotted = "__slots__" in cls.__dict__
    scope: dict[str, object] = {"_FROM_FACTORY": _FROM_FACTORY}
    params_src, body = ["self"], [] if slotted else ["    _fields = self.__dict__"]
    for i, f in enumerate(fields):
        value = f.name
        if f.default is not dataclasses.MISSING:
            scope[f"_default{i}"] = f.default
            params_src.append(f"{f.name}=_default{i}")
        elif f.default_factory is not dataclasses.MISSING:
            scope[f"_factory{i}"] = f.default_factory
            params_src.append(f"{f.name}=_FROM_FACTORY")
            value = f"_factory{i}() if {f.name} is _FROM_FACTORY else {f.name}"
        else:
            params_src.append(f.name)
        if slotted:
            scope[f"_set{i}"] = cls.__dict__[f.name].__set__  # the slot's member descriptor
            body.append(f"    _set{i}(self, {value})")
        else:
            body.append(f"    _fields[{f.name!r}] = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    source = f"def __init__({', '.join(params_src)}):\n" + "\n".join(body or ["    pass"]) + "\n"
    exec(source, scope)  # noqa: S102 - built from the class's own field names, as dataclasses does
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__doc__ = cls.__init__.__doc__
    # what help() and inspect show stays the generated one's (annotations, ``<factory>``)
    init.__annotations__ = cls.__init__.__annotations__
    init.__signature__ = inspect.signature(cls.__init__)
    cls.__init__ = init
    return cls


class cached(Generic[T]):  # noqa: N801 - used as a decorator, like functools.cached_property
    """:class:`functools.cached_property` without its lock: computed on first use, then read
    from the instance's dict (the descriptor is not asked again).  On Python 3.11 the standard
    one takes a re-entrant lock at every first use; a traced kernel's views each compute their
    shape and their builder view once, and the locks were about 3 % of its trace (Python 3.12
    removed the lock for the same reason).  Nothing here is shared between threads.

    >>> class Box:
    ...     made = 0
    ...     @cached
    ...     def area(self):
    ...         Box.made += 1
    ...         return 6
    >>> b = Box()
    >>> b.area, b.area, Box.made
    (6, 6, 1)
    """

    def __init__(self, func: Callable[[Any], T]) -> None:
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, instance: Any, owner: type | None = None) -> T:
        if instance is None:
            return self  # type: ignore[return-value]
        value = instance.__dict__[self.name] = self.func(instance)
        return value
