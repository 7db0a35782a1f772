"""Output paths and addresses a second probe of every command found escaping the contract
(one ``error:`` line, exit 2, nothing written): an output that is standard output itself under
``--json``, an output path ending in ``/``, two outputs one file through a linked folder, an
empty ``--report``, a ``--scheduler`` that is no plain Dask address; and an ``x-source`` index
whose offset Python cannot print, which is carried as text."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from neuronsim_tests.bad_inputs import VALID, refused_in_one_line

NEURONSIM = Path(sys.executable).with_name("neuronsim")
KERNEL = '''
import nki
import nki.language as nl


@nki.jit
def double(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(x), 2.0))
    return out
'''


def _program(folder: Path) -> Path:
    path = folder / "prog.json"
    path.write_text(json.dumps(VALID))
    return path


def test_an_output_that_is_standard_output_is_refused_under_json(tmp_path: Path) -> None:
    """``-o /dev/stdout --json`` (stdout sent to a file, as a script does) would write the
    program over the JSON report, or both into one stream; refused as ``-o -`` is."""
    program = _program(tmp_path)
    with open(tmp_path / "stdout.txt", "wb") as stdout:
        done = subprocess.run([str(NEURONSIM), "compile", str(program), "-o", "/dev/stdout", "--json"], cwd=tmp_path,
                              stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    document = json.loads((tmp_path / "stdout.txt").read_text())
    assert document["format"] == "neuronsim.error/1" and document["path"] == "-o", document
    assert "--json writes its report to standard output" in document["message"]


def test_an_output_path_ending_in_a_slash_is_a_folder_not_a_file(tmp_path: Path) -> None:
    program = _program(tmp_path)
    refused_in_one_line(["compile", str(program), "-o", f"{tmp_path / 'newdir'}/"], "newdir/",
                        "it names a folder (a trailing /)")
    assert not (tmp_path / "newdir").exists()


def test_two_outputs_one_file_through_a_linked_folder_are_refused(tmp_path: Path) -> None:
    program = _program(tmp_path)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    refused_in_one_line(["simulate", str(program), "--trace", str(tmp_path / "real" / "t.json"),
                         "--outputs", str(tmp_path / "link" / "t.json")], "one would overwrite the other")
    assert not (tmp_path / "real" / "t.json").exists()


def test_an_empty_report_path_is_refused_not_ignored(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(KERNEL)
    np.savez(tmp_path / "in.npz", x=np.ones((128, 64), np.float32))
    refused_in_one_line(["run", f"{tmp_path / 'k.py'}::double", "--inputs", str(tmp_path / "in.npz"),
                         "--report", "", "--out", str(tmp_path / "out")], "--report", "the path is empty")
    assert not (tmp_path / "out").exists()


def test_a_scheduler_address_of_another_scheme_is_the_addresss_mistake(tmp_path: Path) -> None:
    """``tls://`` without a security context and ``ucx://`` without UCX failed inside Dask's
    client with a TypeError, an internal error (exit 3)."""
    for address in ("tls://127.0.0.1:1", "ucx://x"):
        refused_in_one_line(["fuzz", "--examples", "2", "--scheduler", address, "--out", str(tmp_path / "ff")],
                            "--scheduler", f"cannot connect to the Dask scheduler {address}", seconds=60)
    assert not (tmp_path / "ff").exists()


def test_an_x_source_offset_python_cannot_print_is_carried_as_text(tmp_path: Path) -> None:
    """``"indices": {"k": "k+111...1"}`` with 5,000 digits was bound to an int at each instance,
    which Python refuses to print (exit 3 in ``simulate`` and ``report``)."""
    document = json.loads(json.dumps(VALID))
    loop = next(node for node in document["body"] if "body" in node)
    instruction = next(node for node in loop["body"] if "op" in node)
    instruction["x-source"] = {"file": "k.py", "line": 3, "indices": {loop["loop"]: f"{loop['loop']}+" + "1" * 5000}}
    (tmp_path / "prog.json").write_text(json.dumps(document))
    done = subprocess.run([str(NEURONSIM), "simulate", str(tmp_path / "prog.json")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_file_sent_to_standard_output_keeps_it_to_itself(tmp_path: Path) -> None:
    """``simulate --trace -`` wrote the trace and then the engine table into one stream, which no
    JSON reader takes (so did ``--outputs -``, ``profile --html -``, ``run --report -``): the text
    goes to standard error, as ``compile -o -``'s does (a probe)."""
    program = _program(tmp_path)
    done = subprocess.run([str(NEURONSIM), "simulate", str(program), "--trace", "-"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "traceEvents" in json.loads(done.stdout) and "makespan" in done.stderr
    (tmp_path / "k.py").write_text(KERNEL)
    np.savez(tmp_path / "in.npz", x=np.ones((128, 64), np.float32))
    done = subprocess.run([str(NEURONSIM), "profile", "k.py::double", "--inputs", "in.npz", "--html", "-"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("</html>") and "critical path" in done.stderr


def test_two_files_sent_to_standard_output_are_refused(tmp_path: Path) -> None:
    program = _program(tmp_path)
    refused_in_one_line(["simulate", str(program), "--trace", "-", "--outputs", "-"], "--outputs",
                        "standard output, -): the two would run together in one stream")


def test_an_output_over_a_module_the_kernel_imported_is_refused(tmp_path: Path) -> None:
    """``nki kern.py::k -o helper.py`` replaced the helper the kernel imports with a program,
    exit 0 (a probe): the files the user's code imported are read by the command too."""
    (tmp_path / "helper.py").write_text(KERNEL)
    (tmp_path / "kern.py").write_text("from helper import double as k\n")
    np.savez(tmp_path / "in.npz", x=np.ones((128, 64), np.float32))
    before = (tmp_path / "helper.py").read_text()
    refused_in_one_line(["nki", f"{tmp_path / 'kern.py'}::k", "--inputs", str(tmp_path / "in.npz"),
                         "-o", str(tmp_path / "helper.py")], "a module the user's code imported")
    assert (tmp_path / "helper.py").read_text() == before


def test_an_output_over_a_module_a_users_pass_imported_is_refused(tmp_path: Path) -> None:
    """``compile -o helper.py`` with a ``--passes`` module importing ``helper`` replaced it (probe_az)."""
    program = _program(tmp_path)
    (tmp_path / "passhelper.py").write_text("X = 1\n")
    (tmp_path / "mypass.py").write_text("import passhelper\n\n\ndef P(program):\n    return program\n")
    done = subprocess.run([str(NEURONSIM), "compile", str(program), "--passes", "alloc,build-fdeps,mypass:P", "-o",
                           "passhelper.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "a module the user's code imported" in done.stderr, done.stderr
    assert (tmp_path / "passhelper.py").read_text() == "X = 1\n"


def test_a_run_report_on_standard_output_is_the_page_alone(tmp_path: Path) -> None:
    """``run K --report -``: its last line, the stages, followed the page on standard output (probe_az)."""
    (tmp_path / "k.py").write_text(KERNEL)
    np.savez(tmp_path / "in.npz", x=np.ones((128, 64), np.float32))
    done = subprocess.run([str(NEURONSIM), "run", "k.py::double", "--inputs", "in.npz", "--out", "o", "--report", "-"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("</html>") and "stages:" in done.stderr
