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
#: modules of the other folders whose tests take seconds each (``--durations=0`` on two cores)
SLOW_MODULES: frozenset[str] = frozenset()


def pytest_collection_modifyitems(config, items):
    import pytest

    for item in items:
        try:
            parts = item.path.relative_to(config.rootpath).parts
        except ValueError:
            continue
        folder = parts[1] if len(parts) > 2 and parts[0] == "tests" else ""
        if folder in SLOW_FOLDERS or item.path.stem in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
