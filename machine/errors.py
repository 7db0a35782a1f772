"""Located errors for unusable input.

Every problem with a user's program is reported as a :class:`ProgramError` that names the
JSON path where it sits (``body[3].reads[0].pattern``) and says what was expected.  The
command line turns it into exit status 2 and one line on standard error, never a traceback.
"""

from __future__ import annotations

__all__ = ["ProgramError", "join_path"]


class ProgramError(ValueError):
    """A program (or other input document) cannot be used.

    Parameters
    ----------
    path:
        JSON path of the offending value, e.g. ``"tensors.x.shape"``; ``""`` for the document.
    message:
        What is wrong and what was expected.
    """

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or '<document>'}: {message}")
        self.path = path
        self.message = message


def join_path(base: str, key: str | int) -> str:
    """Extend a JSON path by an object key or a list index.

    >>> join_path("body[3]", "reads")
    'body[3].reads'
    >>> join_path("body", 2)
    'body[2]'
    >>> join_path("", "tensors")
    'tensors'
    """
    if isinstance(key, int):
        return f"{base}[{key}]"
    return f"{base}.{key}" if base else key
