"""A kernel written for the legacy API run under ``import nki`` (NKI 0.7): its ``nisa`` calls
pass their arguments one place early, since 0.7's take ``dst`` first.  The refusal stays at
the call's line and now says so (KLR's tensor_scalar tests, written that way)."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, load_kernel, trace

KERNELS = '''
import nki
import nki.isa as nisa
import nki.language as nl
import numpy as np


@nki.jit
def legacy_form(a):
    t = nl.load(a)
    r = nisa.tensor_scalar(t, np.add, 1.0)
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


@nki.jit
def legacy_activation(a):
    t = nl.load(a)
    r = nisa.activation(nl.exp, t)
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


@nki.jit
def legacy_keywords(a):
    t = nl.load(a)
    r = nisa.activation(op=nl.exp, data=t)
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out


@nki.jit
def current_form_wrong_shape(a):
    t = nl.load(a)
    r = nl.ndarray((64, 10), dtype=t.dtype, buffer=nl.sbuf)
    nisa.tensor_scalar(r, t, np.add, 1.0)
    out = nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm)
    nl.store(out, r)
    return out
'''


@pytest.mark.parametrize("name, line", [("legacy_form", 11), ("legacy_activation", 20), ("legacy_keywords", 29)])
def test_a_legacy_call_under_import_nki_says_that_dst_goes_first(tmp_path, name, line):
    (tmp_path / "k.py").write_text(KERNELS)
    with pytest.raises(NkiError) as err:
        trace(load_kernel(f"{tmp_path / 'k.py'}::{name}"), np.ones((4, 10), np.float32))
    text = str(err.value)
    assert text.startswith(f"k.py:{line}: ") and "writes its output first" in text and "(dst, " in text


def test_a_current_call_that_fails_otherwise_gets_no_such_hint(tmp_path):
    (tmp_path / "k.py").write_text(KERNELS)
    with pytest.raises(NkiError) as err:
        trace(load_kernel(f"{tmp_path / 'k.py'}::current_form_wrong_shape"), np.ones((4, 10), np.float32))
    assert "writes its output first" not in str(err.value)


MISSPELT = '''import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def misspelt_dst(a):
    t = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    u = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst_tile=u, src=t)
    return t
'''


def test_a_misspelt_required_keyword_is_named_not_the_output_first_form(tmp_path):
    # it was told to put dst first, `dst_tile` never named (probe_ba)
    (tmp_path / "m.py").write_text(MISSPELT)
    with pytest.raises(NkiError) as err:
        trace(load_kernel(f"{tmp_path / 'm.py'}::misspelt_dst"), np.ones((4, 10), np.float32))
    text = str(err.value)
    assert text.startswith("m.py:11: ") and "keyword 'dst_tile' is no parameter of nisa.tensor_copy: did you mean " \
                                                 "'dst'?" in text
    assert "writes its output first" not in text
