"""Two-core kernels: the two NeuronCores of a logical NeuronCore (LNC=2) traced as one program.

A kernel launched on a grid of two (``kernel[2]``, ``nl.nc(2)``) runs one SPMD instance per
physical core; ``nisa.sendrecv`` swaps SBUF tiles between them and ``nisa.core_barrier`` makes
each wait for the other (the ISA reference: "a synchronization point where all specified
NeuronCores must reach before any can proceed").  neuronsim traces the two instances into one
program, so their meeting points must sit where the hardware puts them: every instruction either
core issues before a meeting comes, in program order, before every instruction either issues
after it.  The ordering passes then order the two cores' conflicting accesses exactly as the
meeting does.

Tracing runs the kernel's Python, which cannot be paused at a call; so in this mode each
instance runs in a thread of its own and :class:`Cores` hands a single baton between them (one
thread runs at a time, the trace stays deterministic): instance 0 runs until it reaches a
meeting (or ends), then instance 1, and when both wait at matching calls both go on, 0 first.
A ``sendrecv`` is two meetings: at the first each core posts its ``src``; each then emits the
copy of its partner's ``src`` into its own ``dst`` (a DMA at its own line), and the second
meeting keeps either core from overwriting its ``src`` before the other has copied it.

The trace starts in the plain one-instance-after-another mode and only switches (a retry of the
trace, :class:`NeedsCores`) when a meeting call is reached: kernels that never meet pay nothing.
A meeting inside a loop the tracer keeps as a program loop unrolls that loop (the meeting must
be an instant of the trace).  Each core has its own SBUF and PSUM: the program's machine holds
the two side by side (:func:`side_by_side`), and a tile the kernel places itself on core 1
lands in core 1's half (``machine/nki/alloc.py`` ``core_base``).  Both cores' instructions run
on one core's engines: outputs and ordering are the kernel's; its time is that of the two
cores' work done by one.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from neuronsim.machine.model.presets import resolve_machine
from neuronsim.machine.nki.errors import NkiError, NotAffine, SourceLine, fail, user_line
from neuronsim.machine.nki.frames import mark_entry

__all__ = ["Cores", "NeedsCores", "meet", "meet_ranks", "on_ranks", "CORES", "side_by_side"]

#: How many instances meet: the two physical cores of an LNC=2 logical core.
CORES = 2

#: What the trace says when a meeting call has no partner to meet (bench/corpus_cases_run.py
#: counts this wording as the expected answer of a one-core launch).
ONE_CORE = "neuronsim models one NeuronCore per SPMD instance"

#: The tracer's fields that belong to the instance running (saved when it stops at a meeting):
#: its loops too, each instance's own lists (a meeting inside a legacy loop left the other
#: core's loops open: its top-level shared_hbm tensor was "made inside a loop", its unrolled
#: affine iterations mixed with the other's into false carried findings).
_INSTANCE_FIELDS = ("program_id", "site_counts", "site", "site_frame", "mask", "emit_site", "call_options", "loops",
                    "unrolled_affine", "in_order")


class NeedsCores(Exception):  # noqa: N818  (a request to trace again, not an error)
    """Raised at the first meeting call of a one-instance-at-a-time trace: trace again with the
    instances as cores."""


class _Cancelled(BaseException):
    """Unwinds an instance's thread when the trace has failed elsewhere (a ``BaseException``, so a
    kernel's ``except Exception`` does not swallow it)."""


@dataclass(frozen=True, kw_only=True)
class Arrival:
    """One instance waiting at a meeting: the call, its kernel line, what it posts."""

    call: str
    line: SourceLine
    post: Any = None


class Cores:
    """The baton between the instances' threads (module doc).  ``body()`` traces one instance
    and returns its result; :meth:`run` returns every instance's result, in grid order."""

    def __init__(self, tracer: Any, pids: list[tuple[int, ...]], body: Callable[[], Any]) -> None:
        self.tracer, self.pids, self.body = tracer, pids, body
        self.lock = threading.Condition()
        self.turn: int | None = None  # the instance that may run; None: the conductor (run())
        self.saved: list[dict[str, Any]] = [  # each instance's state before it first runs
            {**dict.fromkeys(_INSTANCE_FIELDS), "program_id": pid, "site_counts": {}, "call_options": {},
             "loops": list(tracer.loops), "unrolled_affine": list(tracer.unrolled_affine),
             "in_order": list(tracer.in_order)}
            for pid in pids]
        self.arrived: dict[int, Arrival] = {}
        self.posts: dict[int, Any] = {}
        self.results: dict[int, Any] = {}
        self.ended: set[int] = set()
        self.error: BaseException | None = None
        self.cancelled = False
        self.epoch = 0
        """Meetings both cores have passed: instructions of one epoch on the two cores are unordered."""
        self.threads: list[threading.Thread] = []

    # -- the conductor -----------------------------------------------------------------------
    def run(self) -> list[Any]:
        interrupted = False
        member = "rank" if self.tracer.ranks > 1 else "core"
        try:
            ready = list(range(len(self.pids)))
            while ready:
                for rank in ready:
                    self._give(rank)
                waiting = sorted(self.arrived)
                if waiting and self.ended:
                    stuck = self.arrived[waiting[0]]
                    raise NkiError(stuck.line, f"{stuck.call}: {member} {waiting[0]} waits here for {member} "
                                               f"{min(self.ended)}, which ended without meeting it")
                calls = {self.arrived[r].call for r in waiting}
                if len(calls) > 1:
                    first, other = self.arrived[waiting[0]], self.arrived[waiting[-1]]
                    raise NkiError(other.line, f"{other.call} meets {first.call} of {member} {waiting[0]} "
                                               f"({first.line.file}:{first.line.line}): the {member}s disagree")
                self.posts = {r: self.arrived[r].post for r in waiting}
                self.arrived = {}
                self.epoch += 1
                ready = waiting
            return [self.results[r] for r in range(len(self.pids))]
        except KeyboardInterrupt:  # SIGINT / SIGTERM (verify/cli/signals.py): leave at once
            interrupted = True
            raise
        finally:
            self._stop(join=not interrupted)

    def _give(self, rank: int) -> None:
        """Let instance ``rank`` run until it meets or ends; raise what it raised."""
        for name, value in self.saved[rank].items():
            setattr(self.tracer, name, value)
        with self.lock:
            self.turn = rank
            if rank == len(self.threads):
                thread = threading.Thread(target=self._instance, args=(rank,), name=f"nki-core-{rank}", daemon=True)
                self.threads.append(thread)
                thread.start()
            self.lock.notify_all()
            self.lock.wait_for(lambda: self.turn is None)
        self.saved[rank] = {name: getattr(self.tracer, name) for name in _INSTANCE_FIELDS}
        if self.error is not None:
            raise self.error

    def _stop(self, join: bool = True) -> None:
        """Wake every waiting instance to unwind; wait for them unless a signal is ending the
        process (the instance running may be in the middle of its trace: a daemon thread, it
        ends with the process)."""
        with self.lock:
            self.cancelled = True
            self.lock.notify_all()
        for thread in self.threads if join else ():
            thread.join()

    # -- an instance -------------------------------------------------------------------------
    def _instance(self, rank: int) -> None:
        with self.lock:
            self.lock.wait_for(lambda: self.turn == rank or self.cancelled)
        try:
            if not self.cancelled:
                self.results[rank] = self.body()
        except _Cancelled:
            pass
        except BaseException as err:  # noqa: BLE001  (handed to the conductor, raised there)
            self.error = err
        finally:
            with self.lock:
                self.ended.add(rank)
                self.turn = None
                self.lock.notify_all()

    def meet(self, call: str, post: Any = None) -> dict[int, Any]:
        """Wait (in an instance's thread) until every instance has reached a meeting; the posts
        of all, by rank."""
        rank = self.turn
        assert rank is not None, "a meeting outside an instance's turn"
        with self.lock:
            line = self.tracer.site[0] if self.tracer.site is not None else user_line()
            self.arrived[rank] = Arrival(call=call, line=line, post=post)
            self.turn = None
            self.lock.notify_all()
            self.lock.wait_for(lambda: self.turn == rank or self.cancelled)
            if self.cancelled:
                raise _Cancelled
        return self.posts

    def rank(self) -> int:
        assert self.turn is not None
        return self.turn


mark_entry(Cores._instance.__code__)  # a kernel's loop indices are read from frames up to here


def meet(tracer: Any, call: str, post: Any = None) -> tuple[int, dict[int, Any]]:
    """Reach a meeting ``call`` of the running instance: ``(its rank, every instance's post)``.

    In the one-instance-at-a-time trace this asks for the two-core trace (:class:`NeedsCores`);
    a grid of other than two instances has no partner core (refused, one line); inside a kept
    loop it unrolls the loop first."""
    if tracer.ranks > 1:
        raise fail(f"{call} is not supported (a two-core meeting in a launch on ranks: launch a two-core "
                   f"kernel on a grid of {CORES}; {ONE_CORE})")
    size = math.prod(tracer.grid)
    if size != CORES:
        raise fail(f"{call} is not supported (two-core kernels meet on a grid of {CORES} SPMD instances, "
                   f"LNC=2; this launch has {size}: {ONE_CORE})")
    if tracer.cores is None:
        raise NeedsCores(call)
    return _met(tracer, call, post)


def on_ranks(tracer: Any, call: str) -> None:
    """Refuse ``call`` (one line, at the kernel's line) outside a launch on ranks."""
    if tracer.ranks <= 1:
        raise fail(f"{call} is not supported (collectives across ranks: launch the kernel on ranks, "
                   f"trace(..., ranks=N); {ONE_CORE})")


def meet_ranks(tracer: Any, call: str, post: Any = None) -> tuple[int, dict[int, Any]]:
    """Reach a collective ``call`` of the running rank (:mod:`~neuronsim.machine.nki.ranks`):
    ``(its rank, every rank's post)``; refused (one line) outside a launch on ranks."""
    on_ranks(tracer, call)
    return _met(tracer, call, post)


def _met(tracer: Any, call: str, post: Any) -> tuple[int, dict[int, Any]]:
    kept = tuple(name for _var, name in tracer.loops if isinstance(name, str))
    if kept:
        raise NotAffine(kept, f"{call} inside a loop")
    tracer.flush()
    site, frame = tracer.site, tracer.site_frame
    posts = tracer.cores.meet(call, post)
    tracer.site, tracer.site_frame = site, frame
    return tracer.cores.rank(), posts


def side_by_side(machine: Any, members: int = CORES) -> dict[str, Any]:
    """``machine`` (a preset name or an override object) with ``members`` times its SBUF bytes
    per partition and PSUM banks: the memories of the two cores (or of the ranks) side by side,
    member ``r``'s after member ``r - 1``'s.

    >>> side_by_side("trn2")
    {'base': 'trn2', 'sbuf_partition_bytes': 458752, 'psum_banks': 16}
    """
    spec = resolve_machine(machine)
    base = dict(machine) if isinstance(machine, dict) else {"base": machine or "trn1"}
    return {**base, "sbuf_partition_bytes": members * spec.sbuf_partition_bytes,
            "psum_banks": members * spec.psum_banks}
