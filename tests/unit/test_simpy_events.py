"""The simpy adapter (``neuronsim.machine.sim.simpy_events``): its events behave as simpy's own
``succeed`` / ``Timeout`` events, ordered by the priority given, and no other simulator module
touches simpy's private event fields."""

from __future__ import annotations

import re
from pathlib import Path

import simpy
from simpy.events import NORMAL

import neuronsim.machine.sim as sim_package
from neuronsim.machine.sim.simpy_events import HeldTimeout, fire, fire_later, tied


def _order(schedule) -> list[tuple[str, float]]:
    """Names and times in the order simpy processes the events ``schedule(env, log)`` makes."""
    env = simpy.Environment()
    seen: list[tuple[str, float]] = []

    def log(name):
        return lambda ev: seen.append((name, env.now, ev.ok, ev.value))

    schedule(env, log)
    env.run()
    assert all(ok is True and value is None for _, _, ok, value in seen)
    return [(name, now) for name, now, _, _ in seen]


def test_a_fired_event_is_processed_like_succeed_at_its_priority():
    def schedule(env, log):
        late, early, plain = simpy.Event(env), simpy.Event(env), simpy.Event(env)
        for name, ev in (("late", late), ("early", early), ("plain", plain)):
            ev.callbacks.append(log(name))
        fire(late, NORMAL + 5)
        plain.succeed()  # NORMAL, scheduled between the two
        fire(early, NORMAL - 1)

    assert _order(schedule) == [("early", 0), ("plain", 0), ("late", 0)]


def test_held_timeouts_and_delayed_fires_keep_time_then_priority():
    def schedule(env, log):
        for name, delay, priority in (("b", 2.0, NORMAL + 3), ("a", 2.0, NORMAL + 1), ("first", 1.0, NORMAL + 9)):
            HeldTimeout(env, delay, priority).callbacks.append(log(name))
        later = simpy.Event(env)
        later.callbacks.append(log("fired"))
        fire_later(later, NORMAL + 2, 2.0)
        env.timeout(2.0).callbacks.append(log("timeout"))  # simpy's own, NORMAL
        tied(env, 0).callbacks.append(log("tied"))

    assert _order(schedule) == [("tied", 0), ("first", 1.0), ("timeout", 2.0), ("a", 2.0), ("fired", 2.0),
                                ("b", 2.0)]


def test_a_process_waits_on_a_fired_event():
    env = simpy.Environment()
    gate = simpy.Event(env)
    got = []

    def waiter():
        value = yield gate
        got.append((env.now, value))

    env.process(waiter())
    fire_later(gate, NORMAL, 3.5)
    env.run()
    assert got == [(3.5, None)]


def test_only_the_adapter_touches_simpy_private_fields():
    private = re.compile(r"\._(ok|value|defused|delay|eid|now)\b|env\._queue")  # simpy Event / Environment state
    folder = Path(sim_package.__file__).parent
    offenders = [path.name for path in folder.glob("*.py")
                 if path.name != "simpy_events.py" and private.search(path.read_text())]
    assert offenders == []
