"""A kernel handing an NKI call an argument it cannot use (a list where a tile goes, a tile
where the dtype goes, an index vector, ``None``, a numpy array where one value goes) is the
kernel's mistake: one line at the kernel's line, never neuronsim's internal error (exit 3).
Found by calling every ``nl.*`` and ``nisa.*`` name with arguments drawn from such a pool (28
internal errors in the first 1,500 calls, a public agent's kernel among their sources); the
same search runs here, seeded, in both APIs."""

from __future__ import annotations

import random
import textwrap

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, load_kernel, trace
from neuronsim.machine.nki.isa import ISA_OPS
from neuronsim.machine.nki.isa_select import ISA_SELECT_OPS
from neuronsim.machine.nki.lang_names import LANGUAGE_NAMES

IMPORTS = {
    "current": "import nki\nimport nki.language as nl\nimport nki.isa as nisa\n",
    "legacy": "import neuronxcc.nki as nki\nimport neuronxcc.nki.language as nl\nimport neuronxcc.nki.isa as nisa\n",
}
LOAD = {"current": "nisa.dma_copy(dst=t, src=x)", "legacy": "t[...] = nl.load(x)"}
STORE = {"current": "nisa.dma_copy(dst=o, src=t)", "legacy": "nl.store(o, value=t)"}
CALL_LINE = 14  # the line of ``r = ...`` in the kernel below

POOL = ("t", "p", "x", "A", "1.0", "2", "None", "'s'", "(1, 2)", "np.ones(3)", "nl.float32", "t[0:1, :]",
        "t[:, 0:1]", "t[0:64, :]", "nl.add", "np.add", "[t, t]", "True", "o", "i16", "-1", "t.T", "nl.arange(64)")
KEYWORDS = ("dtype", "axis", "dst", "data", "op", "shape", "mask", "engine", "src", "x", "y", "keepdims", "bias",
            "scale")
NOT_CALLS = {"affine_range", "sequential_range", "static_range", "no_reorder", "NKIObject", "par_dim", "sbuf", "psum",
             "hbm", "shared_hbm", "private_hbm", "tile_size", "spmd_dim", "nc", "device_print", "program_id",
             "num_programs", "program_ndim", "mgrid", "ds", "arange"}
CALLS = [f"nl.{name}" for name in LANGUAGE_NAMES if name not in NOT_CALLS] + \
    [f"nisa.{name}" for name in ISA_OPS + ISA_SELECT_OPS]


#: Statements on a tile's views and indexing, and the index helpers, with pool arguments in the braces.
STATEMENTS = ("t[{}]", "t[{}, {}]", "x[{}, {}]", "t.reshape({})", "t.view({})", "t.broadcast_to({})", "t.ap({})",
              "t.select({}, {})", "t.permute({})", "t.slice({}, {})", "t.expand_dim({})", "t.reshape_dim({}, {})",
              "t[{}:{}, :]", "t.flatten_dims({}, {})", "nl.mgrid[{}, {}]", "nl.ds({}, {})", "nl.arange({})",
              "t[nl.ds({}, {}), :]")
INDEX_POOL = POOL + ("0", "64", "128", "slice(0, 3)", "...", "(128, 64)", "(128, 1, 64)", "[0, 1]", "-5", "0.5")


def _kernel(api: str, call: str) -> str:
    return IMPORTS[api] + textwrap.dedent(f"""\
        import numpy as np

        @nki.jit
        def k(x):
            o = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
            t = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
            {LOAD[api]}
            p = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.psum)
            i16 = nl.ndarray((128, 64), dtype=nl.int16, buffer=nl.sbuf)
            A = nl.arange(64)[None, :]
            r = {call}
            {STORE[api]}
            return o
        """)


def _outcome(tmp_path, api: str, call: str, tag: str) -> NkiError | None:
    path = tmp_path / f"k_{tag}.py"
    path.write_text(_kernel(api, call))
    assert path.read_text().splitlines()[CALL_LINE - 1].strip().startswith("r = ")
    try:
        trace(load_kernel(f"{path}::k"), np.ones((128, 64), np.float32))
    except NkiError as err:
        return err
    return None


@pytest.mark.parametrize("api, seed, calls", [
    ("current", 1, 300), ("legacy", 2, 300),
    pytest.param("current", 3, 1500, marks=pytest.mark.slow), pytest.param("legacy", 4, 1500, marks=pytest.mark.slow),
])
def test_odd_arguments_are_the_kernels_mistake_at_its_line(tmp_path, api, seed, calls) -> None:
    rng = random.Random(seed)
    for k in range(calls):
        args = [rng.choice(POOL) for _ in range(rng.randint(0, 3))]
        keywords = dict.fromkeys(f"{rng.choice(KEYWORDS)}={rng.choice(POOL)}" for _ in range(rng.randint(0, 2)))
        call = f"{rng.choice(CALLS)}({', '.join([*args, *keywords])})"
        err = _outcome(tmp_path, api, call, str(k))  # an internal error is not an NkiError: it fails the test here
        if err is not None:
            assert "\n" not in str(err), (call, str(err))
            assert str(err).startswith(f"{tmp_path}/k_{k}.py:") or str(err).startswith(f"k_{k}.py:"), (call, str(err))


@pytest.mark.parametrize("api, seed, count", [
    ("current", 5, 300), ("legacy", 6, 300),
    pytest.param("current", 7, 1500, marks=pytest.mark.slow), pytest.param("legacy", 8, 1500, marks=pytest.mark.slow),
])
def test_odd_indices_and_view_arguments_are_the_kernels_mistake(tmp_path, api, seed, count) -> None:
    """The same for a tile's views and indexing, ``nl.ds``, ``nl.arange`` and ``nl.mgrid`` (185
    internal errors in 2,000 such statements before: ``t.select(p, 1)``, ``t[np.ones(3)]``)."""
    rng = random.Random(seed)
    for k in range(count):
        form = rng.choice(STATEMENTS)
        call = form.format(*(rng.choice(INDEX_POOL) for _ in range(form.count("{}"))))
        err = _outcome(tmp_path, api, call, f"s{k}")
        if err is not None:
            assert "\n" not in str(err) and f"k_s{k}.py:" in str(err).split(": ")[0], (call, str(err))


@pytest.mark.parametrize("api, call, words", [
    ("current", "nl.sum([t, t], axis=1)", "nl.sum: x is list, where the call takes a tile"),
    ("current", "nl.transpose(-1)", "nl.transpose: x is int -1, where the call takes a tile"),
    ("legacy", "nl.var(True, axis=1)", "nl.var: x is bool True, where the call takes a tile"),
    ("current", "nl.copy(t, dtype=t)", "NkiTensor is not a dtype"),
    ("legacy", "nisa.tensor_partition_reduce([t, t], t[0:64, :])", "list is not an ALU operator"),
    ("current", "nl.expand_dims(t[0:1, :], axis=np.ones(3))", "axis is ndarray, where the call takes an integer"),
    ("current", "nl.static_cast('s', nl.float32)", "nl.static_cast converts a tile or a number, not str 's'"),
    ("current", "t.select(p, 1)", ".select(): dim is NkiTensor, where the call takes a number"),
    ("legacy", "t[np.ones(3)]", "indexing a tile: key is ndarray, where the call takes a number"),
    ("current", "nl.ds('s', 2)", "nl.ds: start is str 's', where the call takes a number"),
    ("current", "t.slice(1, 2)", ".slice(): NkiTensor.slice() missing 1 required positional argument: 'end'"),
    ("legacy", "nl.shared_constant(nl.add)", "nl.shared_constant of function: it holds an array of numbers"),
    # the creation pages require a dtype; a tile made without one was float32
    ("current", "nl.ndarray((128, 64), buffer=nl.sbuf)", "nl.ndarray: dtype is required"),
    ("legacy", "nl.zeros((128, 64), buffer=nl.sbuf)", "nl.zeros: dtype is required"),
    # each was an internal error, the second a silent 1 (probe_bf)
    ("current", "nl.num_programs('a')", "nl.num_programs(str 'a'): an axis is an integer"),
    ("current", "nl.num_programs(5)", "nl.num_programs(int 5): the grid has 0 dimensions"),
    ("current", "nisa.tensor_reduce(dst=t[:, 0:1], op=nl.add, data=t, axis=())", "no axis to reduce"),
])
def test_each_odd_argument_is_named(tmp_path, api, call, words) -> None:
    err = _outcome(tmp_path, api, call, "named")
    assert err is not None and words in str(err), (call, err)
    assert f"k_named.py:{CALL_LINE}: " in str(err), str(err)


def test_a_buffer_test_of_an_array_is_false(tmp_path) -> None:
    assert _outcome(tmp_path, "legacy", "nl.is_on_chip(np.ones(3))", "buffer") is None
