"""``IdentityMemo`` (machine/ir/identity.py): one computation per shared object, and none held
once the objects turn out not to be shared (a program loaded from JSON)."""

from __future__ import annotations

from neuronsim.machine.ir.identity import TRIAL, IdentityMemo


def test_shared_objects_are_computed_once():
    memo, calls = IdentityMemo(), []
    shared = [object() for _ in range(10)]
    for k in range(TRIAL * 3):
        obj = shared[k % 10]
        assert memo.get(obj, lambda o: calls.append(o) or id(o)) == id(obj)
    assert len(calls) == 10 and memo.active


def test_a_memo_of_unshared_objects_lets_them_go_and_still_answers():
    memo, kept = IdentityMemo(), []
    for k in range(TRIAL + 10):
        obj = [k]
        kept.append(obj)
        assert memo.get(obj, lambda o: o[0] * 2) == 2 * k
    assert not memo.active
    assert memo.get_keyed(("a", 1), None, lambda: "made") == "made"


def test_keyed_entries_hold_their_objects():
    memo = IdentityMemo()
    holder = ([1], [2])
    key = tuple(map(id, holder))
    assert memo.get_keyed(key, holder, lambda: "first") == "first"
    assert memo.get_keyed(key, holder, lambda: "second") == "first"
