"""NodePool disruption budgets (pkg/apis/v1/nodepool.go GetAllowedDisruptionsByReason and
pkg/controllers/disruption/helpers.go BuildDisruptionBudgetMapping).

A budget applies to a reason when it lists it or lists none; the smallest applicable budget wins;
a percentage is of the NodePool's nodes, rounded up. Nodes NotReady or being deleted already use
the budget. A budget with a `schedule` applies only in its window, evaluated at the time given.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable

from kubefacts import labels as L
from kubefacts.duration import go_seconds_or_none

from .cron import Schedule, is_active
from .snapshot import Budget, Snapshot

MAX_INT32 = 2**31 - 1
REASON_EMPTY = "Empty"
REASON_UNDERUTILIZED = "Underutilized"


def budget_nodes(budget: Budget, num_nodes: int) -> int:
    """Budget.GetAllowedDisruptions for an active budget: intstr scaled, rounding up."""
    if budget.nodes.endswith("%"):
        return math.ceil(int(budget.nodes[:-1]) * num_nodes / 100)
    return int(budget.nodes)


def budget_active(budget: Budget, now: datetime | None) -> bool:
    """Budget.IsActive: always without a schedule; else within `duration` after a firing, or
    always when the schedule never fires (robfig's zero time). With no `now` (the caller states it
    as an assumption) a scheduled budget counts as active."""
    if budget.schedule is None or now is None:
        return True
    return is_active(budget.schedule, go_seconds_or_none(budget.duration or "0s") or 0.0, now)


def allowed_disruptions(budgets: Iterable[Budget], num_nodes: int, reason: str,
                        now: datetime | None = None) -> tuple[int, Budget | None]:
    """GetAllowedDisruptionsByReason: (allowed, the budget that decided it, or None if none applies)."""
    allowed, deciding = MAX_INT32, None
    for budget in budgets:
        if (budget.reasons is None or reason in budget.reasons) and budget_active(budget, now):
            value = budget_nodes(budget, num_nodes)
            if value < allowed:
                allowed, deciding = value, budget
    return allowed, deciding


@dataclass
class PoolBudget:
    pool: str
    reason: str
    nodes: int  # managed, initialized, not terminating
    disrupting: int  # of which NotReady or being deleted
    allowed: int  # by the budgets, before subtracting `disrupting`
    budget: Budget | None

    @property
    def remaining(self) -> int:
        return max(self.allowed - self.disrupting, 0)

    def describe(self, used: int = 0) -> str:
        """Why no more nodes of this pool may go; `used`: taken by the command being built."""
        if self.budget is None:
            return f"NodePool {self.pool!r} has no budget for {self.reason}"
        spec = f"nodes: {self.budget.nodes!r}"
        if self.budget.reasons is not None:
            spec += f", reasons: [{', '.join(self.budget.reasons)}]"
        if self.budget.schedule:
            spec += f", schedule: {self.budget.schedule!r}, duration: {self.budget.duration}, active now"
            if Schedule(self.budget.schedule).never_fires():
                spec += " (the schedule never fires, so Karpenter keeps the budget always active)"
        text = (f"NodePool {self.pool!r} disruption budget ({spec}) allows {self.allowed} of its {self.nodes} nodes "
                f"to be disrupted for {self.reason}")
        if self.budget.defaulted:  # lead with it: the user never wrote this budget
            text = (f"Karpenter's default disruption budget (nodes: {self.budget.nodes!r}; NodePool {self.pool!r} sets no "
                    f"budgets) allows {self.allowed} of its {self.nodes} nodes to be disrupted for {self.reason}")
        if self.disrupting:
            text += f", and {self.disrupting} are already NotReady or deleting"
        if used:
            text += f", and this pass's command takes {used}"
        return text


def budget_mapping(snap: Snapshot, reason: str, now: datetime | None = None) -> dict[str, PoolBudget]:
    """BuildDisruptionBudgetMapping: per NodePool, how many nodes this reason may still disrupt."""
    nodes: dict = {}
    disrupting: dict = {}
    for node in snap.nodes:
        claim = node.claim
        if claim is None or node.labels.get(L.INITIALIZED) != "true" or claim.terminating:
            continue  # unmanaged, uninitialized or terminating nodes count for no budget
        pool = node.labels.get(L.NODEPOOL, "")
        nodes[pool] = nodes.get(pool, 0) + 1
        # A node without a Ready condition in the snapshot is taken as Ready (hand-written snapshots).
        if node.ready is False or node.deleting or claim.deleting:
            disrupting[pool] = disrupting.get(pool, 0) + 1
    out = {}
    for pool, spec in snap.pools.items():
        allowed, budget = allowed_disruptions(spec.budgets, nodes.get(pool, 0), reason, now)
        out[pool] = PoolBudget(pool, reason, nodes.get(pool, 0), disrupting.get(pool, 0), allowed, budget)
    return out


def take_within_budgets(ordered: list, budgets: dict) -> tuple[list, dict]:
    """The candidates, in order, each taking one disruption from its NodePool's budget, as
    emptiness.go and multinodeconsolidation.go walk disruptionBudgetMapping: (those taken,
    {candidate: (its pool's budget or None, nodes of that pool already taken)} for the others)."""
    taken: list = []
    over: dict = {}
    used: dict = {}
    for c in ordered:
        b = budgets.get(c.pool)
        if b is None or b.remaining - used.get(c.pool, 0) <= 0:
            over[c] = (b, used.get(c.pool, 0))
            continue
        taken.append(c)
        used[c.pool] = used.get(c.pool, 0) + 1
    return taken, over
