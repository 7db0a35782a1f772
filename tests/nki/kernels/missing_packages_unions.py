"""A kernel file whose annotations, evaluated when it is imported (no ``from __future__ import
annotations``), join a name of a package that is not installed with ``| None`` (nki-library's
test harness: ``def get_finalized_metrics_context(self) -> MetricsContext | None``)."""

import nki
import nki.language as nl
from metrics_package_not_installed.logger import MetricsContext  # not installed here


class Collector:
    def context(self) -> MetricsContext | None:
        return None


def offset(context: None | MetricsContext = None) -> float:
    return 1.0


@nki.jit
def add_one(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(x), offset()))
    return out


@nki.jit
def unions_in_the_kernel(x):
    kinds = MetricsContext | None
    return kinds
