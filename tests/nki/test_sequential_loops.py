"""Sequential loops (issue 30): a legacy kernel's Python ``range`` and ``nl.sequential_range``
keep their iterations in order on each engine when scheduled; ``nl.affine_range`` iterations
may overlap.  The oracles: every compiled program race-free, its outputs the numpy reference's."""

from __future__ import annotations

import re

import numpy as np
import pytest

from neuronsim.machine.nki import load_kernel, trace
from neuronsim.machine.sim.simulator import simulate
from neuronsim.passes import TRACED_PIPELINE, compile_program
from neuronsim.machine.ir.program import Loop
from neuronsim.passes.iteration_order import IN_ORDER_KEY, RANGE_KEY, InOrder, iteration_gates
from neuronsim.verify.nki.run import outputs_differ, run_kernel
from neuronsim.verify.racecheck import check_program

TRACED = TRACED_PIPELINE + ",dep-reduction"
TILES = 6

KERNEL = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def scaled(x, w):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in LOOP(x.shape[1] // 512):
        if UNROLL and i == 0:  # a Python test of the index: the loop is unrolled to answer it
            pass
        a = nl.load(x[:, i * 512:(i + 1) * 512])
        b = nl.load(w[:, i * 512:(i + 1) * 512])
        c = nisa.tensor_tensor(a, b, nl.multiply)
        d = nisa.tensor_tensor(c, b, nl.add)
        nl.store(out[:, i * 512:(i + 1) * 512], d)
    return out


def reference(x, w):
    return x * w + w
'''

ODD_USES = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def odd(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    assert len(range(4)) == 4 and list(range(3)) == [0, 1, 2] and range(10)[-1] == 9 and 3 in range(5)
    assert range(0, 8, 2)[::-1] == range(6, -2, -2) and range(1, 9, 3).step == 3
    assert isinstance(range(3), range) and not isinstance(3, range) and type(range(2)) is range
    for i in reversed(range(2)):
        for j in range(2):
            t = nl.load(x[i * 64:(i + 1) * 64, j * 256:(j + 1) * 256])
            nl.store(out[i * 64:(i + 1) * 64, j * 256:(j + 1) * 256], t)
    for i in list(range(2)):  # a loop over a list (of a range): Python's loop
        t = nl.load(x[i * 64:(i + 1) * 64, 0:8])
        nl.store(out[i * 64:(i + 1) * 64, 0:8], t)
    for k in range(5):
        if k == 1:
            break
    t = nl.load(x[:, 0:4])
    nl.store(out[:, 0:4], t)
    return out
'''


def _kernel(tmp_path, loop: str, source: str = KERNEL, unroll: bool = False) -> str:
    path = tmp_path / f"k_{loop.replace('.', '_')}_{int(unroll)}.py"
    path.write_text(source.replace("LOOP", loop).replace("UNROLL", str(unroll)))
    return str(path)


def _inputs():
    rng = np.random.default_rng(5)
    return [rng.uniform(-1, 1, (128, 512 * TILES)).astype(np.float32) for _ in range(2)]


def _iteration_of(program) -> dict[str, int]:
    return {inst.name: inst.extras[IN_ORDER_KEY][0][2] for inst, _ in program.instructions()
            if inst.extras and IN_ORDER_KEY in inst.extras}


def _iteration(inst) -> int:
    """A scheduled instance's iteration: its mark (a Python loop), or its index (a kept loop, flattened)."""
    if inst.extras and IN_ORDER_KEY in inst.extras:
        return inst.extras[IN_ORDER_KEY][0][2]
    return int(re.search(r"\[(\d+)", inst.name).group(1))


def _loop_kinds_of(loops) -> list[str]:
    return [dict(loop.extras or {}).get(RANGE_KEY) for loop in loops]


def _loop_kinds(program) -> list[str]:
    return [dict(node.extras or {}).get(RANGE_KEY) for node, _ in program.walk() if isinstance(node, Loop)]


def test_a_python_range_is_the_compilers_sequential_range(tmp_path):
    """A legacy kernel's ``for`` over ``range`` is kept as ``nl.sequential_range`` is (its body
    traced once); an ``nl.affine_range`` is kept affine; neither marks its instructions."""
    programs = {loop: trace(load_kernel(_kernel(tmp_path, loop) + "::scaled"), *_inputs(), machine="trn1").program
                for loop in ("range", "nl.sequential_range", "nl.affine_range")}
    assert _loop_kinds(programs["range"]) == _loop_kinds(programs["nl.sequential_range"]) == ["sequential"]
    assert _loop_kinds(programs["nl.affine_range"]) == ["affine"]
    ops = {loop: [inst.op for inst, _ in program.instructions()] for loop, program in programs.items()}
    assert ops["range"] == ops["nl.sequential_range"] == ops["nl.affine_range"] and len(ops["range"]) == 5
    assert not any(inst.extras and IN_ORDER_KEY in inst.extras
                   for program in programs.values() for inst, _ in program.instructions())
    assert iteration_gates(programs["nl.affine_range"]) is None


@pytest.mark.parametrize("loop", ["range", "nl.sequential_range"])
def test_an_unrolled_sequential_loop_marks_each_iteration(tmp_path, loop):
    """The body tests its index in Python: the loop is unrolled, each instruction marked with
    its iteration (one run)."""
    marked = trace(load_kernel(_kernel(tmp_path, loop, unroll=True) + "::scaled"), *_inputs(), machine="trn1").program
    assert _loop_kinds(marked) == []
    iterations = _iteration_of(marked)
    assert sorted(iterations.values()) == sorted(list(range(TILES)) * 5)  # 2 loads, 2 ops, 1 store each
    assert len({inst.extras[IN_ORDER_KEY][0][0] for inst, _ in marked.instructions()}) == 1


@pytest.mark.parametrize("unroll", [False, True])
@pytest.mark.parametrize("loop", ["range", "nl.sequential_range"])
def test_sequential_iterations_stay_in_order_on_every_engine(tmp_path, loop, unroll):
    """Against the affine loop of the same body: the scheduler interleaves its iterations on
    some engine and finishes sooner; the sequential loop's never step back on any engine."""
    arrays = _inputs()
    makespans, backwards = {}, {}
    for kind in (loop, "nl.affine_range"):
        path = _kernel(tmp_path, kind, unroll=unroll and kind == loop)
        traced = trace(load_kernel(path + "::scaled"), *arrays, machine="trn1")
        gates = iteration_gates(traced.program) if kind == loop else None
        compiled, _ctx = compile_program(traced.program, TRACED)
        assert check_program(compiled).races == ()
        _outputs, report = run_kernel(path + "::scaled", *arrays, reference=load_kernel(path + "::reference"),
                                      seeds=(None,))
        assert outputs_differ(report) == []
        makespans[kind] = simulate(compiled, functional=False).runs[0].trace.makespan
        steps: dict[str, list[int]] = {}
        for inst, _ in compiled.instructions():
            steps.setdefault(inst.engine, []).append(_iteration(inst))
        backwards[kind] = any(b < a for seq in steps.values() for a, b in zip(seq, seq[1:]))
        if gates is not None:
            assert len(gates) == 5 * TILES and {g[-1][1] for g in gates} == set(range(TILES))
    assert not backwards[loop] and makespans[loop] > makespans["nl.affine_range"]


def test_the_gates_hold_each_engine_to_its_iterations():
    """Three nodes of iterations 0, 1, 0 on one engine, one of iteration 1 on another."""
    gates = [((0, 0),), ((0, 1),), ((0, 0),), ((0, 1),)]
    engines = {0: ("dve",), 1: ("dve",), 2: ("dve",), 3: ("act",)}
    state = InOrder(gates, lambda i: engines[i])
    assert [state.closed(i, engines[i][0]) for i in range(4)] == [False, True, False, False]
    state.park(1, "dve")
    assert state.take(0, ("dve",)) == []
    assert state.take(2, ("dve",)) == [(1, "dve")]  # iteration 0 has started everything on DVE
    assert not state.closed(1, "dve")


def test_a_current_api_kernel_is_not_marked(tmp_path):
    """NKI 0.7 unrolls every Python loop before the compiler: its loops are not sequential."""
    source = KERNEL.replace("import neuronxcc.nki as nki", "import nki").replace("neuronxcc.nki.", "nki.")
    source = source.replace("c = nisa.tensor_tensor(a, b, nl.multiply)", "c = nl.multiply(a, b)")
    source = source.replace("d = nisa.tensor_tensor(c, b, nl.add)", "d = nl.add(c, b)")
    program = trace(load_kernel(_kernel(tmp_path, "range", source) + "::scaled"), *_inputs(), machine="trn1").program
    assert sum(1 for _ in program.instructions()) == 5 * TILES
    assert not any(inst.extras and IN_ORDER_KEY in inst.extras for inst, _ in program.instructions())


def test_python_range_keeps_its_meaning_and_its_marks_end_with_the_loop(tmp_path):
    path = _kernel(tmp_path, "", ODD_USES)
    x = np.arange(128 * 512, dtype=np.float32).reshape(128, 512)
    program = trace(load_kernel(path + "::odd"), x, machine="trn1").program
    found = [(inst.extras.get(IN_ORDER_KEY) if inst.extras else None, _loop_kinds_of(loops))
             for inst, loops in program.instructions()]
    # reversed(range(2)) is Python's loop, marked; the `for j in range(2)` inside it a kept
    # sequential loop (one per outer iteration, a load and a store each)
    assert [(m[0][2], kinds) for m, kinds in found[:4]] == [(0, ["sequential"])] * 2 + [(1, ["sequential"])] * 2
    # list(range(2)) is consumed before its loop begins: Python's loop over a list, unmarked
    assert found[4:8] == [(None, [])] * 4
    assert found[-2:] == [(None, []), (None, [])]  # the break's loop is Python's again: nothing after it marked
    outputs, report = run_kernel(path + "::odd", x, seeds=(None,))
    assert not report.problems()
    assert np.array_equal(outputs, x)


REUSE = '''
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def reuse(x, w):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    for i in range(x.shape[1] // 512):
        a = nl.load(w[:, 0:512])
        b = nl.load(w[:, 0:512])
        t = nl.load(x[:, i * 512:(i + 1) * 512])
        nl.store(out[:, i * 512:(i + 1) * 512], nl.add(nl.add(t, a), b))
    return out
'''


def test_a_sequential_loop_keeps_the_loads_of_each_iteration(tmp_path):
    """``load-elim`` drops a load repeated within an iteration of a legacy ``range`` loop, but when
    the trace unrolled the loop, not one repeated in a later iteration (its marks: the compiler
    keeps the loop a loop); NKI 0.7 unrolls the loop before the compiler, so there it does."""
    arrays = _inputs()
    eliminated = {}
    current = REUSE.replace("import neuronxcc.nki as nki", "import nki").replace("neuronxcc.", "")
    unrolled = REUSE.replace("        a = nl.load(w", "        if i == 0:\n            pass\n        a = nl.load(w")
    for api, source in (("legacy", REUSE), ("legacy unrolled", unrolled), ("current", current)):
        path = tmp_path / f"reuse_{api.replace(' ', '_')}.py"
        path.write_text(source)
        traced = trace(load_kernel(f"{path}::reuse"), *arrays, machine="trn1")
        compiled, ctx = compile_program(traced.program, TRACED)
        eliminated[api] = ctx.stats["load-elim"]["loads-before"] - ctx.stats["load-elim"]["loads-after"]
        assert check_program(compiled).races == ()
        _outputs, report = run_kernel(f"{path}::reuse", *arrays, seeds=(None,))
        assert not report.problems()
    # kept (legacy): the load of w leaves the loop (hoisted: invariant) and its twin in the body
    # is dropped; unrolled (legacy, the index tested): each iteration keeps its own load of w;
    # NKI 0.7: one load of w in all
    assert eliminated == {"legacy": 2 * TILES - 1, "legacy unrolled": TILES, "current": 2 * TILES - 1}


def test_a_load_before_an_unrolled_sequential_loop_is_no_twin_of_one_inside(tmp_path):
    """As in the loop form, where the loop body is a block of its own: the load of ``w`` before
    the loop stays, and so does each iteration's (only the twin within an iteration goes)."""
    source = REUSE.replace("    for i in range(", "    w0 = nl.load(w[:, 0:512])\n    nl.store(out[:, 0:512], w0)\n"
                                                  "    for i in range(")
    source = source.replace("        a = nl.load(w", "        if i == 0:\n            pass\n        a = nl.load(w")
    path = tmp_path / "reuse_before.py"
    path.write_text(source)
    arrays = _inputs()
    traced = trace(load_kernel(f"{path}::reuse"), *arrays, machine="trn1")
    compiled, ctx = compile_program(traced.program, TRACED)
    stats = ctx.stats["load-elim"]
    assert stats["loads-before"] - stats["loads-after"] == TILES
    assert check_program(compiled).races == ()
    _outputs, report = run_kernel(f"{path}::reuse", *arrays, seeds=(None,))
    assert not report.problems()
