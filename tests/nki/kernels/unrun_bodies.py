"""Compiled loops whose bodies run no iteration on the test's inputs (a device bound of 0, a
while_loop's register 0 from the start, a static fori_loop(0, 0)): NKI builds each body all the
same, so a call in it that NKI refuses is said (machine/nki/unrun.py).  Beside them, bodies that
are fine, one whose run would only break the code after the loop, and one failing in a helper."""

import nki
import nki.isa as nisa
import nki.language as nl


def _count(n_input):
    nt = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=nt, src=n_input)
    return nt


def _loaded(data, shape=(4, 8)):
    t = nl.ndarray(shape, dtype=nl.float32, buffer=nl.sbuf)
    if data is not None:
        nisa.dma_copy(dst=t, src=data)
    return t


def _returned(t):
    out = nl.ndarray((4, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


@nki.jit
def fori_device_zero(n_input, data):
    t = _loaded(data)
    wrong = _loaded(None, (2, 3))
    nl.fori_loop(0, nisa.scalar_load(_count(n_input)),
                 lambda i: nisa.tensor_tensor(dst=t, data1=t, data2=wrong, op=nl.add))  # BAD FORI
    return _returned(t)


@nki.jit
def while_zero(n_input, data):
    nt = _count(n_input)
    reg = nisa.register_alloc()
    nisa.register_load(reg, nt)
    t = _loaded(data)
    small = _loaded(None, (4, 4))

    def body(r):
        nisa.tensor_scalar(dst=small, data=t, op0=nl.add, operand0=1.0)  # BAD WHILE
        nisa.register_load(r, nt)
        return r

    nl.while_loop(reg, body)
    return _returned(t)


def _scaled_wrongly(t, wrong):
    nisa.tensor_tensor(dst=t, data1=t, data2=wrong, op=nl.multiply)  # BAD HELPER


@nki.jit
def static_zero_helper(data):
    t = _loaded(data)
    wrong = _loaded(None, (2, 3))
    nl.fori_loop(0, 0, lambda i: _scaled_wrongly(t, wrong))
    return _returned(t)


@nki.jit
def fine_bodies(n_input, data):
    """Both bodies are valid: no warning, and the output is the input (no iteration ran)."""
    t = _loaded(data)
    n = nisa.scalar_load(_count(n_input))
    nl.fori_loop(0, n, lambda i: nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0))
    nl.fori_loop(n, n, lambda i: nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0))
    return _returned(t)


@nki.jit
def body_run_breaks_what_follows(n_input, data):
    """The body, run once, makes the count 1, and a while_loop after it would then spin past
    the limit: a failure outside the body, which the device never meets (no warning)."""
    nt = _count(n_input)
    t = _loaded(data)
    nl.fori_loop(0, nisa.scalar_load(nt), lambda i: nisa.tensor_scalar(dst=nt, data=nt, op0=nl.add, operand0=1))
    reg = nisa.register_alloc()
    nisa.register_load(reg, nt)

    def spin(r):
        nisa.tensor_scalar(dst=nt, data=nt, op0=nl.add, operand0=1)  # moves away from zero if ever run
        nisa.register_load(r, nt)
        return r

    nl.while_loop(reg, spin)
    return _returned(t)


@nki.jit
def keyword_slip_unrun(data):
    """A misspelt keyword in a body that never runs: its warning, as where the body runs."""
    t = _loaded(data)
    nl.fori_loop(0, 0, lambda i: nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0,  # SLIP
                                                    reverse_operand0=False))
    return _returned(t)


@nki.jit
def dynamic_range_zero(n_input, data):
    """NKI 0.6's device loop, its body a for statement's (the lines the check reads)."""
    t = _loaded(data)
    wrong = _loaded(None, (2, 3))
    for _i in nl.dynamic_range(nisa.scalar_load(_count(n_input))):
        nisa.tensor_tensor(dst=t, data1=t, data2=wrong, op=nl.add)  # BAD DYN
    return _returned(t)


@nki.jit
def if_else_untaken_branch(n_input, data):
    """A device-valued if_else whose branch the inputs do not take is broken: NKI builds both
    branches, so it is said; the branch taken is fine, and is what the program holds."""
    t = _loaded(data)
    wrong = _loaded(None, (2, 3))

    def broken():
        nisa.tensor_tensor(dst=t, data1=t, data2=wrong, op=nl.add)  # BAD BRANCH

    nl.if_else(nisa.scalar_load(_count(n_input)), broken, lambda: nisa.tensor_scalar(dst=t, data=t, op0=nl.add,
                                                                                       operand0=0.0))
    return _returned(t)


@nki.jit
def if_else_on_a_python_value(data):
    """On a Python value the branch is picked as the kernel traces: only it is built (no warning)."""
    t = _loaded(data)
    wrong = _loaded(None, (2, 3))
    nl.if_else(0, lambda: nisa.tensor_tensor(dst=t, data1=t, data2=wrong, op=nl.add))
    return _returned(t)


@nki.jit
def if_else_fine_branches(n_input, data):
    """Both branches valid: no warning; the output is the else branch's (the count is 0)."""
    t = _loaded(data)
    nl.if_else(nisa.scalar_load(_count(n_input)), lambda: nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=5.0),
               lambda: nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=0.0))
    return _returned(t)
