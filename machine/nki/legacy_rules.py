"""The legacy NKI errors page's rules on a kernel as a whole (``neuronxcc.nki``; each call's
own argument checks stay with the call, the tile scopes in :mod:`~neuronsim.machine.nki.scopes`).

The page lists what the compiler refuses; a helper ran its wrong kernels and found them running
with exit 0.  Each rule here refuses at the kernel line and names the page's error:

* :func:`annotated_shape`: ``data: nt.tensor[128, 512] = nl.zeros(...)`` of another shape;
* :func:`legacy_tile`: that, and a tile on SBUF / PSUM of one dimension (the known-issues page);
* :func:`kernel_level`: a ``shared_hbm`` tensor made in a loop or a function the kernel calls;
* :func:`check_written`: an output nothing writes (a loop that never runs), or no output at all;
* :func:`check_mutable`: a kernel that returns its outputs writing a parameter that is not
  ``nt.mutable_tensor``, or not returning one that is.

NKI 0.7 kernels are not held to them: nki-library's make ``shared_hbm`` tensors in helpers and
loops and return outputs they may leave unwritten.  The callers apply them to legacy traces
only.
"""

from __future__ import annotations

import inspect
import linecache
import re
from collections.abc import Mapping
from typing import Any

from neuronsim.machine.ir.program import MemoryKind, Program
from neuronsim.machine.nki.errors import NkiError, SourceLine, _code_info, fail, frame_line, user_frame
from neuronsim.machine.nki.frames import ENTRY_CODES, KERNEL_CALLS, loops_at, under_program_if

__all__ = ["annotated_shape", "legacy_tile", "kernel_level", "check_written", "check_mutable"]


#: ``data: nt.tensor[128, 512] = ...``: the annotated name and the dimensions in brackets
_ANNOTATED = re.compile(r"^\s*[A-Za-z_]\w*\s*:\s*(?:[A-Za-z_]\w*\.)*tensor\[([^\]]*)\]\s*=(?!=)")


def annotated_shape(where: Any, shape: tuple[int, ...]) -> None:
    """The legacy errors page's ``err_annotation_shape_mismatch``: NKI checks a tensor made in
    an annotated assignment (``data: nt.tensor[128, 512] = nl.zeros(...)``) against the shape
    the annotation gives.  Python never evaluates a local annotation, so it is read from the
    line; an annotation whose dimensions are not all integers is left alone."""
    match = _ANNOTATED.match(linecache.getline(where.path, where.line)) if where.path else None
    if match is None:
        return
    dims = [d.strip() for d in match.group(1).split(",") if d.strip()]
    if not dims or not all(d.isdigit() for d in dims):
        return
    if tuple(int(d) for d in dims) != shape:
        raise fail(f"the tensor's shape {list(shape)} does not match its annotation's {[int(d) for d in dims]} "
                   "(err_annotation_shape_mismatch)")


def legacy_tile(where: Any, spec: Any) -> str | None:
    """A legacy tile declaration: :func:`annotated_shape`; and, for a tile on SBUF / PSUM of
    fewer than 2 dimensions, NKI's known-issues page's rule ("Tile on SBUF/PSUM must have at
    least 2 dimensions": ``nl.zeros((128, ), ..., buffer=nl.sbuf)  # this won't work``; a probe's
    1-D SBUF tile ran), returned to be said if the kernel uses the tile.  The page says users
    "may get" the error, and a CS149 submission declares such a tile and rebinds its name at
    once, never using it (:func:`check_flat_tiles`)."""
    annotated_shape(where, tuple(spec.shape))
    if spec.buffer in ("sbuf", "psum") and len(spec.shape) < 2:
        shape = (*spec.shape, 1) if spec.shape else (1, 1)
        return (f"an nl.{spec.buffer} tile of shape {tuple(spec.shape)}: NKI's known-issues page says a tile on "
                f"SBUF/PSUM must have at least 2 dimensions (a partition and a free one): make it {shape}")
    return None


def check_flat_tiles(program: Any, flat: dict[str, tuple[Any, str]]) -> None:
    """Refuse, at its declaration, a 1-D on-chip tile (:func:`legacy_tile`) an instruction of the
    traced ``program`` touches (it was held as ``[P, 1]`` meanwhile)."""
    if flat:
        for inst, _loops in program.instructions():
            for access in (*inst.reads, *inst.writes):
                if access.tensor in flat:
                    where, message = flat[access.tensor]
                    raise NkiError(where, message)


def allocated_bias(tracer: Any, call: str, bias: Any) -> None:
    """The legacy errors page's ``err_bias_tensor_must_be_specified_in_allocation``: "Bias tensor of
    an activation op must be specified in allocated NKI kernels", ``nisa.activation`` and the
    ``nl.*`` functions that map to it (its example: ``nl.exp``); both ran (a probe)."""
    if bias is None and tracer.allocated and tracer.generation == "legacy":
        raise fail(f"{call} without a bias tile in a kernel that places its tiles itself: NKI's errors page "
                   "(err_bias_tensor_must_be_specified_in_allocation) asks an activation for a bias tensor in an "
                   "allocated kernel: call nisa.activation with bias= a placed [P, 1] tile of zeros")


def kernel_level(tracer: Any) -> None:
    """The legacy errors page's ``err_shared_hbm_must_in_kernel_level``: a ``shared_hbm``
    tensor is made in the kernel function's own body, not in a loop, under an ``if`` on the
    program's coordinates (the page's ``if nl.program_id(0) >= 1``) or in a function it calls.
    An ``if`` Python decides alike for every program is no branch of the compiled kernel (the
    shipped flash_fwd makes its ``lse`` output under ``if config.training:``).  (NKI 0.7 lifts
    the rule: nki-library makes them in helpers and loops.)"""
    frame = user_frame(2)
    if frame is None or (tracer.site is not None and tracer.site[1] == "return"):  # a returned tile's copy
        return
    where = None
    if tracer.loops or loops_at(frame.f_code, frame_line(frame)):
        where = "inside a loop"
    elif under_program_if(frame.f_code, frame_line(frame)):  # (the page's "under if condition": it ran, a probe)
        where = "under an if on the program's coordinates (nl.program_id)"
    else:
        caller, launched = frame.f_back, False
        while caller is not None and id(caller.f_code) not in ENTRY_CODES and _code_info(caller.f_code)[0]:
            launched |= id(caller.f_code) in KERNEL_CALLS  # a host function called this kernel
            caller = caller.f_back  # neuronsim's own frames between (a decorator's stand-in)
        if caller is not None and id(caller.f_code) not in ENTRY_CODES and not launched:
            where = f"in {frame.f_code.co_name}(), a function the kernel calls"
    if where:
        raise fail(f"a shared_hbm tensor made {where}: NKI makes shared_hbm tensors only at the kernel's top "
                   "level (err_shared_hbm_must_in_kernel_level); make it there and pass it in")



def _written_by_a_run(program: Program) -> set[str]:
    """The tensors some instruction that runs writes (none of whose loops has no trips)."""
    return {access.tensor for inst, loops in program.instructions() if all(loop.trip_count for loop in loops)
            for access in inst.writes}


def check_written(program: Program, values: Mapping[str, Any], results: list[Any], defined: SourceLine,
                  returned_at: SourceLine) -> None:
    """The legacy errors page's ``err_tensor_output_not_written_to``: a kernel must write an output,
    and a tensor it makes and returns must be written; most often a loop that never runs
    (``affine_range(M // N)`` with ``N > M``) holds the only store.  Refused at the output's
    declaration (else ``returned_at``, the kernel's return), or at ``defined``, the kernel's
    definition, when it has no output at all."""
    written = _written_by_a_run(program)
    for tile in results:
        tensor = tile.layout.tensor
        if tensor.name in values or tensor.memory != MemoryKind.DRAM or tensor.name in written:
            continue
        source = (tensor.extras or {}).get("x-source") or {}
        where = SourceLine(source["file"], source["line"]) if "file" in source else returned_at
        raise NkiError(where, f"the kernel returns {source.get('call', 'a tensor')} {tensor.name} and no "
                              "instruction that runs writes it (a loop that never runs, such as "
                              "affine_range(M // N) with N > M?): NKI refuses an output never written "
                              "(err_tensor_output_not_written_to)")
    if not results and not any(name in written for name in values):
        raise NkiError(defined, "the kernel has no output: it returns no tensor and no instruction "
                                          "that runs writes any of its parameters (a loop that never runs?); NKI "
                                          "refuses a kernel that writes no output (err_tensor_output_not_written_to)")


def check_mutable(program: Program, params: Mapping[str, inspect.Parameter], written: tuple[str, ...],
                  returned: list[str], defined: SourceLine, returned_at: SourceLine) -> None:
    """The legacy errors page on parameters: a kernel that returns its outputs may write a
    parameter only when it is annotated ``nt.mutable_tensor`` (``err_cannot_update_immutable_parameter``),
    and then returns it (``err_mutable_parameter_not_returned``).  A kernel that returns nothing
    writes its outputs into parameters, as ``nki.baremetal`` / ``nki_jit`` kernels are called."""
    for name in written:
        annotation = params[name].annotation if name in params else None
        spelled = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
        mutable = "mutable_tensor" in spelled
        if mutable and name not in returned:
            raise NkiError(returned_at, f"parameter {name} is an nt.mutable_tensor the kernel writes and does "
                                               "not return: NKI requires a mutable parameter among the returned "
                                               "tensors (err_mutable_parameter_not_returned)")
        if returned and not mutable:
            raise NkiError(_first_write(program, name) or defined,
                           f"the kernel writes its parameter {name}, which is immutable (NKI's parameters are, unless "
                           "annotated nt.mutable_tensor; err_cannot_update_immutable_parameter): annotate it, or copy "
                           "it into a new shared_hbm tensor and write that")


def _first_write(program: Program, name: str) -> SourceLine | None:
    """The kernel line of the first instruction writing tensor ``name``."""
    for inst, _loops in program.instructions():
        if any(access.tensor == name for access in inst.writes):
            source = dict(inst.extras or {}).get("x-source") or {}
            if "file" in source:
                return SourceLine(source["file"], source["line"])
    return None
