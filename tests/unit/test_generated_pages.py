"""The generated pages (docs/api.md, docs/op-table.md, the program schema) are current: in the
fast tier, so that a changed signature or docstring is caught before CI (test_docs.py, which
runs the command line, is a slow module)."""

from __future__ import annotations

import doctest

from neuronsim_tests.docs_kit import load_script


def test_generated_pages_are_current():
    generate = load_script("docs/generate.py")
    assert generate.main(["--check"]) == 0, "run: python docs/generate.py"
    assert doctest.testmod(generate).failed == 0
