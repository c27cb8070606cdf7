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
from dataclasses import dataclass, field, replace

from datetime import datetime, timedelta

from kubefacts import labels as L
from ..disruption.snapshot import PodInfo
from ..quantity import format_resources

# One pass of the disruption controller, the documented pure function (provisioner/README.md).
from ..disruption.controller import disruption_pass as _pass_api
from ..loader.fields import Ctx
from ..loader.pods import MAX_PODS, load_pod
from ..loader.provisionable import pod_reason
from ..loader.storage import volume_refs
from ..state.reader import load_cluster, load_pod_info

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
                    spot_discount, spot_to_spot, objects=(), pod_cache: dict | None = None) -> Command | None:
    """One pass of the disruption controller at replay time `now_s` (wall clock `wall`, for
    scheduled budgets): the command it starts, or None. `objects`: the NodePools, EC2NodeClasses,
    NodeOverlays and DaemonSets as given (read by the disruption API, when it is there).
    `pod_cache`: a dict kept across the passes of one replay (see load_state)."""
    if not drifted and not any_consolidatable(cluster, pools, now_s):
        return None  # every candidate would fail the Consolidatable check: the pass finds nothing
    state = load_state(cluster, pools, pdbs, drifted, now_s, wall, objects, pod_cache)
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


def load_state(cluster, pools: dict, pdbs: list, drifted: set, now: float, wall: datetime, objects=(),
               pod_cache: dict | None = None):
    """load_cluster over `objects` and cluster_objects, the same state.Cluster, reading each pod's
    object once per replay instead of once per pass: a pod's object differs between passes only by
    spec.nodeName and status.phase, which the readers turn into node_name and its bound/pending
    list alone. A pod's cached models are reused only while its object (without those two keys) is
    equal to the one they were read from; pods with volumes (whose models the loader's volume step
    rewrites), Namespaces among the objects, or a pod count at the loader's ceiling take the plain
    path, as does pod_cache None."""
    objects = list(objects)
    plain = (pod_cache is None or len(cluster.pods) >= MAX_PODS
             or any(isinstance(o, dict) and o.get("kind") in ("Namespace", "List", "Pod") for o in objects))
    if plain:
        return load_cluster(objects + cluster_objects(cluster, pools, pdbs, drifted, now, wall))
    entries = []
    for pod in cluster.pods.values():
        base = _pod_object(pod, None)
        entry = pod_cache.get(pod.name)
        if entry is None or entry[0] != base:
            entry = _read_pod(base)
            pod_cache[pod.name] = entry
        if entry[1] is None:  # volumes: the loader's volume step must see it
            return load_cluster(objects + cluster_objects(cluster, pools, pdbs, drifted, now, wall))
        entries.append((entry, pod.node))
    state = load_cluster(objects + cluster_objects(cluster, pools, pdbs, drifted, now, wall, pods=False))
    inputs = state.inputs
    node_names = {n.name for n in inputs.nodes}
    by_name = {n.name: n for n in state.nodes}
    # load_objects' order: each pod in object order, then the warning for pods on missing nodes.
    missing = []
    for (_, model, info, reason), node in entries:
        if node:
            if node in node_names:
                inputs.bound_pods.append(replace(model, node_name=node))
            else:
                missing.append(f"pod {model.name} is bound to node {node}, which is not in the input; ignored")
        elif reason is not None:
            inputs.ignored.append((model.name, reason))
        else:
            inputs.pods.append(replace(model))
        info = replace(info, node_name=node or None)
        state.pods.append(info)
        if info.node_name and info.node_name in by_name:
            by_name[info.node_name].pods.append(info)
    inputs.warnings.extend(missing)
    if len(pod_cache) > 2 * len(cluster.pods) + 1000:  # forget pods long gone
        for name in [n for n in pod_cache if n not in cluster.pods]:
            del pod_cache[name]
    return state


def _read_pod(base: dict) -> tuple:
    """(object, Pod model, PodInfo, why it is not provisioned for when pending) of a pod's object
    without spec.nodeName, as load_objects and load_cluster read it; the models None when it has
    volumes."""
    meta = base["metadata"]
    ctx = Ctx(None, "Pod", f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta["name"]))
    if volume_refs(ctx, base.get("spec"), "spec"):
        return (base, None, None, None)
    return (base, load_pod(base, ctx, {}), load_pod_info(base, ctx), pod_reason(base))


def cluster_objects(cluster, pools: dict, pdbs: list, drifted: set, now: float, wall: datetime,
                    pods: bool = True) -> list:
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
    for pod in cluster.pods.values() if pods else ():
        out.append(_pod_object(pod, pod.node))
    ready = {n.name for n in cluster.nodes.values() if n.ready}
    alive = list(cluster.pods.values())
    for s in pdbs:
        if s.raw is not None:
            out.append({**s.raw, "status": {"disruptionsAllowed": pdb_status(s, alive, ready)}})
    return out

