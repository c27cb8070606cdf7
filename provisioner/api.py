"""The public entry point: Kubernetes object dicts in, a provisioning plan out."""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from .catalog import (DEFAULT_REGION, DEFAULT_SPOT_DISCOUNT, DEFAULT_ZONES, Catalog, apply_overlays,
                      catalog_from_dict, shipped_catalog)
from .loader import MAX_PODS, load_objects
from .models import Inputs
from .result import NodeClaimResult, SimulationResult, Unschedulable
from .scheduling.scheduler import Scheduler


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
    """Schedule `inputs` against explicit [(NodePool, [InstanceType])] (no catalog involved)."""
    scheduler = Scheduler(pools, inputs.daemonsets, inputs.nodes, inputs.bound_pods, notes)
    plan = scheduler.solve(inputs.pods)
    result = SimulationResult(pods=len(inputs.pods), warnings=list(inputs.warnings) + list(notes))
    for claim in plan.nodeclaims:
        result.nodeclaims.append(NodeClaimResult(
            nodepool=claim.nodepool, instance_type=claim.instance_type.name,
            capacity_type=claim.offering.capacity_type, zone=claim.offering.zone,
            price_usd_hour=claim.offering.price, price_is_estimate=claim.offering.price_is_estimate,
            pods=[p.name for p in claim.pods], requests=claim.requests,
            allocatable=dict(claim.instance_type.allocatable), instance_type_options=claim.options,
            labels=claim.labels))
    for node, pods in plan.existing:
        result.existing[node] = [p.name for p in pods]
    for pod in inputs.pods:
        if pod in plan.errors:
            result.unschedulable.append(Unschedulable(pod.name, plan.errors[pod]))
    return result


def simulate(objects: Iterable[Mapping], catalog=None, region: str = DEFAULT_REGION,
             zones: Sequence[str] = DEFAULT_ZONES, spot_discount: float = DEFAULT_SPOT_DISCOUNT,
             origins: Sequence[str] | None = None, max_pods: int = MAX_PODS) -> SimulationResult:
    """What Karpenter would launch for these objects.

    objects: Kubernetes object dicts (NodePool, EC2NodeClass, NodeOverlay, Node, Namespace, Pod,
    Deployment, ReplicaSet, StatefulSet, Job, DaemonSet; anything else is ignored).
    catalog: None for the shipped EC2 catalog, a Catalog, or a dict in the catalog file format.
    spot_discount: assumed spot discount off on-demand for generated spot offerings.
    origins: optional description of where each object came from, used in error messages.
    max_pods: ceiling on the pods expanded from all objects (MAX_PODS, 100,000, by default).
    Raises InputError on invalid input.
    """
    return simulate_inputs(load_objects(objects, origins, max_pods=max_pods), catalog, region, zones, spot_discount)
