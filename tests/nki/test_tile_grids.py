"""NKI 0.7's tile and block grids (machine/nki/grids.py) against numpy, the grid's geometry as
the pages give it, and the mistakes refused at their kernel line (tests/nki/kernels/tile_grids.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from neuronsim.machine.ir.program import MemoryKind
from neuronsim.machine.nki import trace
from neuronsim.machine.nki.errors import NkiError
from neuronsim_tests.nki_kernels import f32, kernel, run

KERNELS = Path(__file__).parent / "kernels" / "tile_grids.py"


def test_tiles_with_clamped_edges_scale_every_element():
    x = f32(300, 200)
    np.testing.assert_array_equal(run(kernel("tile_grids.py::scaled_by_tiles"), x)["return0"], 2 * x)


def test_a_plain_tile_passes_its_data_as_a_grid_does():
    x = f32(256, 192)
    np.testing.assert_array_equal(run(kernel("tile_grids.py::copied_through_plain_tiles"), x)["return0"], x)


def test_a_batch_prefix_rows_of_tiles_and_grids_allocated_on_chip():
    x = f32(2, 256, 512)
    expected = x.reshape(2, 256, 4, 128).sum(axis=2)
    np.testing.assert_allclose(run(kernel("tile_grids.py::rows_of_tiles_plus_batch"), x)["return0"], expected,
                               rtol=1e-6)


def test_blocks_group_tiles_and_tiles_of_a_block_cover_it():
    x = f32(512, 1024)
    np.testing.assert_array_equal(run(kernel("tile_grids.py::copied_by_blocks"), x)["return0"], x)


def test_the_geometry_a_grid_reports():
    from neuronsim.machine.nki import grids
    from neuronsim.machine.nki.frontend import trace as trace_function

    seen = {}

    def probe(src):
        g = grids.tiles(src, tile_shape=(128, 128))
        seen.update(shape=g.shape, element=g[2, 1].element_shape, remainder=(g[0, 0].is_remainder,
                    g[2, 1].is_remainder), row=g[1, :].element_shape, step=g.index_step_elements,
                    data=tuple(g[2, 0:2].data.shape))
        b = grids.blocks(src, tile_shape=(64, 64), block_shape=(2, 2))
        listed = grids.tiles(src, tile_shape=[np.int64(128), 128])  # a list, numpy ints: a shape all the same
        seen.update(listed=(listed.shape, listed[np.int64(2), 1].element_shape))
        seen.update(blocks=b.shape, block_elements=b[1, 1].element_shape,
                    kinds=(type(g[0, 0]).__name__, type(b[0, 0]).__name__, type(grids.tiles(b[0, 0])).__name__))
        return src

    trace_function(probe, f32(300, 200))
    assert seen["shape"] == (3, 2) and seen["element"] == (44, 72) and seen["remainder"] == (False, True)
    assert seen["row"] == (128, 200) and seen["step"] == (128, 128) and seen["data"] == (44, 200)
    assert seen["blocks"] == (3, 2) and seen["block_elements"] == (128, 72)
    assert seen["kinds"] == ("TileGrid", "BlockGrid", "TileGrid")  # nl.NkiTileGrid / nl.NkiBlockGrid
    assert seen["listed"] == ((3, 2), (44, 72))


@pytest.mark.parametrize("func, needle, words", [
    ("tall_grid_on_chip", "tall[0:2, 0].data", "is_data_representable is False"),
    ("past_the_grid", "grid[grid.shape[0], 0]", "outside its 3 tiles"),
    ("slices_the_batch", "grid[0:1, 0, 0]", "one slab at a time"),
    ("batch_grid_on_chip", "element_shape=(2, 128, 64)", "untiled leading dimensions"),
    ("steps_over_tiles", "grid[::2, 0]", "a grid slice with step 2 is not supported"),
])
def test_grid_mistakes_are_refused_at_their_line(func, needle, words):
    line = next(n for n, text in enumerate(KERNELS.read_text().splitlines(), 1) if needle in text)
    shape = (2, 256, 256) if func == "slices_the_batch" else (512, 128) if func == "steps_over_tiles" else (300, 128)
    with pytest.raises(NkiError) as caught:
        trace(kernel(f"tile_grids.py::{func}"), f32(*shape))
    assert caught.value.path.endswith(f"tile_grids.py:{line}") and words in str(caught.value), caught.value


def test_empty_like_with_transpose_axes_allocates_the_transposed_shape():
    x = f32(128, 64)
    np.testing.assert_array_equal(run(kernel("tile_grids.py::transposed_destination"), x)["return0"], x)


def test_grids_allocated_like_another_keep_the_address_given():
    x = f32(128, 256)
    traced = trace(kernel("tile_grids.py::placed_grids"), x)
    offsets = sorted(t.offset for t in traced.program.tensors.values() if t.memory == MemoryKind.SBUF)
    assert offsets == [4096, 8192], offsets  # zeros_like's address was dropped
    np.testing.assert_array_equal(run(kernel("tile_grids.py::placed_grids"), x)["return0"], x)


def test_an_on_chip_grid_taller_than_128_partitions_holds_its_tile_rows_side_by_side():
    x = f32(300, 256)
    np.testing.assert_allclose(run(kernel("tile_grids.py::through_a_tall_grid"), x)["return0"], 2 * x)
    traced = trace(kernel("tile_grids.py::through_a_tall_grid"), x)
    [buf] = [t for t in traced.program.tensors.values() if t.memory.name == "SBUF" and len(t.shape) == 3]
    assert tuple(buf.shape) == (128, 3, 256)  # the alloc_blocks page's dense rank-two layout


def test_a_tall_block_grid_gives_its_tiles():  # the block -> tile transition of the NkiBlockGrid page
    x = f32(256, 512)
    np.testing.assert_allclose(run(kernel("tile_grids.py::through_a_tall_block"), x)["return0"], x)
