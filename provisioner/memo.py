"""One bounded memo for the hot paths (the scheduler's per-option-set answers, formatted resources)."""
from __future__ import annotations

from typing import Any

LIMIT = 4096  # entries per cache


def remember(cache: dict, key: Any, value: Any, limit: int = LIMIT) -> Any:
    """Store `value` under `key` and return it; a cache that reached `limit` entries starts over
    (bounded memory without LRU bookkeeping on every hit)."""
    if len(cache) >= limit:
        cache.clear()
    cache[key] = value
    return value
