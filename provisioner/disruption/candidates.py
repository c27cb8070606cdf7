"""Disruption candidates (pkg/controllers/disruption/types.go NewCandidate, helpers.go
GetCandidates, pkg/controllers/state/statenode.go ValidateNodeDisruptable and
ValidatePodsDisruptable) and the per-method filters (emptiness.go and consolidation.go
ShouldDisrupt), with the Balanced policy's scoring (balanced.go).

Every rejection is returned as a sentence a user can act on rather than dropped, so that each
Karpenter-managed node can be explained.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable, cast

from kubefacts import labels as L
from ..models import InstanceType
from ..state.cluster import Cluster as Snapshot
from ..state.objects import DO_NOT_DISRUPT, POD_DELETION_COST, NodeClaimInfo, PodInfo
from ..state.statenode import StateNode
from .pdb import Limits, do_not_disrupt, is_active, is_reschedulable, owned_by_daemonset
from .types import PER_NODE_BASE_DISRUPTION_COST, Candidate

BALANCED_K = 2  # pkg/apis/v1/nodepool.go BalancedK: approve when score >= 1/k


def eviction_cost(pod: PodInfo) -> float:
    """pkg/utils/disruption EvictionCost: 1, plus deletion cost / 2^27, plus priority / 2^25, in [-10, 10]."""
    cost = 1.0
    raw = pod.annotations.get(POD_DELETION_COST)
    if raw is not None:
        try:
            cost += float(raw) / 2**27
        except ValueError:
            pass  # upstream logs and ignores an unparsable deletion cost
    if pod.priority is not None:
        cost += pod.priority / 2**25
    return min(max(cost, -10.0), 10.0)


def reschedule_disruption_cost(pods: Iterable[PodInfo]) -> float:
    """computeRescheduleDisruptionCost: the base cost plus every positive pod eviction cost."""
    return PER_NODE_BASE_DISRUPTION_COST + sum(max(0.0, eviction_cost(p)) for p in pods)


def node_disruption_cost(pods: Iterable[PodInfo]) -> float:
    """StateNode.DisruptionCost: the base plus positive eviction costs of its non-daemon pods."""
    return PER_NODE_BASE_DISRUPTION_COST + sum(c for p in pods if not owned_by_daemonset(p)
                                               and (c := eviction_cost(p)) > 0)


def offering_price(instance_type: InstanceType | None, zone: str | None, capacity_type: str | None) -> float | None:
    """The price of the offering matching a node's zone and capacity type (resolveNodePrice)."""
    if instance_type is None:
        return None
    for offering in instance_type.offerings:
        if offering.zone == zone and offering.capacity_type == capacity_type:
            return offering.price
    return None


def validate_node(node: StateNode, snap: Snapshot) -> str | None:
    """ValidateNodeDisruptable, in upstream's order; None when the node may be disrupted."""
    claim = node.claim
    if claim is None:
        return "no NodeClaim for this node in the snapshot: Karpenter does not manage it"
    if node.labels.get(L.INITIALIZED) != "true":
        return "node is not initialized yet (label karpenter.sh/initialized is not \"true\")"
    if node.deleting or claim.deleting or claim.terminating:
        return "node is already being deleted"
    if node.annotations.get(DO_NOT_DISRUPT) == "true":
        return f"node has the annotation {DO_NOT_DISRUPT}: \"true\"; remove it to allow consolidation"
    if L.NODEPOOL not in node.labels:
        return f"node has no {L.NODEPOOL} label"
    return None


def validate_pods(pods: list[PodInfo], limits: Limits) -> str | None:
    """ValidatePodsDisruptable: a pod with do-not-disrupt, or a PDB allowing no eviction, blocks."""
    for pod in pods:
        if is_active(pod) and do_not_disrupt(pod):
            return (f"pod {pod.name} has the annotation {DO_NOT_DISRUPT}: "
                    f"\"{pod.annotations[DO_NOT_DISRUPT]}\"; remove it (or wait for the pod to finish) to allow consolidation")
    blocked = limits.can_evict_pods(pods)
    if blocked is not None:
        pod, pdbs = blocked
        if len(pdbs) > 1:
            return (f"pod {pod.name} is selected by several PodDisruptionBudgets ({', '.join(p.name for p in pdbs)}); "
                    "the eviction API refuses such pods, so keep one PDB per pod")
        pdb = pdbs[0]
        return (f"PodDisruptionBudget {pdb.name} allows no disruption now (status.disruptionsAllowed: "
                f"{pdb.disruptions_allowed}) and selects pod {pod.name}")
    return None


PodFacts = tuple["str | None", list[PodInfo], float]  # (why its pods block it, reschedulable pods, their cost)


def pod_facts(node_pods: list[PodInfo], limits: Limits) -> PodFacts:
    """What NewCandidate reads of a node's pods: ValidatePodsDisruptable's verdict, the
    reschedulable pods and computeRescheduleDisruptionCost of them."""
    reschedulable = [p for p in node_pods if is_reschedulable(p)]
    return validate_pods(node_pods, limits), reschedulable, reschedule_disruption_cost(reschedulable)


def new_candidate(node: StateNode, snap: Snapshot, limits: Limits, pool_types: dict,
                  node_pods: list[PodInfo], facts: Callable[[], PodFacts] | None = None) -> Candidate | str:
    """NewCandidate: a Candidate, or the sentence saying why the node is none. facts: the node's
    pod_facts when already known (PassState keeps them across a replay's passes)."""
    if why := validate_node(node, snap):
        return why
    pool = node.labels[L.NODEPOOL]
    spec = snap.pools.get(pool)
    if spec is None:
        return f"its NodePool {pool!r} is not in the snapshot"
    types = pool_types.get(pool)
    if not types:
        return f"NodePool {pool!r} has no instance types (its node class is missing from the snapshot or allows none)"
    why, reschedulable, cost = facts() if facts is not None else pod_facts(node_pods, limits)
    if why:
        return why
    it = types.get(node.labels.get(L.INSTANCE_TYPE, ""))
    zone, ct = node.labels.get(L.ZONE), node.labels.get(L.CAPACITY_TYPE)
    price = offering_price(it, zone, ct)
    return Candidate(node, pool, spec, it, zone, ct, price if price is not None and not math.isnan(price) else 0.0,
                     node_pods, reschedulable, cost)


def _consolidatable(c: Candidate) -> str | None:
    """The NodeClaim's Consolidatable condition: set once consolidateAfter has passed since the
    last pod event. Read from the snapshot's NodeClaim when present, else assumed true."""
    claim = cast(NodeClaimInfo, c.node.claim)  # a candidate has one (validate_node)
    if claim.consolidatable is False:
        since = f" at {claim.last_pod_event}" if claim.last_pod_event else ""
        # The condition decides (the controller may lag, or the snapshot be stale): lead with it.
        return (f"its NodeClaim {claim.name} has no Consolidatable=True condition: Karpenter sets it once consolidateAfter "
                f"({c.spec.consolidate_after_text}) of NodePool {c.pool!r} has passed since the node's last pod event{since}")
    return None


def should_disrupt_empty(c: Candidate) -> str | None:
    """Emptiness.ShouldDisrupt; None when the node is an emptiness candidate."""
    if c.spec.static:
        return f"NodePool {c.pool!r} is static (spec.replicas): Karpenter does not consolidate it"
    if c.spec.consolidate_after is None:
        return f"NodePool {c.pool!r} has consolidateAfter: Never (consolidation disabled)"
    if not c.empty:
        return "not empty"
    return _consolidatable(c)


def should_disrupt_consolidation(c: Candidate) -> str | None:
    """consolidation.ShouldDisrupt (single- and multi-node); None when the node is a candidate."""
    if c.spec.static:
        return f"NodePool {c.pool!r} is static (spec.replicas): Karpenter does not consolidate it"
    if c.instance_type is None:
        return (f"instance type {c.node.labels.get(L.INSTANCE_TYPE)!r} is not among NodePool {c.pool!r}'s "
                "instance types, so Karpenter cannot price it")
    if L.CAPACITY_TYPE not in c.node.labels:
        return f"node has no {L.CAPACITY_TYPE} label"
    if L.ZONE not in c.node.labels:
        return f"node has no {L.ZONE} label"
    if c.spec.consolidate_after is None:
        return f"NodePool {c.pool!r} has consolidateAfter: Never (consolidation disabled)"
    if c.empty:
        return "empty"
    if c.spec.policy == "WhenEmpty":
        return f"NodePool {c.pool!r} has consolidationPolicy WhenEmpty and the node is not empty"
    return _consolidatable(c)


# --- Balanced (balanced.go) --------------------------------------------------------------------

@dataclass
class PoolTotals:
    total_cost: float
    total_disruption_cost: float


@dataclass
class Score:
    savings_fraction: float
    disruption_fraction: float
    k: int = BALANCED_K

    @property
    def score(self) -> float:
        if self.savings_fraction <= 0:
            return 0.0
        if self.disruption_fraction == 0:
            return math.inf
        return self.savings_fraction / self.disruption_fraction

    @property
    def threshold(self) -> float:
        return 1.0 / self.k

    @property
    def approved(self) -> bool:
        return self.score >= self.threshold


def score_move(savings: float, disruption_cost: float, totals: PoolTotals | None) -> Score:
    """ScoreMove: a zero score (rejected) when the pool's totals are not positive."""
    if totals is None or totals.total_cost <= 0 or totals.total_disruption_cost <= 0:
        return Score(0.0, 0.0)
    return Score(savings / totals.total_cost, disruption_cost / totals.total_disruption_cost)


def pool_totals(all_candidates: list[Candidate], snap: Snapshot, node_prices: dict, by_node: dict) -> dict:
    """computeNodePoolTotals: per NodePool, the cluster cost of its nodes (ClusterCost, the sum of
    its NodeClaims' offering prices; the candidates' prices when that is zero) and the disruption
    cost of all its nodes (a candidate's reschedule cost, else the node's own)."""
    names = {c.name: c for c in all_candidates}
    fallback: dict = {}
    for c in all_candidates:
        fallback[c.pool] = fallback.get(c.pool, 0.0) + c.price
    cluster_cost: dict = {}
    disruption: dict = {}
    for node in snap.nodes:
        pool = node.labels.get(L.NODEPOOL)
        if pool is None:
            continue
        if node.claim is not None:
            cluster_cost[pool] = cluster_cost.get(pool, 0.0) + node_prices.get(node.name, 0.0)
        cand = names.get(node.name)
        cost = cand.reschedule_cost if cand is not None else node_disruption_cost(by_node.get(node.name, []))
        disruption[pool] = disruption.get(pool, 0.0) + cost
    return {pool: PoolTotals(cluster_cost.get(pool, 0.0) or fallback[pool], disruption.get(pool, 0.0))
            for pool in fallback}


def can_pass_threshold(c: Candidate, totals: dict) -> Score | None:
    """balancedEvaluator.CanPassThreshold: a Balanced candidate whose whole price as savings
    cannot reach the threshold is skipped. Returns the failing score, or None."""
    if c.spec.policy != "Balanced":
        return None
    t = totals.get(c.pool)
    if t is None or t.total_cost <= 0:
        return None
    s = score_move(c.price, c.reschedule_cost, t)
    return None if s.approved else s
