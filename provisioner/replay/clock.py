"""Simulated time: a heap of timed events. Nothing sleeps; `now` jumps to the next event.

Ties are broken by priority (trace events before the cluster's reactions at the same instant,
so a scale-up and the pods it creates are seen together) and then by insertion order, which for
trace events is their file order: equal times apply in file order, and a run is deterministic.
"""
from __future__ import annotations

import heapq
import itertools
from typing import Any

# Priorities at one instant: the trace's changes, then what the cluster does about them.
TRACE, CLUSTER, SCHEDULE, PROVISION, DISRUPT = 0, 1, 2, 3, 4


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list = []
        self._seq = itertools.count()

    def at(self, time: float, priority: int, kind: str, payload: Any = None) -> None:
        """Schedule `kind` at `time` (never before now: the past is not rewritten)."""
        heapq.heappush(self._heap, (max(time, self.now), priority, next(self._seq), kind, payload))

    def pop(self, until: float) -> tuple[str, Any] | None:
        """The next (kind, payload) at or before `until`, advancing `now`; None when there is none."""
        if not self._heap or self._heap[0][0] > until:
            return None
        time, _, _, kind, payload = heapq.heappop(self._heap)
        self.now = time
        return kind, payload

    def __len__(self) -> int:
        return len(self._heap)
