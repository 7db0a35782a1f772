"""Running a bench script as its user does: ``python bench/NAME.py ARGS`` in a process of its own,
from the repository's root, with the interpreter running the tests (the venv's).

Tests never import a bench script (``tests/house/test_bench_independent.py``): a bench is a
program whose output is its product, so a test checks that output; what a test needs as a
function lives in the installed package.
"""

from __future__ import annotations

import subprocess
import sys

from neuronsim_tests import ROOT


def run_bench(script: str, *args: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess:
    """The finished run of ``bench/SCRIPT`` with ``args``; with ``check``, an assertion carrying its
    standard error unless it exited 0."""
    done = subprocess.run([sys.executable, str(ROOT / "bench" / script), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)
    if check:
        assert done.returncode == 0, f"bench/{script} {' '.join(args)} exited {done.returncode}:\n{done.stderr}"
    return done
