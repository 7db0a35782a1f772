"""The corpus run's harness (``bench/``): the import stand-ins its worker installs for packages
the corpus's test files import (``bench/corpus_standins.py``), the grouping of failure causes
(a missing module keeps its name), and a corpus file that does not parse counted as such, at
its own line, rather than as a refusal of neuronsim.

The bench modules are scripts beside each other, not an installed package: each check runs in
a fresh interpreter from ``bench/``, as the run's own worker does.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from neuronsim_tests.nki_corpus import nki_corpus

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"


def _python(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=BENCH, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_standins_import_what_the_harness_imports_and_refuse_use() -> None:
    out = _python("""
        import json
        import numpy as np
        import corpus_standins
        corpus_standins.install()
        import torch
        import torch.nn.functional as F
        from botocore.exceptions import ClientError
        import neuron_dtypes as dt
        table = torch.tensor([0.5, -6.0], dtype=torch.float32)  # module-level use in nki-library
        cast = dt.static_cast(np.array([1.25, 3.0]), dt.bfloat16)
        try:
            F.interpolate(table, scale_factor=2)
            used = "no error"
        except corpus_standins.StandinUsed as err:
            used = str(err)
        print(json.dumps({"table": table.tolist(), "cast": str(cast.dtype), "x4": dt.float8_e4m3fn_x4.__name__,
                          "client_error_is_class": isinstance(ClientError, type), "used": used}))
    """)
    got = json.loads(out.strip().splitlines()[-1])
    assert got["table"] == [0.5, -6.0]
    assert got["cast"] == "bfloat16"
    assert got["x4"] == "float8_e4m3fn"
    assert got["client_error_is_class"] is True
    assert "torch.nn.functional.interpolate is an import stand-in" in got["used"]


def test_causes_keep_missing_module_names_and_blank_the_rest() -> None:
    out = _python("""
        from bench_corpus import cause_of
        for name in ("fabric2", "neuron_dtypes"):
            print(cause_of({"outcome": "refused", "message": f"loading: importing the kernel: "
                            f"ModuleNotFoundError: No module named '{name}' at t_12"}))
        print(cause_of({"outcome": "refused", "message": "tracing: 'qk_3' has 4 rows"}))
    """)
    lines = out.strip().splitlines()
    assert lines[0].endswith("No module named 'fabric2' at <tensor>")
    assert lines[1].endswith("No module named 'neuron_dtypes' at <tensor>")
    assert lines[2] == "refused: tracing: '_' has N rows"


def test_a_corpus_file_that_does_not_parse_is_counted_at_its_line() -> None:
    done = subprocess.run([sys.executable, str(BENCH / "bench_corpus.py"), "--corpus", str(nki_corpus()),
                           "--filter", "nki/examples/layout-dynamic-loop.py"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("unparsed")
    assert "layout-dynamic-loop.py:25: corpus file does not parse: SyntaxError" in first
    assert "1 unparsed" in done.stdout and "running correctly or refused as expected 1 of 1" in done.stdout
