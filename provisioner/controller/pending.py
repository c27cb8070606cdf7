"""Which pods a batch is about, and what the core is given to plan them: pure functions.

Pod selection follows Karpenter's `IsProvisionable`: not bound, not preempting, marked
PodScheduled=False/Unschedulable by the scheduler, not a DaemonSet's or a static pod. The core
applies the rest (`Validate`: matchFields, NodePool DoesNotExist; `ValidatePersistentVolumeClaims`:
a claim missing, being deleted, Lost or unusable) and reports such pods as ignored, so they never
get a "will never schedule" Event.
"""
from __future__ import annotations

from .kinds import (CSINODE, DAEMONSET, EC2NODECLASS, NODE, NODECLAIM, NODEOVERLAY, NODEPOOL, POD, PV, PVC,
                    STORAGECLASS)

TERMINAL_PHASES = ("Succeeded", "Failed")


def pod_key(pod: dict) -> str:
    """The core's name for a pod: `namespace/name`."""
    return f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"


def _owner_kinds(obj: dict) -> set:
    owners = obj["metadata"].get("ownerReferences")
    return {o.get("kind") for o in owners if isinstance(o, dict)} if isinstance(owners, list) else set()


def is_unschedulable(pod: dict) -> bool:
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    if spec.get("nodeName") or pod["metadata"].get("deletionTimestamp"):
        return False
    if status.get("phase") not in (None, "Pending") or status.get("nominatedNodeName"):
        return False  # a preempting pod waits for room the scheduler is making on a node
    if _owner_kinds(pod) & {"DaemonSet", "Node"}:
        return False  # DaemonSet pods follow nodes; static (mirror) pods belong to one node
    conditions = status.get("conditions")
    return isinstance(conditions, list) and any(
        isinstance(c, dict) and c.get("type") == "PodScheduled" and c.get("status") == "False"
        and c.get("reason") == "Unschedulable" for c in conditions)


def is_bound(pod: dict) -> bool:
    """A pod that holds resources on a node (the plan must not count that room as free)."""
    return bool((pod.get("spec") or {}).get("nodeName")) and (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES


def plan_input(objects: dict[str, list[dict]], pending: list[dict]) -> list[dict]:
    """What the core is given: the cluster's NodePools, EC2NodeClasses, NodeOverlays, DaemonSets,
    Nodes and NodeClaims (the core's cluster state joins them: in-flight and uninitialized
    capacity, nodes being deleted), the storage objects of volume topology and attach limits
    (PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes), the pods bound to
    nodes, and the pending pods."""
    return [
        *objects.get(EC2NODECLASS.kind, []),
        *objects.get(NODEPOOL.kind, []),
        *objects.get(NODEOVERLAY.kind, []),
        *objects.get(DAEMONSET.kind, []),
        *objects.get(NODE.kind, []),
        *objects.get(NODECLAIM.kind, []),
        *objects.get(STORAGECLASS.kind, []),
        *objects.get(PV.kind, []),
        *objects.get(PVC.kind, []),
        *objects.get(CSINODE.kind, []),
        *[p for p in objects.get(POD.kind, []) if is_bound(p)],
        *pending,
    ]
