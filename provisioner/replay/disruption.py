"""Karpenter's disruption controller over the replayed cluster: the replayed state as the objects
the one cluster model reads (provisioner.state.reader.load_cluster), and one pass of the methods in
upstream's order (pkg/controllers/disruption/controller.go: emptiness, drift, multi-node
consolidation, single-node consolidation; the first that produces a command ends the pass) through
the disruption API `provisioner consolidate` uses, so the replay decides exactly as that command does.

PodDisruptionBudget status is computed from the replayed pods (the disruption controller of
kube-controller-manager): healthy = matching pods bound to Ready nodes, expected = matching pods.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from datetime import datetime, timedelta

from kubefacts import labels as L
from ..disruption.snapshot import PodInfo
from ..quantity import format_resources

# One pass of the disruption controller, the documented pure function (provisioner/README.md).
from ..disruption.controller import disruption_pass as _pass_api
from ..state.reader import load_cluster

REASON_DRIFTED = "Drifted"


@dataclass
class Command:
    reason: str  # empty | underutilized | drifted
    nodes: list
    replacements: list = field(default_factory=list)  # ("api", disruption Replacement)


@dataclass(frozen=True)
class PdbSpec:
    """A PodDisruptionBudget's spec; its status is computed from the replayed pods."""
    pdb: object  # disruption.snapshot.Pdb (selector, namespace, flags)
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


def pdb_status(spec: PdbSpec, pods, ready_nodes) -> int:
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


def pod_info(pod) -> PodInfo:
    owners = (pod.owner,) if pod.owner else ()
    if pod.daemon:
        owners = (("apps/v1", "DaemonSet"),)
    return PodInfo(name=pod.name, namespace=pod.spec.namespace, node_name=pod.node, labels=pod.labels,
                   annotations=pod.annotations, owners=owners, priority=None, terminal=False, terminating=False,
                   ready_false=False, tolerates_disrupted=False)


def any_consolidatable(cluster, pools: dict, now: float) -> bool:
    """Whether some Ready, managed node not being deleted is past its consolidateAfter (what
    emptiness and consolidation both require of a candidate, candidates.py _consolidatable)."""
    for n in cluster.nodes.values():
        spec = pools.get(n.pool) if n.pool else None
        if (spec is not None and n.ready and not n.deleting and not n.disrupting and spec.consolidate_after is not None
                and now >= n.last_pod_event + spec.consolidate_after):
            return True
    return False


def disruption_pass(cluster, pools: dict, pdbs: list, drifted: set, now_s: float, wall, catalog, region, zones,
                    spot_discount, spot_to_spot, objects=()) -> Command | None:
    """One pass of the disruption controller at replay time `now_s` (wall clock `wall`, for
    scheduled budgets): the command it starts, or None. `objects`: the NodePools, EC2NodeClasses,
    NodeOverlays and DaemonSets as given (read by the disruption API, when it is there)."""
    if not drifted and not any_consolidatable(cluster, pools, now_s):
        return None  # every candidate would fail the Consolidatable check: the pass finds nothing
    # The user's objects were judged when the replay read them; the rest are the replay's own.
    state = load_cluster(list(objects) + cluster_objects(cluster, pools, pdbs, drifted, now_s, wall), judged=True)
    result = _pass_api(state, catalog, wall, region=region, zones=tuple(zones), spot_discount=spot_discount,
                       spot_to_spot=spot_to_spot)
    if not result.commands:
        return None
    cmd = result.commands[0]
    return Command(cmd.reason, list(cmd.candidates), [("api", r) for r in cmd.replacements])


def _stamp(wall: datetime, seconds_ago: float) -> str:
    return (wall - timedelta(seconds=max(0.0, seconds_ago))).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pod_object(pod, node_name: str | None) -> dict:
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


def cluster_objects(cluster, pools: dict, pdbs: list, drifted: set, now: float, wall: datetime) -> list:
    """The replayed nodes, NodeClaims, pods and PDBs as the Kubernetes objects the disruption
    API reads (`kubectl get -o yaml` shapes), with the conditions its NodeClaim controllers would
    have set: Consolidatable once consolidateAfter has passed since the last pod event, Drifted."""
    out = []
    for n in sorted(cluster.nodes.values(), key=lambda n: n.name):
        labels = dict(n.labels)
        if n.ready:
            labels[L.INITIALIZED] = "true"
            labels[L.REGISTERED] = "true"
        node = {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": n.name, "labels": labels, "annotations": dict(n.annotations)},
                "spec": {"providerID": f"replay:///{n.name}",
                         "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in n.taints]},
                "status": {"allocatable": format_resources(n.allocatable), "capacity": format_resources(n.capacity),
                           "conditions": [{"type": "Ready", "status": "True" if n.ready else "False"}]}}
        if n.deleting or n.disrupting:
            node["metadata"]["deletionTimestamp"] = _stamp(wall, 0)
        out.append(node)
        if n.pool is None:
            continue
        spec = pools.get(n.pool)
        after = spec.consolidate_after if spec is not None else None
        conditions = []
        if n.ready and after is not None and now >= n.last_pod_event + after:
            conditions.append({"type": "Consolidatable", "status": "True"})
        if n.name in drifted:
            conditions.append({"type": "Drifted", "status": "True", "lastTransitionTime": _stamp(wall, now - n.launched_at)})
        claim = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
                 "metadata": {"name": n.name, "labels": {L.NODEPOOL: n.pool}},
                 "status": {"nodeName": n.name, "providerID": f"replay:///{n.name}", "conditions": conditions,
                            "lastPodEventTime": _stamp(wall, now - n.last_pod_event)}}
        if n.deleting or n.disrupting:
            claim["metadata"]["deletionTimestamp"] = _stamp(wall, 0)
        out.append(claim)
    for pod in cluster.pods.values():
        out.append(_pod_object(pod, pod.node))
    ready = {n.name for n in cluster.nodes.values() if n.ready}
    alive = list(cluster.pods.values())
    for s in pdbs:
        if s.raw is not None:
            out.append({**s.raw, "status": {"disruptionsAllowed": pdb_status(s, alive, ready)}})
    return out

