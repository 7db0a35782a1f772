"""NKI 0.7's ``nki.compiler`` configuration: a kernel that sets it loads and computes as one
that does not (the options choose how the compiler allocates and schedules, which neuronsim
models its own way), and what the configuration itself refuses is refused at the kernel's line."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import load_kernel
from neuronsim.machine.nki.errors import NkiError
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_a_kernel_with_a_compile_config_runs_as_numpy_computes():
    x = f32(128, 256)
    np.testing.assert_allclose(run(kernel("compile_config.py::add_one"), x)["return0"], x + 1, rtol=1e-6)


@pytest.mark.parametrize("config, message", [
    ("CompileConfig(scheduling=True)", "ValueError: scheduling=True needs allocation=Allocation.LINEAR"),
    ('CompileConfig(allocation="LINEAR")', "TypeError: allocation must be an nki.compiler.Allocation"),
    ('CompileConfig(opt_level=2)', "TypeError: opt_level must be an nki.compiler.OptLevel"),
])
def test_what_the_configuration_refuses_is_named_at_its_line(tmp_path, config, message):
    path = tmp_path / "bad_config.py"
    path.write_text("import nki\nimport nki.language as nl\nfrom nki.compiler import *\n\n\n"
                    f"@nki.jit(compile_config={config})\ndef k(x):\n    return x\n")
    with pytest.raises(NkiError, match=r"bad_config\.py:6: importing the kernel: " + message):
        load_kernel(f"{path}::k")
