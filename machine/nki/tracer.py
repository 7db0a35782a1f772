"""The tracer: runs a kernel's Python once per SPMD instance and records what it does.

Modelled on torch.fx's symbolic tracer: the kernel runs on proxies (:class:`~neuronsim.machine.nki.
tiles.NkiTensor`) and every NKI call records instructions through the scenario builder
(:class:`~neuronsim.machine.build.builder.KernelBuilder`), each carrying ``extras["x-source"]`` (kernel file,
line, the NKI call, the loop indices).

The tracer is the recording core: loops, sites, pending results, where tensors were declared;
no NKI operation, no allocation.  The layers above it pass in what it must run: a pending
result brings the function that declares its tile, a zeroing before a kept loop is emitted
(:func:`~neuronsim.machine.nki.ops.opens_accumulation`) by :meth:`Tracer.emit_at_declaration`.

A call that returns a new tile (``nl.exp(x)``, legacy ``nisa.nc_matmul(a, b)``) is *pending*
until the next call: assigned (``t[...] = nl.exp(x)``) it is emitted straight into the
destination; used otherwise it is emitted into a fresh virtual tile.  At most one call is
pending, so instructions keep program order.
"""

from __future__ import annotations

import inspect
import linecache
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from neuronsim.machine.nki import keywords, masked_access
from neuronsim.machine.nki.cores import side_by_side
from neuronsim.machine.nki.errors import (NkiError, SourceLine, TraceTooLarge, at_line,
                                          check_tensor_name, fail, unsupported, user_frame, user_line, user_site)
from neuronsim.machine.nki.frames import entry_locals, loop_indices, restore_locals
from neuronsim.machine.nki.groups import OpenGroups, footprint_of
from neuronsim.machine.nki.hbm import HbmTensors
from neuronsim.machine.nki.scopes import check_uses
from neuronsim.machine.nki.kernel_range import IN_ORDER_KEY, in_order, range_length
from neuronsim.machine.nki.indexing import NEVER, Mask, SymIndex, as_mask, concrete
from neuronsim.machine.nki.layout import Layout
from neuronsim.machine.nki.loop_state import BodyState, body_state, note_changes
from neuronsim.machine.nki.mask_boxes import box_targets
from neuronsim.machine.nki.unrun import Unrun
from neuronsim.machine.nki.liveness import TileLiveness
from neuronsim.machine.build.builder import KernelBuilder
from neuronsim.machine.ir.program import Tensor
from neuronsim.machine.ir.source import CORE_KEY, PROGRAM_KEY  # the core / grid program that issued it

__all__ = ["Tracer", "current", "tracing", "Pending", "api", "assigned_name", "as_mask", "NEVER", "CORE_KEY",
           "PROGRAM_KEY", "UNROLLED_AFFINE_KEY"]

#: On an instruction of a two-core kernel: the core that issued it and how many meetings both
#: cores had passed (machine/nki/cores.py).

#: On an instruction inside legacy ``affine_range`` loops the trace unrolled (a loop index used
#: other than affinely): ``[[occurrence, variable, iteration], ...]``, outermost first, one entry
#: per such loop; ``occurrence`` numbers each time a loop starts, so the iterations of one run of
#: the loop share it.  The ``carried`` check reads it (verify/nki/carried.py): an unrolled affine
#: loop promises independent iterations as a kept one does.
UNROLLED_AFFINE_KEY = "x-nki-unrolled-affine"

_STACK: list[Tracer] = []
_ASSIGN = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")
_FOR = re.compile(r"^\s*for\s+([A-Za-z_]\w*)\s+in\b")


def current() -> Tracer:
    """The active tracer (an NkiError outside a trace)."""
    if not _STACK:
        raise fail("an NKI call outside a traced kernel (run it with neuronsim.machine.nki.frontend)")
    return _STACK[-1]


def tracing() -> bool:
    """True while a kernel is being traced (a kernel calling another is a plain call then)."""
    return bool(_STACK)


def api(name: str) -> Callable[[Callable], Callable]:
    """Mark ``fn`` as the NKI call ``name``: instructions it emits carry that name and the
    kernel line of the outermost call."""

    def wrap(fn: Callable) -> Callable:
        signature = inspect.signature(fn)
        parameters = signature.parameters
        named = tuple(p for p, about in parameters.items() if about.kind not in (about.VAR_POSITIONAL,
                                                                               about.VAR_KEYWORD))
        takes_any = any(about.kind == about.VAR_KEYWORD for about in parameters.values())
        keywords.register(named)

        def call(*args: Any, **kwargs: Any) -> Any:
            tracer = current()
            if tracer.site is not None:
                return fn(*args, **kwargs)
            line, tracer.site_frame = user_site(2)
            tracer.site = (line, name)
            tracer.calls += 1
            if tracer.masked_accesses:  # a t[...][cond] was made: its mask goes to the call's mask=
                args, kwargs = masked_access.unwrap(name, signature, args, kwargs)
            tracer.call_options = kwargs
            if takes_any and kwargs:
                tracer.note_keywords(line, name, kwargs, named)
            if tracer.generation == "legacy":
                check_uses(line, (*args, *kwargs.values()), tracer.pending)
            try:
                return fn(*args, **kwargs)
            except NkiError as err:  # (a ValueError too: before the clause below)
                hint = keywords.dst_first_hint(name, signature, args, kwargs, _writes) if type(err) is NkiError else ""
                if hint:
                    raise NkiError(err.path, f"{err.message}{hint}") from None
                raise
            except (TypeError, AttributeError, ValueError) as err:  # fn never started, a misplaced argument
                unfit = type(err) is TypeError and err.__traceback__ is not None and err.__traceback__.tb_next is None
                hint = keywords.dst_first_hint(name, signature, args, kwargs, _writes) if unfit else ""
                misplaced = None if hint else keywords.misplaced_operator(signature, args, kwargs, err)
                if not unfit and misplaced is None:
                    raise
                raise NkiError(tracer.site[0], f"{name}: {misplaced or f'{err}{hint}'}") from None
            finally:
                tracer.site = tracer.site_frame = None
                tracer.call_options = {}

        call.__name__ = call.__qualname__ = fn.__name__
        call.__doc__ = fn.__doc__
        call.nki_name = name  # type: ignore[attr-defined]
        call.__wrapped__ = fn  # type: ignore[attr-defined]
        return call

    return wrap


def _writes(tensor: str) -> bool:  # whether the trace under way has written ``tensor``
    return bool(_STACK) and _STACK[-1].kb.writes_tensor(tensor)


_ASSIGNED: dict[tuple[str, int], str | None] = {}
_IDENTIFIER: dict[str, str] = {}  # a tile name's base -> as an identifier (a regex per tile costs)


def assigned_name(where: SourceLine) -> str | None:
    """``x`` for a kernel line ``x = ...`` (the tile's variable), else None."""
    key = (where.path, where.line)
    if key not in _ASSIGNED:
        match = _ASSIGN.match(linecache.getline(where.path, where.line)) if where.path else None
        _ASSIGNED[key] = match.group(1) if match else None
    return _ASSIGNED[key]


@dataclass
class Pending:
    """A call whose result is not emitted yet: ``emit(dst_layout)`` emits it; used before it
    is assigned, ``storage(site)`` declares the fresh tile it goes to."""

    proxy: Any
    emit: Callable[[Layout], None]
    storage: Callable[[tuple[SourceLine, str]], Layout]
    site: tuple[SourceLine, str]
    indices: dict[str, Any]
    mask: Mask | None = None
    sources: tuple[Any, ...] = ()
    options: dict[str, Any] = field(default_factory=dict)
    """The call's keyword arguments (an indirect ``nl.load``'s ``oob_mode``), in force when emitted."""


@dataclass
class Tracer:
    """State of one trace (one attempt: a NotAffine restarts with more loops unrolled)."""

    name: str
    machine: Any
    generation: str
    grid: tuple[int, ...] = ()
    unroll: frozenset[str] | None = frozenset()
    """Loop sites to unroll (``path:line``); None: every loop."""
    kb: KernelBuilder = field(init=False)
    site: tuple[SourceLine, str] | None = None
    site_frame: Any = None
    """The kernel frame of the NKI call being traced (where :meth:`indices` starts reading)."""
    pending: Pending | None = None
    allocated: bool = False
    """Whether the kernel placed a tile itself (direct allocation: ``mod_alloc``, ``alloc``, an
    address): the legacy errors page holds such an "allocated kernel" to rules of its own."""
    loops: list[tuple[str, Any]] = field(default_factory=list)
    loop_sites: dict[str, str] = field(default_factory=dict)
    unrolled_affine: list[list[Any]] = field(default_factory=list)
    """The legacy ``affine_range`` loops being unrolled around the call (:data:`UNROLLED_AFFINE_KEY`)."""
    unrolled_runs: int = 0
    """Runs of such loops started so far (each run's iterations share its number)."""
    in_order: list[list[int]] = field(default_factory=list)
    """The legacy sequential loops unrolled around the call, ``[run, kept, iteration]`` each
    (:data:`~neuronsim.machine.nki.kernel_range.IN_ORDER_KEY`); ``in_order_runs`` numbers their runs."""
    in_order_runs: int = 0
    program_id: tuple[int, ...] = ()
    written: set[str] = field(default_factory=set)
    reductions_seen: set[str] = field(default_factory=set)
    """Tiles an ``nl.loop_reduce`` has reduced into (language._start_from_identity asks once each)."""
    hbm: HbmTensors = field(default_factory=HbmTensors)
    site_counts: dict[tuple[str, int], int] = field(default_factory=dict)
    constants: dict[str, Any] = field(default_factory=dict)
    shared_tiles: dict[Any, Any] = field(default_factory=dict)
    """On-chip tiles the API shares within an SPMD instance (``nl.shared_identity_matrix``)."""
    returned_names: dict[str, str] = field(default_factory=dict)
    name_counts: dict[str, int] = field(default_factory=dict)
    flat_tiles: dict[str, tuple[SourceLine, str]] = field(default_factory=dict)
    """Legacy 1-D SBUF / PSUM tiles held as ``[P, 1]``: their declaration and the rule, said if used."""
    reserved: set[str] = field(default_factory=set)
    """Names of tiles that are no tensor themselves (a direct allocation's blocks are)."""
    psum_open: OpenGroups = field(default_factory=OpenGroups)
    decl_depth: dict[str, int] = field(default_factory=dict)
    mask: Mask | None = None
    """The mask of the instruction being emitted (operands are restricted by it)."""
    emit_site: SourceLine | None = None
    """The kernel line of the instruction being emitted (a held-back call's, not the flushing line)."""
    input_values: dict[str, Any] = field(default_factory=dict)
    """The kernel's input arrays by tensor name (device values are read from a run on them)."""
    program_extras: dict[str, Any] = field(default_factory=dict)
    """``extras`` of the traced program (control-flow decisions, :mod:`~neuronsim.machine.nki.scalars`)."""
    named_calls: dict[str, list[Any]] = field(default_factory=dict)
    """``nisa`` calls by their ``name=`` (handles, :mod:`~neuronsim.machine.nki.schedule`)."""
    order_edges: list[Any] = field(default_factory=list)
    """``NkiInstruction.depends_on`` edges, applied to the traced program."""
    ranks: int = 1
    """Devices the kernel is launched on (collectives across ranks, :mod:`~neuronsim.machine.nki.ranks`)."""
    as_cores: bool = False
    """Trace the grid's two instances as the two cores of an LNC=2 kernel (:mod:`~neuronsim.machine.nki.cores`)."""
    cores: Any = None  # the baton between the cores' threads while tracing in that mode
    call_options: dict[str, Any] = field(default_factory=dict)
    """The keyword arguments of the NKI call being emitted (an indirect DMA's ``oob_mode``)."""
    max_instructions: int | None = None
    """Refuse the trace (``TraceTooLarge``, at the line) past this many instructions and loops."""
    max_memory: int | None = None
    """Refuse it, likewise, once the process's peak memory grew by more bytes since it began."""
    memory_check_at: int = field(default=0, init=False)
    rss_at_start: int = field(default=0, init=False)
    call_warnings: dict[tuple[str, str, str], None] = field(default_factory=dict)
    """``(file:LINE, kind, message)`` of each call's warning (:meth:`warn`), once, in trace order."""
    masked_accesses: bool = field(default=False, init=False)
    """Whether a ``t[...][cond]`` was made: each call then hands its masks to its ``mask=``."""
    calls: int = field(default=0, init=False)
    """NKI calls started (the outermost ones): a trace's progress when it emits nothing
    (:mod:`~neuronsim.machine.nki.watch`)."""
    host_wrapper: Any = None
    """When the function traced has no ``@nki.jit`` and no grid of its own, the API rule of a kernel
    it calls (its generation decides from there); a launch before anything is emitted is the launch."""
    parameters: dict[int, Any] = field(default_factory=dict)
    """The traced function's array arguments, by the id of the tensor each became."""
    unrun: Unrun = field(default_factory=Unrun)
    """Compiled loops whose bodies ran no iteration, and those a check trace runs once."""
    liveness: TileLiveness = field(default_factory=TileLiveness)
    left_early: tuple[SourceLine, str, int, int] | None = None
    """An unrolled NKI loop the kernel left by ``return`` / ``break`` with iterations to go:
    its line, kind, the iteration and the trip count (:func:`~.loop_exit.check_loops_finished`)."""

    def __post_init__(self) -> None:
        self.rss_at_start = peak_rss() if self.max_memory is not None else 0
        # two cores: their SBUF and PSUM side by side in the program's machine (machine/nki/cores.py)
        members = self.ranks if self.ranks > 1 else 2 if self.as_cores else 1
        self.kb = KernelBuilder(self.name, side_by_side(self.machine, members) if members > 1 else self.machine)

    @contextmanager
    def active(self) -> Iterator[Tracer]:
        _STACK.append(self)
        try:
            yield self
        finally:
            _STACK.remove(self)

    def note_keywords(self, line: SourceLine, call: str, given: Mapping[str, Any], named: tuple[str, ...]) -> None:
        """Remember the warning of each keyword of ``given`` that is none of ``named`` (the call's
        parameters) and deserves one (:func:`~neuronsim.machine.nki.keywords.warning_for`)."""
        for keyword in (k for k in given if k not in named):
            text = keywords.warning_for(call, keyword, named, self.generation == "legacy")
            if text is not None:
                self.warn("keyword", text, line)

    def warn(self, kind: str, text: str, line: SourceLine | None = None) -> None:
        """Note a warning of ``kind`` (``keyword``, ``broadcast``, ``generation``, ``precision``) at ``line``, by
        default the call's (a held-back call's own line while it is emitted)."""
        self.call_warnings.setdefault((str(line or self.emit_site or self.where()[0]), kind, text))

    # -- locations ---------------------------------------------------------------------------
    def where(self) -> tuple[SourceLine, str]:
        return self.site if self.site is not None else (user_line(2), "python")

    def indices(self) -> dict[str, Any]:
        """The loop indices in force: every loop of the kernel's frames (Python ``range`` ones
        too, :mod:`~neuronsim.machine.nki.frames`), a kept loop's variable as the loop's name."""
        if not self.loops:
            return loop_indices(self.site_frame or sys._getframe(1))
        kept = {var: value for var, value in self.loops if isinstance(value, str)}
        found = loop_indices(self.site_frame or sys._getframe(1), kept)
        for var, value in self.loops:  # a range loop whose variable the frames do not show
            found.setdefault(var, value)
        return found

    def _extras(self, site: tuple[SourceLine, str], indices: dict[str, Any], more: dict | None) -> dict:
        line, call = site
        extras = {"x-source": {"file": line.file, "line": line.line, "call": call, "indices": indices}}
        for key, loops in ((UNROLLED_AFFINE_KEY, self.unrolled_affine), (IN_ORDER_KEY, self.in_order)):
            if loops:  # the unrolled legacy loops around the call, [run, ..., iteration] each
                extras[key] = [list(entry) for entry in loops]
        if self.cores is not None:  # which core issued it, between which meetings (verify/nki/core_races.py)
            extras[CORE_KEY] = {"rank": self.cores.rank(), "epoch": self.cores.epoch, "ranks": self.ranks > 1}
        elif self.grid and max(self.grid) > 1:  # which program of the grid
            extras[PROGRAM_KEY] = list(self.program_id)
        extras.update(more or {})
        return extras

    def emit(self, fn: Callable[[], Any], extras: dict | None = None, mask: Mask | None = None) -> None:
        """Flush the pending call, then run ``fn`` (builder calls) as the current call."""
        self.flush()
        if (mask := as_mask(mask)) is NEVER:
            return
        site, indices = self.where(), self.indices()
        for box in mask.boxes if mask is not None else (None,):  # a mask beyond one box: once per box
            if box is not None and any(hi <= lo for _axis, lo, hi in box.bounds):
                continue  # the mask keeps nothing there (`i < n` with n <= 0): no instruction
            self._emit(fn, site, indices, extras, box)

    def emit_as(self, fn: Callable[[], Any], call: str) -> None:
        """:meth:`emit` work an earlier NKI call asked for, named as that call on the kernel
        line being traced (a lazily initialized block's fill, made where it is first used)."""
        self.flush()
        self._emit(fn, (self.where()[0], call), self.indices(), None)

    def _emit(self, fn: Callable[[], Any], site, indices, extras: dict | None, mask: Mask | None = None) -> None:
        self.kb.next_extras = self._extras(site, indices, extras)
        self.mask, self.emit_site = mask, site[0]
        start = self.kb.mark()
        try:
            fn()
            self._track_psum(self.kb.emitted_since(start))
            self._check_limits(site[0])
        except NkiError:
            raise
        except ValueError as err:  # a builder check: shapes or placement the hardware refuses
            raise NkiError(site[0], f"{site[1]}: {err}") from None
        finally:
            self.kb.next_extras = None
            self.mask = self.emit_site = None

    def note_write(self, layout: Layout) -> None:
        self.written.add(layout.tensor.name)

    def _track_psum(self, new: list) -> None:
        """PSUM accumulation groups (for ``nc_matmul(accumulate=None)``), per element: a write
        opens one, a read by anything but an accumulating matmul closes it (:class:`OpenGroups`)."""
        for inst in new:
            self.psum_open.note(inst, self.kb.tensors)

    def accumulates_into(self, dst: Layout, holding: bool = False) -> bool:
        """True when a matmul writing ``dst`` adds to an open PSUM accumulation group (elements
        written, not yet read; ``holding``: written before, read since or not), else False."""
        held = self.psum_open.holds_a_value if holding else self.psum_open.holds
        return held(*footprint_of(dst))

    # -- pending results ---------------------------------------------------------------------
    def result(self, proxy: Any, emit: Callable[[Layout], None], storage: Callable[[tuple[SourceLine, str]], Layout],
               mask: Mask | None = None, sources: tuple[Any, ...] = ()) -> Any:
        """Make ``proxy`` (a result tile without storage yet) the pending call; ``storage``
        declares its tile if it is used before being assigned; ``sources``: operands of the
        same shape whose index iterators the result keeps."""
        self.flush()
        self.pending = Pending(proxy, emit, storage, self.where(), self.indices(), as_mask(mask), sources,
                               self.call_options)
        return proxy

    def flush(self) -> None:
        """Emit the pending call into a fresh virtual tile."""
        pending, self.pending = self.pending, None
        if pending is not None:
            proxy = pending.proxy
            with at_line(pending.site[0]):  # the result's tile, declared where it is first used
                layout = pending.storage(pending.site)
            self._emit_into(pending, proxy.settle(_inherit_tags(layout, pending.sources)))

    def _check_limits(self, where: SourceLine) -> None:
        """Refuse the trace at ``where`` once it is past ``max_instructions`` or ``max_memory``."""
        if self.max_instructions is not None and self.kb.emitted > self.max_instructions:
            raise TraceTooLarge(where, self.max_instructions, "instructions")
        if self.max_memory is not None and self.kb.emitted >= self.memory_check_at:
            self.memory_check_at = self.kb.emitted + _MEMORY_CHECK_EVERY
            if peak_rss() - self.rss_at_start > self.max_memory:
                raise TraceTooLarge(where, self.max_memory, "memory")

    def _emit_into(self, pending: Pending, dst: Layout, extras: dict | None = None, **kw: Any) -> None:
        if pending.mask is NEVER:
            return
        options, self.call_options = self.call_options, pending.options  # its own, not the flushing call's
        marks = getattr(pending.emit, "extras", None)  # what the call says of its instruction (nl.loop_reduce)
        if marks:
            extras = {**marks, **(extras or {})}
        try:
            with at_line(pending.site[0]):  # emitted when a later statement used the result
                self._emit_boxes(pending, dst, extras, **kw)
        finally:
            self.call_options = options

    def _emit_boxes(self, pending: Pending, dst: Layout, extras: dict | None = None, **kw: Any) -> None:
        transposed = getattr(pending.emit, "transposes", False)  # a mask in the source's indices
        reduces, roles = getattr(pending.emit, "reduces", None), getattr(pending.emit, "mask_roles", None)
        for box, target in box_targets(pending.site[1], pending.mask, dst, transposed, reduces, roles and roles()):
            if target.limits is not None:  # a view past its tensor: the access must stay inside
                target.check_bounds(pending.site[0])
            self.note_write(target)
            self._emit(lambda target=target: pending.emit(target, **kw), pending.site, pending.indices, extras, box)

    def take_pending(self, proxy: Any) -> Pending | None:
        """The pending call if ``proxy`` is its result (it is then no longer pending)."""
        if self.pending is not None and self.pending.proxy is proxy:
            pending, self.pending = self.pending, None
            return pending
        return None

    def emit_pending_into(self, pending: Pending, dst: Layout, extras: dict | None = None, **kw: Any) -> None:
        """Emit ``pending`` into ``dst`` (``kw``: e.g. ``accumulate=True`` for a matmul);
        its result proxy then stands for ``dst``."""
        self._emit_into(pending, pending.proxy.settle(dst), extras, **kw)

    # -- tensors -----------------------------------------------------------------------------
    def tensor_name(self, hint: str | None, site: SourceLine, call: str) -> str:
        if hint is not None:
            check_tensor_name(hint, site, call)
        base = hint or assigned_name(site) or call.split(".")[-1]
        base = _IDENTIFIER.get(base) or _IDENTIFIER.setdefault(base, re.sub(r"\W", "_", base))
        return self.unique(f"{base}_{site.line}" if not hint else base)

    def unique(self, name: str) -> str:
        """``name``, or ``name_K`` with the first K that no tensor has."""
        taken, reserved = self.kb.tensors, self.reserved
        if name not in taken and name not in reserved:
            return name
        k = self.name_counts.get(name, 1)  # the next suffix to try: linear, not quadratic, in repeats
        while f"{name}_{k}" in taken or f"{name}_{k}" in reserved:
            k += 1
        self.name_counts[name] = k + 1
        return f"{name}_{k}"

    def note_declared(self, name: str, scope: list[str] | None = None, depth: int | None = None,
                      extras: Mapping[str, Any] | None = None) -> Tensor:
        """Remember where an on-chip tensor was declared: its loop depth (for
        :meth:`emit_at_declaration`) and, as the tensor's ``x-nki-scope``, the kept loops around the
        declaration (a tile declared inside an affine loop is a new buffer each iteration); with
        ``extras`` (its ``x-source``, say) merged in the same amendment.  Returns the tensor."""
        self.decl_depth[name] = self.kb.depth if depth is None else depth
        scope = self.kept_loops() if scope is None else scope
        return self.kb.amend_extras(name, {"x-nki-scope": scope, **(extras or {})})

    def kept_loops(self) -> list[str]:
        """Names of the kept (program) loops open here, outermost first."""
        return [value for _var, value in self.loops if isinstance(value, str)]

    def loops_opened_since_declared(self, name: str) -> bool:
        """True when loops opened (kept symbolic: one body for every iteration) since tensor
        ``name`` was declared."""
        return self.kb.depth > self.decl_depth.get(name, 1)

    def emit_at_declaration(self, name: str, fn: Callable[[], Any]) -> None:
        """Emit ``fn`` (builder calls, as :meth:`emit`) where tensor ``name`` was declared:
        before the kept loops opened since, so it runs once, not every iteration.  Called while
        another call's instruction is being emitted (a reduction's first use of its tile), that
        call's extras, mask and site are its own again afterwards."""
        self.flush()
        saved = self.kb.next_extras, self.mask, self.emit_site, self.unrolled_affine, self.in_order
        self.unrolled_affine, self.in_order = [], []  # (no iteration's: it runs once, where the tile was declared)
        start = self.kb.mark()
        try:
            self.emit(fn)
        finally:
            self.kb.next_extras, self.mask, self.emit_site, self.unrolled_affine, self.in_order = saved
        self.kb.move_since(start, self.decl_depth.get(name, 1))

    # -- loops -------------------------------------------------------------------------------
    def loop(self, kind: str, args: tuple[Any, ...]) -> Iterator[Any]:
        """``nl.affine_range`` / ``sequential_range`` / ``static_range`` (and the current API's
        aliases); ``kind="python"``: a legacy kernel's ``for`` over Python's ``range``, the
        compiler's ``sequential_range`` (:mod:`~neuronsim.machine.nki.kernel_range`)."""
        where = user_line(2)
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
        match = _FOR.match(linecache.getline(where.path, where.line)) if where.path else None
        var = match.group(1) if match else f"i{where.line}"
        key = f"{where.path}:{where.line}"
        keep = (self.generation == "legacy" and kind != "static" and self.unroll is not None and key not in self.unroll
                and all(not isinstance(v, SymIndex) for v in (start, stop, step)))
        bounds = tuple(concrete(v, "a loop bound") for v in (start, stop, step))
        if bounds[2] == 0:
            raise NkiError(where, f"{kind}_range with step 0: a loop that never ends")
        values = range(*bounds)
        if keep and values:  # (a legacy kernel's `for` over Python's range: the compiler's sequential_range)
            state = body_state(where, kind, var)  # (Python state the body changes once: loop_state.py)
            return self._kept(var, "sequential" if kind == "python" else kind, values, key, state)
        if kind == "python":  # unrolled, it is Python's loop, its iterations marked (machine/nki/kernel_range.py)
            return in_order(self, iter(values))
        if self.max_instructions is not None and range_length(values) > self.max_instructions:
            # every iteration is traced, even one that calls nothing of NKI's: a loop of ten
            # billion empty iterations would run for hours below the instruction limit
            raise TraceTooLarge(where, self.max_instructions, "instructions")
        unrolled = self._unrolled(var, values, (where, kind))
        return in_order(self, unrolled) if kind == "sequential" and self.generation == "legacy" else unrolled

    def _unrolled(self, var: str, values: range, site: tuple[SourceLine, str] | None = None) -> Iterator[int]:
        affine = site is not None and site[1] == "affine" and self.generation == "legacy" and range_length(values) > 1
        run = self.unrolled_runs = self.unrolled_runs + affine  # this loop's (the body's loops count on)
        # a legacy affine / sequential body runs once in NKI (a symbolic index): each iteration
        # starts from the plain values and tiles its frame held at the loop's start (frames.restore_locals)
        symbolic = site is not None and site[1] != "static" and self.generation == "legacy" and range_length(values) > 1
        frame = user_frame() if symbolic else None
        entry, state = entry_locals(frame, var), body_state(site[0], site[1], var, containers=False) if frame else None
        for iteration, value in enumerate(values):
            self.flush()
            if iteration:
                note_changes(state if iteration == 1 else None, self.program_extras)
                restore_locals(frame, entry)
            (loops := self.loops).append((var, value))  # (this core's lists: another's may be in force at its end)
            if affine:
                (affines := self.unrolled_affine).append([run, var, iteration])
            try:
                yield value
                if affine:
                    self.flush()  # the iteration's held-back call is the iteration's (its mark)
            except GeneratorExit:  # the kernel left the body by `return` or `break` (checked when it returns)
                if site is not None and value != values[-1] and self.left_early is None:
                    self.left_early = (site[0], site[1], values.index(value), len(values))
                raise
            finally:
                loops.pop()
                if affine:
                    affines.pop()
        self.flush()

    def _kept(self, var: str, kind: str, values: range, key: str, state: BodyState | None = None) -> Iterator[Any]:
        self.flush()
        name, k = var, 1
        while self.kb.name_taken(name):
            name, k = f"{var}_{k}", k + 1
        self.loop_sites[name] = key
        with self.kb.loop(name, range_length(values), extras={"x-nki-range": kind}) as index:
            (loops := self.loops).append((var, name))
            try:  # (left by a `return` inside the body, the body as traced so far is the loop's: kb.loop)
                value = index * values.step + values.start
                yield SymIndex(value) if value.terms else value.const
                self.flush()
                note_changes(state, self.program_extras)
            finally:
                loops.pop()

    @property
    def nc_generation(self) -> int:
        """The NeuronCore generation traced for: 2 on trn1, 3 on trn2, 4 on trn3."""
        base = self.machine if isinstance(self.machine, str) else (self.machine or {}).get("base", "trn1")
        return {"trn2": 3, "trn3": 4}.get(base, 2)

    # -- SPMD --------------------------------------------------------------------------------
    def instances(self) -> Iterator[tuple[int, ...]]:
        for flat in range(int(np.prod(self.grid, dtype=object))):  # (itertools.product: 10**9 ids at once, probe_bf)
            self.program_id = pid = tuple(int(i) for i in np.unravel_index(flat, self.grid))
            self.site_counts = {}
            yield pid

    def program_id_of(self, axis: int) -> int:
        if not 0 <= axis < max(len(self.grid), 1):
            raise fail(f"nl.program_id({axis}): the grid has {len(self.grid)} dimensions")
        return self.program_id[axis] if self.program_id else 0  # (a launch on ranks has one program: grid 1)

    def hbm_site(self, where: SourceLine) -> tuple[str, int, int]:
        """The key of an HBM allocation: its line and how many times this instance reached it
        (so every SPMD instance finds the same shared tensor)."""
        key = (where.path, where.line)
        count = self.site_counts.get(key, 0)
        self.site_counts[key] = count + 1
        return (where.path, where.line, count)

    def refuse(self, construct: str, why: str) -> NkiError:
        return unsupported(construct, why)


#: Instructions between two readings of the process's memory by a tracer with ``max_memory``
#: (a system call each: about 1 us against ~30 us of tracing per instruction).
_MEMORY_CHECK_EVERY = 4096


def peak_rss() -> int:
    """The process's peak resident memory in bytes (0 where the system does not say)."""
    try:
        import resource
    except ImportError:  # not a POSIX system
        return 0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, KiB elsewhere


def _inherit_tags(layout: Layout, sources: tuple[Any, ...]) -> Layout:
    """``layout`` tagged with the index iterators of the first source of the same shape."""
    for source in sources:
        tagged = getattr(source, "_layout", None)
        if tagged is not None and tagged.tags is not None and tagged.shape == layout.shape:
            return Layout(layout.tensor, layout.axes, layout.offset, layout.partitions, tagged.tags)
    return layout
