"""``trace``: a kernel and its numpy arguments in, a program out (running it as NKI's
``simulate_kernel`` does is :func:`neuronsim.verify.nki.simulate.simulate_kernel`, which needs the
allocation pass).

>>> import numpy as np
>>> from neuronsim.machine.nki import standins
>>> with standins():
...     import nki.language as nl
...     def double(x):
...         out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
...         nl.store(out, nl.multiply(nl.load(x), 2.0))
...         return out
>>> traced = trace(double, np.ones((4, 8), np.float32))
>>> traced.outputs, [i.op for i, _ in traced.program.instructions()]
(('return0',), ['dma_copy', 'tensor_scalar', 'dma_copy'])
"""

from __future__ import annotations

import gc
import inspect
import json
import math
import os
import re
from collections import Counter
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from neuronsim.machine.formats.pyfile import exit_call
from neuronsim.machine.formats.validate import validate_program
from neuronsim.machine.ir.dtypes import numpy_dtype
from neuronsim.machine.ir.errors import ProgramError, message_of
from neuronsim.machine.ir.program import Access, MemoryKind, Program, frozen_mapping
from neuronsim.machine.ir.source import shown_path
from neuronsim.machine.nki.arguments import bind_arguments
from neuronsim.machine.nki.cores import Cores, NeedsCores
from neuronsim.machine.nki.errors import (LeftLoopEarly, NkiError, NkiInternalError, NoSuchTensorAttribute, NotAffine,
                                          SourceLine, TraceTooLarge)
from neuronsim.machine.nki.frames import mark_entry
from neuronsim.machine.nki.loop_exit import body_exit_after_loop, check_loops_finished
from neuronsim.machine.nki.groups import open_groups
from neuronsim.machine.nki.hbm import SharePrivate, private_returned
from neuronsim.machine.nki.kernel import (HostLaunch, Kernel, launched, platform_of, schedule_of, simulation_mode,
                                         unwrap)
from neuronsim.machine.nki.schedule import apply_edges, schedule_edges
from neuronsim.machine.nki.layout import Layout
from neuronsim.machine.nki.kernel_range import legacy_range
from neuronsim.machine.nki.standins import generation_of, standins
from neuronsim.machine.nki.tiles import NkiTensor
from neuronsim.machine.nki import indexing
from neuronsim.machine.nki.kernel_frames import assertion_site, kernel_frame, kernel_frames, raised_by_us
from neuronsim.machine.nki.tracer import Tracer, current, tracing
from neuronsim.machine.nki.unrun import checked_unrun
from neuronsim.machine.ir.collector import collector_paused
from neuronsim.machine.nki.device_values import float_bits_hint, instruction_source, validated_prefix
from neuronsim.machine.nki.legacy_rules import check_flat_tiles, check_mutable, check_written

__all__ = ["TracedKernel", "trace", "kernel_frame", "PLATFORMS"]


def _mask_read_as_truth(text: str) -> None:
    """A mask Python read as a truth value (:data:`indexing.on_truth_value`): said at the kernel's line."""
    if tracing():
        current().warn("mask", text)


indexing.on_truth_value = _mask_read_as_truth

_MAX_ATTEMPTS = 64
#: Restarts that unroll the loops named, one nest at a time, before every loop is unrolled.
_NESTS_ONE_BY_ONE = 10


@dataclass(frozen=True)
class TracedKernel:
    """A traced kernel: the program, its input values and its output tensor names."""

    program: Program
    inputs: dict[str, np.ndarray]
    outputs: tuple[str, ...]
    returned: tuple[str, ...] = ()
    """Output tensors the kernel returned, in order (``outputs`` also lists written arguments)."""
    written_args: tuple[str, ...] = ()
    initial: dict[str, np.ndarray] = field(default_factory=dict)
    """The arrays given for the parameters the kernel writes: their tensors' initial values (a
    kernel that updates a parameter in place, or writes part of it, keeps the rest), as NKI's
    simulator passes them.  Simulate with ``{**inputs, **initial}``."""
    call_warnings: tuple[tuple[str, str, str], ...] = ()
    """``(file:LINE, kind, message)`` of each NKI call that deserves a warning
    (:attr:`~neuronsim.machine.nki.tracer.Tracer.call_warnings`)."""

    @property
    def run_inputs(self) -> dict[str, np.ndarray]:
        """Everything a simulation of the program starts from."""
        return {**self.inputs, **self.initial}


def trace(kernel: Any, *arrays: Any, grid: Any = None, name: str | None = None, machine: Any = None,
          ranks: int = 1, unroll_loops: bool = False, max_instructions: int | None = None,
          max_memory: int | None = None, **kwargs: Any) -> TracedKernel:
    """Trace ``kernel`` (a ``Kernel``, ``kernel[grid]`` or a function) on ``arrays``.

    numpy arrays (by position, parameter name or through ``**kwargs``) become DRAM tensors
    named after the parameters (:mod:`~neuronsim.machine.nki.arguments`); other arguments are
    passed to the kernel as they are.  ``ranks=N`` launches it on N devices that meet at their
    ``nki.collectives`` calls (:mod:`~neuronsim.machine.nki.ranks`): the outputs are rank 0's,
    rank ``r``'s are ``NAME_rank{r}``.  ``unroll_loops``: every loop unrolled from the start (a
    tile of each iteration its own tensor), as ``run`` traces again a
    kernel whose loop body overflows SBUF, so that ``alloc`` may spill between iterations.
    ``machine``: a preset name or machine spec; by default the kernel's own target
    (``@nki.jit(platform_target=...)``, else ``$NEURON_PLATFORM_TARGET_OVERRIDE``, as the
    ``nki.jit`` page says), else ``trn1``.
    ``max_instructions`` / ``max_memory``: refuse a kernel that traces to more instructions, or
    whose trace grows the process by more bytes (:class:`~neuronsim.machine.nki.errors.TraceTooLarge`
    at the line that passes the limit).
    """
    if not callable(kernel):  # (None or a 'file.py::f' string was an internal error: probe_bf)
        raise TypeError(f"trace takes an NKI kernel or function (load_kernel('file.py::f') loads one), not "
                        f"{type(kernel).__name__} {kernel!r:.60}")
    if isinstance(ranks, bool) or not isinstance(ranks, (int, np.integer)) or ranks < 1:
        raise TypeError(f"ranks is a positive integer, not {ranks!r:.60}")
    func, kernel_grid = unwrap(kernel)
    if machine is None:
        machine = _target_machine(platform_of(kernel), func)
    grid = tuple(grid if isinstance(grid, (tuple, list)) else (grid,)) if grid is not None else kernel_grid
    _check_grid_sizes(grid, _defined_at(func))
    if int(ranks) > 1 and math.prod(int(g) for g in grid) > 1:
        raise NkiError(_defined_at(func), f"a launch on {ranks} ranks with a grid {grid}: neuronsim runs one of "
                                          "the two at a time")
    name = name or getattr(func, "__name__", "kernel")
    module_state = _module_state(func)
    converted: dict[int, np.ndarray] = {}  # the inputs in their dtypes, once for every attempt

    def attempts(run_once: frozenset[str]) -> tuple[TracedKernel, dict]:
        return _attempts(kernel, func, grid, arrays, kwargs, name, machine, int(ranks), unroll_loops,
                         (max_instructions, max_memory), module_state, converted, run_once)

    traced, unrun = attempts(frozenset())
    # bodies that ran no iteration: traced once more with them run, for what NKI refuses in them
    return checked_unrun(traced, unrun, attempts, lambda: _restore(module_state)) if unrun else traced


def _attempts(kernel: Any, func: Any, grid: tuple, arrays: tuple, kwargs: dict, name: str, machine: Any,
              ranks: int, unroll_loops: bool, limits: tuple, module_state: Any, converted: dict,
              run_once: frozenset[str]) -> tuple[TracedKernel, dict]:
    """The trace of :func:`trace`, restarted as its loops, cores and launches need, and the
    compiled loop bodies it ran no iteration of (:mod:`~neuronsim.machine.nki.unrun`; with
    ``run_once``, those it ran once all the same)."""
    unroll: frozenset[str] | None = None if unroll_loops else frozenset()
    restarts, as_cores = 0, False
    shared: frozenset[tuple] = frozenset()  # private HBM declarations the kernel returns (machine/nki/hbm.py)
    for _attempt in range(_MAX_ATTEMPTS):
        _restore(module_state)
        tracer = Tracer(name, machine, generation_of(func), tuple(int(g) for g in grid), unroll, ranks=ranks,
                        as_cores=as_cores, max_instructions=limits[0], max_memory=limits[1])
        tracer.hbm.shared, tracer.unrun.run_once = shared, run_once
        tracer.host_wrapper = generation_of if not isinstance(kernel, Kernel) and not grid and int(ranks) == 1 else None
        try:
            # tracing makes many small objects that all live to the end: no collector passes over
            # them (bench/bench_nki.py --no-compile: 9.2 s -> 7.0 s for 1e5 instructions)
            with standins(), tracer.active(), collector_paused(), _objects_promoted(), \
                    legacy_range(func, tracer):
                traced = _run(tracer, func, arrays, kwargs, schedule_of(kernel), simulation_mode(kernel), converted)
            return traced, tracer.unrun.bodies
        except TraceTooLarge:  # unrolling what was kept would only make it larger
            raise
        except MemoryError as err:  # the kernel's own allocation, or a trace that outgrew memory
            raise NkiError(_located(err, func), f"out of memory while tracing ({str(err) or 'MemoryError'}), after "
                                                f"{tracer.kb.emitted:,} instructions") from None
        except SystemExit as err:  # the kernel's own sys.exit: not this command's exit status
            raise NkiError(_located(err, func), f"the kernel exits ({exit_call(err)})") from None
        except NeedsCores:  # a two-core meeting reached: trace the grid's instances as cores
            as_cores = True
            continue
        except SharePrivate as again:  # an instance's own HBM tensor returned: the output all of them write
            shared |= again.sites
            continue
        except NotAffine as err:
            keys = frozenset(tracer.loop_sites[loop] for loop in err.loops if loop in tracer.loop_sites)
            if unroll is None or not keys or keys <= unroll:
                raise NkiError(_located(err, func), f"{err.what} outside any loop neuronsim can unroll") from None
            unroll |= keys
            restarts += 1
            if restarts >= _NESTS_ONE_BY_ONE:
                # a kernel printed by neuronx-cc indexes block arrays by the variables of nest after
                # nest: restarting once per nest traced its start again each time (lora: 29
                # restarts, 120 s); every loop is unrolled from here on
                unroll = None
        except HostLaunch as launch:  # a host wrapper's `return _kernel[n](...)`: trace the launch
            kernel, arrays, kwargs = launched(launch, tracer, func)
            _check_grid_sizes(kernel.grid, launch.site)  # (kk[-2] ran nothing, kk[10**9] ran out of memory: probe_bf)
            func, grid = kernel.func, kernel.grid
            continue
        except LeftLoopEarly as err:  # a legacy body ending in return / break, read as NKI reads it
            legacy = tracer.generation == "legacy"
            again = body_exit_after_loop(func, err.where.path, err.where.line) if legacy else None
            if again is None:
                raise
            func = again
        except Exception as err:  # noqa: BLE001  (every failure becomes one located line)
            kept = frozenset(tracer.loop_sites.values()) - (unroll or frozenset())
            if kept and unroll is not None:  # a body traced once may have misled Python state: unroll all
                unroll |= kept
                continue
            error = _as_nki_error(err, func)
            raise error from (err if isinstance(error, NkiInternalError) else None)
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM: the command's to report
            raise
        except BaseException as err:  # a kernel's own BaseException subclass: its error, at its line
            if raised_by_us(err):
                raise
            raise NkiError(_located(err, func), f"{type(err).__name__}: {message_of(err)}") from None
    raise NkiError(_defined_at(func), f"more than {_MAX_ATTEMPTS} loops to unroll")


#: NKI's platform targets (nki.jit's page: trn1|inf2|gen2, trn2|gen3, trn3|gen4) and their machine presets.
#: The machine each platform target of the ``nki.jit`` page is traced for.
PLATFORMS = dict(trn1="trn1", inf2="trn1", gen2="trn1", trn2="trn2", gen3="trn2", trn3="trn3", gen4="trn3")


def _target_machine(target: str | None, func: Any, variable: str = "NEURON_PLATFORM_TARGET_OVERRIDE") -> str:
    where = _defined_at(func) if target else f"${variable}"  # (the variable's mistake was the kernel's: a probe)
    target = (target or os.environ.get(variable) or "").strip()
    machine = PLATFORMS.get(target.lower(), None if target else "trn1")
    if machine is None:
        raise NkiError(where, f"platform target {target!r} is none of {', '.join(PLATFORMS)}")
    return machine


def _module_state(func: Any) -> tuple[dict[str, Any], dict[str, Any], list[tuple[Any, dict[str, Any]]]]:
    """What a kernel body may change in its own module: global numbers and strings (``global
    n``) and the attributes of objects of the module's own classes (the attention tutorial's
    module-level ``SBufAllocator`` hands out offsets by bumping ``self.offset``).  NKI traces a
    kernel once; neuronsim may trace it again to unroll a loop, and each attempt must start
    from the state the first saw, or the offsets grow past SBUF."""
    target = getattr(func, "func", func)
    module = getattr(target, "__globals__", None)
    if not isinstance(module, dict):
        return {}, {}, []
    scalars = {k: v for k, v in module.items() if type(v) in (int, float, bool, str)}
    objects = [(v, dict(v.__dict__)) for v in list(module.values())
               if type(v).__module__ == module.get("__name__") and not isinstance(v, type)
               and isinstance(getattr(v, "__dict__", None), dict)]
    return module, scalars, objects


def _restore(state: tuple[dict[str, Any], dict[str, Any], list[tuple[Any, dict[str, Any]]]]) -> None:
    module, scalars, objects = state
    module.update(scalars)
    for obj, attrs in objects:
        obj.__dict__.clear()
        obj.__dict__.update(attrs)


def _as_nki_error(err: Exception, func: Any) -> NkiError | NkiInternalError:
    """A failure of the kernel's own code (or a refusal) as an :class:`NkiError` at its line;
    an exception raised inside neuronsim's code as an :class:`NkiInternalError` (a bug: the
    command line exits 3), both naming the kernel line."""
    if isinstance(err, NkiError):
        return err
    if isinstance(err, RecursionError):  # at the line that calls itself again (it was the kernel's def)
        frames = [line for line, _name in kernel_frames(err)]
        counts = Counter(frames)
        again = next((f for f in reversed(frames) if counts[f] > 1), None)
        if again is not None:  # else its own raise (or a limit it lowered), at its line as any other error
            return NkiError(again, "the kernel recurses without end")
    helper = assertion_site(err)  # a library's kernel_assert: at the line calling it
    if helper is not None:
        return NkiError(helper[0], f"{type(err).__name__} in {helper[1]}: {message_of(err)}")
    where = _located(err, func)
    if isinstance(err, NoSuchTensorAttribute):  # raised in our tensor class, for the kernel's read
        return NkiError(where, str(err))
    if raised_by_us(err):
        internal = NkiInternalError(f"{type(err).__name__}: {err} (tracing {where})")
        internal.__cause__ = err
        return internal
    said = NkiError(where, f"{type(err).__name__}: {message_of(err)}")
    said.raised = err
    return said


def _check_grid_sizes(grid: tuple, where: Any) -> None:
    """Refuse a launch grid that is not integers from 1 below 2**31, at ``where``."""
    if any(not isinstance(g, (int, np.integer)) or isinstance(g, bool) or not 1 <= g < 2**31 for g in grid):
        raise NkiError(where, f"a grid of {grid}: each dimension is an integer from 1 below 2**31")


def _check_grid(tracer: Tracer, func: Any) -> None:
    """After the grid's first instance: every instance traces alike, so its instructions times
    the grid past the limit is refused now, at the kernel, not after hours (a 100000 x 100000
    grid of a five-instruction kernel)."""
    count = math.prod(tracer.grid)
    if tracer.max_instructions is not None and count > 1 and tracer.kb.emitted * count > tracer.max_instructions:
        raise TraceTooLarge(_defined_at(func), tracer.max_instructions, "instructions")


@contextmanager
def _objects_promoted():
    """Inside ``collector_paused``: the trace's many objects all sit in the youngest generation
    when it ends, so the first collection once the collector is back would scan every one of
    them (about 1 s per 1e5 instructions).  They are moved to the oldest generation unscanned
    instead (``gc.freeze`` then ``gc.unfreeze``: constant time, and the youngest generation's
    count starts afresh), where a full collection finds them as it finds any long-lived object;
    only when nothing else froze objects, whose freezing must stay."""
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()


def _defined_at(func: Any) -> SourceLine:
    """Where the kernel function is defined (a ``functools.partial``: its function; a callable
    object: its ``__call__``; else the file inspect finds, or the kernel's name)."""
    target = getattr(func, "func", func)
    # B004 mistakes this for a callability test: it reads the code of the object's __call__ method
    call = getattr(type(target), "__call__", None)  # noqa: B004
    code = getattr(target, "__code__", None) or getattr(call, "__code__", None)
    if code is not None:
        return SourceLine(shown_path(code.co_filename), code.co_firstlineno, code.co_filename)
    try:
        path = inspect.getsourcefile(target) or ""
    except TypeError:
        path = ""
    name = getattr(target, "__qualname__", None) or type(target).__name__
    return SourceLine(shown_path(path), 0, path) if path else SourceLine(f"kernel {name}", 0)


def _located(err: BaseException, func: Any) -> SourceLine:
    """The innermost frame of ``err``'s traceback in the kernel's own code (none: where the
    kernel is defined)."""
    return kernel_frame(err) or _defined_at(func)


def _run(tracer: Tracer, func: Any, arrays: tuple[Any, ...], kwargs: dict[str, Any],
         schedule: tuple[Any, ...] = (), simulated: bool = False,
         converted: dict[int, np.ndarray] | None = None) -> TracedKernel:
    bounds, values = bind_arguments(tracer, func, arrays, kwargs, _defined_at(func), converted)
    bound = bounds[0]
    results: list[Any] = []
    more: list[list[Any]] = []
    tracer.input_values = values

    def instance() -> list[Any]:
        each = bounds[tracer.cores.rank()] if tracer.ranks > 1 else bound
        result = func(*each.args, **each.kwargs)
        check_loops_finished(tracer)
        tracer.flush()
        return _returned(result, func, tracer if simulated else None)

    if tracer.ranks > 1:  # devices meeting at their collectives (machine/nki/ranks.py)
        tracer.cores = Cores(tracer, [()] * tracer.ranks, instance)
        results, *more = tracer.cores.run()
    elif tracer.as_cores:  # an LNC=2 kernel's two instances, met where they meet (machine/nki/cores.py)
        tracer.cores = Cores(tracer, list(tracer.instances()), instance)
        results = tracer.cores.run()[-1]
    else:
        for k, _pid in enumerate(tracer.instances()):
            results = instance()
            if k == 0:
                _check_grid(tracer, func)
    tracer.finishing = True
    if tracer.ranks == 1 and (returned := private_returned(tracer, results)):
        raise SharePrivate(returned)
    if tracer.flat_tiles:  # 1-D on-chip tiles, refused if used
        check_flat_tiles(tracer.kb.program(validate=False), tracer.flat_tiles)
    edges = list(tracer.order_edges)  # depends_on, then with_schedule (machine/nki/schedule.py)
    for pairs, kind, site in schedule:
        edges += schedule_edges(pairs, kind, tracer.named_calls, site)
    traced = None
    try:
        built = tracer.kb.program(validate=False)
        program = open_groups(apply_edges(built, edges))  # PSUM groups opened by their first matmul
        if tracer.program_extras:  # control-flow decisions and loop state (machine/nki/control.py)
            program = replace(program, extras=frozen_mapping({**program.extras, **tracer.program_extras}))
        traced = _finish(tracer, program, values, results, more, func)
        # validated once, as the trace hands it on: a command checking it again finds it
        # checked (a second full check of a printed kernel's 85 k instructions cost a second);
        # what the device-value reads validated on the way is not checked again
        validate_program(traced.program, checked=validated_prefix(tracer, built))
    except NkiError:  # an order edge the data contradicts, a return refused: already at the kernel's line
        raise
    except ProgramError as err:  # a hardware rule the program breaks: name the kernel line
        where, what = _error_site(tracer, func, err.path, traced.program if traced is not None else None)
        raise NkiError(where, f"{what}: {err.message}{float_bits_hint(tracer)}") from None
    return traced


mark_entry(_run.__code__)  # the kernel's loop indices are read from the frames above this one


_TENSOR_PATH = re.compile(r'^tensors(?:\.([^.\[]+)|\[("(?:[^"\\]|\\.)*")\])')


def _error_site(tracer: Tracer, func: Any, path: str, program: Program | None = None) -> tuple[SourceLine, str]:
    """The kernel line a whole-program error at JSON path ``path`` is about, and what to call
    it: an instruction (``body[3].body[0]...``) its call's line; a tensor (``tensors.NAME``) the
    line that declared it and the kernel's variable, a kernel argument the parameter; anything
    else the kernel's definition."""
    tensor = _TENSOR_PATH.match(path)
    if tensor:
        name = tensor.group(1) or json.loads(tensor.group(2))
        found = (program.tensors.get(name) if program is not None else None) or tracer.kb.tensors.get(name)
        source = dict(found.extras).get("x-source") if found is not None else None
        if source:
            where = SourceLine(source["file"], source["line"], source.get("path", ""))
            return where, f"{source.get('variable') or name} ({source.get('call', 'declared here')})"
        if name in tracer.input_values:
            return _defined_at(func), f"parameter {name}"
        return _defined_at(func), f"tensor {name}"
    source = instruction_source((program or tracer.kb.draft()).body, path)  # the checked program's
    if not source:
        return _defined_at(func), f"the program traced from {getattr(func, '__name__', 'the kernel')}"
    return SourceLine(source["file"], source["line"]), source["call"]


def _returned(result: Any, func: Any, simulator: Tracer | None = None) -> list[NkiTensor]:
    """The HBM tensors the kernel returned.  Only HBM tensors leave a compiled kernel (NKI's
    known issues: top-level inputs and outputs live in HBM); under NKI's simulator (legacy
    ``mode="simulation"``, ``simulator`` given) an on-chip tile is returned by value, so it is
    stored to an HBM output of its shape at the return line, as the simulator copies it out."""
    if result is None:
        return []
    items = list(result) if isinstance(result, (tuple, list)) else [result]
    for k, item in enumerate(items):
        if isinstance(item, NkiTensor) and item.buffer in ("sbuf", "psum") and simulator is not None:
            items[k] = _stored_out(simulator, item, _return_line(func))
        elif not isinstance(item, NkiTensor) or item.buffer != "hbm":
            raise NkiError(_return_line(func), f"a kernel returns HBM tensors, not {item!r}")
    return items


def _stored_out(tracer: Tracer, tile: NkiTensor, where: SourceLine) -> NkiTensor:
    """An HBM tensor of ``tile``'s shape and dtype holding it, written at the kernel line ``where``."""
    from neuronsim.machine.nki import language as nl

    tracer.site, tracer.site_frame = (where, "return"), None
    try:
        out = nl.ndarray(tile.shape, dtype=tile.dtype, buffer="shared_hbm")
        nl.assign(out, tile)
        tracer.flush()
    finally:
        tracer.site = None
    return out


def _return_line(func: Any) -> SourceLine:
    """The kernel's last ``return`` line with a value (where its result is made), else its def."""
    defined = _defined_at(func)
    try:
        lines, first = inspect.getsourcelines(getattr(func, "func", func))
    except (OSError, TypeError):
        return defined
    returns = [first + k for k, text in enumerate(lines) if re.match(r"\s*return\s+\S", text)]
    return replace(defined, line=returns[-1]) if returns and defined.line else defined


def _parameters(func: Any) -> Mapping[str, inspect.Parameter]:
    """The kernel function's parameters (none known for a callable inspect cannot read)."""
    try:
        return inspect.signature(getattr(func, "func", func)).parameters
    except (TypeError, ValueError):
        return {}


def _finish(tracer: Tracer, program: Program, values: dict[str, np.ndarray], results: list[NkiTensor],
            more: list[list[NkiTensor]] = (), func: Any = None) -> TracedKernel:
    """The traced kernel: ``results`` its returned tensors; ``more``, the other ranks' (outputs
    too, named ``NAME_rank{r}``: a reference gives them by those names).  Two returned tensors
    of one name (``name=`` given twice, or the name of another's place, ``return0``) are
    refused at the return: one of them would be lost."""
    if func is not None and tracer.generation == "legacy":  # (nki-library returns outputs it may not write)
        check_written(program, values, results, _defined_at(func), _return_line(func))
    renames: dict[str, str] = {}
    returned: list[str] = []
    shapes: dict[str, tuple[int, ...]] = {}
    for rank, tiles in enumerate([results, *more]):
        for k, tile in enumerate(tiles):
            tensor = tile.layout.tensor.name
            if _whole_reshaped(tile.layout):  # `return out.reshape(...)`: the output has the view's shape
                shapes[tensor] = tile.layout.shape
            if tensor not in values and tensor not in renames:
                base = tracer.returned_names.get(tensor) or f"return{k}"
                new = base if rank == 0 else f"{base}_rank{rank}"
                if new in renames.values():
                    raise NkiError(_return_line(func) if func is not None else SourceLine("<kernel>", 0),
                                   f"two returned tensors are named {new!r} (name= given twice, or the name of "
                                   "another output's place): one would be lost; name them apart")
                renames[tensor] = new
            if rank == 0:
                returned.append(renames.get(tensor, tensor))
    written_args = tuple(p for p in values if p in tracer.written)
    if func is not None and tracer.generation == "legacy":
        check_mutable(program, _parameters(func), written_args, returned, _defined_at(func), _return_line(func))
    others = [renames.get(t.layout.tensor.name, t.layout.tensor.name) for tiles in more for t in tiles]
    outputs = set(returned) | set(written_args) | set(others)
    tensors = {}
    for name, tensor in program.tensors.items():
        new = renames.get(name, name)
        if tensor.memory == MemoryKind.DRAM:
            if name in shapes:  # DRAM accesses count flat elements: only the output's shape changes
                tensor = replace(tensor, shape=shapes[name])
            role = "output" if new in outputs else ("input" if name in values or _is_constant(tracer, name)
                                                  else "internal")
            tensor = replace(tensor, name=new, role=role)
        tensors[new] = tensor
    if renames:
        def rename(inst):
            if not any(a.tensor in renames for a, _w in inst.accesses):
                return inst
            return replace(inst, reads=tuple(_renamed(a, renames) for a in inst.reads),
                           writes=tuple(_renamed(a, renames) for a in inst.writes))

        program = program.map_instructions(rename)
    program = program.with_tensors(tensors)
    inputs = {p: v for p, v in values.items() if tensors[p].role == "input"}
    initial = {p: v for p, v in values.items() if tensors[p].role == "output" and isinstance(v, np.ndarray)}
    for tile, constant in tracer.constants.values():
        name = tile.layout.tensor.name
        inputs[name] = constant.astype(numpy_dtype(tensors[name].dtype))
    ordered = tuple(dict.fromkeys(returned + list(written_args) + others))
    return TracedKernel(program, inputs, ordered, tuple(returned), written_args, initial,
                        tuple(tracer.call_warnings))


def _whole_reshaped(layout: Layout) -> bool:
    """True for a view of a whole DRAM tensor in another shape (a contiguous reshape of it)."""
    tensor = layout.tensor
    return (not layout.on_chip and layout.shape != tuple(tensor.shape) and not layout.offset.terms
            and layout.offset.const == 0 and layout.contiguous() and math.prod(layout.shape) == math.prod(tensor.shape))


def _is_constant(tracer: Tracer, name: str) -> bool:
    return any(tile.layout.tensor.name == name for tile, _ in tracer.constants.values())


def _renamed(access: Access, renames: dict[str, str]) -> Access:
    return replace(access, tensor=renames[access.tensor]) if access.tensor in renames else access
