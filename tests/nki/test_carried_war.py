"""``carried`` of a write over bytes an earlier affine iteration read (WAR): an in-place stencil
``t[j] = t[j] + t[j + 1]`` ran without a word, in SBUF and through HBM, where the read-after-
write and write-after-write forms were findings (probe_at BUG 2)."""

from __future__ import annotations

import numpy as np

from neuronsim.machine.nki import trace
from neuronsim.verify.nki.findings import nki_findings
from neuronsim_tests.nki_kernels import f32, kernel, run


def _found(name, *arrays, **kw):
    return nki_findings(trace(kernel(f"carried_war.py::{name}"), *arrays, **kw).program)


def test_an_in_place_stencil_is_a_war_finding_at_its_line():
    x = f32(3, 128, 512)
    for name in ("stencil", "stencil_through_hbm"):
        found = _found(name, x)
        assert [(f.kind, f.dependence, f.distance) for f in found] == [("carried", "WAR", 1)], \
            [f.describe() for f in found]
        line = 16 if name == "stencil" else 29
        assert found[0].first.endswith(f"carried_war.py:{line} [j=0]"), found[0].first
        assert found[0].second.endswith(f"carried_war.py:{line} [j=1]"), found[0].second
        assert "overwrites bytes an earlier one reads" in found[0].describe()


def test_a_plus_equals_stencil_is_the_same_finding():
    """probe_av: the rule that a ``+=`` writing what it read says nothing new dropped the WAR too."""
    found = _found("stencil_plus_equals", f32(3, 128, 512))
    assert [(f.dependence, f.distance) for f in found] == [("WAR", 1)], [f.describe() for f in found]


def test_in_order_or_without_a_write_over_the_reads_it_is_none():
    x = f32(3, 128, 512)
    assert _found("stencil", x, sequential=True) == []
    assert _found("shifted_copy", x) == []
    out = run(kernel("carried_war.py::stencil"), x, sequential=True)["return0"]
    np.testing.assert_allclose(out, np.stack([x[0] + x[1], x[1] + x[2], x[2]]), rtol=1e-6)


def test_a_scratch_tile_rewritten_every_iteration_is_told_once_as_the_waw():
    found = _found("scratch_rewritten", f32(3, 128, 512))
    assert [f.dependence for f in found] == ["WAW"], [f.describe() for f in found]
