"""``--inputs`` archives a probe found escaping the contract (one ``error:`` line naming
``--inputs``, the file and the member, exit 2; never exit 3, never a hang): members that
decompress past ``--max-memory`` (refused before a byte is decompressed: a 4 MB archive
reached 8.4 GB), malformed containers (damaged deflate data, an encrypted member, an unknown
compression method, ``.npy`` headers nested too deep or not a dict), and a path that is a FIFO
or a directory.  Archives are made small in ``tmp_path``; runs go through click's test runner,
but a run that would hang on a FIFO, which is the console script's with a timeout.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

from neuronsim_tests.bad_inputs import COPY_KERNEL as KERNEL
from neuronsim_tests.bad_inputs import VALID
from neuronsim_tests.bad_inputs import refused_in_one_line as _refused

NEURONSIM = Path(sys.executable).with_name("neuronsim")


def _program(tmp_path: Path, doc: dict = VALID) -> str:
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    return str(path)


def _npy(header: bytes | str, body: bytes = b"", version: int = 1) -> bytes:
    """An ``.npy`` member with the header text ``header`` as it is (numpy's writer would check it)."""
    text = header.encode("latin1") if isinstance(header, str) else header
    width = 2 if version == 1 else 4
    return b"\x93NUMPY" + bytes([version, 0]) + len(text).to_bytes(width, "little") + text + body


def _archive(path: Path, member: bytes, method: int = zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("x.npy", member, compress_type=method)
    return path


def _patched(path: Path, local: int, central: int, value: int) -> None:
    """Set the 2-byte field at ``local`` / ``central`` bytes into the member's local and central
    headers (flags: 6 / 8, method: 8 / 10) to ``value``: what zipfile itself will not write."""
    data = bytearray(path.read_bytes())
    for signature, at in ((b"PK\x03\x04", local), (b"PK\x01\x02", central)):
        start = data.index(signature)
        data[start + at:start + at + 2] = value.to_bytes(2, "little")
    path.write_bytes(bytes(data))


# -- an archive that decompresses past the memory the command may use -----------------------

ZEROS = 8 << 20  # 8 MiB of zeros: 8 KB deflated


@pytest.mark.parametrize("descr, shape", [("<f4", (ZEROS // 4,)), ("<f1", (2,))],
                         ids=["deflate-bomb", "f1-header-short"])
def test_an_archive_decompressing_past_max_memory_is_refused_before_it_is_read(tmp_path, descr, shape):
    member = _npy(f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}".ljust(117) + "\n",
                  bytes(ZEROS))
    archive = _archive(tmp_path / "bomb.npz", member, zipfile.ZIP_DEFLATED)
    assert archive.stat().st_size < ZEROS // 100
    _refused(["simulate", _program(tmp_path), "--inputs", str(archive), "--max-memory", "1M"],
             "--inputs: cannot read", "bomb.npz", "x.npy decompresses to", "--max-memory")


# -- malformed archives ---------------------------------------------------------------------

def _corrupt_deflate(path: Path) -> Path:
    _archive(path, b"\xff" * 64)  # stored, then called deflated: 0xff opens a block of the reserved type
    _patched(path, 8, 10, zipfile.ZIP_DEFLATED)
    return path


def _encrypted(path: Path) -> Path:
    _archive(path, _npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", bytes(8)))
    _patched(path, 6, 8, 0x1)
    return path


def _method99(path: Path) -> Path:
    _archive(path, _npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n", bytes(8)))
    _patched(path, 8, 10, 99)
    return path


def _twice(path: Path) -> Path:
    """Two members named x.npy (zipfile warns and writes both): np.load took the second silently."""
    with zipfile.ZipFile(path, "w") as zf, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for value in (0, 1):
            header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n"
            zf.writestr("x.npy", _npy(header, bytes([value]) * 8))
    return path


def _named_with_and_without_npy(path: Path) -> Path:
    """Members x.npy and x, both of which numpy lists as x."""
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("x.npy", _npy(header, bytes(8)))
        zf.writestr("x", _npy(header, bytes([1]) * 8))
    return path


MALFORMED = {
    "corrupt-deflate": (_corrupt_deflate, "compressed data is damaged"),
    "encrypted": (_encrypted, "x.npy: an encrypted member"),
    "method-99": (_method99, "x.npy: compressed with method 99"),
    "one-name-twice": (_twice, "x.npy: two members of one name"),
    "x-and-x.npy": (_named_with_and_without_npy, "x: two members of one name"),
    "header-nested-deep": (lambda p: _archive(p, _npy("{'descr': " + "(" * 200 + ")" * 200 + "}\n")),
                           "x: its .npy header is not a Python literal"),
    "header-a-list": (lambda p: _archive(p, _npy("['descr']\n")), "x: its .npy header is a list"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_archive_is_one_line(tmp_path, case):
    make, words = MALFORMED[case]
    archive = make(tmp_path / f"{case}.npz")
    line = _refused(["simulate", _program(tmp_path), "--inputs", str(archive)], "--inputs: cannot read", words)
    assert f"{case}.npz" in line


def test_a_malformed_archive_is_one_line_for_a_kernel_and_under_json(tmp_path):
    from click.testing import CliRunner

    from neuronsim.verify.cli import cli

    (tmp_path / "k.py").write_text(KERNEL)
    archive = _method99(tmp_path / "m.npz")
    _refused(["nki", f"{tmp_path}/k.py::cp", "--inputs", str(archive), "-o", str(tmp_path / "o.json")],
             "--inputs: cannot read", "compressed with method 99")
    result = CliRunner().invoke(cli, ["simulate", _program(tmp_path), "--inputs", str(archive), "--json"])
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert doc["format"] == "neuronsim.error/1" and doc["path"] == "--inputs" and not doc["internal"]
    assert not (tmp_path / "o.json").exists()


def test_a_well_formed_archive_still_reads(tmp_path):
    from neuronsim.verify.cli.npz_io import read_npz

    buffer = io.BytesIO()
    np.savez_compressed(buffer, a=np.arange(6, dtype=">i4").reshape(2, 3), b=np.asfortranarray(np.eye(3)))
    arrays = read_npz(io.BytesIO(buffer.getvalue()), "--inputs")
    assert arrays["a"].tolist() == [[0, 1, 2], [3, 4, 5]] and arrays["b"].tolist() == np.eye(3).tolist()


# -- an archive path that is a FIFO, or a directory --------------------------------------------

def _run(folder: Path, args: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([str(NEURONSIM), *args], cwd=folder, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"neuronsim {' '.join(args)} hung on a FIFO")


@pytest.mark.parametrize("args, words", [
    (["simulate", "p.json", "--inputs", "fifo.npz"], ["--inputs: cannot read fifo.npz", "named pipe (FIFO)"]),
    (["nki", "k.py::cp", "--inputs", "fifo.npz", "-o", "o.json"], ["--inputs", "named pipe (FIFO)"]),
    (["simulate", "p.json", "--inputs", "folder"], ["--inputs: cannot read folder", "a directory"]),
], ids=["simulate", "nki", "directory"])
def test_an_archive_path_that_is_not_a_regular_file_is_refused_not_waited_on(tmp_path, args, words):
    _program(tmp_path)
    (tmp_path / "k.py").write_text(KERNEL)
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo.npz")
    run = _run(tmp_path, args)
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), run.stderr
    for fragment in words:
        assert fragment in lines[0], (fragment, lines[0])
    assert not (tmp_path / "o.json").exists()
