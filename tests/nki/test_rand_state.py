"""``nisa.rand_get_state`` (tests/nki/kernels/rand_state.py): the engine's generator state into a
tile, which ``rand_set_state`` restores: the draws after a restore repeat the ones after the save."""

from __future__ import annotations

import numpy as np
import pytest

from neuronsim.machine.nki import NkiError, trace
from neuronsim_tests.nki_kernels import kernel, run


def test_a_saved_state_restored_repeats_the_draws():
    seeds = np.arange(128 * 6, dtype=np.uint32).reshape(128, 6)
    out = run(kernel("rand_state.py::draws_again"), seeds)["return0"]
    assert np.array_equal(out[:, :8], out[:, 8:]) and len(np.unique(out[:, :8])) > 1000


def test_the_pages_word_count_is_held_to():
    with pytest.raises(NkiError, match=r"rand_state.py:\d+: nisa.rand_get_state: dst holds 4 elements a partition; "
                                       r"its page: 6 on the GpSimd Engine"):
        trace(kernel("rand_state.py::too_few_words"), np.zeros((128, 4), np.uint32))
