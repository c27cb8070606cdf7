"""The bounded memos the hot paths share: one that starts over when full (the scheduler's
per-option-set answers, formatted resources), per-name tables kept to what is still live, and the
identity test for entries kept while their inputs are the very same objects."""
from __future__ import annotations

from collections.abc import Collection, Sequence
from operator import is_
from typing import Any

LIMIT = 4096  # entries per cache


def remember(cache: dict, key: Any, value: Any, limit: int = LIMIT) -> Any:
    """Store `value` under `key` and return it; a cache that reached `limit` entries starts over
    (bounded memory without LRU bookkeeping on every hit)."""
    if len(cache) >= limit:
        cache.clear()
    cache[key] = value
    return value


def forget_absent(table: dict, present: Collection[Any], slack: int = 16) -> None:
    """Drop the entries whose key is not in `present`, once the table holds more than twice as
    many as are present (plus `slack`): bounded by what is live, without a scan on every call."""
    if len(table) > 2 * len(present) + slack:
        for key in [k for k in table if k not in present]:
            del table[key]


def same(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Whether two sequences hold the very same objects, in order (at once when they are one)."""
    return a is b or (len(a) == len(b) and all(map(is_, a, b)))
