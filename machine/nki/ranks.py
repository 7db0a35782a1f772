"""``nki.collectives`` across ranks: a kernel launched on ``ranks=N`` devices, traced as one program.

A collective kernel runs once per rank (one device each, each with its own HBM), and the ranks
exchange data only through the collective calls.  neuronsim traces the N ranks as it traces the
two cores of an LNC=2 kernel (:mod:`~neuronsim.machine.nki.cores`): one thread per rank, one
baton, a meeting at every collective call, so everything each rank issues before the call comes
first in program order.  Every HBM tensor the kernel makes is its rank's own, and so is every
input (rank ``r``'s copy of parameter ``x`` is the tensor ``x_rank{r}``, holding the same values,
or those of an array ``x_rank{r}`` given beside ``x``: a kernel that writes its input writes its
own copy).  A collective is two meetings, as a
``sendrecv`` is: at the first each rank posts its sources; each then copies what it receives into
its own destinations by DMA (a reduction is a DMA read-modify-write, ``dma_accumulate`` with
the op's ``add`` / ``max`` / ``min``, the rank order of the group fixed, so every rank reduces in
one order); the second keeps a rank from overwriting a source before
every other rank has read it.

What each call computes (the ``nki.collectives`` API reference; ``collective_dim`` splits the
tensors into one chunk per rank of the group, in group order):

* ``all_reduce(dsts, srcs, op, replica_group)``: every rank's ``dst`` is the group's ``src``
  reduced by ``op`` (``nl.add``, ``nl.maximum`` or ``nl.minimum``, the reference's three);
* ``all_gather(dsts, srcs, replica_group, collective_dim)``: chunk ``j`` of ``dst`` is member
  ``j``'s ``src``;
* ``reduce_scatter(dsts, srcs, op, replica_group, collective_dim)``: ``dst`` is the members'
  chunk ``i`` of ``src`` reduced by ``op``, ``i`` the rank's place in its group;
* ``all_to_all(dsts, srcs, replica_group, collective_dim)``: chunk ``j`` of ``dst`` is member
  ``j``'s chunk ``i``;
* ``rank_id()``: the rank, a number (usable as a ``scalar_offset``).

The rest of the module (the permutes, the v-variants, NKI 0.7's prepare / trigger splits) stays
refused when used.  Timing: every rank's instructions run on one core's engines, as the two cores
of an LNC=2 kernel do.
"""

from __future__ import annotations

from typing import Any

from neuronsim.machine.nki import emitters as em
from neuronsim.machine.nki import ops
from neuronsim.machine.nki.arith import alu_name
from neuronsim.machine.nki.cores import meet_ranks, on_ranks
from neuronsim.machine.nki.errors import fail
from neuronsim.machine.nki.handles import emit_call, written
from neuronsim.machine.nki.tiles import NkiTensor
from neuronsim.machine.nki.tracer import api, current

__all__ = ["ReplicaGroup", "collective_names"]


class ReplicaGroup:
    """``nki.collectives.ReplicaGroup([[0, 1], ...])``: the groups of ranks that reduce or
    gather together."""

    def __init__(self, groups: Any) -> None:
        self.groups = [[int(r) for r in group] for group in groups]

    def __repr__(self) -> str:
        return f"ReplicaGroup({self.groups})"


def _groups(replica_group: Any) -> Any:
    return replica_group.groups if isinstance(replica_group, ReplicaGroup) else replica_group


def _group(replica_group: Any, rank: int, call: str) -> list[int]:
    """The ranks of the group holding ``rank`` (a ``ReplicaGroup`` or a plain list of lists), each
    rank in one group only (the ReplicaGroup page: "Each rank in the replica-group must participate
    in only one rank-list"; [[0, 1], [1]] ran, a probe)."""
    groups = _groups(replica_group)
    seen: set[int] = set()
    for members in ([int(r) for r in group] for group in groups or ()):
        twice = seen.intersection(members) or {r for r in members if members.count(r) > 1}
        if twice:
            raise fail(f"{call}: replica_group={groups!r} names rank {min(twice)} twice; the ReplicaGroup page: "
                       "\"Each rank in the replica-group must participate in only one rank-list\"")
        seen.update(members)
    for group in groups or ():
        members = [int(r) for r in group]
        if rank in members:
            return members
    raise fail(f"{call}: rank {rank} is in no group of replica_group={groups!r}")


def _pairs(dsts: Any, srcs: Any, call: str) -> list[tuple[Any, Any]]:
    dsts, srcs = ([x] if isinstance(x, NkiTensor) else list(x) for x in (dsts, srcs))
    if len(dsts) != len(srcs):
        raise fail(f"{call}: {len(dsts)} dsts for {len(srcs)} srcs")
    return list(zip(dsts, srcs))


def _chunk(tensor: Any, dim: int, index: int, count: int, call: str) -> NkiTensor:
    """Chunk ``index`` of ``count`` of ``tensor`` along ``dim``."""
    shape = tensor.shape
    if not 0 <= dim < len(shape) or shape[dim] % count:
        raise fail(f"{call}: collective_dim={dim} of shape {tuple(shape)} does not split into {count} chunks")
    size = shape[dim] // count
    key = tuple(slice(index * size, (index + 1) * size) if d == dim else slice(None) for d in range(len(shape)))
    return tensor[key]


def _copy(dst: Any, src: Any, add: bool, op: str = "add") -> None:
    """``dst = src``, or with ``add`` ``dst = dst <op> src`` (the collective's reduction)."""
    if add and op != "add":  # nisa.dma_copy itself adds only; a collective's DMAs reduce by max / min too
        emit_call(lambda: ops.dma(written(dst), ops.lay(src), rmw=op))
        return
    emit_call(lambda: em.dma_copy(written(dst), src, dst_rmw_op="add" if add else None))


#: Per collective, the ``collective_dim`` values its reference page allows on HBM and on SBUF
#: (SBUF absent: the call takes HBM tensors only).
_DIMS = {"all_reduce": {"hbm": None, "sbuf": None}, "all_gather": {"hbm": (0,), "sbuf": (0, 1)},
         "reduce_scatter": {"hbm": (0,), "sbuf": (0,)}, "all_to_all": {"hbm": (0,)}}


def _placed_as_the_page_says(call: str, pairs: list[tuple[Any, Any]], collective_dim: Any = None) -> None:
    """The collectives pages' rules on where the tensors are: all on HBM or all on SBUF (not a
    mix, not PSUM), several pairs (coalesced) on HBM only, ``all_to_all`` on HBM only; and the
    ``collective_dim`` each allows there."""
    spaces = {kind for pair in pairs for t in pair if (kind := getattr(getattr(t, "buffer", None), "kind", None))}
    allowed = _DIMS[call.rsplit(".", 1)[-1]]
    if len(spaces) > 1 or not spaces <= set(allowed):
        where = " and ".join(sorted(spaces))
        raise fail(f"{call}: tensors in {where}; its page takes them all on "
                   f"{' or all on '.join(s.upper() for s in allowed)}")
    if not spaces:  # (what is no tensor is refused where it is copied)
        return
    space = spaces.pop()
    if space == "sbuf" and len(pairs) > 1:
        raise fail(f"{call}: {len(pairs)} tensors at once (coalesced) on SBUF; its page allows that on HBM only")
    dims = allowed[space]
    if dims is not None and int(collective_dim) not in dims:
        raise fail(f"{call}: collective_dim={collective_dim} on {space.upper()}; its page allows "
                   f"{' or '.join(map(str, dims))} there")


def _collective(call: str, dsts: Any, srcs: Any, replica_group: Any, plan, collective_dim: Any = None,
                op: str | None = None) -> None:
    """Meet, post the sources, emit this rank's copies (``plan(rank, group, posts, dst, k)``),
    meet again."""
    tracer = current()
    on_ranks(tracer, call)  # refused before the arguments are looked at
    pairs = _pairs(dsts, srcs, call)
    _placed_as_the_page_says(call, pairs, collective_dim)
    # the ranks meet at one collective: the same call, op, groups and dimension (a rank reducing by
    # another op, or naming other groups, was seen only by the comparison with numpy: a probe)
    groups = _groups(replica_group)
    agreed = [f"op={op}" if op else "", f"replica_group={[[int(r) for r in g] for g in groups or ()]}",
              f"collective_dim={collective_dim}" if collective_dim is not None else ""]
    rank, posts = meet_ranks(tracer, f"{call}({', '.join(a for a in agreed if a)})", [src for _dst, src in pairs])
    group = _group(replica_group, rank, call)
    missing = [m for m in group if m not in posts]
    if missing:
        raise fail(f"{call}: replica_group names rank {missing[0]}, and the launch has {len(posts)} ranks")
    for k, (dst, _src) in enumerate(pairs):
        plan(rank, group, posts, dst, k)
    meet_ranks(tracer, call)  # no rank overwrites a source before every rank has read it


def _reduction(op: Any, call: str) -> str:
    """The reduction ``op`` names: ``nl.add``, ``nl.maximum`` or ``nl.minimum`` (the collectives'
    reference pages)."""
    name = alu_name(op) if op is not None else "add"
    if name not in ("add", "max", "min"):
        raise current().refuse(f"{call}(op={name})", "the collectives reduce by nl.add, nl.maximum or nl.minimum")
    return name


@api("nki.collectives.all_reduce")
def all_reduce(srcs, dsts, replica_group=None, op=None, **_kw) -> None:
    """The page's order: ``all_reduce(srcs, dsts, replica_group, op)`` (dsts came first: a probe)."""
    reduce = _reduction(op, "nki.collectives.all_reduce")

    def plan(rank, group, posts, dst, k):
        for j, member in enumerate(group):
            _copy(dst, posts[member][k], add=j > 0, op=reduce)

    _collective("nki.collectives.all_reduce", dsts, srcs, replica_group, plan, op=reduce)


@api("nki.collectives.all_gather")
def all_gather(srcs, dsts, replica_group=None, collective_dim=0, **_kw) -> None:
    call = "nki.collectives.all_gather"

    def plan(rank, group, posts, dst, k):
        for j, member in enumerate(group):
            _copy(_chunk(dst, int(collective_dim), j, len(group), call), posts[member][k], add=False)

    _collective(call, dsts, srcs, replica_group, plan, collective_dim)


@api("nki.collectives.reduce_scatter")
def reduce_scatter(srcs, dsts, replica_group=None, collective_dim=0, op=None, **_kw) -> None:
    call = "nki.collectives.reduce_scatter"
    reduce = _reduction(op, call)

    def plan(rank, group, posts, dst, k):
        mine = group.index(rank)
        for j, member in enumerate(group):
            _copy(dst, _chunk(posts[member][k], int(collective_dim), mine, len(group), call), add=j > 0, op=reduce)

    _collective(call, dsts, srcs, replica_group, plan, collective_dim, op=reduce)


@api("nki.collectives.all_to_all")
def all_to_all(srcs, dsts, replica_group=None, collective_dim=0, **_kw) -> None:
    call = "nki.collectives.all_to_all"

    def plan(rank, group, posts, dst, k):
        mine, count = group.index(rank), len(group)
        for j, member in enumerate(group):
            _copy(_chunk(dst, int(collective_dim), j, count, call),
                  _chunk(posts[member][k], int(collective_dim), mine, count, call), add=False)

    _collective(call, dsts, srcs, replica_group, plan, collective_dim)


def _ring(replica_group: Any, rank: int, call: str) -> tuple[list[int], int]:
    """The ring of ``rank`` (its group, in group order) and its place in it."""
    group = _group(replica_group, rank, call)
    return group, group.index(rank)


def _by_channel(tensors: Any, call: str) -> list[Any]:
    """One tensor per channel (each channel's list holds exactly one: the API reference)."""
    out = []
    for channel in tensors:
        items = [channel] if isinstance(channel, NkiTensor) else list(channel)
        if len(items) != 1:
            raise fail(f"{call}: each channel takes exactly one tensor, got {len(items)}")
        out.append(items[0])
    return out


def _permute(call: str, sources: list[list[Any]], dsts: list[Any], replica_group: Any, add: bool,
             op: str = "add") -> None:
    """Every rank receives its ring predecessor's sources into ``dsts`` (reduced by ``op`` when ``add``)."""
    tracer = current()
    rank, posts = meet_ranks(tracer, call, sources)
    group, place = _ring(replica_group, rank, call)
    before = group[(place - 1) % len(group)]
    for c, dst in enumerate(dsts):
        for j, srcs in enumerate(posts[before]):
            _copy(dst, srcs[c], add=j > 0, op=op)
    meet_ranks(tracer, call)


@api("nki.collectives.collective_permute_implicit")
def collective_permute_implicit(srcs_by_channel, dsts_by_channel, replica_group=None, channel_ids=(0,), **_kw):
    """Each rank sends its sources to its successor in the ring and receives its predecessor's."""
    call = "nki.collectives.collective_permute_implicit"
    _permute(call, [_by_channel(srcs_by_channel, call)], _by_channel(dsts_by_channel, call), replica_group, False)


@api("nki.collectives.collective_permute_implicit_reduce")
def collective_permute_implicit_reduce(srcs0_by_channel, srcs1_by_channel, dsts_by_channel, replica_group=None,
                                       op=None, channel_ids=(0,), **_kw):
    """The predecessor's ``op(srcs0, srcs1)`` into each rank's ``dsts``."""
    call = "nki.collectives.collective_permute_implicit_reduce"
    reduce = _reduction(op, call)
    _permute(call, [_by_channel(srcs0_by_channel, call), _by_channel(srcs1_by_channel, call)],
             _by_channel(dsts_by_channel, call), replica_group, True, reduce)


@api("nki.collectives.collective_permute_implicit_current_processing_rank_id")
def collective_permute_implicit_current_processing_rank_id(iteration_id, replica_group=None, channel_id=0, **_kw
                                                           ) -> int:
    """The rank whose data a rank holds at ring iteration ``iteration_id``: its own at 0, then its
    predecessors', one step back per iteration (the API reference)."""
    call = "nki.collectives.collective_permute_implicit_current_processing_rank_id"
    tracer = current()
    on_ranks(tracer, call)
    group, place = _ring(replica_group, tracer.cores.rank(), call)
    return group[(place - int(iteration_id)) % len(group)]


@api("nki.collectives.rank_id")
def rank_id() -> int:
    """The rank running (a number: what ``scalar_offset=`` takes)."""
    tracer = current()
    on_ranks(tracer, "nki.collectives.rank_id")
    return tracer.cores.rank()


def collective_names() -> dict[str, Any]:
    """The modelled names of ``nki.collectives``."""
    return {"ReplicaGroup": ReplicaGroup, "all_reduce": all_reduce, "all_gather": all_gather,
            "reduce_scatter": reduce_scatter, "all_to_all": all_to_all, "rank_id": rank_id,
            "collective_permute_implicit": collective_permute_implicit,
            "collective_permute_implicit_reduce": collective_permute_implicit_reduce,
            "collective_permute_implicit_current_processing_rank_id":
                collective_permute_implicit_current_processing_rank_id}
