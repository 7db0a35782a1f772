"""The one adapter between the simulator and simpy's event internals: events triggered with a
tie-break priority the interleaving chooses.

Why an adapter
    simpy orders simultaneous events by ``(time, priority, insertion id)``, and a seeded
    interleaving (:class:`neuronsim.machine.sim.engine.Interleaving`) draws the priority so
    that ties break differently from seed to seed.  simpy's public API schedules with a chosen
    priority (:meth:`simpy.core.Environment.schedule`), but marks an event successful only
    inside :meth:`simpy.events.Event.succeed` and :class:`simpy.events.Timeout`, both at the
    fixed priority ``NORMAL``.  Marking it is two fields, ``_ok`` and ``_value``, which simpy's
    own ``Timeout.__init__`` sets before it schedules; the functions below set them the same
    way and nothing else in the project touches simpy's private state.

Guard
    simpy is pinned (``constraints.txt``; ``simpy>=4.1,<5``).  At import, :func:`_check_fields`
    compares a fired event with one simpy's own ``succeed`` triggered, so a simpy whose events
    keep their state elsewhere stops the import with a clear message instead of simulating
    wrongly; ``tests/unit/test_simpy_events.py`` checks the processing order against simpy's.

Speed: these are the simulator's innermost calls (one per completion and per trigger), so they
stay plain functions and a slotted subclass, as the inlined code they replace
(``bench/bench_simulator.py``).
"""

from __future__ import annotations

from simpy import Environment, Event
from simpy.events import NORMAL, PENDING

__all__ = ["HeldTimeout", "fire", "fire_later", "tied", "NORMAL"]


class HeldTimeout(Event):
    """A :class:`simpy.events.Timeout` (value None) scheduled at ``priority``."""

    def __init__(self, env: Environment, delay: float, priority: int) -> None:
        self.env = env
        self.callbacks = []
        self._value = None
        self._ok = True
        env.schedule(self, priority, delay)


def fire_later(ev: Event, priority: int, delay: float) -> None:
    """Trigger the pending ``ev`` successfully (value None) ``delay`` from now at ``priority``."""
    ev._ok = True
    ev._value = None
    ev.env.schedule(ev, priority, delay)


def fire(ev: Event, priority: int) -> None:
    """:meth:`simpy.events.Event.succeed` (value None) at ``priority`` instead of ``NORMAL``."""
    ev._ok = True
    ev._value = None
    ev.env.schedule(ev, priority)


def tied(env: Environment, priority: int) -> Event:
    """A new zero-delay event whose place among simultaneous events is ``NORMAL + priority``."""
    ev = Event(env)
    fire(ev, NORMAL + priority)
    return ev


def _check_fields() -> None:
    env = Environment()
    ours, theirs = Event(env), Event(env)
    if getattr(ours, "_value", None) is not PENDING:
        raise ImportError("simpy's Event no longer keeps its value in _value; "
                          "neuronsim.machine.sim.simpy_events needs updating for this simpy version")
    fire(ours, NORMAL)
    theirs.succeed()
    if (ours.triggered, ours.ok, ours.value) != (theirs.triggered, theirs.ok, theirs.value):
        raise ImportError("simpy's Event state differs from the fields neuronsim.machine.sim.simpy_events sets; "
                          "it needs updating for this simpy version")


_check_fields()
