"""The kernel files under ``kernels/`` import ``nki`` / ``neuronxcc.nki``, which exist only as
neuronsim's stand-ins during a trace: they are inputs of the tests, not modules to collect
(``--doctest-modules`` would import them)."""

import pytest

collect_ignore = ["kernels"]


@pytest.fixture(autouse=True)
def run_in_tmp_path(request):
    """A test that writes files runs from its temporary folder, as a user runs a kernel from its
    folder: locations then read ``k.py:12`` (a file outside the working folder is named by its
    absolute path: ``tests/nki/test_location_outside_cwd.py``)."""
    if "tmp_path" in request.fixturenames:
        request.getfixturevalue("monkeypatch").chdir(request.getfixturevalue("tmp_path"))
