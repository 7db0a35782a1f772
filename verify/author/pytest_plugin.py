"""``pytest --neuronsim``: a kernel's test suite, unchanged, on neuronsim.

Registered as a ``pytest11`` entry point, so pytest loads it in every session of an
environment with neuronsim installed; without ``--neuronsim`` it does nothing (and imports
nothing heavy).  With it, for the whole session:

* ``nki`` / ``neuronxcc.nki`` and their submodules are neuronsim's stand-ins
  (:func:`neuronsim.machine.nki.standins`), so the tests' own imports of NKI work without an
  install (a real one is put back at the end of the session, untouched);
* every call the tests make to NKI's simulator (``nki.simulate_kernel(kernel, ...)``,
  ``nki.simulate(kernel)(...)``, and a kernel called directly on numpy arrays, as
  ``nki.baremetal(kernel)(...)``) runs end to end through :func:`neuronsim.nki.dropin.checked_run`;
* a test whose kernel has a race or an NKI finding fails with a short report that starts at
  the kernel line (:class:`neuronsim.nki.KernelFinding`), in place of neuronsim's own frames.
"""

from __future__ import annotations

from typing import Any

import pytest

__all__ = ["pytest_addoption", "pytest_configure", "pytest_unconfigure", "pytest_runtest_makereport"]

_SESSION: dict[str, Any] = {}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("neuronsim")
    group.addoption("--neuronsim", action="store_true", default=False,
                    help="Run the tests' NKI simulator calls (nki.simulate_kernel, nki.simulate) through neuronsim: "
                         "races and NKI findings fail the test at the kernel line.")


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("neuronsim", False) or _SESSION:
        return
    from neuronsim.machine.nki import standins
    from neuronsim.machine.nki.kernel import set_eager_runner
    from neuronsim.nki.dropin import checked_run
    from neuronsim.verify.nki import simulate as plain  # sets its own runner first: ours replaces it

    block = standins()
    block.__enter__()
    _SESSION.update(block=block, restore=plain.simulate_kernel)
    set_eager_runner(lambda kernel, *args, **kwargs: checked_run(kernel, args, kwargs)[0])
    config.addinivalue_line("markers", "simulation: a test NKI's simulator can run (nki-samples' marker)")


def pytest_unconfigure(config: pytest.Config) -> None:
    if not _SESSION:
        return
    from neuronsim.machine.nki.kernel import set_eager_runner

    set_eager_runner(_SESSION["restore"])
    _SESSION.pop("block").__exit__(None, None, None)
    _SESSION.clear()


def pytest_report_header(config: pytest.Config) -> str | None:
    return "neuronsim: NKI simulator calls run through neuronsim (races, NKI findings)" if _SESSION else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    outcome = yield
    if not _SESSION or call.excinfo is None:
        return
    from neuronsim.nki.dropin import KernelFinding

    if isinstance(call.excinfo.value, KernelFinding):
        finding = call.excinfo.value
        report = outcome.get_result()
        test_line = next((f"{e.path}:{e.lineno + 1}" for e in reversed(call.excinfo.traceback)
                          if str(e.path) == str(item.path)), str(item.path))
        report.longrepr = "\n".join([f"neuronsim: {finding}", f"  called from {test_line}",
                                     *(f"  - {p}" for p in finding.problems)])
