"""A call on one element of a tile gives a tile of one partition and one element
(tests/nki/kernels/element_tiles.py): it was a 0-d tile, and declaring its storage failed
inside neuronsim (exit 3) at nki-samples' flash-attention backward's dropout seeding.  So does
a legacy nl.load of one element (nki-samples' flash_fwd: ``nl.load(seed[0])``), refused before."""

from __future__ import annotations

import numpy as np

from neuronsim.machine.nki import trace
from neuronsim_tests.nki_kernels import f32, kernel, run


def test_an_element_plus_a_number_is_a_one_by_one_tile():
    a = f32(4, 4)
    out = run(kernel("element_tiles.py::element_plus_three"), a)["return0"]
    assert out.shape == (1, 1)
    np.testing.assert_array_equal(out, [[a[0, 2] + np.float32(3.0)]])


def test_a_seed_computed_from_an_element_seeds_the_generator():
    seed, x = np.array([[5]], dtype=np.int32), f32(128, 512)
    traced = trace(kernel("element_tiles.py::seeded_from_an_element"), seed, x)
    assert any(inst.op == "set_rand_state" for inst, _ in traced.program.instructions())
    np.testing.assert_array_equal(run(kernel("element_tiles.py::seeded_from_an_element"), seed, x)["return0"], x)


def test_a_legacy_load_of_one_element_is_a_one_by_one_tile():
    out = run(kernel("element_tiles.py::seed_of_one_element"), np.array([7], dtype=np.int32))["return0"]
    np.testing.assert_array_equal(out, [[12]])
