"""Helpers shared by neuronsim's tests: oracles, planted bugs, program kits, kernel runners.

This package sits on pytest's ``pythonpath`` (``tests/support``), so tests import it as
``neuronsim_tests.<module>`` while neuronsim itself comes only from the installed package
(``neuronsim.*``); the checkout's root is never on ``sys.path``.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
"""The repository's root (the folder that holds ``pyproject.toml``)."""

STARTUP_SYS_PATH = tuple(sys.path)
"""``sys.path`` as pytest set it up, read while the tests are collected (before any test runs:
a test of a user-facing feature may legitimately add the folder it runs in, as ``fuzz --pass``
and ``nki`` do for a user's modules)."""
