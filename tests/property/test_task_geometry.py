"""Task-level region geometry is byte-exact: checked against enumerating every element's bytes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from neuronsim.machine.tasks.task_geometry import Region, covers, is_injective, overlaps, packed_strides, shared_bytes


def _bytes(region: Region) -> set[int]:
    out: set[int] = set()
    indices = [()]
    for start, n in zip(region.start, region.shape):
        indices = [i + (start + k,) for i in indices for k in range(n)]
    for index in indices:
        first = region.origin + region.itemsize * sum(a * s for a, s in zip(index, region.strides))
        out.update(range(first, first + region.itemsize))
    return out


@st.composite
def _pair(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 6)) for _ in range(rank))
    itemsize = draw(st.sampled_from([1, 2, 4]))
    kind = draw(st.sampled_from(["nd", "dn", "explicit"]))
    if kind == "explicit":
        strides = tuple(draw(st.integers(0, 12)) for _ in range(rank))
    else:
        strides = packed_strides(shape, kind if rank >= 2 else "nd")

    def window(origin):
        start = tuple(draw(st.integers(0, n - 1)) for n in shape)
        size = tuple(draw(st.integers(0, n - a)) for a, n in zip(start, shape))
        root = Region.of("space", origin, itemsize, strides, shape)
        return root.window(start, size)

    other_origin = draw(st.sampled_from([0, 0, itemsize, 3, 64]))  # one root, or two roots of one allocation
    return window(0), window(other_origin)


@given(_pair())
def test_overlap_and_shared_bytes_match_enumeration(pair):
    a, b = pair
    expected = _bytes(a) & _bytes(b)
    assert overlaps(a, b) == bool(expected)
    shared = shared_bytes(a, b)
    assert {x for lo, hi in shared for x in range(lo, hi)} == expected
    assert all(lo < hi for lo, hi in shared) and list(shared) == sorted(shared)
    assert set(range(*a.byte_range)) >= _bytes(a)


@given(_pair())
def test_covers_matches_enumeration(pair):
    a, b = pair
    assert covers(a, b) == (_bytes(b) <= _bytes(a))
    assert covers(b, a) == (_bytes(a) <= _bytes(b))


@given(_pair())
def test_byte_runs_are_the_elements_bytes(pair):
    a, _ = pair
    assert {x for lo, hi in a.byte_runs() for x in range(lo, hi)} == _bytes(a)


def test_different_spaces_never_share_bytes_and_valid_shape_clips():
    x = Region.of("x", 0, 4, (8, 1), (8, 8))
    y = Region.of("y", 0, 4, (8, 1), (8, 8))
    assert not overlaps(x, y)
    clipped = x.clipped((2, 8))
    assert clipped.shape == (2, 8) and not overlaps(clipped, x.window((2, 0), (6, 8)))
    assert is_injective((8, 8), (8, 1)) and not is_injective((8, 8), (4, 1))
