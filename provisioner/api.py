"""The public entry point: Kubernetes object dicts in, a provisioning plan out."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping, Sequence

from kubefacts import labels as L

from .catalog import (DEFAULT_REGION, DEFAULT_SPOT_DISCOUNT, DEFAULT_ZONES, Catalog, apply_overlays,
                      catalog_from_dict, shipped_catalog)
from .loader import MAX_PODS, load_objects
from .models import ExistingNode, Inputs, NodeClass
from .result import Ignored, NodeClaimResult, SimulationResult, Unschedulable
from .scheduling.instance_selection import Template
from .scheduling.requirements import Requirement, Requirements
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


def plan_pools(inputs: Inputs, pools, notes=()) -> SimulationResult:
    """Schedule `inputs` against explicit [(NodePool, [InstanceType])] (no catalog involved).

    Cluster state first (provisioner.state): launched NodeClaims and uninitialized nodes count as
    capacity, nodes being deleted do not and their pods are scheduled again. Then provisioning
    rounds as Karpenter runs them: each round's NodeClaims become in-flight capacity of the next
    (with their chosen type, so the NodePool limit reserved for their largest option is given
    back), and pods a round could not place are tried again until a round launches nothing.
    """
    cluster = build_cluster(inputs.nodes, inputs.nodeclaims)
    active = cluster.active()
    deleting = {s.node.name for s in cluster.deleting() if s.node is not None}
    names = {s.node.name: s.name for s in active if s.node is not None}
    nodes = [s.as_existing() for s in active]
    for existing in nodes:  # CSINode objects carry the attach limits of registered nodes
        existing.volume_limits = dict(inputs.volume_limits.get(existing.name, {}))
    bound = [p if names[p.node_name] == p.node_name else replace(p, node_name=names[p.node_name])
             for p in inputs.bound_pods if p.node_name in names]
    pending = list(inputs.pods) + rescheduled_pods(inputs.bound_pods, deleting)
    result = SimulationResult(pods=len(pending), warnings=list(inputs.warnings) + list(notes))
    result.ignored = [Ignored(name, reason) for name, reason in inputs.ignored]
    if deleting:
        result.warnings.append(f"nodes being deleted are not used, their pods are scheduled again: {', '.join(sorted(deleting))}")
    pools_by_name = {np_.name: np_ for np_, _ in pools}
    inflight: dict = {}  # node name of a NodeClaim planned in an earlier round -> its NodeClaimResult
    errors: dict = {}
    rounds = 0
    for round_no in range(1, MAX_ROUNDS + 1):
        plan = Scheduler(pools, inputs.daemonsets, nodes, bound, notes).solve(pending)
        errors = plan.errors
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
            pool = pools_by_name.get(claim.nodepool)
            nodes.append(ExistingNode(name, {**claim.labels, L.HOSTNAME: name}, pool.taints if pool else (),
                                      dict(claim.instance_type.allocatable), dict(claim.instance_type.capacity),
                                      initialized=False))
            bound.extend(replace(p, node_name=name) for p in claim.pods)
        for node, pods in plan.existing:
            if node in inflight:  # a later round filled a NodeClaim launched earlier
                entry = inflight[node]
                entry.pods.extend(p.name for p in pods)
                for pod in pods:
                    entry.requests = add(entry.requests, pod.spec.requests)
            else:
                result.existing.setdefault(node, []).extend(p.name for p in pods)
            bound.extend(replace(p, node_name=node) for p in pods)
        if plan.nodeclaims:
            rounds = round_no
        pending = [p for p in pending if p in errors]
        if not pending or not plan.nodeclaims:
            break
    result.rounds = max(rounds, 1)
    for pod in pending:
        result.unschedulable.append(Unschedulable(pod.name, errors[pod]))
    return result


def simulate(objects: Iterable[Mapping], catalog=None, region: str = DEFAULT_REGION,
             zones: Sequence[str] = DEFAULT_ZONES, spot_discount: float = DEFAULT_SPOT_DISCOUNT,
             origins: Sequence[str] | None = None, max_pods: int = MAX_PODS) -> SimulationResult:
    """What Karpenter would launch for these objects.

    objects: Kubernetes object dicts (NodePool, EC2NodeClass, NodeOverlay, NodeClaim, Node, Namespace,
    Pod, Deployment, ReplicaSet, StatefulSet, Job, ReplicationController, DaemonSet,
    PersistentVolumeClaim, PersistentVolume, StorageClass; other kinds are listed in a warning).
    catalog: None for the shipped EC2 catalog, a Catalog, or a dict in the catalog file format.
    spot_discount: assumed spot discount off on-demand for generated spot offerings.
    origins: optional description of where each object came from, used in error messages.
    max_pods: ceiling on the pods expanded from all objects (MAX_PODS, 100,000, by default).
    Raises InputError on invalid input.
    """
    return simulate_inputs(load_objects(objects, origins, max_pods=max_pods), catalog, region, zones, spot_discount)


# --- what the policy pack asks of one NodePool --------------------------------------------------

@dataclass(frozen=True)
class PoolInstanceTypes:
    """The instance types one NodePool can launch on the shipped catalog, as the scheduler's
    Template keeps them (requirements compatible, an offering in an allowed zone and capacity
    type), and why minValues falls short, if it does (checked apart, to name the key)."""

    types: tuple
    min_values_error: str | None


def pool_instance_types(nodepool: Mapping[str, Any], nodeclass: Mapping[str, Any] | None,
                        dimensions: tuple = (L.CPU, L.MEMORY, L.PODS)) -> PoolInstanceTypes:
    """Candidate types of a NodePool object (with its EC2NodeClass object when known); raises
    InputError when the loader refuses an object. The objects may be partial (the template spec,
    the class fields that decide types): the caller judges the whole objects through
    kubefacts.validation. Zones: the pool's zone requirement, else the catalog's defaults
    (offline there is no per-zone availability)."""
    inputs = load_objects([nodepool] + ([nodeclass] if nodeclass is not None else []), judged=True)
    pool = inputs.nodepools[0]
    node_class = inputs.nodeclasses.get(pool.node_class_ref.name) or NodeClass(name=pool.node_class_ref.name)
    zone_requirement = pool.requirements.raw(L.ZONE)
    zones = tuple(sorted(zone_requirement.values)) if zone_requirement is not None and not zone_requirement.complement \
        and zone_requirement.values else tuple(DEFAULT_ZONES)
    region = zones[0][:-1] if zones and zones[0][-1:].isalpha() else None
    types = shipped_catalog().instance_types(node_class, zones, region)
    # Without minValues first, so a shortfall can be told apart from "nothing matches".
    plain = Requirements(Requirement(r.key, r.complement, r.values, r.gte, r.lte, None) for r in pool.requirements.values())
    template = Template(replace(pool, requirements=plain), types, dimensions, [], 0)
    error = template.min_values_error(template.all, pool.requirements) if len(template.types) else None
    return PoolInstanceTypes(tuple(template.types), error)


def requirement_admits(key: str, operator: str, values: Sequence[str], value: str) -> bool:
    """Whether the node selector requirement (key, operator, values) admits `value` (Karpenter's
    requirement semantics, key normalization included); ValueError on an unknown operator."""
    return Requirement.of(key, operator, list(values)).has(value)
