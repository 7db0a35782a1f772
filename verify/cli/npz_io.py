"""Arrays in and out of ``.npz`` archives, bf16 and fp8 included.

numpy has no bf16 or fp8 dtype of its own: an ``ml_dtypes`` array saved with ``np.savez``
comes back as raw bytes, a 2-byte (``|V2``) or 1-byte (``|V1``) void array.  Read here, such
an array takes the dtype named for it (``--dtype NAME=float8_e5m2``), else the dtype of the
program tensor of that name, else ``bfloat16`` (2 bytes) or ``float8_e4m3`` (1 byte), as a
kernel author who saved ``ml_dtypes`` arrays means.  numpy saves a float8_e5m2 array with a
header it cannot read back (``'<f1'``); it is read as float8_e5m2.  Every failure is a located
:class:`~neuronsim.verify.cli.common.UsageFailure` (exit 2).

>>> import io, ml_dtypes, numpy as np
>>> buf = io.BytesIO(); np.savez(buf, a=np.ones(3, ml_dtypes.bfloat16), b=np.zeros(2, np.float32)); _ = buf.seek(0)
>>> arrays = read_npz(buf, "--inputs")
>>> arrays["a"].dtype.name, arrays["b"].dtype.name
('bfloat16', 'float32')
"""

from __future__ import annotations

import ast
import io
import lzma
import math
import zipfile
import zlib
from collections.abc import Mapping

import click
import numpy as np

from neuronsim.machine.formats.files import write_atomically
from neuronsim.machine.formats.inputs import special_file
from neuronsim.machine.ir.dtypes import DTYPES, PACKED, not_held, numpy_dtype
from neuronsim.machine.nki.dtypes import packed_array
from neuronsim.verify.app.host import available_memory, format_bytes, machine_memory
from neuronsim.verify.cli.common import MAX_MEMORY_KEY, UsageFailure

__all__ = ["read_npz", "write_npz", "parse_dtype_options", "DEFAULT_VOID"]

#: The dtype of a raw ``|V2`` / ``|V1`` array nothing else names.
DEFAULT_VOID = {2: "bfloat16", 1: "float8_e4m3"}
#: Headers numpy writes for an ``ml_dtypes`` array but cannot read back, and what they hold.
RAW_FLOAT8 = {"<f1": numpy_dtype("float8_e5m2"), "|f1": numpy_dtype("float8_e5m2")}


def parse_dtype_options(items: tuple[str, ...] | list[str], option: str = "--dtype") -> dict[str, str]:
    """``("x=bfloat16", ...)`` as ``{"x": "bfloat16"}``; a bad item or dtype is exit 2.

    >>> parse_dtype_options(["q=float8_e5m2"])
    {'q': 'float8_e5m2'}
    """
    out = {}
    for item in items:
        name, sep, dtype = item.partition("=")
        if not sep or not name:
            raise UsageFailure(f"expected NAME=DTYPE, got {item!r}", option)
        if dtype not in DTYPES:
            raise UsageFailure(f"{name}: unknown dtype {dtype!r}; expected one of {', '.join(DTYPES)}", option)
        if name in out:  # (the last silently won, where --arg refuses the same repetition: a probe)
            raise UsageFailure(f"{name} is given twice", option)
        out[name] = dtype
    return out


def _typed(name: str, array: np.ndarray, named: Mapping[str, str], tensor_dtypes: Mapping[str, str],
           option: str) -> np.ndarray:
    if not array.dtype.isnative:  # saved on (or for) a big-endian machine: the same numbers, in this one's order
        array = array.astype(array.dtype.newbyteorder("="))
    if array.dtype.kind in "USOMmc":  # text, objects, datetimes, complex: no tensor holds them (tracing would fail
        # deep inside, or numpy would drop the imaginary parts with a warning)
        raise UsageFailure(f"{name}: an array of {array.dtype} in the archive; tensors hold real numbers (bool, "
                           f"integer or float dtypes)", option)
    if array.dtype.kind != "V" and name not in named:
        return array
    dtype = named.get(name) or tensor_dtypes.get(name) or DEFAULT_VOID.get(array.dtype.itemsize)
    if dtype is None:
        raise UsageFailure(f"{name}: a raw {array.dtype.itemsize}-byte array; say its dtype with --dtype "
                           f"{name}=DTYPE", option)
    target = numpy_dtype(dtype)
    if array.dtype.kind == "V":
        if array.dtype.itemsize != target.itemsize:
            raise UsageFailure(f"{name}: a raw {array.dtype.itemsize}-byte array cannot be read as {dtype} "
                               f"({target.itemsize} bytes)", option)
        array = array.view(target)
    if dtype in PACKED:  # integer words of four narrow floats: the kernel sees a tensor of the packed type
        try:
            return packed_array(array, dtype)
        except ValueError as err:
            raise UsageFailure(f"{name}: {err}", option) from None
    if array.dtype == target:
        return array
    why = not_held(array, dtype)  # (wrapped by numpy, 668.4 as int8 was -100: refused, as an int64 argument is)
    if why is not None:
        raise UsageFailure(f"{name}{why}: converting {array.dtype} to {dtype} would change it", "--dtype")
    with np.errstate(all="ignore"):
        return array.astype(np.float64).astype(target) if array.dtype.kind == "f" else array.astype(target)


#: numpy's own bound on an ``.npy`` header (its ``max_header_size``): a longer one is not parsed.
MAX_HEADER_BYTES = 10_000
#: The compression methods Python's zipfile reads; any other raised NotImplementedError.
READABLE_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate", zipfile.ZIP_BZIP2: "bzip2",
                    zipfile.ZIP_LZMA: "lzma"}
#: What a member whose compressed bytes are damaged raises as it is read (bz2: an OSError).
DAMAGED = (zlib.error, lzma.LZMAError, EOFError, zipfile.BadZipFile, OSError)
_HEADER_KEYS = {"descr", "fortran_order", "shape"}


def _check_members(archive: zipfile.ZipFile, where: str, option: str) -> None:
    """Refuse, before a byte of data is decompressed, a member that cannot be read (encrypted,
    compressed by a method zipfile lacks) and an archive whose members, as their entries
    declare them, decompress past the memory the command may use (a deflate bomb: 4 MB that
    unpack to 4 GB).  zipfile never reads a member past its declared size, so the declared
    sizes bound what is read."""
    limit, whose = _memory_limit()
    total = 0
    seen: set[str] = set()
    for info in archive.infolist():
        name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename  # numpy's name for it
        if name in seen:  # np.load would take one of them silently (probe_bad U4; x.npy and x: probe_ad)
            raise ValueError(f"{info.filename}: two members of one name; which array is meant is unknown (save "
                             "the arrays with numpy.savez)")
        seen.add(name)
        if info.flag_bits & 0x1:
            raise ValueError(f"{info.filename}: an encrypted member (password-protected); save the arrays with "
                             "numpy.savez")
        if info.compress_type not in READABLE_METHODS:
            raise ValueError(f"{info.filename}: compressed with method {info.compress_type}; readable are "
                             f"{', '.join(READABLE_METHODS.values())}")
        total += info.file_size
        if limit is not None and total > limit:
            held = f"{info.file_size:,} bytes" if total == info.file_size else \
                f"{total:,} bytes with the members before it"
            raise UsageFailure(f"cannot read {where}: {info.filename} decompresses to {held} "
                               f"({format_bytes(total)}), more than {format_bytes(limit)} ({whose}); not read: "
                               f"raise it with --max-memory SIZE", option)


def _memory_limit() -> tuple[int | None, str]:
    """The most the arrays may decompress to, and whose limit it is: ``--max-memory`` when the
    command was given it, else the memory this machine has available now."""
    context = click.get_current_context(silent=True)
    given = context.meta.get(MAX_MEMORY_KEY) if context is not None else None
    if given is not None:
        return given, "--max-memory"
    limits = [m for m in (machine_memory(), available_memory()) if m is not None]
    return (min(limits) if limits else None), "this machine's available memory"


def _member(archive: zipfile.ZipFile, name: str, names: frozenset[str]) -> np.ndarray:
    """One array of the archive (``names``: its members), read here from its ``.npy`` header,
    never unpickled: numpy's loader cannot read back the header it writes for an ``ml_dtypes``
    float8_e5m2 array (``'<f1'``), and it allocates whatever shape a header claims first."""
    member = name if name in names else f"{name}.npy"
    try:
        with archive.open(member) as fh:
            shape, fortran, dtype = _header(fh, name)
            claimed = math.prod(shape) * dtype.itemsize
            held = archive.getinfo(member).file_size
            if claimed > held:  # a corrupt or hand-made header: 10**11 elements claimed, out of memory
                raise ValueError(f"{name}: its header says {shape} {dtype} ({claimed:,} bytes), the archive holds "
                                 f"{held:,} bytes of it")
            data, got = _read_into(fh, claimed)
    except DAMAGED as err:  # (zlib's and lzma's errors name no member)
        raise ValueError(f"{name}: its compressed data is damaged ({str(err) or type(err).__name__})") from None
    if got < claimed:
        raise ValueError(f"{name}: the member ends {claimed - got:,} bytes short of its header's {shape} {dtype}")
    return np.frombuffer(data, dtype).reshape(shape, order="F" if fortran else "C")


def _read_into(fh, size: int, chunk: int = 1 << 24) -> tuple[bytearray, int]:
    """``size`` bytes of ``fh`` in one buffer, and how many it held: read in chunks into it, so
    a large array costs its own size once (``fh.read(size)`` joined its pieces: twice)."""
    buffer = bytearray(size)
    view, got = memoryview(buffer), 0
    while got < size:
        piece = fh.read(min(chunk, size - got))
        if not piece:
            break
        view[got:got + len(piece)] = piece
        got += len(piece)
    return buffer, got


def _header(fh, name: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    """``(shape, fortran_order, dtype)`` of the ``.npy`` header at ``fh``, each checked."""
    try:
        version = np.lib.format.read_magic(fh)
    except ValueError:
        raise ValueError(f"{name}: not an .npy array (the archive member holds other bytes)") from None
    if version not in ((1, 0), (2, 0), (3, 0)):
        raise ValueError(f"{name}: an .npy array of format version {version[0]}.{version[1]}; numpy writes 1.0 to 3.0")
    width = 2 if version[0] == 1 else 4
    length = int.from_bytes(fh.read(width), "little")
    if length > MAX_HEADER_BYTES:
        raise ValueError(f"{name}: an .npy header of {length:,} bytes; numpy's are at most {MAX_HEADER_BYTES:,}")
    try:
        header = ast.literal_eval(fh.read(length).decode("latin1" if version < (3, 0) else "utf-8"))
    except (SyntaxError, ValueError, TypeError, RecursionError, MemoryError):  # (nesting: the parser's limits)
        raise ValueError(f"{name}: its .npy header is not a Python literal numpy writes") from None
    if not isinstance(header, dict) or set(header) != _HEADER_KEYS:
        raise ValueError(f"{name}: its .npy header is {_kind(header)}, not a dict of 'descr', 'fortran_order' "
                         f"and 'shape'")
    shape, fortran = header["shape"], header["fortran_order"]
    if not isinstance(shape, tuple) or not all(type(n) is int and n >= 0 for n in shape):
        raise ValueError(f"{name}: its .npy header's shape is not a tuple of sizes")
    if not isinstance(fortran, bool):
        raise ValueError(f"{name}: its .npy header's fortran_order is not true or false")
    return shape, fortran, _dtype(header["descr"], name)


def _dtype(descr, name: str) -> np.dtype:
    """The dtype an ``.npy`` header's ``descr`` names; one holding Python objects is refused
    (reading it would unpickle)."""
    if isinstance(descr, str) and descr in RAW_FLOAT8:
        return RAW_FLOAT8[descr]
    try:
        dtype = np.lib.format.descr_to_dtype(descr)
    except (TypeError, ValueError, KeyError, IndexError, RecursionError):
        raise ValueError(f"{name}: its .npy header names no dtype numpy knows") from None
    if dtype.hasobject:
        raise ValueError(f"{name}: an array of Python objects, which is read by unpickling; neuronsim does not")
    if dtype.itemsize == 0:
        raise ValueError(f"{name}: an array of {dtype}, whose elements hold no bytes")
    return dtype


def _kind(value) -> str:
    """``value``'s kind for a message (a header's text may be 10,000 characters)."""
    if isinstance(value, dict):
        return f"a dict of {', '.join(sorted(repr(k)[:20] for k in value)[:4]) or 'nothing'}"
    return f"a {type(value).__name__}"


def read_npz(path, option: str, named: Mapping[str, str] | None = None,
             tensor_dtypes: Mapping[str, str] | None = None) -> dict[str, np.ndarray]:
    """The arrays of the archive at ``path`` by name, raw bf16 / fp8 ones typed (module doc);
    ``named`` (``--dtype``) converts any array to the dtype it names.  A path that is not a
    regular file (a FIFO would wait for a writer for ever) is refused before it is opened, and
    an archive whose members decompress past the command's memory before they are read."""
    named, tensor_dtypes = dict(named or {}), dict(tensor_dtypes or {})
    where = path if isinstance(path, str) else "the archive"
    kind = special_file(path) if isinstance(path, str) else None
    if kind is not None:
        raise UsageFailure(f"cannot read {where}: it is {kind}, not an .npz archive file", option)
    try:
        archive = np.load(path, allow_pickle=False)
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise UsageFailure(f"{where} holds a single array; expected an .npz archive of named arrays", option)
        with archive:
            _check_members(archive.zip, where, option)
            names = frozenset(archive.zip.namelist())
            raw = {name: _member(archive.zip, name, names) for name in archive.files}
    except (ValueError, *DAMAGED) as err:
        # numpy reads a file that is neither .npz nor .npy as a pickle, and advises unpickling it
        reason = "not an .npz archive (nor an .npy array)" if "pickled" in str(err) else str(err)
        raise UsageFailure(f"cannot read {where}: {reason}", option) from None
    unknown = sorted(set(named) - set(raw))
    if unknown:
        raise UsageFailure(f"{unknown[0]}: no array of that name in {where} (it has {', '.join(sorted(raw))})",
                           "--dtype")
    return {name: _read_only(_typed(name, array, named, tensor_dtypes, option)) for name, array in raw.items()}


def _read_only(array: np.ndarray) -> np.ndarray:
    """``array`` and every array it views made read-only: the command's own copy of the
    inputs, which no stage writes, so a trace takes it as it is (no second copy)."""
    held = array
    while isinstance(held, np.ndarray):
        held.flags.writeable = False
        held = held.base
    return array


def write_npz(path: str, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays`` to ``path`` atomically (bf16 / fp8 as numpy saves them: raw bytes)."""
    buffer = io.BytesIO()
    np.savez(buffer, **{name: np.asarray(a) for name, a in arrays.items()})
    write_atomically(path, lambda fh: fh.write(buffer.getvalue()))
