"""Order the compiler keeps between named instructions: ``kernel.with_schedule(...)`` (NKI 0.2+),
``nisa.NkiInstruction.depends_on`` and ``nisa.dependency``.

The NKI guide "How to Use the NKI Scheduling APIs" describes ``with_schedule`` as extra
dependency edges handed to the compiler's scheduler: a list of pairs ``(consumer, producer)``
or ``(consumer, [producer, ...])`` of instruction names (the ``name=`` of ``nisa`` calls), the
consumer running after each producer.  The ``nki.isa.NkiInstruction`` page says every ``nisa``
call returns a handle whose ``depends_on(*producers, kind=)`` adds the same edge;
``nki.isa.dependency`` tells the two kinds apart: ``runtime`` lowers to a semaphore wait,
``schedule`` only constrains the issue order (engines may still overlap).

neuronsim records each handle (the instructions one call emitted) and each edge while tracing
and applies them to the traced program (:func:`apply_edges`): a runtime edge (also the
default, as the older page and the guide describe it) becomes an ``ordered`` dep of the
consumer's first instruction on the producer's last; where a consumer is written *before* its
producer, the body is reordered once by all its edges and its data order together (the
compiler's scheduler keeps data order too), the nearest order to the kernel's that holds them,
whichever order the edges were listed in; an edge that contradicts the data order, closes a
cycle of edges, or crosses into a compiled loop (which the ``depends_on`` page forbids), is
refused at the line that asked for it.  A ``schedule`` edge is honoured in the traced order
alone: the ``schedule`` pass may still reorder the two (no constraint of issue order is
recorded for it; a ``runtime`` edge's wait holds).
"""

from __future__ import annotations

import difflib
import enum
import heapq
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from neuronsim.machine.ir.program import Dep, EdgeKind, Instruction, Loop, Program
from neuronsim.machine.nki.errors import NkiError, SourceLine, fail, user_line
from neuronsim.machine.nki.tracer import current

__all__ = ["dependency", "NkiInstruction", "OrderEdge", "handle_of", "apply_edges", "schedule_edges"]


class dependency(enum.Enum):  # noqa: N801  (NKI's name)
    runtime = "runtime"
    schedule = "schedule"


class NkiInstruction:
    """What a ``nisa`` call returns: the instructions it emitted (``names``, in order)."""

    def __init__(self, names: tuple[str, ...], label: str | None, site: SourceLine) -> None:
        self.names, self.label, self.site = names, label, site

    def depends_on(self, *producers: Any, kind: Any = None) -> NkiInstruction:
        """This instruction runs after each producer (``kind``: a ``nisa.dependency``)."""
        where = user_line(2)
        for producer in producers:
            if not isinstance(producer, NkiInstruction):
                raise fail(f"depends_on takes the handles nisa calls return, not {producer!r}")
            current().order_edges.append(OrderEdge(self, producer, _kind(kind), where))
        return self

    def __repr__(self) -> str:
        return f"<NkiInstruction {self.label or ', '.join(self.names) or 'empty'}>"


@dataclass(frozen=True)
class OrderEdge:
    """``consumer`` runs after ``producer``; asked for at ``site``."""

    consumer: NkiInstruction
    producer: NkiInstruction
    kind: dependency
    site: SourceLine


def _kind(kind: Any) -> dependency:
    if kind is None or kind is dependency.runtime or kind == "runtime":
        return dependency.runtime
    if kind is dependency.schedule or kind == "schedule":
        return dependency.schedule
    raise fail(f"kind= is nisa.dependency.runtime or nisa.dependency.schedule, not {kind!r}")


def handle_of(tracer: Any, new_nodes: Iterable[Any], label: Any, site: SourceLine) -> NkiInstruction:
    """The handle of the instructions one call emitted (``new_nodes``), remembered under its
    ``name=`` (``label``) for ``with_schedule``."""
    names = tuple(node.name for node in new_nodes if isinstance(node, Instruction))
    handle = NkiInstruction(names, str(label) if label is not None else None, site)
    if label is not None and names:
        tracer.named_calls.setdefault(str(label), []).append(handle)
    return handle


def schedule_edges(pairs: Any, kind: Any, named: dict[str, list[NkiInstruction]], site: SourceLine
                   ) -> list[OrderEdge]:
    """The edges of ``kernel.with_schedule(pairs)`` between the traced calls named so."""
    edges: list[OrderEdge] = []
    try:
        items = list(pairs)
    except TypeError:
        raise NkiError(site, f"with_schedule takes a list of (consumer, producer) name pairs, not {pairs!r}") from None
    for item in items:
        if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
            raise NkiError(site, f"with_schedule: each edge is (consumer, producer or [producers]), not {item!r}")
        consumer, producers = item[0], item[1]
        edge_kind = _kind_at(item[2] if len(item) == 3 else kind, site)
        producers = [producers] if isinstance(producers, str) else list(producers)
        for producer in producers:
            for c in _named(consumer, named, site):
                for p in _named(producer, named, site):
                    edges.append(OrderEdge(c, p, edge_kind, site))
    return edges


def _kind_at(kind: Any, site: SourceLine) -> dependency:
    try:
        return _kind(kind)
    except NkiError as err:
        raise NkiError(site, err.message) from None


def _named(label: Any, named: dict[str, list[NkiInstruction]], site: SourceLine) -> list[NkiInstruction]:
    if str(label) in named:
        return named[str(label)]
    close = difflib.get_close_matches(str(label), list(named), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else f" (named: {', '.join(sorted(named)) or 'none'})"
    raise NkiError(site, f"with_schedule: no traced nisa call is named {label!r}{hint}")


def apply_edges(program: Program, edges: list[OrderEdge]) -> Program:
    """``program`` with every edge honoured (module doc): each body holding a consumer written
    before its producer is reordered once, by every edge of that body and its data order
    together (so the order the edges are listed in does not matter); a cycle is refused at the
    line of the edge that closes it."""
    edges = [e for e in edges if e.consumer.names and e.producer.names and e.consumer is not e.producer]
    by_body: dict[tuple[int, ...], list[OrderEdge]] = {}
    backwards: set[tuple[int, ...]] = set()  # bodies where a consumer is written before its producer
    for edge in edges:
        found = _body_of(program, edge)
        if found is not None:
            by_body.setdefault(found[0], []).append(edge)
            if found[1]:
                backwards.add(found[0])
    for body in backwards:
        mine = by_body[body]
        program = program.with_body(_in_body(program.body, body, lambda nodes, mine=mine: _ordered(nodes, mine)))
    for edge in edges:
        if edge.kind is dependency.runtime:  # a semaphore wait; a schedule edge orders the issue alone
            program = _waits(program, edge)
    return program


def _body_of(program: Program, edge: OrderEdge) -> tuple[tuple[int, ...], bool] | None:
    """The index path of the body holding both ends of ``edge`` and whether its consumer is
    written before its producer there (None: in different bodies, in order, or dropped by the
    trace); an edge crossing into a compiled loop is refused at its line."""
    at_consumer = _locate(program.body, edge.consumer.names[0])
    at_producer = _locate(program.body, edge.producer.names[-1])
    if at_consumer is None or at_producer is None:  # dropped by the trace (a masked-away call)
        return None
    outer, inner = at_producer[:-1], at_consumer[:-1]  # the bodies holding them
    if inner[:len(outer)] != outer or (outer != inner and at_producer[-1] > at_consumer[len(outer)]):
        raise NkiError(edge.site, f"an order between {_label(edge.consumer)} and {_label(edge.producer)} "
                                  "crosses into a compiled loop (the NkiInstruction.depends_on page forbids "
                                  "edges into or out of nl.fori_loop / nl.while_loop bodies)")
    return (outer, at_producer[-1] > at_consumer[-1]) if outer == inner else None


def _waits(program: Program, edge: OrderEdge) -> Program:
    first, last = edge.consumer.names[0], edge.producer.names[-1]

    def wait(inst: Instruction) -> Instruction:
        if inst.name != first or any(d.on == last for d in inst.deps):
            return inst
        return replace(inst, deps=inst.deps + (Dep(last, EdgeKind.ORDERED),))

    return program.map_instructions(wait)


def _ordered(body: list[Any], edges: list[OrderEdge]) -> list[Any]:
    """``body`` in the program order closest to its own that puts every edge's consumer after
    its producer and keeps every pair of nodes that touch a common tensor, one writing it, in
    their order (the compiler's scheduler keeps data order too): one stable topological sort of
    the stretch between the first and the last node an edge names."""
    at = {getattr(node, "name", None): k for k, node in enumerate(body)}
    ends = [(e, [at[n] for n in e.consumer.names if n in at], [at[n] for n in e.producer.names if n in at])
            for e in edges]
    lo = min(k for _e, c, p in ends for k in c + p)
    hi = max(k for _e, c, p in ends for k in c + p)
    touched = [_touches(body[k]) for k in range(lo, hi + 1)]
    after: dict[int, set[int]] = {k: set() for k in range(lo, hi + 1)}  # node -> the nodes that must follow it
    for a in range(lo, hi + 1):
        (ra, wa) = touched[a - lo]
        for b in range(a + 1, hi + 1):
            rb, wb = touched[b - lo]
            if wa & (rb | wb) or ra & wb:
                after[a].add(b)
    data = {k: set(v) for k, v in after.items()}  # the data order alone
    for edge, consumers, producers in ends:
        data_first = any(_reaches(data, c, p) for c in consumers for p in producers)
        for p in producers:
            after[p].update(consumers)
        if any(_reaches(after, c, c2) for c in consumers for c2 in producers) or data_first:
            why = ("the producer uses what the consumer writes or reads first (the kernel's data order says the "
                   "opposite)" if data_first else "the other orders asked for, with the kernel's data order, put "
                   "it first")
            raise NkiError(edge.site, f"{_label(edge.consumer)} cannot run after {_label(edge.producer)}: {why}")
    waiting = {k: 0 for k in after}
    for k in after:
        for m in after[k]:
            waiting[m] += 1
    ready = [k for k, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    order = []
    while ready:  # program order among the nodes free to go
        k = heapq.heappop(ready)
        order.append(k)
        for m in after[k]:
            waiting[m] -= 1
            if not waiting[m]:
                heapq.heappush(ready, m)
    return body[:lo] + [body[k] for k in order] + body[hi + 1:]


def _reaches(after: dict[int, set[int]], start: int, goal: int) -> bool:
    """Whether ``goal`` must follow ``start`` (a path of ``after`` edges)."""
    stack, seen = [start], {start}
    while stack:
        k = stack.pop()
        if k == goal:
            return True
        for m in after[k] - seen:
            seen.add(m)
            stack.append(m)
    return False


def _locate(nodes: tuple[Any, ...], name: str, path: tuple[int, ...] = ()) -> tuple[int, ...] | None:
    """The index path of instruction ``name`` (loop positions, then its position)."""
    for k, node in enumerate(nodes):
        if isinstance(node, Loop):
            found = _locate(node.body, name, path + (k,))
            if found is not None:
                return found
        elif node.name == name:
            return path + (k,)
    return None


def _label(handle: NkiInstruction) -> str:
    return repr(handle.label) if handle.label else f"the call at {handle.site}"


def _in_body(nodes: tuple[Any, ...], path: tuple[int, ...], fn) -> tuple[Any, ...]:
    if not path:
        return tuple(fn(list(nodes)))
    out = list(nodes)
    loop = out[path[0]]
    out[path[0]] = replace(loop, body=_in_body(loop.body, path[1:], fn))
    return tuple(out)


def _touches(node: Any) -> tuple[set[str], set[str]]:
    """(tensors read, tensors written) by a node (a loop: by its whole body)."""
    if isinstance(node, Loop):
        reads: set[str] = set()
        writes: set[str] = set()
        for inner in node.body:
            r, w = _touches(inner)
            reads |= r
            writes |= w
        return reads, writes
    return {a.tensor for a in node.reads}, {a.tensor for a in node.writes}
