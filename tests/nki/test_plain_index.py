"""``Layout.index``'s path for integers and integer slices inside their axes (one layout built,
not one an axis) gives what the general path gives, for every key: hypothesis draws tensors on
each memory and keys of integers, slices (open, stepped, empty, negative, past the end) and
``None``, and compares the two paths' layouts, or their refusals."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neuronsim.machine.ir.program import MemoryKind, Tensor
from neuronsim.machine.nki.errors import NkiError
from neuronsim.machine.nki.layout import Layout

_END = st.one_of(st.none(), st.integers(-3, 12))


@st.composite
def _case(draw):
    memory = draw(st.sampled_from([MemoryKind.SBUF, MemoryKind.PSUM, MemoryKind.DRAM]))
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=1, max_size=3)))
    sliced = st.builds(slice, _END, _END, st.one_of(st.none(), st.integers(1, 3)))
    key = draw(st.lists(st.one_of(st.integers(-2, 10), sliced), min_size=1, max_size=len(shape)))
    first = draw(st.one_of(st.none(), st.tuples(st.integers(0, 3), st.integers(1, 4))))  # index a view, not the tensor
    return Tensor("t", memory, "float32", shape), tuple(key), first, draw(st.booleans())


def _index(layout: Layout, key: tuple, keep: bool, *, plain: bool):
    try:
        if not plain:  # the general path alone
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(Layout, "_plain", lambda self, key, keep_partition: None)
                return layout.index(key, keep_partition=keep)
        return layout.index(key, keep_partition=keep)
    except NkiError as err:
        return ("refused", err.message)


@settings(max_examples=400, deadline=None)
@given(_case())
def test_the_plain_path_gives_what_the_general_path_gives(case):
    tensor, key, first, keep = case
    layout = Layout.whole(tensor)
    if first is not None and tensor.shape[0] > first[0]:  # a view of the tensor first (offset, partitions)
        layout = layout.index((slice(first[0], min(tensor.shape[0], first[0] + first[1])),))
    assert _index(layout, key, keep, plain=True) == _index(layout, key, keep, plain=False)
