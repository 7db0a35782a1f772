"""NKI findings, the ``nki`` / ``run KERNEL.py::FUNC`` / ``simulate --outputs`` commands and
``run_kernel``, over hand-traced programs and a stand-in frontend (``tests/nki_programs.py``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from click.testing import CliRunner

from neuronsim.machine.formats.program_json import load_program, save_program
from neuronsim_tests.nki_programs import alloc_program, copy_program, fake_frontend, loop_program
from neuronsim.verify.cli import cli
from neuronsim.verify.nki.findings import nki_findings
from neuronsim.verify.nki.run import run_kernel, run_traced
from neuronsim.verify.cli.npz_io import read_npz


@pytest.fixture
def frontend(monkeypatch):
    module = fake_frontend()
    monkeypatch.setitem(sys.modules, "neuronsim.machine.nki", module)
    return module


def _cli(*args):
    return CliRunner().invoke(cli, list(args))


def _npz(path, **arrays):
    np.savez(path, **arrays)
    return str(path)


X = np.arange(128 * 64, dtype=np.float32).reshape(128, 64) / 100


# -- findings ---------------------------------------------------------------------------------

def test_affine_loop_carried_dependence_names_pair_lines_and_distance():
    found = nki_findings(loop_program("affine", carry=True))
    assert [(f.kind, f.dependence, f.first, f.second, f.loop, f.distance, f.tensors) for f in found] == [
        ("carried", "RAW", "nl.load at toy_kernel.py:20 [i=0]", "nl.copy at toy_kernel.py:21 [i=1]", "i", 1, ("t",))]
    assert "affine loop i carries a RAW dependence at distance 1" in found[0].describe()


def test_reused_storage_sequential_loops_and_tiles_made_in_the_body_are_not_findings():
    assert nki_findings(loop_program("affine")) == []  # each iteration loads t before reading it
    assert nki_findings(loop_program("sequential", carry=True)) == []
    assert nki_findings(loop_program("affine", tile_offset=None, carry=True)) == []


def test_a_tile_declared_outside_the_affine_loop_is_shared_by_its_iterations():
    shared = nki_findings(loop_program("affine", tile_offset=None, scope=[], carry=True))
    # the value read across iterations, and every iteration's load onto the same bytes
    assert sorted((f.kind, f.dependence, f.first, f.tensors) for f in shared) == [
        ("carried", "RAW", "nl.load at toy_kernel.py:20 [i=0]", ("t",)),
        ("carried", "WAW", "nl.load at toy_kernel.py:20 [i=0]", ("t",))]
    assert nki_findings(loop_program("affine", tile_offset=None, scope=["i"], carry=True)) == []


def test_sbuf_accumulation_in_an_affine_loop():
    found = nki_findings(loop_program("affine", tile_offset=None, accumulate=True))
    assert [(f.kind, f.first, f.second, f.tensors) for f in found] == [
        ("sbuf-accumulate", "nl.add at toy_kernel.py:21 [i=0]", "nl.add at toy_kernel.py:21 [i=1]", ("acc",))]
    assert nki_findings(loop_program("sequential", tile_offset=None, accumulate=True)) == []


def test_psum_accumulation_is_not_a_finding():
    program = load_program("examples/matmul_k_loop.json")
    marked = program.with_body(tuple(
        node.__class__(node.name, node.trip_count, node.body, {"x-nki-range": "affine"}) if hasattr(node, "trip_count")
        else node for node in program.body))
    # matmul accumulation into PSUM may cross iterations; the SBUF tiles are reloaded before each use
    assert nki_findings(marked) == []


def test_directly_allocated_tiles_handing_over_their_bytes_are_ordered_by_the_compiler():
    # b is loaded onto a's bytes once a is dead: the compiler's deps, built on addresses, order it
    assert nki_findings(alloc_program(apart=False, interleaved=False)) == []
    assert nki_findings(alloc_program(apart=True, interleaved=False)) == []


def test_a_tile_written_over_while_live_is_a_clobber_with_both_lines():
    found = nki_findings(alloc_program(apart=False))
    assert [(f.dependence, f.first, f.second, f.tensors) for f in found] == [
        ("clobber", "nl.load at toy_kernel.py:32", "nl.copy at toy_kernel.py:34", ("b", "a"))]
    assert nki_findings(alloc_program(apart=True)) == []


# -- npz with bf16 / fp8 ----------------------------------------------------------------------

def test_raw_bf16_and_fp8_arrays_are_typed(tmp_path):
    path = _npz(tmp_path / "in.npz", a=np.ones(4, ml_dtypes.bfloat16), b=np.ones(4, ml_dtypes.float8_e4m3fn),
                c=np.ones(4, ml_dtypes.float8_e5m2))
    plain = read_npz(path, "--inputs")
    # raw 1-byte records default to NKI's float8_e4m3 (the same bytes as e4m3fn below 240)
    assert [plain[k].dtype.name for k in "abc"] == ["bfloat16", "float8_e4m3", "float8_e5m2"]
    named = read_npz(path, "--inputs", {"b": "float8_e5m2"})
    assert named["b"].dtype.name == "float8_e5m2" and float(plain["c"][0]) == 1.0


def test_packed_mx_words_are_read_as_their_packed_dtype(tmp_path):
    """``--dtype w=float4_e2m1fn_x4`` of uint16 words: the kernel gets a tensor of that packed type
    (nki-library's MoE kernels branch on it); the name was dropped, the words plain uint16."""
    from neuronsim.machine.nki.dtypes import to_dtype
    from neuronsim.verify.cli.common import UsageFailure

    path = _npz(tmp_path / "in.npz", w=np.arange(8, dtype=np.uint16).reshape(2, 4), f=np.zeros((2, 4), np.float32))
    words = read_npz(path, "--inputs", {"w": "float4_e2m1fn_x4"})["w"]
    assert str(to_dtype(words.dtype)) == "float4_e2m1fn_x4" and words.tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    with pytest.raises(UsageFailure, match="f: float4_e2m1fn_x4 words are uint16 integers, not float32"):
        read_npz(path, "--inputs", {"f": "float4_e2m1fn_x4"})


def test_big_endian_arrays_are_read_as_the_same_numbers(tmp_path):
    """An array saved big-endian (``>f4``) was refused for kernels, at the kernel's line, as a
    dtype neuronsim does not hold; it is the same float32 numbers in the other byte order."""
    values = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    arrays = read_npz(_npz(tmp_path / "in.npz", x=values.astype(">f4"), n=np.arange(3, dtype=">i2")), "--inputs")
    assert arrays["x"].dtype == np.float32 and arrays["n"].dtype == np.int16
    np.testing.assert_array_equal(arrays["x"], values)
    np.testing.assert_array_equal(arrays["n"], [0, 1, 2])


# -- commands ---------------------------------------------------------------------------------

def test_nki_writes_the_traced_program(frontend, tmp_path):
    out = tmp_path / "p.json"
    result = _cli("nki", "toy.py::copy", "--inputs", _npz(tmp_path / "in.npz", x=X), "-o", str(out))
    assert result.exit_code == 0, result.output
    program = load_program(str(out))
    assert program.tensors["out"].role == "output"
    assert program.instruction_map()["copy_11"].extras["x-source"]["call"] == "nl.copy"


def test_nki_reads_bf16_inputs_unless_dtype_says_otherwise(frontend, tmp_path):
    inputs = _npz(tmp_path / "in.npz", x=X.astype(ml_dtypes.bfloat16))
    for extra, dtype in (((), "bfloat16"), (("--dtype", "x=float16"), "float16")):
        result = _cli("nki", "toy.py::copy", "--inputs", inputs, *extra, "-o", str(tmp_path / "p.json"))
        assert result.exit_code == 0, result.output
        assert load_program(str(tmp_path / "p.json")).tensors["x"].dtype == dtype


def test_unsupported_construct_is_one_line_exit_2(frontend, tmp_path):
    out = tmp_path / "p.json"
    result = _cli("nki", "two_core.py::sendrecv", "-o", str(out))
    assert result.exit_code == 2
    assert result.output.strip() == "error: two_core.py:7: nisa.sendrecv is not supported (two-core kernels)"
    assert not out.exists()


def test_bad_flags_are_exit_2(frontend, tmp_path):
    for args in (("--grid", "0x2"), ("--arg", "not an assignment"), ("--dtype", "x=complex")):
        result = _cli("nki", "toy.py::copy", "--inputs", _npz(tmp_path / "in.npz", x=X), *args,
                      "-o", str(tmp_path / "p.json"))
        assert result.exit_code == 2 and "Traceback" not in result.output, args
    assert _cli("run", "softmax", "--reference", "m:f").exit_code == 2


def test_run_kernel_end_to_end_against_a_reference(frontend, tmp_path, monkeypatch):
    (tmp_path / "toy_ref.py").write_text("def same(x):\n    return x\n\ndef doubled(x):\n    return 2 * x\n")
    monkeypatch.chdir(tmp_path)
    inputs = _npz(tmp_path / "in.npz", x=X)
    good = _cli("run", "toy.py::copy", "--inputs", inputs, "--reference", "toy_ref:same", "--json")
    assert good.exit_code == 0, good.output
    doc = json.loads(good.stdout)
    assert doc["summary"]["outputs_match"] and doc["summary"]["user_reference"] and not doc["problems"]
    trace = json.loads((tmp_path / "out" / "copy.trace.json").read_text())
    assert any(e.get("args", {}).get("source") == "nl.copy at toy_kernel.py:11" for e in trace["traceEvents"])
    bad = _cli("run", "toy.py::copy", "--inputs", inputs, "--reference", "toy_ref:doubled")
    assert bad.exit_code == 1 and "out:" in bad.output


def test_a_reference_that_is_no_function_is_named_as_what_it_is(frontend, tmp_path, monkeypatch):
    (tmp_path / "not_a_function_ref.py").write_text("same = 3\n")
    monkeypatch.chdir(tmp_path)
    inputs = _npz(tmp_path / "in.npz", x=X)
    not_callable = _cli("run", "toy.py::copy", "--inputs", inputs, "--reference", "not_a_function_ref:same")
    assert not_callable.exit_code == 2
    assert "--reference: not_a_function_ref's 'same' is int 3, not a function" in not_callable.stderr
    missing = _cli("run", "toy.py::copy", "--inputs", inputs, "--reference", "not_a_function_ref:other")
    assert missing.exit_code == 2 and "not_a_function_ref defines no function 'other'" in missing.stderr


def test_a_reference_naming_no_output_of_the_kernel_is_its_mistake(frontend, tmp_path, monkeypatch):
    """A dict by a name the kernel has no output of compares nothing: exit 2 naming the
    reference and the outputs, nothing written (it was a difference, exit 1, files kept)."""
    (tmp_path / "misnamed_ref.py").write_text("def ref(x):\n    return {'zz': x}\n")
    monkeypatch.chdir(tmp_path)
    result = _cli("run", "toy.py::copy", "--inputs", _npz(tmp_path / "in.npz", x=X), "--reference", "misnamed_ref:ref",
                  "--out", str(tmp_path / "made"))
    assert result.exit_code == 2, result.output
    assert "--reference ref: returned 'zz', which is not an output of the kernel (its outputs: out)" in result.stderr
    assert not (tmp_path / "made").exists()


def test_run_kernel_reports_findings_with_exit_1(frontend, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _cli("run", "toy.py::alloc_clobber", "--inputs", _npz(tmp_path / "in.npz", x=X, y=X + 1))
    assert result.exit_code == 1
    assert ("finding: directly allocated tiles on b / a overlap while both are live: nl.load at toy_kernel.py:32 "
            "writes bytes that nl.copy at toy_kernel.py:34 reads later") in result.output


def test_simulate_writes_the_outputs(tmp_path):
    program = tmp_path / "p.json"
    save_program(copy_program("bfloat16"), str(program))
    compiled = tmp_path / "c.json"
    assert _cli("compile", str(program), "-o", str(compiled)).exit_code == 0
    x = X.astype(ml_dtypes.bfloat16)
    out = tmp_path / "out.npz"
    result = _cli("simulate", str(compiled), "--inputs", _npz(tmp_path / "in.npz", x=x), "--outputs", str(out))
    assert result.exit_code == 0, result.output
    written = read_npz(str(out), "--outputs")
    assert written["out"].dtype.name == "bfloat16" and np.array_equal(written["out"], x)


def test_run_kernel_api_mirrors_simulate_kernel(frontend):
    outputs, report = run_kernel("toy.py::copy", X, reference=lambda x: x)
    assert report.ok, report.render()
    assert np.array_equal(outputs, X)
    traced = frontend.trace("affine", X)
    flagged = run_traced(traced, "affine")  # the stand-in's "affine" kernel carries a value
    assert not flagged.ok and any("carries a" in line for line in flagged.problems())


# -- with the frontend (neuronsim.machine.nki) ----------------------------------------------------------

CURRENT = '''import nki
import nki.language as nl


@nki.jit
def add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    nl.store(out, value=nl.add(x, y))
    return out


def reference(a, b):
    return {"return0": a + b}
'''

LEGACY = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def rowsum(a):
    out = nl.ndarray((128, 16), dtype=a.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 16), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        t = nl.load(a[:, nl.ds(i * 16, 16)])
        acc += t
    nl.store(out, value=acc)
    return out
'''


def test_traced_kernel_end_to_end(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "add_kernel.py").write_text(CURRENT)
    (tmp_path / "add_ref.py").write_text("def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n")
    inputs = _npz(tmp_path / "in.npz", a=X, b=X + 1)
    traced = _cli("nki", "add_kernel.py::add", "--inputs", inputs, "-o", "p.json")
    assert traced.exit_code == 0, traced.output
    program = load_program("p.json")
    assert {"a", "b", "return0"} <= set(program.tensors)
    assert {inst.extras["x-source"]["line"] for inst, _ in program.instructions()} == {8, 9, 10}
    assert _cli("run", "add_kernel.py::add", "--inputs", inputs, "--reference", "add_ref:add").exit_code == 0
    beside = _cli("run", "add_kernel.py::add", "--inputs", inputs, "--reference", "add_kernel.py:reference")
    assert beside.exit_code == 0, beside.output  # the kernel's own file imports nki: loaded with the stand-ins
    as_kernel = _cli("run", "add_kernel.py::add", "--inputs", inputs, "--reference", "add_kernel.py::reference")
    assert as_kernel.exit_code == 0, as_kernel.output  # named as the kernel is: FILE.py::FN
    assert "user reference" in as_kernel.output
    wrong = _cli("run", "add_kernel.py::add", "--inputs", inputs, "--reference", "add_ref:sub")
    assert wrong.exit_code == 1 and "return0:" in wrong.output
    outputs, report = run_kernel("add_kernel.py::add", X, X + 1)
    assert report.ok and np.allclose(outputs, 2 * X + 1)


def test_legacy_sbuf_accumulation_in_affine_range_is_a_warning_exit_0(tmp_path, monkeypatch):
    # the affine_range docs and an SDK maintainer disagree on += into SBUF: said, not failed
    monkeypatch.chdir(tmp_path)
    (tmp_path / "legacy_kernel.py").write_text(LEGACY)
    result = _cli("run", "legacy_kernel.py::rowsum", "--inputs", _npz(tmp_path / "in.npz", a=X), "--json")
    assert result.exit_code == 0
    # run --json is a neuronsim.run/1 verdict: a finding is kind, severity, message and lines
    finding = json.loads(result.stdout)["findings"][0]
    assert finding["kind"] == "sbuf-accumulate" and finding["severity"] == "warning"
    assert "affine loop i (+= at legacy_kernel.py:11 [i=0] / " in finding["message"]
    assert finding["lines"] == ["legacy_kernel.py:11"]


PREFETCH = '''import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.compiler as ncc


@nki.jit
def prefetch(a):
    out = nl.ndarray((128, 64), dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((5, nl.par_dim(128), 16), dtype=a.dtype,
                   buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(SLOTS,)))
    t[0] = nl.load(a[:, nl.ds(0, 16)])
    for i in nl.sequential_range(4):  # each iteration reads the tile the one before it loaded
        t[i + 1] = nl.load(a[:, nl.ds((i + 1) * 16, 16)])
        u = nl.multiply(t[i], 2.0)
        nl.store(out[:, nl.ds(i * 16, 16)], value=u)
    return out


def reference(a):
    return {"return0": 2.0 * a[:, :64]}
'''


def test_a_prefetching_kernel_with_one_slot_too_few_fails(tmp_path, monkeypatch):
    """Two slots hold the tile being computed on and the one being prefetched; one slot lets
    the prefetch overwrite the tile before it is read.  Every block is a tile of its own on its
    slot's bytes (as NKI's compiler tells tiles apart), so with one slot too few ``run`` names
    the prefetch and the read it clobbers, at their kernel lines, once for the four iterations
    (the last prefetch fills a tile nothing reads, and still wipes the one being read), besides
    the wrong outputs.  The blocks' reuse is ordered (one allocation), so it is no race."""
    monkeypatch.chdir(tmp_path)
    inputs = _npz(tmp_path / "in.npz", a=np.random.default_rng(0).standard_normal((128, 80)).astype(np.float32))
    lines = PREFETCH.splitlines()
    prefetch = next(k + 1 for k, line in enumerate(lines) if "t[i + 1] = nl.load" in line)
    use = next(k + 1 for k, line in enumerate(lines) if "u = nl.multiply(t[i], 2.0)" in line)
    for slots, status in ((2, 0), (1, 1)):
        (tmp_path / f"pf{slots}.py").write_text(PREFETCH.replace("SLOTS", str(slots)))
        result = _cli("run", f"pf{slots}.py::prefetch", "--inputs", inputs, "--reference", f"pf{slots}.py:reference")
        assert result.exit_code == status, result.output
        assert ("finding:" in result.output) == (slots == 1), result.output
    findings = [line for line in result.output.splitlines() if line.startswith("finding:")]
    assert (f"nl.load at pf1.py:{prefetch} [i=0] writes bytes that nl.multiply at pf1.py:{use} [i=0] reads later"
            in findings[0])
    assert len(findings) == 1 and findings[0].endswith("(4 findings of this kind on these lines)"), findings
    assert "problem: return0:" in result.output
    verdict = _cli("run", "pf1.py::prefetch", "--inputs", inputs, "--reference", "pf1.py:reference", "--json")
    messages = [f["message"] for f in json.loads(verdict.stdout)["findings"]]
    assert any(f"t_10_b4 / t_10_b3 overlap while both are live: nl.load at pf1.py:{prefetch} [i=3] writes bytes "
               f"that nl.multiply at pf1.py:{use} [i=3] reads later" in m for m in messages), messages


GRID = '''import nki
import nki.language as nl


@nki.jit
def half(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    p = nl.program_id(0)
    x = nl.load(a[p * 128:(p + 1) * 128, :])
    nl.store(out[p * 128:(p + 1) * 128, :], value=nl.exp(x))
    return out
'''


def test_grid_runs_one_instance_after_another(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "grid_kernel.py").write_text(GRID)
    inputs = _npz(tmp_path / "in.npz", a=np.zeros((256, 8), np.float32))
    counts = {}
    for grid in ("1", "2"):
        assert _cli("nki", "grid_kernel.py::half", "--inputs", inputs, "--grid", grid, "-o",
                    f"g{grid}.json").exit_code == 0
        counts[grid] = sum(1 for _ in load_program(f"g{grid}.json").instructions())
    assert counts["2"] == 2 * counts["1"]


def test_a_kernel_and_its_reference_import_the_modules_beside_them(tmp_path, monkeypatch):
    # as `python kernel.py` would: the kernel's folder first on sys.path, the reference's too
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "tile_helpers.py").write_text("def passed_through(t):\n    return t\n")
    (tmp_path / "kern.py").write_text(
        "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nfrom tile_helpers import passed_through\n\n"
        "@nki.jit\ndef copy(x):\n    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)\n"
        "    nl.store(out, passed_through(nl.load(x)))\n    return out\n")
    (tmp_path / "ref.py").write_text("import tile_helpers\n\ndef ref(x):\n    return tile_helpers.passed_through(x)\n")
    _npz(tmp_path / "in.npz", x=np.arange(512, dtype=np.float32).reshape(128, 4))
    result = _cli("run", f"{tmp_path / 'kern.py'}::copy", "--inputs", str(tmp_path / "in.npz"),
                  "--reference", f"{tmp_path / 'ref.py'}:ref", "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert "equal: largest error 0" in result.output


EAGER_AT_IMPORT = '''\
import numpy as np
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def double(x):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


checked = double(np.ones((128, 64), np.float32))  # the sample's own test, run as the file loads
'''


def test_a_kernel_file_calling_its_kernel_as_it_loads_traces_in_nki_as_in_run(tmp_path, monkeypatch):
    """A public sample that ends with a call of its kernel (run on NKI's simulator there) ran it
    on neuronsim's in `run`, while `nki` stopped with "import neuronsim.verify.nki.simulate
    first" and no line: both run it now, and both then trace the kernel."""
    import shutil
    import subprocess

    (tmp_path / "eager.py").write_text(EAGER_AT_IMPORT)
    monkeypatch.chdir(tmp_path)
    inputs = _npz(tmp_path / "in.npz", x=X)
    launcher = shutil.which("neuronsim") or str(Path(sys.executable).with_name("neuronsim"))
    for command in (["nki", "eager.py::double", "--inputs", inputs, "-o", "p.json"],
                    ["run", "eager.py::double", "--inputs", inputs]):  # fresh processes: nothing imported before
        done = subprocess.run([launcher, *command], capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0, (command[0], done.stdout[-500:], done.stderr)


CAST = '''import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def cast_copy(x, dtype=nl.bfloat16, mode="plain"):
    out = nl.ndarray(x.shape, dtype=dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    nisa.dma_copy(dst=out, src=t)
    assert mode in ("plain", "nl.fast"), mode
    return out
'''


@pytest.mark.parametrize("spelling, dtype", [("nl.float32", "float32"), ("np.float16", "float16"),
                                             ("nki.language.bfloat16", "bfloat16"), ("float32", "float32")])
def test_an_arg_spelling_a_dtype_as_a_kernel_does_is_that_dtype(tmp_path, monkeypatch, spelling, dtype):
    """``--arg dtype=nl.float32``, the docs' own example, reached the kernel as the text
    ``nl.float32`` and was refused at the kernel's correct line (probe_as); a dotted word that
    names no dtype stays text."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cast.py").write_text(CAST)
    inputs = _npz(tmp_path / "in.npz", x=X)
    done = _cli("nki", "cast.py::cast_copy", "--inputs", inputs, "--arg", f"dtype={spelling}", "--arg", "mode=nl.fast",
                "-o", "p.json")
    assert done.exit_code == 0, done.output
    assert load_program("p.json").tensors["return0"].dtype == dtype


def test_an_arg_integer_past_python_s_digit_limit_is_said_so(tmp_path, monkeypatch):
    """4,301 digits were "not a Python literal": they are one, past the digits Python reads (probe_ar)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cast.py").write_text(CAST)
    done = _cli("nki", "cast.py::cast_copy", "--inputs", _npz(tmp_path / "in.npz", x=X), "--arg",
                "mode=" + "9" * (sys.get_int_max_str_digits() + 1), "-o", "p.json")
    assert done.exit_code == 2 and "digits; Python reads at most" in done.output, done.output
    assert "not a Python literal" not in done.output and not (tmp_path / "p.json").exists()


def test_target_traces_and_times_for_the_named_neuroncore(tmp_path, monkeypatch):
    """``--target`` picks the NeuronCore over the kernel's own ``platform_target`` (a probe of
    published figures looked for it to compare one kernel on trn1 and trn2)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cast.py").write_text(CAST.replace("@nki.jit", '@nki.jit(platform_target="trn2")'))
    inputs = _npz(tmp_path / "in.npz", x=X)
    for target, machine in ((None, "trn2"), ("trn1", "trn1"), ("inf2", "trn1"), ("trn3", "trn3")):
        extra = ("--target", target) if target else ()
        done = _cli("nki", "cast.py::cast_copy", "--inputs", inputs, *extra, "-o", "p.json")
        assert done.exit_code == 0, done.output
        assert load_program("p.json").machine == machine, (target, load_program("p.json").machine)
    assert _cli("nki", "cast.py::cast_copy", "--inputs", inputs, "--target", "trn9", "-o", "p.json").exit_code == 2


def test_nki_jit_of_no_function_is_refused_at_its_line(tmp_path, monkeypatch):
    """``@nki.jit(1)`` was an internal error of the trace ("NkiInternalError: 1 is not a callable
    object"): the decorator's argument is the kernel's mistake, at its line (probe_ar)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.py").write_text("import neuronxcc.nki as nki\n\n\n@nki.jit(1)\ndef k(x):\n    return x\n")
    done = _cli("nki", "k.py::k", "--inputs", _npz(tmp_path / "in.npz", x=X), "-o", "p.json")
    assert done.exit_code == 2 and "k.py:4: nki.jit(1): it takes the kernel function" in done.output, done.output
    assert "Internal" not in done.output


def test_the_digits_of_an_integer_inside_a_list_are_counted_alone(tmp_path, monkeypatch):
    """probe_av: ``[999...9]`` counted its brackets as digits."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cast.py").write_text(CAST)
    digits = sys.get_int_max_str_digits() + 1
    done = _cli("nki", "cast.py::cast_copy", "--inputs", _npz(tmp_path / "in.npz", x=X), "--arg",
                "mode=[" + "9" * digits + "]", "-o", "p.json")
    assert done.exit_code == 2 and f"an integer of {digits:,} digits" in done.output, done.output
