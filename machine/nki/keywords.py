"""Keywords an NKI call does not take: a misspelt ``mask=`` is said, not swallowed.

NKI's API functions end in ``**kwargs`` (the API reference prints
``nki.language.sign(x, *, dtype=None, mask=None, **kwargs)``), and so do neuronsim's: keywords
of another NKI version, or ones only the compiler reads (``perf_mode``, ``dge_mode``), pass
through a trace unused.  A misspelt keyword passed through too, and the call ran without it:
``nl.load(x[...], maks=m)`` loaded every row, and the run's outputs differed from the reference
with no line named.

The tracer asks :func:`misspelt` about each keyword a call's own parameters do not name.  The
answer is the parameter probably meant, when the keyword is no NKI keyword at all (neither a
parameter of any NKI call neuronsim models nor one of :data:`OTHER_NKI_KEYWORDS`) and is close
to one of the call's parameters (:func:`difflib.get_close_matches`, ratio at least 0.75).  A
keyword far from every parameter is left alone: it is more likely an option of an NKI version
neuronsim has not read than a slip of the fingers, except on a call of the ``nki`` API (NKI
0.7), where a keyword no NKI call takes at all is said too.  The run says it as a warning at the call's
line (``keyword`` in ``docs/nki-checks.md``); nothing fails, as on NKI.  One keyword is said
whatever its spelling: ``dst=`` given to a legacy ``neuronxcc.nki`` call, which returns its
result (:func:`legacy_dst_text`).

>>> register(("src", "mask", "dtype"))
>>> misspelt("maks", ("src", "mask", "dtype"))
'mask'
>>> misspelt("perf_mode", ("src", "mask", "dtype")) is None   # a keyword NKI has
True
>>> misspelt("colour", ("src", "mask", "dtype")) is None      # close to nothing of the call
True
"""

from __future__ import annotations

import functools
import inspect
import linecache
import re
from collections.abc import Callable, Iterable
from difflib import get_close_matches

import numpy as np

from neuronsim.machine.nki.errors import NkiError, fail, shown as _shown

__all__ = ["OTHER_NKI_KEYWORDS", "register", "misspelt", "warning_for", "warning_text", "legacy_dst_text",
           "dst_first_hint"]

#: Keywords of real NKI calls that no function of neuronsim's API names as a parameter: options
#: neuronsim ignores (compiler directives, profiling, another version's spelling).  Gathered from
#: the keywords the public kernels of the NKI corpus pass (nki-library, nki-samples, the SDK's
#: NKI folders) and from the API reference's signatures and parameter lists, releases 2.20-2.33.
OTHER_NKI_KEYWORDS = frozenset({
    "_dtype", "additional_compile_opt", "address_rotation", "allow_nested_config_override", "arr",
    "artifacts_dir", "asynchronous", "barrier_check", "base_addr", "base_bank", "base_partition", "block_shape",
    "body_fun", "bound0", "bound1", "comp_op0", "comp_op1", "compile_config", "dead_code_elim", "debug_kernel",
    "dim", "dims", "directives", "dst_idx", "dst_pattern", "dst_scale", "element_shape", "end", "end_dim",
    "experimental_flags", "factor", "fixed_sizes", "fn", "frozen", "func", "function_name", "handle",
    "has_rdispls", "idx_dst", "imm0", "imm1", "index", "index_offset", "indirect_dim", "init", "input_data",
    "iters", "kernel", "kernel_name", "lib_file_name", "log_level", "lower", "max", "max_value",
    "metadata_tensor", "min", "mode", "moving_scale", "neg_max", "new_shape", "nki_alloc_fallback",
    "non_ssa_legalization", "num_bank_tiles", "num_channels", "num_elem", "num_elem_per_idx", "num_free_tiles",
    "num_par_tiles", "num_valid_indices", "on_false", "on_true", "operand", "out", "overwrite", "padding_val",
    "parallel_reduce", "platform_target", "precise_schedule", "predicate", "prefetch_auto", "prefix",
    "print_prefix", "prob", "producers", "profile_nth", "program_axes", "psum_accumulate_flag", "range_start",
    "recip", "recv_counts_known", "relu_param", "reverse_pred", "save_neff_name", "save_trace_name",
    "scalar_offset", "segment_ids", "show_compiler_tb", "shuffle_mask", "size", "source", "source_target_pairs",
    "specialization_config", "src_buffer", "src_pattern", "src_seeds", "start", "start_dim", "state",
    "stationary_scale", "step", "stop", "storage", "tensor", "tile_shape", "transpose_axes",
    "ulib_to_isa_version", "ulib_to_ucode_version", "upper", "val_dst", "vals", "vector_offset", "warmup",
    "working_directory", "world_size",
})

_KNOWN: set[str] = set(OTHER_NKI_KEYWORDS)
#: How close a keyword must be to a parameter to be called its misspelling (difflib's ratio).
_CLOSE = 0.75


def register(parameters: Iterable[str]) -> None:
    """Count ``parameters`` (one NKI call's) among the keywords NKI has."""
    _KNOWN.update(parameters)


def misspelt(keyword: str, parameters: tuple[str, ...]) -> str | None:
    """The parameter of ``parameters`` that ``keyword`` (not one of them) probably misspells, or
    None (see the module doc)."""
    if keyword in _KNOWN:
        return None
    close = get_close_matches(keyword, parameters, n=1, cutoff=_CLOSE)
    return close[0] if close else None


def warning_for(call: str, keyword: str, parameters: tuple[str, ...], legacy: bool) -> str | None:
    """The warning a call's ``keyword`` (none of its ``parameters``) deserves, or None: ``dst=``
    to a ``legacy`` call whatever else is spelt, else a misspelling of one of ``parameters``;
    given to a call of the ``nki`` API (not ``legacy``), also a keyword no NKI call takes at all
    (``bogus=``), however far from the call's parameters.  A keyword some NKI call takes is left
    alone: the SDK's own tutorials pass ``dtype=`` to ``nisa.tensor_copy``, whose published
    signature has none.

    >>> warning_for("nl.load", "perf_mode", ("src", "mask", "dtype"), legacy=True) is None
    True
    >>> warning_for("nisa.tensor_copy", "bogus", ("dst", "src", "engine", "name"), legacy=False)[:45]
    "nisa.tensor_copy: keyword 'bogus' is no keywo"
    """
    if keyword == "dst" and legacy:
        return legacy_dst_text(call)
    meant = misspelt(keyword, parameters)
    if meant is not None:
        return warning_text(call, keyword, meant)
    if not legacy and keyword not in _KNOWN:
        return (f"{call}: keyword {keyword!r} is no keyword of any NKI call (its parameters: {', '.join(parameters)}); "
                f"the call ran without it")
    return None


def warning_text(call: str, keyword: str, meant: str) -> str:
    """The warning's words (the line is the caller's)."""
    return (f"{call}: keyword {keyword!r} is no parameter of {call} (did you mean {meant!r}?); NKI's **kwargs take "
            f"it, so the call ran without it")


def legacy_dst_text(call: str) -> str:
    """The warning for ``dst=`` given to a legacy call that returns its result: the NKI 0.7
    form (``import nki.isa``) writes into ``dst``, the ``neuronxcc.nki`` one does not, so the
    tile named there is left as it was."""
    return (f"{call}: the neuronxcc.nki call returns its result and takes no dst= (the nki.isa form of NKI 0.7 "
            f"does), so the call ran without it and the tile named there is left unwritten: assign the result "
            f"(t[...] = {call}(...)), or import nki.isa")


def dst_first_hint(name: str, signature: inspect.Signature, args: tuple, kwargs: dict,
                   written: Callable[[str], bool]) -> str:
    """A hint for a call that failed: an NKI 0.7 ``nisa`` call takes its output first, and a
    kernel written for the legacy API passes its arguments one place early (KLR's
    ``nisa.tensor_scalar(a_tile, np.add, 1.0)`` under ``import nki``), or by keyword without a
    ``dst`` (``nisa.nc_matmul(stationary=a, moving=b)``).  Said only when the first argument
    cannot be the output (not a tile, or a tile that already holds values: a ``dst`` is most
    often a fresh one: ``written(name)`` says whether the trace wrote a tensor) and the same
    arguments bind once a ``dst`` goes first."""
    names = [n for n, p in signature.parameters.items() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    stray = [k for k in kwargs if k not in names]  # taken by the call's **kwargs, so the call lacks what they meant
    if stray:  # (`tensor_copy(dst_tile=u, ...)` was told to put dst first, its keyword never named: a probe)
        meant = get_close_matches(stray[0], names, n=1, cutoff=_CLOSE) or [
            n for n in names if stray[0].startswith(n + "_") or n.startswith(stray[0] + "_")][:1]  # dst_tile, dst
        return (f" (keyword {stray[0]!r} is no parameter of {name}"
                + (f": did you mean {meant[0]!r}?)" if meant else ")"))
    if not name.startswith("nisa.") or not names or names[0] != "dst" or "dst" in kwargs or not (args or kwargs):
        return ""
    tensor = getattr(getattr(args[0], "layout", None), "tensor", None) if args else None
    if tensor is not None and not written(tensor.name):
        return ""
    try:
        signature.bind(None, *args, **kwargs)
    except TypeError:
        return ""
    return (f" ({name} of NKI 0.7, `import nki`, writes its output first: {name}(dst, {', '.join(names[1:3])}, ...);"
            " the form that returns the result is neuronxcc.nki's)")


#: Parameters that take a tile (or a number), never an operator: ``nisa.tensor_scalar(nl.add, x,
#: 1.0)`` passes the op where the data goes.
_OPERANDS = frozenset({"data", "data0", "data1", "data2", "src", "stationary", "moving", "on_true_tile", "x", "y",
                       "in_", "dst"})


#: What a failing call's Python error says it was handed: the type it names (the pattern's group,
#: or the type given when the message names none), and what went there instead.
_WRONG_TYPE = (
    (re.compile(r"^'([\w.]+)' object has no attribute '(?:shape|dtype|layout|broadcast_to|reshape|buffer|ndim)'$"),
     None, "a tile"),
    (re.compile(r"^'([\w.]+)' object cannot be interpreted as an integer$"), None, "an integer"),
    (re.compile(r"^(?:int|float)\(\) argument must be .*, not '([\w.]+)'$"), None, "a number"),
    (re.compile(r"^unhashable type: '([\w.]+)'$"), None, "a single value"),
    (re.compile(r"^'([\w.]+)' object is not iterable$"), None, "a sequence"),
    (re.compile(r'^can only concatenate \w+ \(not "([\w.]+)"\)'), None, "a number"),
    (re.compile(r'^can only concatenate (\w+) \(not'), None, "a number"),
    (re.compile(r"^unsupported operand type\(s\) for .+: '[\w.]+' and '([\w.]+)'$"), None, "a number"),
    (re.compile(r"^unsupported operand type\(s\) for .+: '([\w.]+)' and '[\w.]+'$"), None, "a number"),
    (re.compile(r"^'([\w.]+)' object has no attribute '\w+'$"), None, None),
    (re.compile(r"^The truth value of an array with more than one element is ambiguous"), "numpy.ndarray",
     "a single value"),
    (re.compile(r"^only 0-dimensional arrays can be converted to Python scalars$"), "numpy.ndarray", "a number"),
    (re.compile(r"^(?:operands could not be broadcast together|ufunc '\w+' did not contain a loop)"),
     "numpy.ndarray", "a number"),
    (re.compile(r"^(?:invalid literal for int\(\)|not all arguments converted during string formatting)"), "str",
     "a number"),
)


def _type_names(value: object) -> set[str]:
    """The names a Python error may give ``value``'s type, or its parts' (the items of a list or
    a tuple, nested, a slice's bounds, an array's elements, each used one by one): ``list``,
    ``numpy.ndarray``, ``numpy.float64``; every base class's too (nl.float32 is a str)."""
    kinds, stack = [], [(value, 0)]
    while stack:
        item, depth = stack.pop()
        kinds.append(type(item))
        if isinstance(item, np.ndarray):
            kinds.append(item.dtype.type)
        elif isinstance(item, slice):
            stack.extend((bound, depth) for bound in (item.start, item.stop, item.step))
        elif isinstance(item, (list, tuple)) and depth < 3:
            stack.extend((part, depth + 1) for part in item)
    return {name for kind in kinds for base in kind.__mro__[:-1]
            for name in (base.__name__, f"{base.__module__.split('.')[0]}.{base.__name__}")}


def misplaced_operator(signature: inspect.Signature, args: tuple, kwargs: dict,
                       err: BaseException | None = None) -> str | None:
    """What a call that failed was handed where a tile goes: a function (an operator such as
    ``nl.add``) bound to an operand parameter, said with the call's parameters, or an index
    vector (``nl.arange(64)[None, :]``, whose values only arithmetic, ``nl.copy`` and
    ``nl.broadcast_to`` make a tile of); or, when ``err`` (the Python error the call raised)
    names the type of an argument it could not use (``nl.sum([t, t])``: "'list' object has no
    attribute 'shape'"), that argument; else None.  A tile the call could not use as a tile
    is neuronsim's own error, never blamed on the kernel."""
    try:
        bound = signature.bind_partial(*args, **kwargs).arguments
    except TypeError:
        return None
    for param, value in bound.items():
        if param in _OPERANDS and type(value).__name__ == "ArangeExpr":  # (indexing imports this module's users)
            return f"{param} is an index vector (nl.arange), where the call takes a tile: make a tile of its values " \
                   f"first (nl.copy({param}), or nisa.iota)"
        if param in _OPERANDS and callable(value) and not hasattr(value, "shape"):
            shown = getattr(value, "nki_name", None) or getattr(value, "__name__", repr(value))
            named = [p for p, about in signature.parameters.items() if about.kind not in (about.VAR_POSITIONAL,
                                                                                          about.VAR_KEYWORD)]
            return f"{param} is the operator {shown}, where the call takes a tile (its parameters: {', '.join(named)})"
    for pattern, given, wanted in _WRONG_TYPE if err is not None else ():
        found = pattern.match(str(err))
        culprit = (given or found.group(1)) if found else None
        if culprit is None or (culprit == "NkiTensor" and wanted == "a tile") or \
                (wanted == "a number" and culprit in ("int", "float", "bool")):  # (a number beside the odd one)
            continue
        suspects = [(name, item) for param, value in bound.items() if param != "self"  # (a method's own tile)
                    for name, item in (value if isinstance(value, dict) else {param: value}).items()  # (**kwargs)
                    if culprit in _type_names(item)]
        failed = _failing_line(err)  # of two lists (.ap's pattern and offset), the one the failing line names
        suspects.sort(key=lambda suspect: re.search(rf"\b{re.escape(suspect[0])}\b", failed) is None)
        if suspects:
            name, item = suspects[0]
            return f"{name} is {_shown(item)}, " + \
                (f"where the call takes {wanted}" if wanted else "which the call cannot use there")
    return None


def _failing_line(err: BaseException) -> str:
    """The source line of the innermost frame ``err`` was raised in ("" when unknown)."""
    tb = err.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno) if tb is not None else ""


def kernel_arguments(method: Callable, name: str | None = None) -> Callable:
    """``method`` (a tile's view method, its indexing, ``nl.ds``) with the Python errors its
    arguments cause said as the kernel's mistake at the kernel's line, as an NKI call's are
    (:func:`misplaced_operator`): ``t.select(p, 1)`` says "dim is NkiTensor, where the call
    takes a number", not an internal error.  Anything it cannot blame on an argument is
    raised as it was."""
    signature = inspect.signature(method)
    shown_as = name or f".{method.__name__}()"

    @functools.wraps(method)
    def checked(*args: object, **kwargs: object) -> object:
        try:
            return method(*args, **kwargs)
        except NkiError:
            raise
        except (TypeError, AttributeError, ValueError) as err:
            if type(err) is TypeError and err.__traceback__ is not None and err.__traceback__.tb_next is None:
                raise fail(f"{shown_as}: {err}") from None  # the call itself did not fit (an argument missing)
            misplaced = misplaced_operator(signature, args, kwargs, err)
            if misplaced is None:
                raise
            raise fail(f"{shown_as}: {misplaced}") from None

    return checked
