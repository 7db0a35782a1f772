"""The legacy NKI errors page's wrong kernels, each refused (or found) at its line, and its
fixed kernels run equal to numpy.  The page (aws-neuron-sdk, ``nki.errors``) lists what the
compiler refuses; a helper found these wrong kernels running with exit 0 and no finding."""

from __future__ import annotations

import re

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, load_kernel, trace
from neuronsim.verify.nki.run import run_kernel

KERNELS = '''
import numpy as np
from neuronxcc import nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt
from neuronxcc.nki.language import par_dim


@nki.jit
def bias_int8(x):
    data = nl.load(x)
    r = nisa.activation(op=nl.exp, data=data, bias=nisa.memset((128, 1), 1.0, dtype=np.int8))  # bias_int8
    o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(o, value=r)
    return o


@nki.jit
def scale_fp16(x):
    data = nl.load(x)
    r = nisa.activation(op=nl.exp, data=data, scale=nisa.memset((128, 1), 0.5, dtype=np.float16))  # scale_fp16
    o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(o, value=r)
    return o


@nki.jit
def bias_and_scale_allowed(x):
    data = nl.load(x)
    r = nisa.activation(op=nl.exp, data=data, bias=nisa.memset((128, 1), 0.25, dtype=nl.bfloat16),
                        scale=nisa.memset((128, 1), 0.5, dtype=np.float32))
    o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(o, value=r)
    return o


@nki.jit
def truth_of_a_parameter(a, b):
    t = nl.load(a)
    if b:  # truth
        t = nl.add(t, 1.0)
    o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(o, value=t)
    return o


@nki.jit
def presence_of_a_parameter(a, b):
    t = nl.load(a)
    if b is not None:
        t[...] = nl.add(t, nl.load(b))  # into the tile made outside the if: in scope after it
    o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(o, value=t)
    return o


@nki.jit
def annotated_wrong(x):
    data: nt.tensor[128, 512] = nl.zeros((par_dim(128), 64), dtype=np.float32)  # annotation
    o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(o, value=nl.add(data, nl.load(x)))
    return o


@nki.jit
def annotated_right(x):
    data: nt.tensor[128, 64] = nl.zeros((par_dim(128), 64), dtype=np.float32)
    o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(o, value=nl.add(data, nl.load(x)))
    return o


@nki.jit
def tile_of_a_branch(a, b):
    c = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in range(4):
        if i < 2:
            tmp = nl.load(a)
        else:
            tmp = nl.load(b)
        nl.store(c, tmp)  # after its if: in scope, as vLLM's kernels use them
    return c


@nki.jit
def tile_declared_before_the_branch(a, b):
    c = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in range(4):
        tmp = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
        if i < 2:
            tmp[...] = nl.load(a)
        else:
            tmp[...] = nl.load(b)
        nl.store(c, tmp)
    return c


@nki.jit
def shadowed_in_a_loop(x):
    o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    data = nl.zeros((par_dim(128), 64), dtype=np.float32)
    for i in nl.sequential_range(4):
        data = data + nl.load(x)
    nl.store(o, value=data)  # shadowed
    return o


@nki.jit
def updated_in_a_loop(x):
    o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    data = nl.zeros((par_dim(128), 64), dtype=np.float32)
    for i in nl.sequential_range(4):
        data[...] = data + nl.load(x)
    nl.store(o, value=data)
    return o


@nki.jit
def allocated_identity_transpose(x):
    identity = nl.shared_constant(np.identity(128, dtype=np.float32), dtype=nl.float32)
    eye = nl.ndarray((par_dim(128), 128), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=2048))
    eye[...] = nl.load(identity)
    a = nl.ndarray((par_dim(128), 128), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
    a[...] = nl.load(x)
    t = nl.ndarray((par_dim(128), 128), dtype=nl.float32, buffer=ncc.psum.mod_alloc(base_bank=0))
    t[...] = nisa.nc_matmul(a[...], eye)
    s = nl.ndarray((par_dim(128), 128), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=1024))
    s[...] = nisa.tensor_copy(t)
    o = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(o, value=s)
    return o


@nki.jit
def allocated_matmul(x):
    a = nl.ndarray((par_dim(128), 128), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
    a[...] = nl.load(x)
    p = nl.ndarray((par_dim(128), 128), dtype=nl.float32, buffer=ncc.psum.mod_alloc(base_bank=0))
    p[...] = nl.matmul(a, a)  # allocated matmul
    o = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(o, value=nl.copy(p))
    return o


@nki.jit
def allocated_full(x):
    t = nl.full((2, par_dim(128), 128), 1.0, dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))  # full
    o = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(o, value=nl.add(t[0], nl.load(x)))
    return o


@nki.jit
def assigns_into_an_index(x):
    _, xi = nl.mgrid[0:1, 0:8]
    xi[0, 5] = 1024  # index assignment
    o = nl.ndarray((1, 8), dtype=nl.uint32, buffer=nl.shared_hbm)
    nl.store(o, value=nisa.iota(xi, dtype=nl.uint32))
    return o


@nki.jit
def exp_of_hbm(x):
    o = nl.ndarray((4, 4), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(o, value=nl.exp(x))  # exp of hbm
    return o


@nki.jit
def assigns_a_wider_tile(x):
    xs = nl.load(x)
    y = nl.zeros(shape=(128, 1), dtype=nl.float32, buffer=nl.sbuf)
    y[...] = xs  # wider into narrower
    o = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(o, value=y)
    return o


@nki.jit
def writes_immutable(x):
    t = nl.load(x)
    nl.store(x, value=nl.add(t, 1.0))  # immutable
    return x


@nki.jit
def writes_mutable(x: nt.mutable_tensor):
    t = nl.load(x)
    nl.store(x, value=nl.add(t, 1.0))
    return x


@nki.jit(experimental_flags="enable-mutable-parameter")
def writes_tensor_of_mutable(x: nt.tensor[nt.mutable]):  # NxDI 2.27-2.29's spelling (probe_aa)
    t = nl.load(x)
    nl.store(x, value=nl.add(t, 1.0))
    return x


@nki.jit
def mutable_not_returned(x: nt.mutable_tensor):
    o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(o, value=t)
    nl.store(x, value=nl.add(t, 1.0))
    return o  # not returned


@nki.jit
def output_in_parameter(x, out):
    nl.store(out, value=nl.exp(nl.load(x)))


def _make():
    return nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)  # helper hbm


@nki.jit
def hbm_in_a_helper(x):
    o = _make()
    nl.store(o, value=nl.load(x))
    return o


@nki.jit
def hbm_in_a_loop(x):
    t = nl.load(x)
    for i in range(2):
        o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)  # loop hbm
        nl.store(o, value=t)
    return o


@nki.jit
def never_written(x):
    o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)  # never written
    for i in nl.affine_range(128 // 129):
        nl.store(o, value=nl.load(x))
    return o


@nki.jit
def no_output(x, out):  # no output
    for i in nl.affine_range(128 // 129):
        nl.store(out, value=nl.load(x))


@nki.jit
def same_tile_every_iteration(x):
    a = nl.ndarray((4, par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(4):
        a[0] = nl.load(x[i])  # waw
    o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(o, value=a[0])
    return o


@nki.jit
def tile_per_iteration(x):
    a = nl.ndarray((4, par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    o = nl.ndarray((4, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        a[i] = nl.load(x[i])
        nl.store(o[i], value=a[i])
    return o


@nki.jit
def same_tile_in_sequence(x):
    a = nl.ndarray((4, par_dim(128), 64), dtype=nl.float32, buffer=nl.sbuf)
    for i in nl.sequential_range(4):
        a[0] = nl.load(x[i])
    o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nl.store(o, value=a[0])
    return o


@nki.jit
def same_output_rows(x):
    o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(4):
        nl.store(o, value=nl.load(x[i]))  # hbm waw
    return o
'''

CURRENT = '''
import nki
import nki.isa as nisa
import nki.language as nl


def _out(t):
    o = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=o, src=t)
    return o


@nki.jit
def hbm_in_a_helper(x):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    return _out(t)


@nki.jit
def partitions_by_ap(x, step=32):
    t = nl.ndarray((16, 32), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    r = nl.ndarray((8, 32), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=r, src=t.ap(pattern=[[step, 8], [1, 32]], offset=0))  # ap
    return _out(r)
'''


@pytest.fixture
def kernels(tmp_path):
    (tmp_path / "e.py").write_text(KERNELS)
    return lambda name: f"{tmp_path / 'e.py'}::{name}"


def _line(marker: str) -> int:
    return next(n for n, text in enumerate(KERNELS.splitlines(), 1) if text.endswith(f"# {marker}"))


def _x(*shape):
    return np.random.default_rng(5).uniform(-1, 1, shape).astype(np.float32)


def _run(spec: str, *arrays):
    outputs, report = run_kernel(spec, *arrays, seeds=(None,))
    assert not report.run.problems(), report.run.problems()
    return outputs, report


@pytest.mark.parametrize("name, marker, words", [
    ("bias_int8", "bias_int8", "the bias tile is int8; a bias vector must be float32 or float16 or bfloat16"),
    ("scale_fp16", "scale_fp16", "the scale tile is float16; a scale vector must be float32"),
    ("truth_of_a_parameter", "truth", "the truth value of a tensor is ambiguous"),
    ("writes_immutable", "immutable", "writes its parameter x, which is immutable"),
    ("shadowed_in_a_loop", "shadowed", "data is used outside the block that defines it"),
    ("allocated_matmul", "allocated matmul", "nl.matmul without transpose_x=True in a kernel that places"),
    ("allocated_full", "full", "made with an initial value: NKI refuses it in an allocated kernel"),
    ("assigns_into_an_index", "index assignment", "an index vector .* takes no item assignment"),
    ("exp_of_hbm", "exp of hbm", r"x \(4, 4\) is in DRAM; compute engines read and write SBUF / PSUM tiles"),
    ("assigns_a_wider_tile", "wider into narrower", r"cannot broadcast \(128, 64\) of \w+ to \(128, 1\)$"),
    ("annotated_wrong", "annotation", r"shape \[128, 64\] does not match its annotation's \[128, 512\]"),
    ("mutable_not_returned", "not returned", "parameter x is an nt.mutable_tensor the kernel writes and does not"),
    ("hbm_in_a_helper", "helper hbm", r"a shared_hbm tensor made in _make\(\), a function the kernel calls"),
    ("hbm_in_a_loop", "loop hbm", "a shared_hbm tensor made inside a loop"),
    ("never_written", "never written", "no instruction that runs writes it"),
    ("no_output", "no output", "the kernel has no output"),
])
def test_a_wrong_kernel_of_the_errors_page_is_refused_at_its_line(kernels, name, marker, words):
    two = (_x(128, 64), _x(128, 64))
    arrays = {"truth_of_a_parameter": two, "no_output": two,
              "allocated_full": (_x(128, 128),),
              "allocated_matmul": (_x(128, 128),), "exp_of_hbm": (_x(4, 4),)}
    line = _line(marker) - (1 if marker == "no output" else 0)  # the kernel's decorator line
    with pytest.raises(NkiError) as err:
        trace(load_kernel(kernels(name)), *arrays.get(name, (_x(128, 64),)))
    assert re.search(rf"e\.py:{line}: .*{words}", str(err.value)), str(err.value)


def test_the_fixed_kernels_run_equal_to_numpy(kernels):
    x, y = _x(128, 64), _x(128, 64)
    out, _ = _run(kernels("bias_and_scale_allowed"), x)
    np.testing.assert_allclose(out, np.exp(x * 0.5 + 0.25), rtol=1e-2)
    out, _ = _run(kernels("presence_of_a_parameter"), x, y)
    np.testing.assert_allclose(out, x + y, rtol=1e-6)
    out, _ = _run(kernels("tile_of_a_branch"), x, y)  # an if Python decides at trace time scopes nothing
    np.testing.assert_array_equal(out, y)
    out, _ = _run(kernels("tile_declared_before_the_branch"), x, y)
    np.testing.assert_array_equal(out, y)  # the last iteration's branch
    out, _ = _run(kernels("updated_in_a_loop"), x)
    np.testing.assert_allclose(out, 4 * x, rtol=1e-6)
    square = _x(128, 128)
    out, _ = _run(kernels("allocated_identity_transpose"), square)  # the page's fix: the kernel's own identity
    np.testing.assert_allclose(out, square.T, rtol=1e-6)
    out, _ = _run(kernels("annotated_right"), x)
    np.testing.assert_array_equal(out, x)
    out, _ = _run(kernels("writes_mutable"), x)
    np.testing.assert_allclose(out, x + 1.0, rtol=1e-6)
    out, _ = _run(kernels("writes_tensor_of_mutable"), x)
    np.testing.assert_allclose(out, x + 1.0, rtol=1e-6)
    out, _ = _run(kernels("output_in_parameter"), x, np.zeros_like(x))  # a kernel returning nothing
    np.testing.assert_allclose(out, np.exp(x), rtol=1e-5)


def test_nki_0_7_makes_shared_hbm_tensors_in_helpers(tmp_path):
    (tmp_path / "c.py").write_text(CURRENT)
    x = _x(128, 64)
    out, _ = _run(f"{tmp_path / 'c.py'}::hbm_in_a_helper", x)
    np.testing.assert_array_equal(out, x)


def test_iterations_of_an_affine_loop_writing_the_same_bytes_are_a_finding_at_both(kernels):
    x = _x(4, 128, 64)
    for name, marker in [("same_tile_every_iteration", "waw"), ("same_output_rows", "hbm waw")]:
        _, report = run_kernel(kernels(name), x, seeds=(None,))
        found = [f for f in report.findings if f.is_error]
        assert [(f.kind, f.dependence, f.loop, f.distance) for f in found] == [("carried", "WAW", "i", 1)], \
            [f.describe() for f in report.findings]
        assert f"e.py:{_line(marker)} [i=0]" in found[0].first and f"e.py:{_line(marker)} [i=1]" in found[0].second
        assert "unexpected output dependencies" in found[0].describe()


def test_a_tile_per_iteration_or_a_sequential_loop_writes_no_bytes_twice(kernels):
    x = _x(4, 128, 64)
    out, report = _run(kernels("tile_per_iteration"), x)
    assert not [f for f in report.findings if f.is_error]
    np.testing.assert_array_equal(out, x)
    out, report = _run(kernels("same_tile_in_sequence"), x)
    assert not [f for f in report.findings if f.is_error]
    np.testing.assert_array_equal(out, x[3])


def test_an_on_chip_access_pattern_steps_whole_partitions(tmp_path):
    """The access-pattern guide: on chip the first step of ``.ap`` is the free dimension's
    element count (partitions contiguous); 64 on a (16, 32) tile reads every other partition."""
    (tmp_path / "c.py").write_text(CURRENT)
    x = _x(16, 32)
    line = next(n for n, text in enumerate(CURRENT.splitlines(), 1) if text.endswith("# ap"))
    with pytest.raises(NkiError, match=rf"c\.py:{line}: an \.ap\(\) on chip steps 64 elements between partitions"):
        trace(load_kernel(f"{tmp_path / 'c.py'}::partitions_by_ap"), x, step=64)
    out, _ = _run(f"{tmp_path / 'c.py'}::partitions_by_ap", x)
    np.testing.assert_array_equal(out, x[:8])
