"""The public entry point: Kubernetes object dicts in, a provisioning plan out."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable, Mapping, Sequence

from kubefacts import labels as L

from . import lazy
from .catalog import DEFAULT_REGION, DEFAULT_SPOT_DISCOUNT, DEFAULT_ZONES, shipped_catalog
from .loader import MAX_PODS, load_objects
from .models import NodeClass
from .planning import (MAX_ROUNDS, nodepool_instance_types, plan_pools, plan_rounds, resolve_catalog,
                       scheduling_view, simulate_inputs)
from .result import SimulationResult
from .scheduling.instance_selection import Template
from .scheduling.requirements import Requirement, Requirements

# The disruption pass loads on first use (PEP 562), so `simulate` imports no disruption module.
_LAZY = {"disruption_pass": ".disruption.controller", "DisruptionPass": ".disruption.controller",
         "DisruptionCommand": ".disruption.controller", "load_cluster": ".state.reader"}

__all__ = [  # noqa: F822 - the disruption names load on first use (__getattr__ below)
    "simulate", "simulate_inputs", "plan_pools", "plan_rounds", "scheduling_view", "nodepool_instance_types",
           "resolve_catalog", "load_cluster", "disruption_pass", "DisruptionPass", "DisruptionCommand", "MAX_ROUNDS",
           "PoolInstanceTypes", "pool_instance_types", "requirement_admits"]


def __getattr__(name: str) -> Any:
    return lazy.load(globals(), _LAZY, name)


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
