"""Non-vacuity for property tests: a test that skips its assertions on some examples must
still show, at the end of its run, that it made them often enough.

``hypothesis.assume`` discards an example a test cannot use (instead of returning early as if
it had passed); :func:`tally` notes which branch of assertions an example reached; and
:func:`nonvacuous` runs the test and then asserts that each branch was reached a minimum
number of times.  The check is inside the same pytest test, so it holds under
``pytest -n`` (a module-level counter read by a later test could land in another worker).

Example::

    @nonvacuous(checked=20)
    @given(programs())
    def test_something(program):
        assume(len(list(program.instructions())) >= 2)
        ...assertions...
        tally("checked")
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

__all__ = ["tally", "nonvacuous", "scaled_minimum"]

_running: list[Counter] = []


def tally(branch: str = "checked") -> None:
    """Note that the running test reached ``branch`` (after its assertions there)."""
    if _running:
        _running[-1][branch] += 1


#: the example count the minimums are written for (the ``default`` profile of tests/conftest.py)
PROFILE_EXAMPLES = 60


def scaled_minimum(asked: int) -> int:
    """``asked`` under the default profile; under a smaller one (the fast tier's five examples)
    the same share of its examples, and never fewer than one: a branch must still be reached.

    >>> scaled_minimum(10) >= 1
    True
    """
    from hypothesis import settings

    share = min(1.0, settings().max_examples / PROFILE_EXAMPLES)
    return max(1, int(asked * share))


def nonvacuous(**minimums: int) -> Callable[[Callable[[], None]], Callable[[], None]]:
    """Decorate a ``@given`` test: run it, then require ``tally(branch)`` at least N times."""

    def wrap(test: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            counts: Counter = Counter()
            _running.append(counts)
            try:
                test()
            finally:
                _running.pop()
            for branch, asked in minimums.items():
                least = scaled_minimum(asked)
                assert counts[branch] >= least, (
                    f"{test.__name__} reached {branch!r} on {counts[branch]} examples, fewer than {least}: "
                    f"it could pass without checking anything ({dict(counts)})")

        # Not functools.wraps: pytest must see a plain test without hypothesis's arguments.
        run.__name__, run.__qualname__, run.__doc__, run.__module__ = (
            test.__name__, test.__qualname__, test.__doc__, test.__module__)
        return run

    return wrap
