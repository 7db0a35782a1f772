"""Less common ``nki.isa`` instructions against their pages (a probe of generated kernels):

* ``nisa.activation`` / ``activate2`` default to ``reduce_cmd=idle`` (both generations'
  signatures; "idle: Do not modify reduce_regs"): with a ``reduce_res`` and no command they
  wrote this instruction's own row sums, as ``reset_reduce`` does;
* ``nisa.dma_compute`` computes in float32 and casts the result once (a copy of the first
  source into a bf16 destination rounded it before the add), and takes the page's scatter
  read-modify-write, ``dst(HBM)[indices] = dst(HBM)[indices] + src(SB)`` (refused);
* ``activate2``'s ``reduce_op`` takes ``nl.abs_max`` / ``nl.abs_min`` (refused): the signed
  element of the largest / smallest magnitude, as ``nl.abs_max`` returns "the original
  (signed) value".
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from neuronsim.machine.nki.errors import NkiError
from neuronsim.verify.nki.run import run_kernel

HEADER = {"current": "import nki\nimport nki.isa as nisa\nimport nki.language as nl\n\n\n@nki.jit{target}\n",
          "legacy": "import neuronxcc.nki as nki\nimport neuronxcc.nki.isa as nisa\n"
                    "import neuronxcc.nki.language as nl\n\n\n@nki.jit{target}\n"}


def _run(tmp_path, body: str, *arrays, api: str = "current", target: str = ""):
    params = ", ".join("abcd"[:len(arrays)])
    text = HEADER[api].format(target=f'(platform_target="{target}")' if target else "")
    (tmp_path / "k.py").write_text(f"{text}def kernel({params}):\n{body}")
    result, report = run_kernel(f"{tmp_path / 'k.py'}::kernel", *arrays, seeds=(None,))
    assert not report.run.problems(), report.run.problems()[:3]
    return result


CURRENT_IDLE = '''    out = nl.ndarray((8, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    junk = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    r = nl.ndarray((8, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(dst=junk, op=nl.copy, data=t, reduce_op=nl.add, reduce_res=r,
                    reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nisa.activation(dst=junk, op=nl.exp, data=t, reduce_op=nl.add, reduce_res=r)
    nisa.dma_copy(dst=out, src=r)
    return out
'''
LEGACY_IDLE = '''    out = nl.ndarray((8, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.load(a)
    r = nl.ndarray((8, 1), dtype=nl.float32, buffer=nl.sbuf)
    junk = nisa.activation(op=nl.copy, data=t, reduce_op=nl.add, reduce_res=r, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    junk2 = nisa.activation(op=nl.exp, data=t, reduce_op=nl.add, reduce_res=r)
    nl.store(out, r)
    return out
'''


@pytest.mark.parametrize("api, body", [("current", CURRENT_IDLE), ("legacy", LEGACY_IDLE)])
def test_an_activation_without_a_command_leaves_the_registers_as_they_are(tmp_path, api, body):
    a = np.random.default_rng(31).standard_normal((8, 16)).astype(np.float32)
    out = _run(tmp_path, body, a, api=api)
    # reduce_res holds the registers: the first activation's sums, the exp call adds nothing
    np.testing.assert_allclose(out, a.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-5)


def test_an_activation_reading_registers_nothing_set_says_idle_is_the_default(tmp_path):
    body = CURRENT_IDLE.replace("""    nisa.activation(dst=junk, op=nl.copy, data=t, reduce_op=nl.add, reduce_res=r,
                    reduce_cmd=nisa.reduce_cmd.reset_reduce)
""", "")
    with pytest.raises(NkiError, match="idle is the call's default .*reset_reduce gives this instruction's own"):
        _run(tmp_path, body, np.ones((8, 16), np.float32))


def test_dma_compute_rounds_its_float32_sum_once(tmp_path):
    a = np.full((8, 32), 257.0, np.float32)
    b = np.full((8, 32), -256.0, np.float32)
    body = ('''    out = nl.ndarray(a.shape, dtype=nl.bfloat16, buffer=nl.shared_hbm)
    ta = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ta, src=a)
    tb = nl.ndarray(b.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=tb, src=b)
    t = nl.ndarray(a.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.dma_compute(dst=t, srcs=[ta, tb], reduce_op=nl.add)
    nisa.dma_copy(dst=out, src=t)
    return out
''')
    out = _run(tmp_path, body, a, b)
    assert (out.astype(np.float32) == 1.0).all()  # 257 rounded to bf16 first is 256: 0
    assert out.dtype == ml_dtypes.bfloat16


def test_dma_compute_takes_the_pages_scatter_read_modify_write(tmp_path):
    rng = np.random.default_rng(32)
    s = rng.standard_normal((8, 16)).astype(np.float32)
    i = rng.permutation(32)[:8].astype(np.uint32).reshape(8, 1)
    base = rng.standard_normal((32, 16)).astype(np.float32)
    body = '''    P, F = a.shape
    out = nl.ndarray(c.shape, dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=c)
    t = nl.ndarray((P, F), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    ix = nl.ndarray((P, 1), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.dma_copy(dst=ix, src=b)
    rows = out.ap(pattern=[[F, P], [1, F]], vector_offset=ix, indirect_dim=0)
    nisa.dma_compute(dst=rows, srcs=[rows, t], reduce_op=nl.add)
    return out
'''
    expected = base.copy()
    expected[i[:, 0]] += s
    np.testing.assert_allclose(_run(tmp_path, body, s, i, base), expected, rtol=1e-6)


@pytest.mark.parametrize("op, pick", [("nl.abs_max", np.argmax), ("nl.abs_min", np.argmin)])
def test_activate2_reduces_by_magnitude_to_the_signed_element(tmp_path, op, pick):
    a = np.random.default_rng(33).standard_normal((8, 16)).astype(np.float32)
    body = f'''    out = nl.ndarray((8, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=a)
    d = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
    r = nl.ndarray((8, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activate2(dst=d, op=nl.copy, data=t, imm0=1.0, imm1=0.0, op0=nl.multiply, op1=nl.bypass,
                   reduce_op={op}, reduce_res=r, reduce_cmd=nisa.reduce_cmd.reset_reduce)
    nisa.dma_copy(dst=out, src=r)
    return out
'''
    expected = np.take_along_axis(a, pick(np.abs(a), axis=1)[:, None], axis=1)
    np.testing.assert_array_equal(_run(tmp_path, body, a, target="trn3"), expected)
    assert (expected < 0).any()  # a negative one among them: the sign is the element's


def test_a_reducer_an_idle_activation_does_not_use_is_no_refusal_before_neuroncore_v3(tmp_path):
    # idle (the default) folds nothing, so a legacy call naming reduce_op=nl.max on trn1 (whose
    # registers add only) runs: the default's change must not refuse what ran before
    a = np.random.default_rng(34).standard_normal((8, 16)).astype(np.float32)
    body = ("    out = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.shared_hbm)\n"
            "    nl.store(out, nisa.activation(op=nl.exp, data=nl.load(a), reduce_op=nl.max))\n    return out\n")
    np.testing.assert_allclose(_run(tmp_path, body, a, api="legacy"), np.exp(a), rtol=1e-5)
