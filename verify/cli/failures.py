"""The command line's own failure: bad flags or files, outside any program document (exit 2).

Its own module so that the modules :mod:`~neuronsim.verify.cli.common` gathers (the output-path
checks of :mod:`~neuronsim.verify.cli.output_paths`) raise it without importing ``common``.
"""

from __future__ import annotations

__all__ = ["UsageFailure"]


class UsageFailure(Exception):
    """Exit 2 with a message (bad flags or files, outside any program document)."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.message = message
