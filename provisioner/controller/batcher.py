"""Batching windows and rate limits, on an explicit clock so that tests need no sleeping."""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable


@dataclass
class Batcher:
    """Karpenter's provisioning batcher: a batch opens on the first trigger and closes once no
    trigger came for `idle` seconds, or `maximum` seconds after it opened, whichever is first.

    A burst of pod creations (a Deployment scaling up) so becomes one plan instead of hundreds,
    and a steady trickle still gets a plan every `maximum` seconds.
    """

    idle: float = 1.0
    maximum: float = 10.0
    _opened: float | None = field(default=None, repr=False)
    _last: float | None = field(default=None, repr=False)

    def trigger(self, now: float) -> None:
        if self._opened is None:
            self._opened = now
        self._last = now

    @property
    def open(self) -> bool:
        return self._opened is not None

    def deadline(self) -> float | None:
        """When the open batch closes (None when no batch is open)."""
        if self._opened is None or self._last is None:
            return None
        return min(self._last + self.idle, self._opened + self.maximum)

    def due(self, now: float) -> bool:
        deadline = self.deadline()
        return deadline is not None and now >= deadline

    def close(self) -> None:
        self._opened = self._last = None


@dataclass
class TokenBucket:
    """`rate` tokens a second, at most `burst` saved: bounds the writes the advisor makes to the
    API server however many pods turn up unschedulable at once."""

    rate: float
    burst: int
    _tokens: float | None = field(default=None, repr=False)
    _stamp: float | None = field(default=None, repr=False)

    def take(self, now: float) -> bool:
        if self._tokens is None or self._stamp is None:
            self._tokens, self._stamp = float(self.burst), now
        elapsed = max(0.0, now - self._stamp)  # a clock going backwards must not mint tokens
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.rate)
        self._stamp = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False


@dataclass
class Backoff:
    """Exponential backoff for API errors: `base` doubling up to `cap`, reset by a success; each
    delay stretched by up to `jitter` times itself (a random share), never beyond `cap`, so the
    twelve watches of one advisor do not retry in step (client-go's reflector backs off the same
    way: wait.NewExponentialBackoffManager, k8s.io/client-go/tools/cache/reflector.go)."""

    base: float = 1.0
    cap: float = 60.0
    jitter: float = 0.0
    rng: Callable[[], float] = field(default=random.random, repr=False)
    _failures: int = field(default=0, repr=False)

    def failure(self) -> float:
        """Seconds to wait after one more failure."""
        step = self.base * (2 ** min(self._failures, 62))  # the exponent is bounded: no float overflow
        delay = min(self.cap, step * (1.0 + self.jitter * self.rng()))
        self._failures += 1
        return delay

    def success(self) -> None:
        self._failures = 0

    @property
    def failures(self) -> int:
        return self._failures
