"""Hypothesis profiles for the test suite.

``NEURONSIM_HYPOTHESIS_PROFILE`` selects one (default ``default``):

``default`` / ``ci``
    modest example counts, no deadline (shared machines time badly); the whole suite stays
    within minutes on two cores.  Derandomized: every run draws the same examples, so a
    result is reproducible and CI is deterministic (the brief: "results are deterministic
    for a given seed").
``explore``
    the same counts with fresh random examples on every run, to look for new failures.
``thorough``
    ten times the examples, random, for a long local or nightly run.
``fast``
    a handful of examples, derandomized: the fast tier (``tests/run --fast``).

The fast tier (``tests/run --fast``: ``-m "not slow"`` with the ``fast`` profile) leaves out the
tests marked ``slow``: every test under ``tests/e2e`` (processes from a temporary folder),
``tests/quality`` (fuzzing until planted bugs are found) and ``tests/property`` (generated
programs), and the modules of :data:`SLOW_MODULES`, measured over a second each on two cores.
What stays touches every room: the house, the unit tests, the NKI frontend.

The corpus tier: the modules of :data:`CORPUS_MODULES` run the public NKI corpus (third-party
code, never in the repository) from the folder ``NEURONSIM_NKI_CORPUS`` names.  A fresh clone has
no corpus, so without the variable they are deselected and the run ends with one line saying so;
``.ci/run`` sets the variable and refuses to start when the folder is missing, so CI always runs
them (and a test that gets an empty or wrong folder fails, never skips).

Tests that need a minimum number of examples (the geometry brute force) take the larger of
their minimum and the profile's count.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

settings.register_profile("default", max_examples=60, derandomize=True, **_COMMON)
settings.register_profile("ci", max_examples=60, derandomize=True, print_blob=True, **_COMMON)
settings.register_profile("explore", max_examples=60, **_COMMON)
settings.register_profile("thorough", max_examples=600, **_COMMON)
settings.register_profile("fast", max_examples=5, derandomize=True, **_COMMON)
settings.load_profile(os.environ.get("NEURONSIM_HYPOTHESIS_PROFILE", "default"))


SLOW_FOLDERS = ("e2e", "quality", "property")
#: modules of the other folders whose tests together take over 20 s of one core (measured with
#: ``--durations=0``: processes per case, simulated kernels, generated programs); the rest of
#: unit/, nki/ and house/ is the fast tier
SLOW_MODULES: frozenset[str] = frozenset({
    "test_alloc_race",
    "test_alloc_spill",
    "test_bad_input_all_commands",
    "test_bad_inputs_round4",
    "test_bench_scenarios",
    "test_cli_errors",
    "test_corpus_decode",
    "test_corpus_harness",
    "test_corpus_sample",
    "test_corpus_subkernels",
    "test_docs",
    "test_example_row_sums",
    "test_expand",
    "test_findings_semantics",
    "test_footprint",
    "test_format_errors",
    "test_fusion",
    "test_fusion_seed",
    "test_fuzz_cli",
    "test_fuzz_shrink",
    "test_html_report",
    "test_interchange",
    "test_kernels_groups",
    "test_large_working_set",
    "test_layers",
    "test_passes_alloc",
    "test_passes_compile_cli",
    "test_passes_pipeline",
    "test_passes_redundancy",
    "test_polish_io",
    "test_published_kernels",
    "test_reduction",
    "test_reduction_schedule",
    "test_scenarios",
    "test_scenarios_nki",
    "test_signals",
    "test_simulator",
    "test_size_guard",
    "test_tasks_cli",
    "test_unroll",
    "test_writing_a_pass",})


#: modules that read the public NKI corpus (``neuronsim_tests.nki_corpus``)
CORPUS_MODULES: frozenset[str] = frozenset({
    "test_api_surface",
    "test_corpus_harness",
    "test_corpus_sample",
    "test_corpus_subkernels",
})
CORPUS_VARIABLE = "NEURONSIM_NKI_CORPUS"


def pytest_collection_modifyitems(config, items):
    import pytest

    if not os.environ.get(CORPUS_VARIABLE):
        left_out = [item for item in items if item.path.stem in CORPUS_MODULES]
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = [item for item in items if item.path.stem not in CORPUS_MODULES]
    for item in items:
        try:
            parts = item.path.relative_to(config.rootpath).parts
        except ValueError:
            continue
        folder = parts[1] if len(parts) > 2 and parts[0] == "tests" else ""
        if folder in SLOW_FOLDERS or item.path.stem in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    # said by the controlling process: under xdist the workers deselect, and only the count shows
    if not os.environ.get(CORPUS_VARIABLE):
        terminalreporter.write_line(
            f"corpus tier not run ({', '.join(sorted(CORPUS_MODULES))}): {CORPUS_VARIABLE} is not set "
            "(the folder holding the public NKI corpus; CI sets it)", yellow=True)
