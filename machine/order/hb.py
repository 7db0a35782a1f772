"""Happens-before: the spec's rules 1-4 as vector clocks (the one implementation).

Components
    One clock component per sequencer (``pe act dve pool sp``) and one per DMA queue
    (``dma0 ...``): eight on ``trn1`` (:func:`neuronsim.machine.order.stream.component_names`).  A non-DMA
    instance *completes* on its sequencer's component, a DMA on its queue's.  Completions of
    one component happen in program order (rule 1 for a sequencer's non-DMA instances, rule 3
    for a queue), so "the first ``p`` completions of component ``c`` happened before this
    event" is one integer ``clock[c] = p``, and a clock is a tuple of ``width`` integers.

Events and rules
    An instance X has a trigger ``T(X)``, a start ``S(X)`` and a completion ``E(X)``
    (``T = S`` unless X is a DMA).  Walking instances in program order:

    * rule 4, "Y waits for B": ``E(B) <= T(Y)``: ``T(Y)`` is the clock of Y's sequencer joined
      with the completion clocks of its wait targets (:meth:`HappensBefore.trigger`);
    * rule 3, same queue: ``E(previous transfer) <= S(X)``: a transfer starts at ``T(X)``
      joined with its queue's clock;
    * ``E(X)`` is ``S(X)`` with X's own completion counted on its component;
    * rule 1, X not a DMA: ``E(X) <= T(next on the sequencer)``: the sequencer's clock becomes
      ``E(X)``; rule 2, X a DMA: only ``T(X) <= T(next)``: it stays ``T(X)``
      (:meth:`HappensBefore.complete`).

    ``A`` is ordered before ``Y`` (``E(A) <= S(Y)``) iff ``S(Y)[comp(A)] >= pos(A)``: exact,
    since the order is reachability in the DAG of T/S/E nodes and completions of a component
    are totally ordered (Fidge/Mattern clocks over in-order components).

Uses
    :class:`HappensBefore` is the product's implementation of the rules, fed one instance at a
    time: the race checker's exact walk (:mod:`neuronsim.verify.racecheck`: start clocks against
    shadow memory, :meth:`HappensBefore.horizon` bounding it), the dependence builders (an
    order they would add may already hold; :meth:`HappensBefore.after` for a wait added as
    they go), the transitive reduction and the sync-count minimum (:meth:`HappensBefore.fold`:
    a wait is redundant iff its target is already covered by the clock folded from later
    targets).  :func:`start_clocks` is not a variant but the same rules over waits fixed in
    advance, every start clock at once: one generated loop (joins inlined, covered waits
    skipped) instead of two method calls per instance; :func:`first_unordered`, the race
    checker's fast path, is that loop testing given pairs against each start clock as it goes;
    ``tests/property/test_hb_start_clocks.py`` holds the first equal to :class:`HappensBefore`
    and the second to the first's clocks.
    :class:`DagHappensBefore` answers the same question for another input, a task graph whose
    in-order chains are found rather than given (:mod:`neuronsim.verify.tasks.check`).  No
    option selects among them, and the oracles they are tested against (networkx
    reachability, the class for the loop) live in the tests.

References
----------
C. J. Fidge, "Timestamps in message-passing systems that preserve the partial ordering", 1988.
C. Flanagan and S. N. Freund, "FastTrack: efficient and precise dynamic race detection", PLDI 2009.

Examples
--------
>>> hb = HappensBefore(num_queues=3)
>>> sa, pa = hb.complete(0, 2, 2, hb.trigger(2))              # dve compute
>>> sb, pb = hb.complete(1, 4, 5, hb.trigger(4))              # sp triggers a DMA on dma0
>>> sc, pc = hb.complete(2, 1, 1, hb.trigger(1, (1,)))        # act waits for the DMA
>>> ordered(sc, 2, pa), ordered(sc, 5, pb), ordered(sb, 2, pa)
(False, True, False)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from array import array
from functools import lru_cache

import numpy as np

from neuronsim.machine.ir.program import SEQUENCERS

__all__ = ["HappensBefore", "ordered", "joiner", "wait_counts", "start_clocks", "first_unordered", "NUM_SEQUENCERS",
           "DagHappensBefore", "SparseClock", "sparse_join", "TUPLE_WIDTH", "active_sequencers"]

NUM_SEQUENCERS = len(SEQUENCERS)
Clock = tuple


@lru_cache(maxsize=None)
def joiner(width: int):
    """``join(a, b)``: the component-wise max of two clocks, unrolled for ``width``.

    Generated because an unrolled join is several times cheaper than
    ``tuple(map(max, a, b))`` in CPython (performance notes, section 2.3), and joins are the
    hot operation of every walk.

    >>> joiner(3)((1, 5, 2), (4, 0, 2))
    (4, 5, 2)
    """
    a, b, body = _join_source(width)
    source = f"def join(a, b):\n    if a is b:\n        return a\n    {a}, = a\n    {b}, = b\n    return ({body},)\n"
    scope: dict = {}
    exec(source, scope)  # noqa: S102 - generated from integers only
    return scope["join"]


def _join_source(width: int) -> tuple[str, str, str]:
    """The source of one unrolled join, shared by :func:`joiner` and the walker of
    :func:`start_clocks`: the names ``a0, ...`` and ``b0, ...`` the two clocks unpack into, and
    the tuple body of their component-wise max.

    >>> _join_source(2)
    ('a0, a1', 'b0, b1', 'a0 if a0 > b0 else b0, a1 if a1 > b1 else b1')
    """
    unpack_a = ", ".join(f"a{i}" for i in range(width))
    unpack_b = ", ".join(f"b{i}" for i in range(width))
    body = ", ".join(f"a{i} if a{i} > b{i} else b{i}" for i in range(width))
    return unpack_a, unpack_b, body


def ordered(start: Clock, comp: int, pos: int) -> bool:
    """Is the completion at position ``pos`` of component ``comp`` ordered before an event with
    clock ``start``?"""
    return start[comp] >= pos


class HappensBefore:
    """Vector clocks of the instances of one program, fed in program order.

    Parameters
    ----------
    num_queues:
        DMA queues of the machine (the clock is ``5 + num_queues`` wide).
    keep:
        Which completion clocks to keep for later waits.  ``None`` keeps all of them (a
        builder that adds waits as it goes); a dict ``{instance: number of waits on it}``
        keeps only those, each freed after its last use (the checkers, the reduction: this is
        what bounds memory at a million instances).
    """

    __slots__ = ("width", "seq_clock", "queue_clock", "count", "end", "uses", "join")

    def __init__(self, num_queues: int, keep: dict[int, int] | None = None) -> None:
        self.width = NUM_SEQUENCERS + num_queues
        zero = (0,) * self.width
        self.seq_clock: list[Clock] = [zero] * NUM_SEQUENCERS
        self.queue_clock: list[Clock] = [zero] * self.width  # indexed by component
        self.count = [0] * self.width
        self.end: dict[int, Clock] = {}
        self.uses = keep
        self.join = joiner(self.width)

    def trigger(self, seq: int, targets: Iterable[int] = ()) -> Clock:
        """``T`` of the next instance on sequencer ``seq`` waiting for ``targets`` (rule 4)."""
        clock = self.seq_clock[seq]
        if targets:
            join, end, uses = self.join, self.end, self.uses
            if uses is None:
                for t in targets:
                    e = end.get(t)  # None: forgotten below the horizon, already known
                    if e is not None:
                        clock = join(clock, e)
                return clock
            for t in targets:
                clock = join(clock, end[t])
                left = uses[t] - 1
                if left:
                    uses[t] = left
                else:
                    del end[t], uses[t]
        return clock

    def fold(self, seq: int, targets: Sequence[int], comp: Sequence[int],
             pos: Sequence[int]) -> tuple[Clock, list[bool]]:
        """``T`` of the next instance on ``seq`` and, per target (latest first), whether its
        wait is needed: a target already ordered before the clock folded so far (the
        sequencer's, joined with the needed later targets) is redundant.

        With targets visited latest first this is the exact transitive reduction: if ``E(X)``
        reaches ``T(Y)`` through another wait ``X'``, then ``E(X) <= E(X')``, so ``X'`` comes
        later in program order and was folded first (performance notes, section 1.2).
        """
        clock = self.seq_clock[seq]
        join, end, uses = self.join, self.end, self.uses
        needed = []
        for t in targets:
            if clock[comp[t]] >= pos[t]:
                needed.append(False)
            else:
                clock = join(clock, end[t])
                needed.append(True)
            if uses is not None:
                left = uses[t] - 1
                if left:
                    uses[t] = left
                else:
                    del end[t], uses[t]
        return clock, needed

    def complete(self, iid: int, seq: int, comp: int, trigger: Clock) -> tuple[Clock, int]:
        """Rules 1-3 for instance ``iid`` issued by ``seq`` and completing on ``comp`` (its
        queue when ``comp >= 5``), triggered at ``trigger``: returns ``(S, position)``."""
        if comp < NUM_SEQUENCERS:
            start = trigger
        else:
            self.seq_clock[seq] = trigger  # rule 2: the sequencer knows only the trigger
            start = self.join(trigger, self.queue_clock[comp])  # rule 3
        pos = self.count[comp] + 1
        self.count[comp] = pos
        end = [*start]  # a list set and made a tuple: half the cost of two slices joined
        end[comp] = pos
        end = tuple(end)
        if comp < NUM_SEQUENCERS:
            self.seq_clock[seq] = end  # rule 1
        else:
            self.queue_clock[comp] = end
        uses = self.uses
        if uses is None or iid in uses:
            self.end[iid] = end
        return start, pos

    def start_of(self, comp: int, trigger: Clock) -> Clock:
        """``S`` of an instance completing on ``comp`` triggered at ``trigger`` (rule 3 for a
        transfer), before :meth:`complete` is called for it."""
        if comp < NUM_SEQUENCERS:
            return trigger
        return self.join(trigger, self.queue_clock[comp])

    def after(self, clock: Clock, iid: int) -> Clock:
        """``clock`` joined with ``E(iid)``: a wait on ``iid`` added to an event after the fact
        (a builder that adds waits as it goes).  A completion clock forgotten below the
        horizon (:meth:`forget`) is already known to every later event: ``clock`` unchanged.
        Frees nothing, whatever ``keep`` says."""
        end = self.end.get(iid)
        return clock if end is None else self.join(clock, end)

    def horizon(self, active: Iterable[int] | None = None) -> Clock:
        """Per component, the positions every *future* event is ordered after.

        Every later instance starts no earlier than the current clock of the sequencer that
        issues it (a transfer starts after its trigger), so the component-wise minimum over
        the sequencers that still have instances to come (``active``, default all) bounds
        every start clock still to come.  Nothing at or below it can race again, and a wait
        on it orders nothing new.
        """
        seqs = range(NUM_SEQUENCERS) if active is None else active
        clocks = [self.seq_clock[s] for s in seqs]
        if not clocks:
            return (1 << 62,) * self.width
        return tuple(min(column) for column in zip(*clocks))

    def forget(self, below: Clock, comp: Sequence[int], pos: Sequence[int]) -> None:
        """Drop the kept completion clocks at or below ``below`` (a :meth:`horizon`): joining
        them can add nothing to any future clock."""
        if self.uses is None:
            for iid in [i for i in self.end if below[comp[i]] >= pos[i]]:
                del self.end[iid]


def active_sequencers(seq: np.ndarray):
    """``active(i)``: the sequencers that issue an instance at or after instance ``i`` of a
    stream whose ``seq`` column is given, :meth:`HappensBefore.horizon`'s ``active`` argument.
    A sequencer that issues nothing more, counted in, holds the horizon where its clock stopped
    (at zero if it never issued): then :meth:`HappensBefore.forget` frees nothing and walks
    every kept clock at each call, quadratic (one loop of 1e6 iterations took minutes in
    anti-deps: a probe).

    >>> active_sequencers(np.array([0, 2, 0, 1]))(2)
    [0, 1]
    """
    last = {int(s): int(np.flatnonzero(seq == s)[-1]) for s in np.unique(seq).tolist()}
    return lambda i: [s for s, at in last.items() if at >= i]


def wait_counts(targets: Iterable[int]) -> dict[int, int]:
    """``{instance: number of waits on it}``: the ``keep`` argument of :class:`HappensBefore`.

    >>> wait_counts([3, 1, 3])
    {3: 2, 1: 1}
    """
    out: dict[int, int] = {}
    for t in targets:
        out[t] = out.get(t, 0) + 1
    return out


def start_clocks(seq: Sequence[int], comp: Sequence[int], ptr: Sequence[int], target: Sequence[int],
                 num_queues: int) -> np.ndarray:
    """``S`` of every instance of a stream walked in program order, instance ``i`` issued by
    ``seq[i]``, completing on ``comp[i]`` and waiting for ``target[ptr[i]:ptr[i+1]]``.

    The rules of :class:`HappensBefore` in one generated loop (:func:`_start_walker`): joins
    unrolled in place, and a wait whose target is already ordered before the clock joined so
    far (``clock[comp[t]] >= pos[t]``, so ``E(t) <= clock`` component-wise) joins nothing.
    Each completion clock is freed after its last wait.  Returns an ``(n, width)`` array of
    int32 (int64 from 2**31 instances on).

    >>> start_clocks([2, 4, 1], [2, 5, 1], [0, 0, 0, 1], [1], 3)[2].tolist()   # act waits for the DMA
    [0, 0, 0, 0, 0, 1, 0, 0]
    """
    width = NUM_SEQUENCERS + num_queues
    uses, pos = _walk_state(seq, target)
    flat = array(uses.typecode)
    _start_walker(width)(seq, comp, ptr, target, uses, pos, flat.extend, None, None)
    return np.frombuffer(flat, flat.typecode).reshape(len(seq), width)


def _walk_state(seq: Sequence[int], target: Sequence[int]) -> tuple[array, array]:
    """The walk's per-instance arrays: the waits left on each instance (its completion clock
    is freed after the last) and the positions, zeroed.  Positions count instances, so 32 bits
    hold them below 2**31 instances: C arrays of them, not Python lists and int objects (~80 B
    an instance less at the check's peak, performance notes 2.9)."""
    code = "i" if len(seq) < 2**31 else "q"
    uses = array(code, np.bincount(np.asarray(target, np.int64), minlength=len(seq)).astype(code).tobytes())
    return uses, array(code, bytes(len(seq) * uses.itemsize))


def first_unordered(seq: Sequence[int], comp: Sequence[int], ptr: Sequence[int], target: Sequence[int],
                    pair_ptr: Sequence[int], earlier: Sequence[int], num_queues: int) -> int:
    """The first instance ``y`` (in program order) with an instance ``e`` among
    ``earlier[pair_ptr[y]:pair_ptr[y + 1]]`` not ordered before it (``S(y)[comp(e)] <
    pos(e)``), or -1: the walk of :func:`start_clocks` (same arguments before ``pair_ptr``)
    testing each instance's pairs against its start clock as it goes.

    The race checker's fast path asks this of every neighbour pair the cheaper rules leave; no
    clock is kept past its instance (an ``(n, width)`` array of them was ~32 B an instance at
    the check's peak, and appending each to it a third of the walk), and the walk stops at the
    first pair out of order.

    >>> first_unordered([2, 4, 1], [2, 5, 1], [0, 0, 0, 1], [1], [0, 0, 0, 1], [1], 3)   # act waits for the DMA
    -1
    >>> first_unordered([2, 4, 1], [2, 5, 1], [0, 0, 0, 1], [1], [0, 0, 0, 2], [1, 0], 3)  # not for the dve
    2
    """
    walk = _start_walker(NUM_SEQUENCERS + num_queues, True)
    return walk(seq, comp, ptr, target, *_walk_state(seq, target), None, pair_ptr, earlier)


@lru_cache(maxsize=None)
def _start_walker(width: int, check: bool = False):
    """The loop of :func:`start_clocks` (``check`` False) or :func:`first_unordered` for clocks
    of ``width`` components (generated: an inlined join is several times cheaper than a call,
    performance notes section 2.3).  A completion clock is its start with one component set:
    copied into a list, set and made a tuple, which costs half what two slices joined around
    the new component do.  The one line that differs: hand the start clock over, or test the
    instance's pairs against it (``pairs``: the earlier instances of instance ``i``, rows
    ``pair_ptr[i]:pair_ptr[i + 1]``), returning the first instance with an unordered one."""
    a, b, join = _join_source(width)
    emit = """        x = pair_ptr[i + 1]
        if w != x:
            for t in pairs[w:x]:
                if start[comp[t]] < pos[t]:
                    return i
            w = x""" if check else "        extend(start)"
    source = f"""
def walk(seq, comp, ptr, target, uses, pos, extend, pair_ptr, pairs):
    n = len(seq)
    zero = (0,) * {width}
    seq_clock = [zero] * {NUM_SEQUENCERS}
    queue_clock = [zero] * {width}
    count = [0] * {width}
    end = [None] * n
    a = w = 0
    for i in range(n):
        s = seq[i]
        clock = seq_clock[s]
        b = ptr[i + 1]
        if a != b:
            for t in target[a:b]:
                if clock[comp[t]] < pos[t]:
                    {a}, = clock
                    {b}, = end[t]
                    clock = ({join},)
                left = uses[t] - 1
                uses[t] = left
                if not left:
                    end[t] = None
            a = b
        c = comp[i]
        p = count[c] + 1
        count[c] = p
        pos[i] = p
        if c < {NUM_SEQUENCERS}:  # rule 1: the sequencer's next trigger follows the end
            start = clock
            e = [*clock]
            e[c] = p
            e = seq_clock[s] = tuple(e)
        else:  # rule 2: it follows the trigger only; rule 3: the queue's previous transfer
            seq_clock[s] = clock
            {a}, = clock
            {b}, = queue_clock[c]
            start = ({join},)
            e = [*start]
            e[c] = p
            e = queue_clock[c] = tuple(e)
        if uses[i]:
            end[i] = e
{emit}
    return -1
"""
    scope: dict = {}
    exec(source, scope)  # noqa: S102 - generated from integers only
    return scope["walk"]


# -- DAG happens-before (task graphs) -------------------------------------------------------
class SparseClock(dict):
    """A clock over many components as a dict; a missing component reads 0, so :func:`ordered`
    works on it unchanged."""

    __slots__ = ()

    def __missing__(self, comp: int) -> int:
        return 0


def sparse_join(a: SparseClock, b: SparseClock) -> SparseClock:
    """``join`` of two sparse clocks: the component-wise max (a fresh clock).

    >>> dict(sparse_join(SparseClock({0: 2, 3: 1}), SparseClock({3: 4, 5: 1})))
    {0: 2, 3: 4, 5: 1}
    """
    if len(a) < len(b):
        a, b = b, a
    out = SparseClock(a)
    for comp, pos in b.items():
        if out[comp] < pos:
            out[comp] = pos
    return out


#: Chains up to which :class:`DagHappensBefore` keeps clocks as tuples (an unrolled
#: :func:`joiner`); wider graphs get :class:`SparseClock` dicts.
TUPLE_WIDTH = 32


class DagHappensBefore:
    """Happens-before (reachability) in a DAG whose nodes are numbered in a topological order.

    The same construction as :class:`HappensBefore`: one clock component per *in-order chain*
    and ``clock[c] = p`` meaning "the first ``p`` nodes of chain ``c`` happened before".  There
    the chains are given (a sequencer's or a queue's completions are totally ordered); here
    they are found greedily: a node extends the chain of one of its predecessors when that
    predecessor is the chain's tail, else it opens a new chain.  Every chain is then a path of
    the DAG, so its nodes are totally ordered, and the clock of a node, the join of its
    predecessors' clocks with its own position counted, is exact by Fidge/Mattern:
    ``a`` reaches ``b`` iff ``ordered(clock(b), chain[a], pos[a])``.

    Clocks are tuples of :data:`TUPLE_WIDTH` or fewer components (joined by :func:`joiner`),
    else :class:`SparseClock` dicts; either way :func:`ordered` answers.  :meth:`clocks` yields
    them in node order and forgets each one after its last successor has joined it, so memory
    follows the graph's frontier, not its size.

    Parameters
    ----------
    preds:
        Per node, the nodes it has an edge from (each smaller than the node itself).

    Examples
    --------
    >>> hb = DagHappensBefore([(), (0,), (0,), (1, 2), ()])     # a diamond and a loner
    >>> hb.width, hb.chain, hb.pos
    (3, [0, 0, 1, 0, 2], [1, 2, 1, 3, 1])
    >>> clocks = list(hb.clocks())
    >>> hb.ordered(0, clocks[3]), hb.ordered(1, clocks[2]), hb.ordered(4, clocks[3])
    (True, False, False)

    References
    ----------
    C. J. Fidge, "Timestamps in message-passing systems that preserve the partial ordering", 1988.
    """

    __slots__ = ("preds", "chain", "pos", "width")

    def __init__(self, preds: Sequence[Sequence[int]]) -> None:
        chain: list[int] = []
        pos: list[int] = []
        tail: list[int] = []  # per chain: its last node
        for node, ps in enumerate(preds):
            own = -1
            for p in ps:
                if not 0 <= p < node:
                    raise ValueError(f"node {node} has an edge from {p}: not a topological numbering")
                if own < 0 and tail[chain[p]] == p:
                    own = chain[p]
            if own < 0:
                own = len(tail)
                tail.append(node)
                pos.append(1)
            else:
                pos.append(pos[tail[own]] + 1)
                tail[own] = node
            chain.append(own)
        self.preds, self.chain, self.pos, self.width = preds, chain, pos, len(tail)

    def ordered(self, a: int, clock: Clock) -> bool:
        """Does node ``a`` reach the node whose clock is ``clock`` (or is it that node)?"""
        return ordered(clock, self.chain[a], self.pos[a])

    def clocks(self) -> Iterable[Clock]:
        """Each node's clock, in node order (the node itself counted on its chain)."""
        preds, chain, pos = self.preds, self.chain, self.pos
        uses: dict[int, int] = {}
        for ps in preds:
            for p in ps:
                uses[p] = uses.get(p, 0) + 1
        sparse = self.width > TUPLE_WIDTH
        join = sparse_join if sparse else joiner(self.width)
        zero: Clock = SparseClock() if sparse else (0,) * self.width
        kept: dict[int, Clock] = {}
        for node, ps in enumerate(preds):
            clock = zero
            for p in ps:
                clock = join(clock, kept[p])
                left = uses[p] - 1
                if left:
                    uses[p] = left
                else:
                    del kept[p], uses[p]
            c = chain[node]
            if sparse:
                clock = SparseClock(clock)
                clock[c] = pos[node]
            else:
                clock = [*clock]
                clock[c] = pos[node]
                clock = tuple(clock)
            if node in uses:
                kept[node] = clock
            yield clock
