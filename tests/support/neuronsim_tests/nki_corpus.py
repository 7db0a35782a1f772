"""Where the public NKI corpus is, for the tests that run it.

The corpus (aws-neuron-sdk, nki-samples and nki-library, third-party code) is never in the
repository: ``NEURONSIM_NKI_CORPUS`` names the folder holding it, and ``.ci/run`` sets it.  A test
that needs the corpus fails, never skips, when the variable is unset or names no such folder, so
a CI run without the corpus cannot pass by leaving the corpus checks out.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The variable ``bench/bench_corpus.py`` reads too when no ``--corpus`` is given.
CORPUS_VARIABLE = "NEURONSIM_NKI_CORPUS"


def nki_corpus() -> Path:
    """The corpus folder; an assertion naming the variable when it is missing."""
    folder = os.environ.get(CORPUS_VARIABLE, "")
    assert folder, (f"{CORPUS_VARIABLE} is not set: set it to the folder holding the public NKI corpus "
                    "(aws-neuron-sdk, nki-samples, nki-library); .ci/run sets it")
    path = Path(folder)
    assert (path / "aws-neuron-sdk").is_dir(), f"{CORPUS_VARIABLE}={folder}: no aws-neuron-sdk folder there"
    return path.resolve()
