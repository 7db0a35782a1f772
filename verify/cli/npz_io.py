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
import zipfile
from collections.abc import Mapping

import numpy as np

from neuronsim.machine.ir.dtypes import DTYPES, numpy_dtype
from neuronsim.machine.formats.files import write_atomically

from neuronsim.verify.cli.common import UsageFailure

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
        return array.view(target)
    with np.errstate(all="ignore"):
        return array.astype(np.float64).astype(target) if array.dtype.kind == "f" else array.astype(target)


def _member(archive, name: str) -> np.ndarray:
    """One array of the archive; a header numpy cannot read back (``'<f1'``: how numpy saves an
    ``ml_dtypes`` float8_e5m2 array) is parsed here, the data kept as raw bytes."""
    _check_size(archive, name)
    try:
        value = archive[name]
    except ValueError as err:
        if "descr" not in str(err):
            raise
    else:
        if not isinstance(value, np.ndarray):  # a member without the .npy magic: numpy hands back its bytes
            raise ValueError(f"{name}: not an .npy array (the archive member holds other bytes)")
        return value
    with archive.zip.open(f"{name}.npy") as fh:
        version = np.lib.format.read_magic(fh)
        size = np.frombuffer(fh.read(2 if version[0] == 1 else 4), "<u2" if version[0] == 1 else "<u4")[0]
        header = ast.literal_eval(fh.read(int(size)).decode("latin1"))
        data = fh.read()
    if header.get("descr") not in RAW_FLOAT8 or header.get("fortran_order"):
        raise ValueError(f"{name}: unreadable array header {header!r}")
    return np.frombuffer(data, RAW_FLOAT8[header["descr"]]).reshape(header["shape"]).copy()


def _check_size(archive, name: str) -> None:
    """Refuse a member whose header claims more elements than its bytes hold (a corrupt or
    hand-made header would have numpy allocate them all first: 10**11 elements, out of memory)."""
    member = f"{name}.npy"
    if member not in archive.zip.namelist():
        return
    with archive.zip.open(member) as fh:
        try:
            version = np.lib.format.read_magic(fh)
            shape, _fortran, dtype = (np.lib.format.read_array_header_1_0(fh) if version == (1, 0) else
                                      np.lib.format.read_array_header_2_0(fh))
        except ValueError:
            return  # not an .npy header numpy reads: the member's own read says what is wrong
    claimed = int(np.prod(shape, dtype=object)) * dtype.itemsize
    held = archive.zip.getinfo(member).file_size
    if claimed > held:
        raise ValueError(f"{name}: its header says {tuple(shape)} {dtype} ({claimed:,} bytes), the archive holds "
                         f"{held:,} bytes of it")


def read_npz(path, option: str, named: Mapping[str, str] | None = None,
             tensor_dtypes: Mapping[str, str] | None = None) -> dict[str, np.ndarray]:
    """The arrays of the archive at ``path`` by name, raw bf16 / fp8 ones typed (module doc);
    ``named`` (``--dtype``) converts any array to the dtype it names."""
    named, tensor_dtypes = dict(named or {}), dict(tensor_dtypes or {})
    where = path if isinstance(path, str) else "the archive"
    try:
        archive = np.load(path, allow_pickle=False)
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise UsageFailure(f"{where} holds a single array; expected an .npz archive of named arrays", option)
        with archive:
            raw = {name: _member(archive, name) for name in archive.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
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
