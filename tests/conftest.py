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
settings.load_profile(os.environ.get("NEURONSIM_HYPOTHESIS_PROFILE", "default"))
