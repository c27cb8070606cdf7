"""Karpenter's disruption controller over the replayed cluster: the replayed state as the objects
the one cluster model reads (provisioner.state.reader.load_cluster), and one pass of the methods in
upstream's order (pkg/controllers/disruption/controller.go: emptiness, drift, multi-node
consolidation, single-node consolidation; the first that produces a command ends the pass) through
the disruption API `provisioner consolidate` uses, so the replay decides exactly as that command does.

PodDisruptionBudget status is computed from the replayed pods (the disruption controller of
kube-controller-manager): healthy = matching pods bound to Ready nodes, expected = matching pods.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Protocol, TypeVar

from datetime import datetime, timedelta

from kubefacts import labels as L
from ..disruption.snapshot import PodInfo
from ..quantity import format_resources

# One pass of the disruption controller, the documented pure function (provisioner/README.md).
from ..disruption.budgets import budget_active
from ..disruption.controller import disruption_pass as _pass_api
from ..disruption.pass_memo import PassMemo
from ..loader.fields import Ctx
from ..loader.pods import MAX_PODS, load_pod
from ..loader.provisionable import pod_reason
from ..loader.storage import volume_refs
from ..catalog import Catalog
from ..state.cluster import Cluster as State
from ..state.objects import Pdb
from .cluster import Cluster, SimPod
from ..state.reader import load_cluster, load_pod_info

REASON_DRIFTED = "Drifted"


class _Bound(Protocol):
    node_name: str | None


_Model = TypeVar("_Model", bound=_Bound)  # a pod's models.Pod or PodInfo


@dataclass
class Command:
    reason: str  # empty | underutilized | drifted
    nodes: list
    replacements: list = field(default_factory=list)  # ("api", disruption Replacement)


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


def pod_info(pod: SimPod) -> PodInfo:
    owners = (pod.owner,) if pod.owner else ()
    if pod.daemon:
        owners = (("apps/v1", "DaemonSet"),)
    return PodInfo(name=pod.name, namespace=pod.spec.namespace, node_name=pod.node, labels=pod.labels,
                   annotations=pod.annotations, owners=owners, priority=None, terminal=False, terminating=False,
                   ready_false=False, tolerates_disrupted=False)


def any_consolidatable(cluster: Cluster, pools: dict, now: float) -> bool:
    """Whether some Ready, managed node not being deleted is past its consolidateAfter (what
    emptiness and consolidation both require of a candidate, candidates.py _consolidatable)."""
    for n in cluster.nodes.values():
        spec = pools.get(n.pool) if n.pool else None
        if (spec is not None and n.ready and not n.deleting and not n.disrupting and spec.consolidate_after is not None
                and now >= n.last_pod_event + spec.consolidate_after):
            return True
    return False


class PassCache:
    """What the disruption passes of one replay keep between them: each pod's object as last read
    with the models read from it (_pod_entries), and the inputs of the last pass that found nothing.

    A pass is a pure function of what it reads (the objects, the pods and their bindings, the
    Consolidatable and Drifted conditions, the PDBs' status, which scheduled budgets are active at
    its time); when all of that equals what the last pass that found nothing read, this pass finds
    nothing too and is skipped (upstream's controller likewise acts on state changes). `skip`
    False runs every pass (the tests compare both)."""

    def __init__(self, skip: bool = True):
        self.pods: dict = {}  # pod name -> (object without nodeName, Pod, PodInfo, pending reason)
        self.sources: dict = {}  # pod name -> the SimPod fields its cached object was made from
        self.bound: dict = {}  # pod name -> (its read, node, Pod model, PodInfo) as the last pass had them
        self.skip = skip
        self.quiet: tuple | None = None  # the inputs of the last pass that found nothing
        self.memo = PassMemo()  # what the disruption API derives of unchanged nodes and pods
        self.passes = 0  # passes that ran the disruption API
        self.skipped = 0  # passes skipped as unchanged


def disruption_pass(cluster: Cluster, pools: dict, pdbs: list, drifted: set, now_s: float, wall: datetime,
                    catalog: Catalog, region: str, zones: Iterable[str], spot_discount: float, spot_to_spot: bool,
                    objects: Iterable = (), cache: PassCache | None = None) -> Command | None:
    """One pass of the disruption controller at replay time `now_s` (wall clock `wall`, for
    scheduled budgets): the command it starts, or None. `objects`: the NodePools, EC2NodeClasses,
    NodeOverlays and DaemonSets as given (read by the disruption API, when it is there).
    `cache`: kept across the passes of one replay (PassCache); None reads everything afresh."""
    if not drifted and not any_consolidatable(cluster, pools, now_s):
        return None  # every candidate would fail the Consolidatable check: the pass finds nothing
    # The user's objects were judged when the replay read them; the rest are the replay's own.
    objects = list(objects)
    entries = _pod_entries(cluster, objects, cache)
    if entries is None or cache is None:
        state, key = load_cluster(objects + cluster_objects(cluster, pools, pdbs, drifted, now_s, wall),
                                  judged=True), None
    else:
        rest = cluster_objects(cluster, pools, pdbs, drifted, now_s, wall, pods=False)
        key = _inputs_key(objects, rest, entries, pools, wall) if cache.skip else None
        if key is not None and key == cache.quiet:
            cache.skipped += 1
            return None
        state = _assemble(load_cluster(objects + rest, judged=True), entries, cache.bound)
    result = _pass_api(state, catalog, wall, region=region, zones=tuple(zones), spot_discount=spot_discount,
                       spot_to_spot=spot_to_spot, explain=False,  # the replay reads only the command
                       memo=cache.memo if cache is not None else None)
    if cache is not None:
        cache.passes += 1
        cache.quiet = key if not result.commands else None
    if not result.commands:
        return None
    cmd = result.commands[0]
    return Command(cmd.reason, list(cmd.candidates), [("api", r) for r in cmd.replacements])


_DELETION = re.compile(r'"deletionTimestamp": "[^"]*"')


def _inputs_key(objects: list, rest: list, entries: list, pools: dict, wall: datetime) -> tuple:
    """Everything a pass reads, comparable across passes. Of the time stamps in the objects only
    deletionTimestamp moves with the pass's time, and the readers take only its presence
    (lastPodEventTime and the Drifted lastTransitionTime are fixed instants); the rest of the
    pass's time is which scheduled budgets are active (Budget.IsActive, budgets.budget_active)."""
    given = json.dumps(objects, sort_keys=True, default=str)
    state = _DELETION.sub('"deletionTimestamp": ""', json.dumps(rest, sort_keys=True, default=str))
    pods = tuple((id(entry), node) for entry, node in entries)  # entries live in the cache while compared
    windows = tuple(budget_active(b, wall) for spec in pools.values() for b in spec.budgets)
    return (given, state, pods, windows)


def _stamp(wall: datetime, seconds_ago: float) -> str:
    return (wall - timedelta(seconds=max(0.0, seconds_ago))).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pod_object(pod: SimPod, node_name: str | None) -> dict:
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


def _pod_entries(cluster: Cluster, objects: list, cache: PassCache | None) -> list | None:
    """(cached read of the pod's object, its node) per pod in the cluster's order, or None when
    the pass must read every object afresh: no cache, Namespaces or lists among the objects (they
    change how pods are read), a pod count at the loader's ceiling, or a pod with volumes (the
    loader's volume step rewrites its model). A pod's cached read is reused only while its object
    (without spec.nodeName and status.phase, which the readers turn into node_name and the
    bound/pending list alone) equals the one it was read from."""
    if (cache is None or len(cluster.pods) >= MAX_PODS
            or any(isinstance(o, dict) and o.get("kind") in ("Namespace", "List", "Pod") for o in objects)):
        return None
    entries = []
    sources = cache.sources
    for pod in cluster.pods.values():
        entry = cache.pods.get(pod.name)
        source = sources.get(pod.name)
        # The object is made of these fields only, never changed in place (a pod is replaced):
        # while they are the same objects, so is the pod's object, and building it again is skipped.
        if (entry is None or source is None or source[0] is not pod.labels or source[1] is not pod.annotations
                or source[2] is not pod.raw_spec or source[3] != pod.owner or source[4] != pod.daemon):
            base = _pod_object(pod, None)
            if entry is None or entry[0] != base:
                entry = _read_pod(base)
                cache.pods[pod.name] = entry
            sources[pod.name] = (pod.labels, pod.annotations, pod.raw_spec, pod.owner, pod.daemon)
        if entry[1] is None:
            return None
        entries.append((entry, pod.node))
    if len(cache.pods) > 2 * len(cluster.pods) + 1000:  # forget pods long gone
        for name in [n for n in cache.pods if n not in cluster.pods]:
            del cache.pods[name]
            cache.sources.pop(name, None)
            cache.bound.pop(name, None)
    return entries


def _assemble(state: State, entries: list, bound: dict) -> State:
    """The state.Cluster load_cluster reads from the objects and the pods' objects, from its read
    of the objects without pods and the pods' cached reads, in load_objects' order (each pod in
    object order, then the warnings for pods on missing nodes). `bound`: the copies made for the
    last pass, per pod name, reused while the pod's read and node are the same (nothing in a pass
    changes a pod's models)."""
    inputs = state.inputs
    assert inputs is not None  # read with the scheduling models (not facts=True)
    node_names = {n.name for n in inputs.nodes}
    by_name = {n.name: n for n in state.nodes}
    missing = []
    for entry, node in entries:
        _, model, info, reason = entry
        made = bound.get(model.name)
        if made is None or made[0] is not entry or made[1] != node:
            made = bound[model.name] = (entry, node, _copy(model, node or None), _copy(info, node or None))
        if node:
            if node in node_names:
                inputs.bound_pods.append(made[2])
            else:
                missing.append(f"pod {model.name} is bound to node {node}, which is not in the input; ignored")
        elif reason is not None:
            inputs.ignored.append((model.name, reason))
        else:
            inputs.pods.append(made[2])
        info = made[3]
        state.pods.append(info)
        if info.node_name and info.node_name in by_name:
            by_name[info.node_name].pods.append(info)
    inputs.warnings.extend(missing)
    return state


def _copy(model: _Model, node_name: str | None) -> _Model:
    """A copy of a cached pod model bound to `node_name` (the cached read stays unbound;
    dataclasses.replace costs several times more)."""
    out = object.__new__(type(model))
    out.__dict__.update(model.__dict__)
    out.node_name = node_name
    return out


def _read_pod(base: dict) -> tuple:
    """(object, Pod model, PodInfo, why it is not provisioned for when pending) of a pod's object
    without spec.nodeName, as load_objects and load_cluster read it; the models None when it has
    volumes."""
    meta = base["metadata"]
    ctx = Ctx(None, "Pod", f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta["name"]))
    if volume_refs(ctx, base.get("spec"), "spec"):
        return (base, None, None, None)
    return (base, load_pod(base, ctx, {}), load_pod_info(base, ctx), pod_reason(base))


def cluster_objects(cluster: Cluster, pools: dict, pdbs: list, drifted: set, now: float, wall: datetime,
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
        node: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Node",
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
        claim: dict[str, Any] = {
            "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
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

