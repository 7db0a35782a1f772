"""The corpus run's harness (``bench/``): the import stand-ins its worker installs for packages
the corpus's test files import (``bench/corpus_standins.py``), the grouping of failure causes
(a missing module keeps its name), and a corpus file that does not parse counted as such, at
its own line, rather than as a refusal of neuronsim.

The bench modules are scripts, never imported by a test: each check runs a script as its user
does (``corpus_standins.py FILE`` runs a file with the stand-ins installed, ``bench_corpus.py
--records`` counts records again) and reads what it prints or writes.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from neuronsim_tests.bench_runs import run_bench
from neuronsim_tests.nki_corpus import nki_corpus


def run_with_standins(tmp_path: Path, code: str) -> dict:
    """The JSON the probe ``code`` prints last, run as a file under the stand-ins."""
    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent(code))
    return json.loads(run_bench("corpus_standins.py", str(probe), timeout=120).stdout.strip().splitlines()[-1])


def test_standins_import_what_the_harness_imports_and_refuse_use(tmp_path: Path) -> None:
    got = run_with_standins(tmp_path, """
        import json
        import numpy as np
        import torch
        import torch.nn.functional as F
        from botocore.exceptions import ClientError
        import neuron_dtypes as dt
        table = torch.tensor([0.5, -6.0], dtype=torch.float32)  # module-level use in nki-library
        cast = dt.static_cast(np.array([1.25, 3.0]), dt.bfloat16)
        try:
            F.interpolate(table, scale_factor=2)
            used = "no error"
        except Exception as err:
            used = f"{type(err).__name__}: {err}"
        print(json.dumps({"table": table.tolist(), "cast": str(cast.dtype), "x4": dt.float8_e4m3fn_x4.__name__,
                          "client_error_is_class": isinstance(ClientError, type), "used": used}))
    """)
    assert got["table"] == [0.5, -6.0]
    assert got["cast"] == "bfloat16"
    assert got["x4"] == "float8_e4m3fn"
    assert got["client_error_is_class"] is True
    assert got["used"].startswith("StandinUsed: ")
    assert "torch.nn.functional.interpolate is an import stand-in" in got["used"]


def test_causes_keep_missing_module_names_and_blank_the_rest(tmp_path: Path) -> None:
    missing = [{"kernel": f"k{n}.py::k", "outcome": "refused",
                "message": f"loading: importing the kernel: ModuleNotFoundError: No module named '{name}' at t_12"}
               for n, name in enumerate(("fabric2", "neuron_dtypes"))]
    records = [*missing, {"kernel": "q.py::q", "outcome": "refused", "message": "tracing: 'qk_3' has 4 rows"}]
    (tmp_path / "records.json").write_text(json.dumps(records))
    run_bench("bench_corpus.py", "--records", str(tmp_path / "records.json"), "--summary", str(tmp_path / "s.txt"))
    grouped = (tmp_path / "s.txt").read_text().splitlines()
    causes = [line.split("] ", 1)[1] for line in grouped if line.startswith("[1] ")]
    assert len(causes) == 3, causes
    assert sum(cause.endswith("No module named 'fabric2' at <tensor>") for cause in causes) == 1
    assert sum(cause.endswith("No module named 'neuron_dtypes' at <tensor>") for cause in causes) == 1
    assert "refused: tracing: '_' has N rows" in causes


def test_a_corpus_file_that_does_not_parse_is_counted_at_its_line() -> None:
    done = run_bench("bench_corpus.py", "--corpus", str(nki_corpus()), "--filter",
                     "nki/examples/layout-dynamic-loop.py")
    first = done.stdout.splitlines()[0]
    assert first.startswith("unparsed")
    assert "layout-dynamic-loop.py:25: corpus file does not parse: SyntaxError" in first
    assert "1 unparsed" in done.stdout and "running correctly or refused as expected 1 of 1" in done.stdout
