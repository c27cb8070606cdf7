"""Which pods a batch is about, and what the core is given to plan them: pure functions.

Pod selection follows Karpenter's `IsProvisionable`: not bound, not preempting, marked
PodScheduled=False/Unschedulable by the scheduler, not a DaemonSet's or a static pod.
"""
from __future__ import annotations

from typing import Iterable

from .kinds import DAEMONSET, EC2NODECLASS, NODE, NODECLAIM, NODEOVERLAY, NODEPOOL, POD

TERMINAL_PHASES = ("Succeeded", "Failed")
INFLIGHT_ANNOTATION = "karpenter-platform.io/inflight-nodeclaim"


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


def inflight_nodes(nodeclaims: Iterable[dict], nodes: Iterable[dict]) -> list[dict]:
    """Nodes for NodeClaims Karpenter launched whose Node has not registered yet.

    Karpenter counts such capacity as already there, so pending pods it already launched a
    machine for are not planned (and priced) a second time. A NodeClaim without
    status.allocatable has not launched; it is left out, as Karpenter itself does.
    """
    registered = {n["metadata"]["name"] for n in nodes}
    out = []
    for claim in nodeclaims:
        status = claim.get("status") or {}
        if not isinstance(status.get("allocatable"), dict) or not status["allocatable"]:
            continue
        if status.get("nodeName") and not isinstance(status["nodeName"], str):
            continue  # malformed (objects from the API server are type-checked before use)
        if status.get("nodeName") and status["nodeName"] in registered:
            continue
        if claim["metadata"].get("deletionTimestamp"):
            continue
        spec = claim.get("spec") or {}
        taints = spec.get("taints") if isinstance(spec.get("taints"), list) else []
        labels = claim["metadata"].get("labels")
        capacity = status.get("capacity")
        name = status.get("nodeName") or claim["metadata"]["name"]
        out.append({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "uid": claim["metadata"]["uid"],
                         "labels": dict(labels) if isinstance(labels, dict) else {},
                         "annotations": {INFLIGHT_ANNOTATION: claim["metadata"]["name"]}},
            # startupTaints are left out: Karpenter expects them gone once the node is ready.
            "spec": {"taints": list(taints)},
            "status": {"allocatable": dict(status["allocatable"]),
                       "capacity": dict(capacity) if isinstance(capacity, dict) and capacity else dict(status["allocatable"])},
        })
    return out


def plan_input(objects: dict[str, list[dict]], pending: list[dict]) -> list[dict]:
    """What the core is given: the cluster's NodePools, EC2NodeClasses, NodeOverlays, DaemonSets,
    nodes (registered and in flight) with the pods bound to them, and the pending pods."""
    nodes = objects.get(NODE.kind, [])
    return [
        *objects.get(EC2NODECLASS.kind, []),
        *objects.get(NODEPOOL.kind, []),
        *objects.get(NODEOVERLAY.kind, []),
        *objects.get(DAEMONSET.kind, []),
        *nodes,
        *inflight_nodes(objects.get(NODECLAIM.kind, []), nodes),
        *[p for p in objects.get(POD.kind, []) if is_bound(p)],
        *pending,
    ]
