"""Scheduling against NodePools and their instance types: the catalog, cluster state and
provisioning rounds (Karpenter's provisioner). The functions public through provisioner.api
live here, below the disruption pass that uses them, so that provisioner.api can expose both."""
from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Sequence

from kubefacts import labels as L
from .catalog import (DEFAULT_REGION, DEFAULT_SPOT_DISCOUNT, DEFAULT_ZONES, Catalog, apply_overlays,
                      catalog_from_dict, shipped_catalog)
from .models import ExistingNode, Inputs
from .result import Ignored, NodeClaimResult, SimulationResult, Unschedulable
from .scheduling.existing import ExistingNodes, PreparedMemo, PreparedNode, prepare_nodes
from .scheduling.resources import add
from .scheduling.scheduler import Scheduler
from .state import build_cluster
from .state.cluster import rescheduled_pods

# Each round launches at least one NodeClaim, so this only bounds pathological inputs.
MAX_ROUNDS = 100


def resolve_catalog(catalog) -> Catalog:
    if catalog is None:
        return shipped_catalog()
    if isinstance(catalog, Catalog):
        return catalog
    if isinstance(catalog, Mapping):
        return catalog_from_dict(dict(catalog))
    raise TypeError(f"catalog must be a Catalog, a dict in the catalog format or None, not {type(catalog).__name__}")


def nodepool_instance_types(inputs: Inputs, catalog: Catalog, region: str, zones, spot_discount: float):
    """[(NodePool, [InstanceType])] plus notes on NodePools that cannot launch (missing node class)."""
    pools, notes = [], []
    for pool in inputs.nodepools:
        ref = pool.node_class_ref
        nodeclass = inputs.nodeclasses.get(ref.name) if ref.kind == "EC2NodeClass" else None
        if nodeclass is None:
            note = f'nodepool "{pool.name}": not ready, {ref.kind} "{ref.name}" is not in the input'
            notes.append(note)
            continue
        types = catalog.instance_types(nodeclass, tuple(zones), region, spot_discount)
        pools.append((pool, apply_overlays(pool, types, inputs.overlays)))
    return pools, notes


def simulate_inputs(inputs: Inputs, catalog=None, region: str = DEFAULT_REGION,
                    zones: Sequence[str] = DEFAULT_ZONES,
                    spot_discount: float = DEFAULT_SPOT_DISCOUNT) -> SimulationResult:
    """Like simulate(), for inputs already loaded into models (see provisioner.loader)."""
    catalog = resolve_catalog(catalog)
    pools, notes = nodepool_instance_types(inputs, catalog, region, zones, spot_discount)
    return plan_pools(inputs, pools, notes)


def plan_pools(inputs: Inputs, pools, notes=(), memo: PreparedMemo | None = None) -> SimulationResult:
    """Schedule `inputs` against explicit [(NodePool, [InstanceType])] (no catalog involved).

    Cluster state first (provisioner.state): launched NodeClaims and uninitialized nodes count as
    capacity, nodes being deleted do not and their pods are scheduled again. Then provisioning
    rounds as Karpenter runs them (plan_rounds). memo: the existing nodes prepared by earlier
    calls over the same changing cluster (scheduling.existing.PreparedMemo), or None.
    """
    nodes, bound, pending, deleting = scheduling_view(inputs)
    result = SimulationResult(pods=len(pending), warnings=list(inputs.warnings) + list(notes))
    result.ignored = [Ignored(name, reason) for name, reason in inputs.ignored]
    if deleting:
        result.warnings.append(f"nodes being deleted are not used, their pods are scheduled again: {', '.join(sorted(deleting))}")
    return plan_rounds(result, prepare_nodes(nodes, bound, inputs.daemonsets, memo), pending, pools, inputs.daemonsets, notes)


def scheduling_view(inputs: Inputs):
    """The existing nodes the scheduler sees, the pods bound to them, the pods to schedule and
    the names of the nodes being deleted: (nodes, bound, pending, deleting)."""
    nodes, names, deleting = scheduling_nodes(inputs)
    bound = [p if names[p.node_name] == p.node_name else replace(p, node_name=names[p.node_name])
             for p in inputs.bound_pods if p.node_name in names]
    pending = list(inputs.pods) + rescheduled_pods(inputs.bound_pods, deleting)
    return nodes, bound, pending, deleting


def scheduling_nodes(inputs: Inputs):
    """scheduling_view's nodes: (the existing nodes the scheduler sees, their StateNodes' names
    by Node name, the names of the nodes being deleted)."""
    cluster = build_cluster(inputs.nodes, inputs.nodeclaims)
    active = cluster.active()
    deleting = {s.node.name for s in cluster.deleting() if s.node is not None}
    names = {s.node.name: s.name for s in active if s.node is not None}
    nodes = [s.as_existing() for s in active]
    for existing in nodes:  # CSINode objects carry the attach limits of registered nodes
        existing.volume_limits = dict(inputs.volume_limits.get(existing.name, {}))
    return nodes, names, deleting


def plan_rounds(result: SimulationResult, prepared, pending: list, pools, daemonsets, notes=(),
                shared=None, watch=None) -> SimulationResult:
    """Provisioning rounds as Karpenter runs them, over existing nodes prepared once
    (scheduling.existing: [PreparedNode] or ExistingNodes): each round's NodeClaims become
    in-flight capacity of the next (with their chosen type, so the NodePool limit reserved for
    their largest option is given back), and pods a round could not place are tried again until a
    round launches nothing. shared: a SharedSetup when many runs schedule against the same pools
    (a disruption pass); watch: the Scheduler's, for every round (it may end the plan by raising
    scheduler.Abandoned)."""
    pools_by_name = {np_.name: np_ for np_, _ in pools}
    existing = prepared if isinstance(prepared, ExistingNodes) else ExistingNodes(prepared)
    inflight: dict = {}  # node name of a NodeClaim planned in an earlier round -> its NodeClaimResult
    errors: dict = {}
    rounds = 0
    for round_no in range(1, MAX_ROUNDS + 1):
        plan = Scheduler(pools, daemonsets, notes=notes, prepared=existing, shared=shared, watch=watch).solve(pending)
        errors = plan.errors
        left = [p for p in pending if p in errors]
        again = bool(left) and bool(plan.nodeclaims) and round_no < MAX_ROUNDS
        if again:  # the next round sees this one's pods bound and its NodeClaims in flight
            nodes = list(existing.order)
            index = {prep.node.name: i for i, prep in enumerate(nodes)}
            position = 1 + max((prep.positions[-1] for prep in nodes if prep.positions), default=-1)
        for i, claim in enumerate(plan.nodeclaims):
            entry = NodeClaimResult(
                nodepool=claim.nodepool, instance_type=claim.instance_type.name,
                capacity_type=claim.offering.capacity_type, zone=claim.offering.zone,
                price_usd_hour=claim.offering.price, price_is_estimate=claim.offering.price_is_estimate,
                pods=[p.name for p in claim.pods], requests=claim.requests,
                allocatable=dict(claim.instance_type.allocatable), instance_type_options=claim.options,
                labels=claim.labels, round=round_no)
            result.nodeclaims.append(entry)
            name = f"planned-round{round_no}-{i + 1}"
            inflight[name] = entry
            if again:
                pool = pools_by_name.get(claim.nodepool)
                node = ExistingNode(name, {**claim.labels, L.HOSTNAME: name}, pool.taints if pool else (),
                                    dict(claim.instance_type.allocatable), dict(claim.instance_type.capacity),
                                    initialized=False)
                pods = [replace(p, node_name=name) for p in claim.pods]
                index[name] = len(nodes)
                nodes.append(PreparedNode(node, pods, daemonsets, range(position, position + len(pods))))
                position += len(pods)
        for node_name, pods in plan.existing:
            if node_name in inflight:  # a later round filled a NodeClaim launched earlier
                entry = inflight[node_name]
                entry.pods.extend(p.name for p in pods)
                for pod in pods:
                    entry.requests = add(entry.requests, pod.spec.requests)
            else:
                result.existing.setdefault(node_name, []).extend(p.name for p in pods)
            if again:
                i = index[node_name]
                nodes[i] = nodes[i].with_pods([replace(p, node_name=node_name) for p in pods],
                                              range(position, position + len(pods)), daemonsets)
                position += len(pods)
        if plan.nodeclaims:
            rounds = round_no
        pending = left
        if not again:
            break
        existing = ExistingNodes(nodes)
    result.rounds = max(rounds, 1)
    for pod in pending:
        result.unschedulable.append(Unschedulable(pod.name, errors[pod]))
    return result
