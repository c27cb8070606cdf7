"""The memos the hot paths share (provisioner/memo.py)."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from provisioner.memo import forget_absent, remember, same


def test_same_is_identity_not_equality():
    a, b = [1000], [1000]  # equal, but not the same objects
    assert same([a], [a]) and not same([a], [b]) and not same([a], [a, a])
    held = [a, b]
    assert same(held, held) and same([], [])  # one list is the same as itself


@given(st.sets(st.integers(0, 50)), st.sets(st.integers(0, 50)), st.integers(0, 8))
def test_absent_keys_are_forgotten_only_once_they_outnumber_the_present(kept, present, slack):
    table = {k: str(k) for k in kept}
    forget_absent(table, present, slack)
    if len(kept) > 2 * len(present) + slack:
        assert table == {k: str(k) for k in kept & present}
    else:
        assert table == {k: str(k) for k in kept}


def test_a_full_cache_starts_over():
    cache: dict = {}
    for k in range(3):
        remember(cache, k, k, limit=3)
    assert remember(cache, "x", 1, limit=3) == 1 and cache == {"x": 1}
