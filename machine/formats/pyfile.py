"""Running a user's Python file as a module: a kernel file, a ``--reference`` file, a scenario.

The file runs once under the given module name, registered in ``sys.modules`` while it runs,
as an import would register it: ``dataclasses`` and ``pickle`` find a class's module by name,
so a file with string annotations (``from __future__ import annotations``) and a
``@dataclass`` fails without it.  When the file raises, the name is let go again.

>>> import os, tempfile
>>> with tempfile.TemporaryDirectory() as folder:
...     path = os.path.join(folder, "user.py")
...     with open(path, "w") as handle:
...         _ = handle.write("from __future__ import annotations\\n"
...                          "from dataclasses import dataclass\\n\\n\\n"
...                          "@dataclass\\nclass Point:\\n    x: int = 1\\n")
...     run_file(path, "doctest_user_file").Point().x
1
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

__all__ = ["run_file"]


def run_file(path: object, name: str) -> ModuleType:
    """The module made by running the Python file ``path`` under ``name`` (module doc)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module
