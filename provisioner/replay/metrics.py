"""Accounting of a replay: what the nodes cost (a NodeClaim is billed from launch to termination,
or to `--until`), what Karpenter launched and terminated, the pods it evicted, how long pods waited,
and the timeline (a step function: an entry whenever the node count, their summed price or the
pending count changes; the state at t is the last entry at or before t)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # .cluster imports this module
    from .cluster import SimNode


@dataclass
class Disruption:
    time_s: float
    reason: str  # empty | underutilized | drifted | expired | interrupted
    nodes: list
    replacements: list = field(default_factory=list)
    pods_evicted: int = 0

    def to_dict(self) -> dict:
        return {"time_s": round(self.time_s, 3), "reason": self.reason, "nodes": list(self.nodes),
                "replacements": list(self.replacements), "pods_evicted": self.pods_evicted}


@dataclass
class _Pool:
    cost_usd: float = 0.0
    node_hours: float = 0.0
    nodes_launched: int = 0


class Metrics:
    def __init__(self) -> None:
        self.pools: dict = {}
        self.launched = 0
        self.terminated = 0
        self.waits: list = []  # pending seconds of every bound pod
        self.disruptions: list = []
        self.timeline: list = []
        self.nodes = 0
        self.price = 0.0
        self._last: tuple[int, float, int] | None = None  # (nodes, price, pending) last sampled

    def _pool(self, name: str | None) -> _Pool:
        return self.pools.setdefault(name or "(unmanaged)", _Pool())

    def node_added(self, node: SimNode, launched: bool) -> None:
        self.nodes += 1
        self.price += node.price
        self._pool(node.pool)
        if launched:
            self.launched += 1
            self._pool(node.pool).nodes_launched += 1

    def node_gone(self, node: SimNode, now: float, terminated: bool = True) -> None:
        self.nodes -= 1
        self.price -= node.price
        hours = max(0.0, now - node.launched_at) / 3600
        pool = self._pool(node.pool)
        pool.node_hours += hours
        pool.cost_usd += hours * node.price
        if terminated:
            self.terminated += 1

    def bound(self, wait: float) -> None:
        self.waits.append(wait)

    def sample(self, now: float, pending: int) -> None:
        """Record the state at `now` if it differs from the last entry (called once per instant)."""
        state = (self.nodes, round(self.price, 6), pending)
        if state == self._last:
            return
        entry = {"time_s": round(now, 3), "nodes": self.nodes, "price_usd_hour": round(max(self.price, 0.0), 6),
                 "pending_pods": pending}
        if self.timeline and self.timeline[-1]["time_s"] == entry["time_s"]:
            self.timeline[-1] = entry
        else:
            self.timeline.append(entry)
        self._last = state

    def result(self, duration: float) -> dict:
        waits = np.array(self.waits, dtype=float)
        pct = (lambda q: round(float(np.percentile(waits, q)), 3)) if len(waits) else (lambda q: 0.0)
        pools = [{"nodepool": name, "cost_usd": round(p.cost_usd, 4), "node_hours": round(p.node_hours, 4),
                  "nodes_launched": p.nodes_launched} for name, p in sorted(self.pools.items())]
        return {
            "summary": {
                "duration_s": float(duration),
                "cost_usd": round(sum(p.cost_usd for p in self.pools.values()), 4),
                "node_hours": round(sum(p.node_hours for p in self.pools.values()), 4),
                "nodes_launched": self.launched, "nodes_terminated": self.terminated,
                "pods_evicted": sum(d.pods_evicted for d in self.disruptions),
                "pending_seconds": {"p50": pct(50), "p95": pct(95),
                                    "max": round(float(waits.max()), 3) if len(waits) else 0.0},
            },
            "by_nodepool": pools,
            "disruptions": [d.to_dict() for d in self.disruptions],
            "timeline": list(self.timeline),
        }
