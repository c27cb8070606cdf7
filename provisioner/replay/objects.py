"""The replayed cluster as the Kubernetes objects the disruption API reads (`kubectl get -o yaml`
shapes): Nodes, NodeClaims with the conditions Karpenter's NodeClaim controllers would have set,
Pods, and PodDisruptionBudgets with the status kube-controller-manager's disruption controller
computes from the replayed pods (healthy = matching pods bound to Ready nodes, expected = matching
pods).

A node's objects are made from its facts alone (node_facts, node_objects), so a pass can tell
from the facts whether the objects, and so their reads, are the ones of an earlier pass
(provisioner/replay/pass_cache.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Iterable

from kubefacts import labels as L
from ..quantity import format_resources
from ..state.objects import Pdb
from .cluster import Cluster, SimNode, SimPod


@dataclass(frozen=True)
class PdbSpec:
    """A PodDisruptionBudget's spec; its status is computed from the replayed pods."""
    pdb: Pdb  # selector, namespace, flags
    min_available: tuple | None  # ("int", n) | ("str", "50%")
    max_unavailable: tuple | None
    raw: dict | None = None  # the object as given


def _scaled(value: tuple, total: int) -> int:
    kind, raw = value
    if kind == "int":
        return int(raw)
    text = str(raw)
    if text.endswith("%"):
        return math.ceil(int(text[:-1]) * total / 100)  # intstr.GetScaledValueFromIntOrPercent, rounding up
    return int(text)


def pdb_status(spec: PdbSpec, pods: Iterable[SimPod], ready_nodes: set[str]) -> int:
    """disruptionsAllowed as the PDB controller computes it (pkg/controller/disruption)."""
    pdb = spec.pdb
    matching = [p for p in pods if p.spec.namespace == pdb.namespace and pdb.selector.matches(p.labels)]
    expected = len(matching)
    healthy = sum(1 for p in matching if p.node is not None and p.node in ready_nodes)
    if spec.max_unavailable is not None:
        desired = expected - _scaled(spec.max_unavailable, expected)
    elif spec.min_available is not None:
        desired = _scaled(spec.min_available, expected)
    else:
        desired = expected
    return max(0, healthy - max(desired, 0))


def stamp(wall: datetime, seconds_ago: float) -> str:
    return (wall - timedelta(seconds=max(0.0, seconds_ago))).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod_object(pod: SimPod, node_name: str | None) -> dict:
    namespace, name = pod.name.split("/", 1)
    meta = {"name": name, "namespace": namespace, "labels": dict(pod.labels), "annotations": dict(pod.annotations)}
    owner = ("apps/v1", "DaemonSet") if pod.daemon else pod.owner
    if owner:
        meta["ownerReferences"] = [{"apiVersion": owner[0], "kind": owner[1], "name": "replayed", "controller": True}]
    spec = dict(pod.raw_spec or {"containers": []})
    if node_name:
        spec["nodeName"] = node_name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
            "status": {"phase": "Running" if node_name else "Pending"}}


def node_facts(n: SimNode, pools: dict, drifted: set, now: float, wall: datetime) -> tuple:
    """(the Node's facts, the NodeClaim's facts or None when the node is not Karpenter's): all that
    node_objects makes the two objects of, as values (a node's dicts change in place). Of the pass's
    time only what the objects show is in them: the Consolidatable condition (consolidateAfter
    passed since the last pod event), and lastPodEventTime and the Drifted lastTransitionTime, which
    are fixed instants; the deletionTimestamp is the pass's time, so only whether there is one."""
    deleting = n.deleting or n.disrupting
    node = (n.name, tuple(n.labels.items()), tuple(n.annotations.items()), n.taints, tuple(n.allocatable.items()),
            tuple(n.capacity.items()), n.ready, deleting, n.pool is not None)
    if n.pool is None:
        return node, None
    spec = pools.get(n.pool)
    after = spec.consolidate_after if spec is not None else None
    claim = (n.name, n.pool, n.ready and after is not None and now >= n.last_pod_event + after,
             stamp(wall, now - n.launched_at) if n.name in drifted else None, stamp(wall, now - n.last_pod_event),
             deleting)
    return node, claim


def node_objects(node: tuple, claim: tuple | None, deleted_at: str) -> tuple[dict, dict | None]:
    """The Node and NodeClaim objects (None: not Karpenter's) of a node's facts (node_facts);
    `deleted_at` the deletionTimestamp of a node being deleted."""
    name, labels, annotations, taints, allocatable, capacity, ready, deleting, _ = node
    labels = dict(labels)
    if ready:
        labels[L.INITIALIZED] = "true"
        labels[L.REGISTERED] = "true"
    node_obj: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": dict(annotations)},
        "spec": {"providerID": f"replay:///{name}",
                 "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in taints]},
        "status": {"allocatable": format_resources(dict(allocatable)), "capacity": format_resources(dict(capacity)),
                   "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}
    if deleting:
        node_obj["metadata"]["deletionTimestamp"] = deleted_at
    if claim is None:
        return node_obj, None
    name, pool, consolidatable, drifted_at, last_pod_event, deleting = claim
    conditions = []
    if consolidatable:
        conditions.append({"type": "Consolidatable", "status": "True"})
    if drifted_at is not None:
        conditions.append({"type": "Drifted", "status": "True", "lastTransitionTime": drifted_at})
    claim_obj: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": name, "labels": {L.NODEPOOL: pool}},
        "status": {"nodeName": name, "providerID": f"replay:///{name}", "conditions": conditions,
                   "lastPodEventTime": last_pod_event}}
    if deleting:
        claim_obj["metadata"]["deletionTimestamp"] = deleted_at
    return node_obj, claim_obj


def pdb_objects(cluster: Cluster, pdbs: list) -> list:
    """The PodDisruptionBudgets as given, with the status computed from the replayed pods."""
    if not any(s.raw is not None for s in pdbs):
        return []
    ready = {n.name for n in cluster.nodes.values() if n.ready}
    alive = list(cluster.pods.values())
    return [{**s.raw, "status": {"disruptionsAllowed": pdb_status(s, alive, ready)}} for s in pdbs if s.raw is not None]


def cluster_objects(cluster: Cluster, pools: dict, pdbs: list, drifted: set, now: float, wall: datetime,
                    pods: bool = True) -> list:
    """The replayed nodes, NodeClaims, pods and PDBs as the Kubernetes objects the disruption
    API reads, with the conditions its NodeClaim controllers would have set: Consolidatable once
    consolidateAfter has passed since the last pod event, Drifted."""
    out = []
    deleted_at = stamp(wall, 0)
    for n in sorted(cluster.nodes.values(), key=lambda n: n.name):
        facts, claim_facts = node_facts(n, pools, drifted, now, wall)
        node, claim = node_objects(facts, claim_facts, deleted_at)
        out.append(node)
        if claim is not None:
            out.append(claim)
    for pod in cluster.pods.values() if pods else ():
        out.append(pod_object(pod, pod.node))
    return out + pdb_objects(cluster, pdbs)
