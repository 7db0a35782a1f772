"""Access to the documentation scripts under ``docs/`` (a folder of scripts, not a package)."""

from __future__ import annotations

import importlib.util
import json
import sys
from functools import lru_cache
from types import ModuleType

from neuronsim_tests import ROOT
SCHEMA_PATH = ROOT / "docs" / "schema" / "program.schema.json"


def load_script(relative: str) -> ModuleType:
    """Import ``docs/NAME.py`` (or any repo script) as a module."""
    path = ROOT / relative
    name = "_docs_" + path.stem
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@lru_cache(maxsize=1)
def program_validator():
    """A draft 2020-12 validator of the committed program schema."""
    from jsonschema import Draft202012Validator

    schema = json.loads(SCHEMA_PATH.read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)
