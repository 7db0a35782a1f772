"""The forward walk of the dependence analysis (``docs/task-rules.md`` section 3 items 3, 4, 9-11).

One :class:`Walker` visits the function in source order, keeping a stack of analysed regions
(:class:`~neuronsim.passes.tasks.records.Frame`) with their prior accesses.  For every task call in an
active region it summarises the call's accesses, compares each with every prior access of
every enclosing region (innermost first), and turns each hazard into a user-covered pair, a
compiler edge or a fallback of the region (:mod:`neuronsim.passes.tasks.hazards`); then it records the
call's accesses as priors.  Loops are visited once by the seed (``faithful``); the default
walks the body of a sequential loop a second time with the first walk's accesses standing for
the previous iteration, so a late access of iteration i meets an early access of i+1 (the
loop back-edge the seed never compares).  At a loop's exit :mod:`neuronsim.passes.tasks.loops` re-binds
its accesses.  Results accumulate in an :class:`~neuronsim.passes.tasks.records.Analysis`.
"""

from __future__ import annotations

from dataclasses import replace

from neuronsim.machine.ir.errors import ProgramError
from neuronsim.machine.tasks.ir import ArgDirection, Call, CompilerDep, For, If, RuntimeScope, Stmt, TaskProgram, While
from neuronsim.machine.tasks.task_validate import TASK, Symbols
from neuronsim.passes.tasks.hazards import Verdict, classify_seed, classify_sound
from neuronsim.passes.tasks.lineage import Lineage, Status
from neuronsim.passes.tasks.loops import carry_remap, rebind_fixed_trip, rename_single_trip, summarise_parallel
from neuronsim.passes.tasks.records import (Access, Analysis, CallResult, Fallback, Frame, LoopCtx, Note, Record,
                                            RegionResult)
from neuronsim.passes.tasks.regions import (UNKNOWN, AccessKind, access_kind, demotable_region, hazards,
                                            regions_may_overlap)
from neuronsim.passes.tasks.taskids import TaskIds, UserDeps

__all__ = ["Walker"]


#: Sequential loops, each walked twice, one inside another: a deeper nest is refused (walks double
#: with each; 12 took 1.6 s, 16 took 35 s on a one-call body).
TWICE_NEST_LIMIT = 12
#: Earlier accesses the analysis compares a call's with, in all (loop bodies counted each time
#: they are walked), before the program is refused: about 15 s of work (a tree of sequential
#: loops six deep, each holding two, compares 258,048 in 4.6 s; seven deep, about two million).
WALK_BUDGET = 1_000_000


def _single_trip(loop: For) -> bool:
    return loop.static_trip_count == 1


def _positive_trips(loop: For) -> int | None:
    """Static trip count for constant bounds and a positive step, else None (a dynamic loop)."""
    if not all(isinstance(v, int) for v in (loop.start, loop.stop, loop.step)) or loop.step <= 0:  # type: ignore[operator]
        return None
    return loop.static_trip_count


class Walker:
    def __init__(self, program: TaskProgram, symbols: Symbols, lineage: Lineage, taskids: TaskIds, *,
                 faithful: bool) -> None:
        self.program, self.kinds, self.lineage, self.taskids = program, symbols.kinds, lineage, taskids
        self.faithful = faithful
        self.analysis = Analysis(faithful=faithful, analyzed=True)
        self.frames: list[Frame] = []
        self.loops: list[LoopCtx] = []
        self.guards: list[tuple[int | None, bool]] = []
        self.labels: dict[int, str] = {}
        self.walk_number = 1
        self.visits = 0  # earlier accesses compared with a call's, loop bodies each time walked (WALK_BUDGET)
        self.where = "function"  # the body being walked (where a refusal is said)
        self._next_loop = 1
        self._user: dict[str, UserDeps] = {}
        self._aliases: dict[str, tuple[str, ...]] = {}

    # -- regions -------------------------------------------------------------------------------
    def region(self, body: tuple[Stmt, ...], path: str, kind: str, name: str = "") -> None:
        frame = Frame(kind, path, active=kind != "container")
        self.frames.append(frame)
        self.walk(body, path if kind != "virtual" else "function.body", nested=kind == "scope")
        self.frames.pop()
        result = self.analysis.regions.setdefault(path, RegionResult(path, kind, name))
        result.fallback = result.fallback or frame.fallback
        result.task_calls += frame.task_calls
        result.unsupported = result.unsupported or frame.unsupported
        result.calls.update(frame.calls)
        if kind == "virtual":
            self.analysis.layer_candidate = result.fallback is None and not result.unsupported and result.task_calls > 0
        if frame.fallback is not None and kind == "scope" and not self.faithful:
            for outer in self.frames:
                if outer.kind == "virtual" and outer.fallback is None:
                    outer.fallback = Fallback("nested-fallback", frame.fallback.call, frame.fallback.arg,
                                              detail=f"scope {name or path}: {frame.fallback.reason}")
        if self.frames:
            if frame.fallback is None:
                for r in frame.records:
                    self.frames[-1].add(r)
            elif not self.faithful:  # the seed exports nothing; its accesses still happen, ordered by the runtime
                for r in frame.records:
                    self.frames[-1].add(r._replace(tracked=True))
            self.frames[-1].calls.update(frame.calls)

    def walk(self, body: tuple[Stmt, ...], path: str, nested: bool = False) -> None:
        outer, self.where = self.where, path
        for i, stmt in enumerate(body):
            self.stmt(stmt, f"{path}.body[{i}]" if nested else f"{path}[{i}]")
        self.where = outer

    def _visit(self, path_of_call: str) -> None:
        """One earlier access compared with a call's: past :data:`WALK_BUDGET` of them the program
        is refused where the walk is (a tree of sequential loops, each holding two, compares its
        calls with 2**depth walks' records: a probe's eight levels ran for minutes, the nest
        limit never reached)."""
        self.visits += 1
        if self.visits > WALK_BUDGET:
            raise ProgramError(self.where, f"the dependence analysis compares more than {WALK_BUDGET:,} pairs of "
                                           f"accesses (at call {path_of_call!r}): it walks each sequential loop's "
                                           "body twice (as iterations i and i + 1), so many nested sequential loops "
                                           "double its work with each level; flatten them (or mark loops parallel)")

    def stmt(self, s: Stmt, path: str) -> None:
        if isinstance(s, Call):
            self.call(s)
        elif isinstance(s, RuntimeScope):
            if self.frames:
                self.frames[-1].unsupported = True
            if not s.manual:
                self.region(s.body, path, "scope", s.name)
            elif self.frames and not self.faithful:
                self._record_creators(s.body)
        elif isinstance(s, If):
            self.guards.append((None, True))
            self.walk(s.then_body, f"{path}.then")
            if s.else_body is not None:
                self.walk(s.else_body, f"{path}.else")
            self.guards.pop()
        elif isinstance(s, (For, While)):
            self.loop(s, path)

    # -- loops ---------------------------------------------------------------------------------
    def loop(self, s: For | While, path: str) -> None:
        body_path = f"{path}.body"
        if not self.frames:
            self.walk(s.body, body_path)
            return
        if isinstance(s, For) and _single_trip(s):
            self.walk(s.body, body_path)
            remap = carry_remap(s, self._is_task, self.taskids.canonical_of, iter_args=self.faithful)
            if s.yields and remap:
                rename_single_trip(self.frames[-1].records, remap)
            return
        trips = _positive_trips(s) if isinstance(s, For) else None
        dynamic = trips is None
        parallel = isinstance(s, For) and s.parallel
        twice = not self.faithful and not parallel and (dynamic or (trips or 0) >= 2)
        if twice and sum(loop.twice for loop in self.loops) >= TWICE_NEST_LIMIT:
            # each such loop walks its body twice, so a nest of them 2**depth times: a probe's
            # twenty loops of two trips each ran for minutes with no word
            raise ProgramError(path, f"a nest of more than {TWICE_NEST_LIMIT} sequential loops of two or more "
                                     "iterations: the dependence analysis walks each such loop's body twice (as "
                                     f"iterations i and i + 1), {2 ** (TWICE_NEST_LIMIT + 1):,} walks of the "
                                     "innermost body and doubling with each loop more; flatten the nest (or mark "
                                     "loops parallel)")
        ctx = LoopCtx(self._next_loop, s.name, len(self.loops) + 1, dynamic, parallel, dynamic or trips == 0, twice)
        self._next_loop += 1
        self.labels[ctx.id] = s.name
        frame = self.frames[-1]
        start = len(frame.records)
        self.loops.append(ctx)
        self.guards.append((ctx.id, ctx.may_skip))
        self.walk(s.body, body_path)
        if twice:
            self.second_walk(s, ctx, frame, start, body_path)
        self.guards.pop()
        self.loops.pop()
        if trips:
            if s.yields:
                remap = carry_remap(s, self._is_task, self.taskids.canonical_of, iter_args=True)
                if remap:
                    rebind_fixed_trip(frame.records, s, ctx, remap, self.lineage, faithful=self.faithful)  # type: ignore[arg-type]
        elif dynamic and parallel and ctx.depth == 1:
            summarise_parallel(frame.records, s, ctx, self.lineage, faithful=self.faithful)  # type: ignore[arg-type]

    def second_walk(self, s: For | While, ctx: LoopCtx, frame: Frame, start: int, body_path: str) -> None:
        """Walk the body again as iteration i+1 with the first walk's accesses as iteration i."""
        first = frame.records[start:]
        frame.records[start:] = [r._replace(prev_of=ctx.id) for r in first]  # same roots: the index stays valid
        self.walk_number += 1
        self.walk(s.body, body_path)
        self.walk_number -= 1
        frame.truncate(start + len(first))
        frame.records[start:] = first

    def _alias_roots(self, root: str) -> tuple[str, ...]:
        """Roots whose accesses may share bytes with ``root``'s: itself, roots placed in the same
        allocation, and the wildcard of calls with an unknown footprint."""
        found = self._aliases.get(root)
        if found is None:
            mine = self.lineage.memrefs.get(root)
            others = [r for r, m in self.lineage.memrefs.items()
                      if mine is not None and m.base == mine.base and r != root]
            found = self._aliases[root] = (root, *others, "*")
        return found

    def _is_task(self, var: str) -> bool:
        return self.kinds.get(var) == TASK

    def _skips_after(self, loop_id: int) -> bool:
        seen = False
        for entry, may_skip in self.guards:
            if seen and may_skip:
                return True
            seen = seen or entry == loop_id
        return False

    # -- calls ---------------------------------------------------------------------------------
    def summarize(self, c: Call, user: UserDeps) -> list[Access] | Fallback:
        """PyPTO ``SummarizeAccesses``: one access per tensor argument and storage alternative."""
        out: list[Access] = []
        if c.directions is None or len(c.directions) != len(c.args):
            return out
        for i, (arg, d) in enumerate(zip(c.args, c.directions)):
            kind = access_kind(d)
            if kind is None:
                if d == ArgDirection.NO_DEP and not self.faithful:  # the creator edge still orders it
                    status, location = self.lineage.resolve(arg)
                    if status == Status.KNOWN:
                        out.extend(Access(alt.root, alt.region, AccessKind.READ, i, True) for alt in location)
                    else:
                        out.append(Access("*", UNKNOWN, AccessKind.READ, i, True))
                continue
            status, location = self.lineage.resolve(arg)
            if status != Status.KNOWN:
                produced_by = self.taskids.canonical.get(arg) if isinstance(arg, str) else None
                if kind == AccessKind.READ and produced_by is not None and produced_by in user.canonical:
                    continue
                reason = "unsupported-location" if status == Status.UNSUPPORTED else "unresolved-location"
                return Fallback(reason, c.name, i, detail=f"'{arg}' is {status.value}")
            out.extend(Access(alt.root, alt.region, kind, i) for alt in location)
        return out

    def producer_task(self, c: Call, access: Access) -> str | None:
        """PyPTO ``ProducerTaskIdForAccess``: the written argument an unassigned call is known by."""
        if access.kind == AccessKind.READ or c.directions is None:
            return None
        for arg, d in zip(c.args, c.directions):
            if d not in (ArgDirection.OUTPUT_EXISTING, ArgDirection.INOUT) or not isinstance(arg, str):
                continue
            status, location = self.lineage.resolve(arg)
            if status != Status.KNOWN:
                continue
            for alt in location:
                if self.lineage.may_alias(access.root, alt.root) and regions_may_overlap(access.region, alt.region):
                    return arg
        return None

    def verdict(self, c: Call, access: Access, prior: Record, user: UserDeps, active: list[int]) -> Verdict:
        """``active``: the ids of the loops around the call (dynamic ones only for the seed)."""
        if self.faithful:
            return classify_seed(access, prior, user, c.name, canonical_of=self.taskids.canonical_of,
                                 active_dynamic=active, loop_label=self.labels)
        return classify_sound(access, prior, user, c.name, active_loops=active, skips_after=self._skips_after,
                              loop_label=self.labels)

    def call(self, c: Call) -> None:
        if not self.frames:
            return
        frame = self.frames[-1]
        if not frame.active:  # outside any scope of an auto_scope=false function: not analysed
            if not self.faithful:  # but the runtime tracks it, and later scopes' calls must keep looking it up
                self._record_tracked(c)
            return
        frame.task_calls += 1
        if c.directions is None or len(c.directions) != len(c.args):
            frame.unsupported = True
        keys = tuple(f.key for f in self.frames if f.active)
        result = self.analysis.calls.setdefault(c.name, CallResult(c.name, keys))
        frame.calls[c.name] = None
        user = self._user.get(c.name) or self._user.setdefault(c.name, self.taskids.user_deps(c))
        accesses = self.summarize(c, user)
        if isinstance(accesses, Fallback):
            self._fall_back(frame, result, accesses)
            if not self.faithful:
                self._record_tracked(c)
            return
        if not accesses:
            return
        directions = c.directions or ()
        active = [ctx.id for ctx in self.loops if ctx.dynamic or not self.faithful]
        edges: list = []
        states: dict[tuple[str, int], list[bool]] = {}
        for access in accesses:
            demotable = demotable_region(access.region)
            can = {"no_dep": (access.kind == AccessKind.READ and directions[access.arg] == ArgDirection.INPUT
                              and demotable),
                   "output_existing": access.kind == AccessKind.READ_WRITE
                   and directions[access.arg] == ArgDirection.INOUT and demotable}
            roots = self._alias_roots(access.root)
            for f in reversed(self.frames):
                # a read conflicts with writes only (``hazards``), a box only with what it may overlap
                priors = (f.records if access.root == "*"
                          else f.of_roots(roots, writes_only=access.kind == AccessKind.READ, region=access.region))
                for prior in priors:
                    self._visit(path_of_call=c.name)
                    if access.creator_only and not prior.output:
                        continue
                    if prior.root != "*" and access.root != "*" and not self.lineage.may_alias(access.root, prior.root):
                        continue
                    if not regions_may_overlap(access.region, prior.region):
                        continue
                    kinds = hazards(access.kind, prior.kind)
                    if not kinds:
                        continue
                    v = self.verdict(c, access, prior, user, active)
                    for which, allowed in can.items():
                        if allowed:
                            state = states.setdefault((which, access.arg), [False, False])
                            state[1] = state[1] or v.block
                            state[0] = state[0] or v.outcome in ("user", "edge")
                    result.note(Note(self.walk_number, access.arg, prior.call, prior.arg, tuple(sorted(kinds)),
                                     v.outcome, v.dep.on if v.dep else None, prior.prev_of is not None))
                    if v.outcome == "fallback":  # the call gets no edges and is not recorded
                        self._fall_back(frame, result, v.fallback)  # type: ignore[arg-type]
                        if not self.faithful:
                            self.record(c, accesses, tracked=True)
                        return
                    if v.outcome == "runtime":
                        result.runtime = True
                    if v.dep is not None:
                        edges.append(self._carried(v.dep, prior))
        around = tuple(ctx.label for ctx in self.loops)
        for dep in edges:
            result.add_edge(dep, around)
        for (which, arg), (covered, blocked) in states.items():
            merged = (result.no_dep if which == "no_dep" else result.output_existing).setdefault(arg, [False, False])
            merged[0], merged[1] = merged[0] or covered, merged[1] or blocked
        self.record(c, accesses)

    def _carried(self, dep: CompilerDep, prior: Record) -> CompilerDep:
        """An edge to a prior standing for the previous iteration of a loop (the back-edge walk)
        orders iterations of one execution of that loop: loop-carried, so that the first
        iteration of the next execution (the next iteration of a ``parallel`` loop around it)
        does not wait for the last instance of this one.  Conflicts between executions are
        ordered by the back-edge walk of a sequential loop around both, or excluded by the
        ``pl.parallel`` contract."""
        if prior.prev_of is None or dep.loop is not None:
            return dep
        return replace(dep, carried=self.labels[prior.prev_of])

    def _record_creators(self, body: tuple[Stmt, ...]) -> None:
        """A user MANUAL scope is not analysed (the seed skips it), but a call in it that gets
        an ``output`` buffer from the runtime becomes that tensor's creator, and a later user of
        the tensor in an AUTO scope waits for it (simpler's creator edge): an order only the
        runtime gives.  Its ``output`` writes are recorded as runtime-tracked, so a consumer
        keeps its AUTO scope (the seed converts it to MANUAL and loses the creator edge)."""
        for s in body:
            if isinstance(s, Call):
                self._record_tracked(s, only=ArgDirection.OUTPUT)
            elif isinstance(s, (For, While, RuntimeScope)):
                self._record_creators(s.body)
            elif isinstance(s, If):
                self._record_creators(s.then_body + (s.else_body or ()))

    def _record_tracked(self, c: Call, only: ArgDirection | None = None) -> None:
        """Record a call the analysis does not order as runtime-tracked accesses (an unresolved
        argument may touch anything, as far as later calls can tell); ``only``: the arguments
        of that direction."""
        accesses: list[Access] = []
        for i, (arg, d) in enumerate(zip(c.args, c.directions or ())):
            kind = access_kind(d)
            if kind is None or (only is not None and d != only):
                continue
            status, location = self.lineage.resolve(arg)
            if status == Status.KNOWN:
                accesses.extend(Access(alt.root, alt.region, kind, i) for alt in location)
            else:
                accesses.append(Access("*", UNKNOWN, kind, i))
        self.record(c, accesses, tracked=True)

    def _fall_back(self, frame: Frame, result: CallResult, fallback: Fallback) -> None:
        frame.fallback = frame.fallback or fallback
        result.fallback = result.fallback or fallback

    def record(self, c: Call, accesses: list[Access], tracked: bool = False) -> None:
        task = self.taskids.task_id_of_call.get(c.name) or (c.outputs[0] if c.outputs else None)
        dynamic = [ctx for ctx in self.loops if ctx.dynamic]
        loops = tuple(ctx.id for ctx in self.loops)
        chained = (any(a.kind & AccessKind.WRITE for a in accesses)
                   and (not self.loops or any(x.twice for x in self.loops)))
        breaks = tuple(x.id for x in self.loops if x.parallel and (x.dynamic or not x.may_skip))  # zero trips: none
        directions = c.directions or ()
        for access in accesses:
            if access.creator_only:
                continue
            owner = task or self.producer_task(c, access)
            self.frames[-1].add(Record(
                access.root, access.region, access.kind, access.arg, c.name, owner,
                self._is_task(owner) if owner else False,
                bool(self.loops), dynamic[-1].depth if dynamic else 0, dynamic[-1].id if dynamic else 0,
                loops, loops, chained, tracked=tracked,
                output=access.arg < len(directions) and directions[access.arg] == ArgDirection.OUTPUT, breaks=breaks))
