"""A misspelled name imported at the top of a kernel file."""

import nki
from nki.language import expp  # noqa: F401  (the typo under test)


@nki.jit
def never_traced(x):
    return x
