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
consumer's first instruction on the producer's last; a consumer the kernel wrote *before* its
producer moves after it, with every later instruction of the same body that touches what the
moved ones touch (the compiler's scheduler keeps data order too); an edge that contradicts the
data order, or crosses into a compiled loop (which the ``depends_on`` page forbids), is
refused at the line that asked for it.
"""

from __future__ import annotations

import difflib
import enum
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
    """``program`` with every edge honoured (module doc)."""
    for edge in edges:
        if not edge.consumer.names or not edge.producer.names or edge.consumer is edge.producer:
            continue
        program = _apply(program, edge)
    return program


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


def _apply(program: Program, edge: OrderEdge) -> Program:
    first, last = edge.consumer.names[0], edge.producer.names[-1]
    at_consumer, at_producer = _locate(program.body, first), _locate(program.body, last)
    if at_consumer is None or at_producer is None:  # dropped by the trace (a masked-away call)
        return program
    outer, inner = at_producer[:-1], at_consumer[:-1]  # the bodies holding them
    if inner[:len(outer)] != outer or (outer != inner and at_producer[-1] > at_consumer[len(outer)]):
        raise NkiError(edge.site, f"an order between {_label(edge.consumer)} and {_label(edge.producer)} "
                                  "crosses into a compiled loop (the NkiInstruction.depends_on page forbids "
                                  "edges into or out of nl.fori_loop / nl.while_loop bodies)")
    if outer == inner and at_producer[-1] > at_consumer[-1]:  # written before its producer: moved after it
        program = program.with_body(_in_body(program.body, at_consumer[:-1],
                                             lambda body: _sunk(body, edge, at_consumer[-1], at_producer[-1])))
    if edge.kind is dependency.schedule:  # issue order only: no semaphore wait
        return program

    def wait(inst: Instruction) -> Instruction:
        if inst.name != first or any(d.on == last for d in inst.deps):
            return inst
        return replace(inst, deps=inst.deps + (Dep(last, EdgeKind.ORDERED),))

    return program.map_instructions(wait)


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


def _sunk(body: list[Any], edge: OrderEdge, consumer_at: int, producer_at: int) -> list[Any]:
    """``body`` with the consumer's instructions, and every node between it and the producer
    that touches what they touch (a write on either side), moved right after the producer."""
    own = set(edge.consumer.names)
    moved: list[int] = []
    reads: set[str] = set()
    writes: set[str] = set()
    for k in range(consumer_at, producer_at + 1):
        r, w = _touches(body[k])
        mine = getattr(body[k], "name", None) in own
        if mine or (w & (reads | writes)) or (r & writes):
            if k == producer_at or getattr(body[k], "name", None) in set(edge.producer.names):
                raise NkiError(edge.site, f"{_label(edge.consumer)} cannot run after {_label(edge.producer)}: "
                                          "the producer uses what the consumer writes or reads first "
                                          "(the kernel's data order says the opposite)")
            moved.append(k)
            reads |= r
            writes |= w
    kept = [node for k, node in enumerate(body[:producer_at + 1]) if k not in moved]
    return kept + [body[k] for k in moved] + body[producer_at + 1:]
