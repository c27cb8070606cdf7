"""Karpenter's disruption controller over the replayed cluster: the replayed state as a disruption
Snapshot, and one pass of the methods in upstream's order (pkg/controllers/disruption/controller.go:
emptiness, drift, multi-node consolidation, single-node consolidation; the first that produces a
command ends the pass), on the pure functions `provisioner consolidate` uses
(provisioner.disruption.consolidation), so the replay decides exactly as that command does.

Drift (pkg/controllers/disruption/drift.go ComputeCommands): drifted candidates within the
NodePool's `Drifted` budget; empty ones are deleted together, else the first whose pods all
schedule elsewhere is replaced by the NodeClaims that scheduling needs (zero or more).

PodDisruptionBudget status is computed from the replayed pods (the disruption controller of
kube-controller-manager): healthy = matching pods bound to Ready nodes, expected = matching pods.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from datetime import datetime, timedelta

from kubefacts import labels as L
from ..disruption.snapshot import PodInfo
from ..models import Inputs
from ..quantity import format_resources

try:  # one pass of the disruption controller as a documented pure function (provisioner/README.md)
    from ..disruption.controller import disruption_pass as _pass_api
    from ..state.reader import load_cluster
except ImportError:  # before it: the pass `provisioner consolidate` runs, on a snapshot built here
    _pass_api = None
    from ..disruption.budgets import budget_mapping
    from ..disruption.consolidation import _Pass
    from ..disruption.snapshot import NodeClaimInfo, NodeInfo, Snapshot

REASON_DRIFTED = "Drifted"


@dataclass
class Command:
    reason: str  # empty | underutilized | drifted
    nodes: list
    replacements: list = field(default_factory=list)  # ("claim", NodeClaimResult) or ("offer", Replacement, pool)


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


def snapshot(cluster, pools: dict, pdbs: list, now: float) -> Snapshot:
    """The replayed cluster as the disruption functions read a `kubectl get` snapshot.

    A NodeClaim is Consolidatable once its NodePool's consolidateAfter has passed since its last
    pod event (pkg/controllers/nodeclaim/disruption/consolidation.go)."""
    nodes = sorted(cluster.nodes.values(), key=lambda n: n.name)
    ready = {n.name for n in nodes if n.ready}
    inputs = Inputs(nodepools=cluster.inputs.nodepools, nodeclasses=cluster.inputs.nodeclasses,
                    pods=[p.model() for p in cluster.pending.values()],
                    bound_pods=[cluster.pods[p].model(n.name) for n in nodes for p in sorted(n.pods)],
                    daemonsets=cluster.inputs.daemonsets, nodes=[n.existing() for n in nodes],
                    overlays=cluster.inputs.overlays, namespaces=cluster.inputs.namespaces)
    infos = []
    for n in nodes:
        labels = dict(n.labels)
        if n.ready:
            labels[L.INITIALIZED] = "true"
        claim = None
        if n.pool is not None:
            spec = pools.get(n.pool)
            after = spec.consolidate_after if spec is not None else None
            consolidatable = n.ready and after is not None and now >= n.last_pod_event + after
            claim = NodeClaimInfo(n.name, deleting=n.deleting or n.disrupting, consolidatable=consolidatable)
        infos.append(NodeInfo(n.name, labels, dict(n.annotations), n.deleting or n.disrupting,
                              True if n.ready else False, claim))
    alive = list(cluster.pods.values())
    pdb_objs = [replace(s.pdb, disruptions_allowed=pdb_status(s, alive, ready), has_status=True) for s in pdbs]
    bound = [pod_info(cluster.pods[p]) for n in nodes for p in sorted(n.pods)]
    return Snapshot(inputs, pools=dict(pools), nodes=infos, pods=bound, pdbs=pdb_objs, nodeclaims_given=True)


def _drift(p: _Pass, snap: Snapshot, drifted: set, now) -> Command | None:
    """drift.go ComputeCommands over the candidates of drifted nodes."""
    cands = sorted((c for c in p.candidates if c.name in drifted), key=lambda c: c.name)
    if not cands:
        return None
    budgets = budget_mapping(snap, REASON_DRIFTED, now)
    used: dict = {}
    empty = []
    for c in cands:
        b = budgets.get(c.pool)
        if c.empty and b is not None and b.remaining - used.get(c.pool, 0) > 0:
            empty.append(c.name)
            used[c.pool] = used.get(c.pool, 0) + 1
    if empty:
        return Command("drifted", empty)
    for c in cands:
        b = budgets.get(c.pool)
        if b is None or b.remaining <= 0:
            continue
        sim = p.simulator.run([c])
        if sim.errors or sim.uninitialized:
            continue
        return Command("drifted", [c.name], [("claim", claim) for claim in sim.nodeclaims])
    return None


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
    if _pass_api is not None:
        state = load_cluster(list(objects) + cluster_objects(cluster, pools, pdbs, drifted, now_s, wall))
        result = _pass_api(state, catalog, wall, region=region, zones=tuple(zones), spot_discount=spot_discount,
                           spot_to_spot=spot_to_spot)
        if not result.commands:
            return None
        cmd = result.commands[0]
        return Command(cmd.reason, list(cmd.candidates), [("api", r) for r in cmd.replacements])
    snap = snapshot(cluster, pools, pdbs, now_s)
    p = _Pass(snap, catalog, region, zones, spot_discount, spot_to_spot, wall)
    action = p.emptiness()
    if action is not None:
        return Command("empty", list(action.nodes))
    command = _drift(p, snap, drifted, wall)
    if command is not None:
        return command
    eligible = p._consolidation_candidates()
    action = p.multi_node(eligible) or p.single_node(eligible)
    if action is None:
        return None
    pool = cluster.nodes[action.nodes[0]].pool
    reps = [("offer", action.replacement, pool)] if action.replacement is not None else []
    return Command("underutilized", list(action.nodes), reps)


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

