"""The frontend's own machinery: the scoped module swap, loading kernel files, kernel objects,
``simulate_kernel`` and what a traced program carries."""

from __future__ import annotations

import os
import re
import sys
import types

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, load_kernel, standins, trace
from neuronsim.verify.nki.simulate import simulate_kernel
from neuronsim_tests.nki_kernels import KERNELS, f32, kernel


def test_standins_restore_a_real_install():
    real = types.ModuleType("nki")
    real_sub = types.ModuleType("nki.language")
    saved = {k: sys.modules.get(k) for k in ("nki", "nki.language", "neuronxcc")}
    sys.modules.update({"nki": real, "nki.language": real_sub})
    sys.modules.pop("neuronxcc", None)
    try:
        with standins() as modules:
            import nki.language as nl

            assert nl is modules["nki.language"] is not real_sub
            assert sys.modules["neuronxcc"] is modules["neuronxcc"]
        assert sys.modules["nki"] is real and sys.modules["nki.language"] is real_sub
        assert "neuronxcc" not in sys.modules
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def test_nothing_is_shadowed_outside_a_trace():
    kernel("current_ops.py::add")
    assert not any(name.split(".")[0] in ("nki", "neuronxcc") for name in sys.modules)


def test_package_relative_imports(monkeypatch):
    monkeypatch.syspath_prepend(KERNELS)
    k = load_kernel(os.path.join(KERNELS, "pkg", "sub", "kern.py::scale"))
    x = f32(16, 8)
    np.testing.assert_allclose(simulate_kernel(k, x), x * 5.0)


def test_simulate_kernel_fills_output_arguments_in_place(monkeypatch):
    monkeypatch.syspath_prepend(KERNELS)
    k = load_kernel(os.path.join(KERNELS, "pkg", "sub", "kern.py::scale_into"))
    x, out = f32(16, 8), np.zeros((16, 8), np.float32)
    assert simulate_kernel(k, x, out) is None
    np.testing.assert_allclose(out, x * 5.0)


def test_calling_a_kernel_outside_a_trace_simulates_it():
    a, b = f32(128, 16), f32(128, 16, seed=5)
    np.testing.assert_allclose(kernel("current_ops.py::add")(a, b), a + b)


@pytest.mark.parametrize("spec, message", [
    ("missing.py::f", "no such kernel file"),
    ("current_ops.py", "name a kernel as PATH.py::FUNCTION"),
    ("current_ops.py::nope", "no function 'nope' in the kernel file"),
    ("__init__.pyc::f", "no such kernel file"),
])
def test_bad_kernel_names(spec, message):
    with pytest.raises(NkiError, match=message):
        load_kernel(os.path.join(KERNELS, spec) if "::" in spec else spec)


def test_a_file_that_is_not_python_is_named_as_such(tmp_path):
    data = tmp_path / "inputs.npz"
    data.write_bytes(b"PK")
    with pytest.raises(NkiError, match=f"^{re.escape(str(data))}: not a Python file"):  # the path as given
        load_kernel(f"{data}::f")


def test_bad_arguments_name_the_kernel():
    with pytest.raises(NkiError, match=r"current_ops\.py:\d+: arguments do not fit add"):
        trace(kernel("current_ops.py::add"), f32(128, 4))


def test_arguments_by_name_and_bf16_inputs():
    import ml_dtypes

    a = f32(128, 16).astype(ml_dtypes.bfloat16)
    traced = trace(kernel("current_ops.py::add"), b=a, a=a)
    assert traced.program.tensors["a"].dtype == "bfloat16" and traced.inputs["b"].dtype == a.dtype
    assert traced.program.tensors["return0"].dtype == "bfloat16"


def test_every_instruction_is_located():
    traced = trace(kernel("legacy_ops.py::matmul_psum"), f32(256, 64), f32(256, 32))
    for inst, _ in traced.program.instructions():
        src = inst.extras["x-source"]
        assert src["file"] == "tests/nki/kernels/legacy_ops.py" and src["line"] > 0 and src["call"].startswith("n")


def test_tensor_named_by_name_keyword():
    with standins():
        import nki.language as nl

        def k(x):
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm, name="result")
            nl.store(out, nl.load(x))
            return out

        traced = trace(k, f32(8, 8))
    assert traced.outputs == ("result",) and traced.program.tensors["result"].role == "output"


def test_other_nki_submodules_import_and_refuse_their_names():
    with standins():
        import nki.tensor as ntensor

        with pytest.raises(NkiError, match=r"test_frontend\.py:\d+: nki\.tensor\.identity is not supported"):
            ntensor.identity(4)


def test_buffer_of_a_tile_compares_with_nl_buffers():
    with standins():
        import nki.language as nl

        def k(x):
            t = nl.load(x)
            assert t.buffer == nl.sbuf and t.buffer == "sbuf" and x.buffer == nl.hbm and t.buffer != nl.psum
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            nl.store(out, t)
            return out

        assert trace(k, f32(8, 8)).outputs == ("return0",)


def test_missing_harness_packages_import_as_stand_ins():
    with standins():
        import torch_xla.core.xla_model as xm

        with pytest.raises(NkiError, match="torch_xla.core.xla_model.xla_device is not supported"):
            xm.xla_device()
    assert "torch_xla" not in sys.modules and "torch_xla.core.xla_model" not in sys.modules


def test_a_read_only_input_of_its_dtype_is_traced_without_a_copy():
    """The command line's ``--inputs`` are read-only: the trace keeps them as they are (a
    production kernel's weights are not copied a second time); an array the caller may still
    write, or a read-only view of one, is copied, so changing it after the trace changes nothing
    the trace saw."""
    add = kernel("current_ops.py::add")
    frozen, writable = f32(128, 64), f32(128, 64)
    frozen.flags.writeable = False
    view = writable[:]
    view.flags.writeable = False
    traced = trace(add, frozen, writable)
    (a, b) = traced.inputs.values()
    assert a is frozen
    assert not np.shares_memory(b, writable)
    traced = trace(add, frozen, view)
    assert not np.shares_memory(list(traced.inputs.values())[1], writable)


def test_a_traced_program_is_validated_once_and_a_command_does_not_check_it_again(monkeypatch):
    """The trace validates the program it hands on (not also the builder's draft of it), and a
    command validating that same program again finds it already checked: each tensor's
    placement is looked at once."""
    import neuronsim.machine.formats.validate as validate

    checked: list[str] = []
    placement = validate.check_placement
    monkeypatch.setattr(validate, "check_placement", lambda t, *a: (checked.append(t.name), placement(t, *a)))
    traced = trace(kernel("current_ops.py::add"), f32(256, 64), f32(256, 64))
    validate.validate_program(traced.program)
    assert sorted(checked) == sorted(traced.program.tensors)
