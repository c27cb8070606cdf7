"""The public entry point: Kubernetes object dicts in, a provisioning plan out."""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import importlib
from typing import Any

from .catalog import DEFAULT_REGION, DEFAULT_SPOT_DISCOUNT, DEFAULT_ZONES
from .loader import MAX_PODS, load_objects
from .planning import (MAX_ROUNDS, nodepool_instance_types, plan_pools, plan_rounds, resolve_catalog,
                       scheduling_view, simulate_inputs)
from .result import SimulationResult

# The disruption pass loads on first use (PEP 562), so `simulate` imports no disruption module.
_LAZY = {"disruption_pass": ".disruption.controller", "DisruptionPass": ".disruption.controller",
         "DisruptionCommand": ".disruption.controller", "load_cluster": ".state.reader"}

__all__ = ["simulate", "simulate_inputs", "plan_pools", "plan_rounds", "scheduling_view", "nodepool_instance_types",
           "resolve_catalog", "load_cluster", "disruption_pass", "DisruptionPass", "DisruptionCommand", "MAX_ROUNDS"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __package__), name)
    globals()[name] = value
    return value


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
