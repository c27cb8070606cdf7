"""The cluster state disruption needs, read from plain Kubernetes object dicts.

The scheduling loader (provisioner.loader) turns objects into what placement needs; disruption
also needs what it leaves out: a NodePool's `disruption` block, Node conditions and deletion,
NodeClaims, pod annotations, owners and priority, and PodDisruptionBudgets. Only Pods are read as
workloads here: a snapshot of a running cluster holds the pods themselves, so controllers
(Deployments, ...) would count them twice.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

from kubefacts import labels as L
from kubefacts.duration import go_seconds_or_none
from ..loader import documents, load_objects
from ..loader.fields import Ctx
from ..loader.pods import label_selector
from ..models import Inputs, LabelSelector
from .cron import CronError, Schedule

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
DISRUPTED_TAINT_KEY = "karpenter.sh/disrupted"
POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced")
REASONS = ("Underutilized", "Empty", "Drifted")
_CONTROLLERS = {"Deployment", "ReplicaSet", "StatefulSet", "Job"}
@dataclass(frozen=True)
class Budget:
    nodes: str  # "10%" or "3"
    reasons: tuple | None  # None: every reason
    schedule: str | None = None
    duration: str | None = None


@dataclass
class PoolDisruption:
    """spec.disruption of a NodePool, with the CRD's defaults."""
    policy: str = "WhenEmptyOrUnderutilized"
    consolidate_after: float | None = 0.0  # seconds; None is "Never"
    consolidate_after_text: str = "0s"
    budgets: tuple = (Budget("10%", None),)
    static: bool = False  # spec.replicas is set


@dataclass
class PodInfo:
    name: str  # namespace/name
    namespace: str
    node_name: str | None
    labels: dict
    annotations: dict
    owners: tuple  # (apiVersion, kind)
    priority: int | None
    terminal: bool
    terminating: bool
    ready_false: bool  # condition Ready=False
    tolerates_disrupted: bool

    def owned_by(self, api_version: str, kind: str) -> bool:
        return (api_version, kind) in self.owners


@dataclass
class NodeClaimInfo:
    name: str
    deleting: bool = False
    terminating: bool = False  # condition InstanceTerminating=True
    # Condition Consolidatable is True; the controller clears it (it is absent) while
    # consolidateAfter runs (pkg/controllers/nodeclaim/disruption/consolidation.go). None: unknown.
    consolidatable: bool | None = None
    last_pod_event: str | None = None  # status.lastPodEventTime
    synthesized: bool = False  # no NodeClaim in the snapshot: taken from the Node


@dataclass
class NodeInfo:
    name: str
    labels: dict
    annotations: dict
    deleting: bool
    ready: bool | None  # None: no Ready condition in the snapshot
    claim: NodeClaimInfo | None = None


@dataclass
class Pdb:
    name: str  # namespace/name
    namespace: str
    selector: LabelSelector
    disruptions_allowed: int
    fully_blocking: bool
    always_evict_unhealthy: bool
    has_status: bool


@dataclass
class Snapshot:
    inputs: Inputs  # the scheduling core's view (pools, node classes, nodes, bound and pending pods)
    pools: dict = field(default_factory=dict)  # name -> PoolDisruption
    nodes: list = field(default_factory=list)  # NodeInfo, by name
    pods: list = field(default_factory=list)  # PodInfo of every pod read
    pdbs: list = field(default_factory=list)
    nodeclaims_given: bool = False
    spot_to_spot: bool | None = None  # the SpotToSpotConsolidation feature gate, when the snapshot shows it
    spot_to_spot_source: str = ""


def _feature_gate(obj: dict) -> tuple[bool, str] | None:
    """SpotToSpotConsolidation from a Karpenter Deployment (env FEATURE_GATES, as the chart sets
    it) or from the chart's values (settings.featureGates), as a render holds them."""
    if obj.get("kind") == "Deployment":
        spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
        for container in spec.get("containers") or []:
            for env in (container.get("env") or []) if isinstance(container, dict) else []:
                if isinstance(env, dict) and env.get("name") == "FEATURE_GATES":
                    gates = dict(g.split("=", 1) for g in str(env.get("value") or "").split(",") if "=" in g)
                    if "SpotToSpotConsolidation" in gates:
                        name = (obj.get("metadata") or {}).get("name")
                        return gates["SpotToSpotConsolidation"].strip().lower() == "true", f"Deployment {name}'s FEATURE_GATES"
    elif "kind" not in obj:
        # Chart values, bare or as the render writes a Helm release (`values:`).
        values = obj.get("values") if isinstance(obj.get("values"), dict) else obj
        settings = values.get("settings")
        gates = settings.get("featureGates") if isinstance(settings, dict) else None
        if isinstance(gates, dict) and "spotToSpotConsolidation" in gates:
            return gates["spotToSpotConsolidation"] in (True, "true"), "the Karpenter chart's values, settings.featureGates"
    return None


def _meta(obj: dict, ctx: Ctx) -> dict:
    return ctx.mapping(obj.get("metadata"), "metadata")


def _conditions(ctx: Ctx, status: dict) -> dict:
    out = {}
    for i, c in enumerate(ctx.sequence(status.get("conditions"), "status.conditions")):
        c = ctx.mapping(c, f"status.conditions[{i}]")
        out[ctx.string(c.get("type"), f"status.conditions[{i}].type")] = ctx.string(c.get("status"), f"status.conditions[{i}].status")
    return out


def load_pool_disruption(obj: dict, ctx: Ctx) -> PoolDisruption:
    spec = ctx.mapping(obj.get("spec"), "spec")
    disruption = ctx.mapping(spec.get("disruption"), "spec.disruption")
    policy = ctx.string(disruption.get("consolidationPolicy"), "spec.disruption.consolidationPolicy",
                        "WhenEmptyOrUnderutilized")
    if policy not in POLICIES:
        raise ctx.error("spec.disruption.consolidationPolicy", f"unknown policy {policy!r} (expected one of {', '.join(POLICIES)})")
    after_text = ctx.string(disruption.get("consolidateAfter"), "spec.disruption.consolidateAfter", "0s")
    after = None if after_text == "Never" else go_seconds_or_none(after_text)
    if after is None and after_text != "Never":
        raise ctx.error("spec.disruption.consolidateAfter", f"invalid duration {after_text!r} (expected e.g. 30s, 5m, 1h or Never)")
    budgets = []
    raw_budgets = disruption.get("budgets")
    if raw_budgets is None:
        raw_budgets = [{"nodes": "10%"}]
    for i, b in enumerate(ctx.sequence(raw_budgets, "spec.disruption.budgets")):
        path = f"spec.disruption.budgets[{i}]"
        b = ctx.mapping(b, path)
        nodes = ctx.string(b.get("nodes"), f"{path}.nodes", "10%")
        if not re.fullmatch(r"(100|[1-9]?[0-9])%|[0-9]+", nodes):
            raise ctx.error(f"{path}.nodes", f"invalid value {nodes!r} (expected a count or a percentage)")
        reasons = b.get("reasons")
        if reasons is not None:
            reasons = tuple(ctx.string(r, f"{path}.reasons") for r in ctx.sequence(reasons, f"{path}.reasons"))
            for r in reasons:
                if r not in REASONS:
                    raise ctx.error(f"{path}.reasons", f"unknown reason {r!r} (expected one of {', '.join(REASONS)})")
        schedule = ctx.string(b.get("schedule"), f"{path}.schedule") or None
        duration = ctx.string(b.get("duration"), f"{path}.duration") or None
        if (schedule is None) != (duration is None):
            raise ctx.error(path, "'schedule' must be set with 'duration'")
        if schedule is not None:
            try:
                Schedule(schedule)
            except CronError as exc:
                raise ctx.error(f"{path}.schedule", f"invalid cron {schedule!r}: {exc}") from None
            if go_seconds_or_none(duration) is None:
                raise ctx.error(f"{path}.duration", f"invalid duration {duration!r} (expected e.g. 10h or 30m)")
        budgets.append(Budget(nodes, reasons, schedule, duration))
    return PoolDisruption(policy, after, after_text, tuple(budgets), spec.get("replicas") is not None)


def _tolerates_disrupted(ctx: Ctx, spec: dict) -> bool:
    """Whether the pod tolerates karpenter.sh/disrupted:NoSchedule (such pods are not evicted)."""
    for i, t in enumerate(ctx.sequence(spec.get("tolerations"), "spec.tolerations")):
        t = ctx.mapping(t, f"spec.tolerations[{i}]")
        key, op = t.get("key") or "", t.get("operator") or "Equal"
        effect = t.get("effect") or ""
        if effect not in ("", "NoSchedule"):
            continue
        if op == "Exists" and key in ("", DISRUPTED_TAINT_KEY):
            return True
        if op == "Equal" and key == DISRUPTED_TAINT_KEY and (t.get("value") or "") == "":
            return True
    return False


def load_pod_info(obj: dict, ctx: Ctx) -> PodInfo:
    meta = _meta(obj, ctx)
    spec = ctx.mapping(obj.get("spec"), "spec")
    status = ctx.mapping(obj.get("status"), "status")
    namespace = ctx.string(meta.get("namespace"), "metadata.namespace", "default")
    owners = tuple((str(o.get("apiVersion") or ""), str(o.get("kind") or ""))
                   for o in ctx.sequence(meta.get("ownerReferences"), "metadata.ownerReferences") if isinstance(o, dict))
    priority = spec.get("priority")
    if priority is not None:
        priority = ctx.integer(priority, "spec.priority")
    return PodInfo(
        name=f"{namespace}/{ctx.string(meta.get('name'), 'metadata.name')}", namespace=namespace,
        node_name=ctx.string(spec.get("nodeName"), "spec.nodeName") or None,
        labels=ctx.string_map(meta.get("labels"), "metadata.labels"),
        annotations=ctx.string_map(meta.get("annotations"), "metadata.annotations"),
        owners=owners, priority=priority,
        terminal=status.get("phase") in ("Succeeded", "Failed"),
        terminating=meta.get("deletionTimestamp") is not None,
        ready_false=_conditions(ctx, status).get("Ready") == "False",
        tolerates_disrupted=_tolerates_disrupted(ctx, spec),
    )


def _int_or_percent(value) -> tuple[str, object] | None:
    if value is None:
        return None
    if isinstance(value, int):
        return ("int", value)
    return ("str", str(value))


def load_pdb(obj: dict, ctx: Ctx) -> Pdb:
    meta = _meta(obj, ctx)
    spec = ctx.mapping(obj.get("spec"), "spec")
    status = ctx.mapping(obj.get("status"), "status")
    namespace = ctx.string(meta.get("namespace"), "metadata.namespace", "default")
    max_unavailable = _int_or_percent(spec.get("maxUnavailable"))
    min_available = _int_or_percent(spec.get("minAvailable"))
    # pdb.go newPdb: maxUnavailable 0 or "0%", or minAvailable "100%", can never allow an eviction
    fully_blocking = max_unavailable in (("int", 0), ("str", "0%")) or min_available == ("str", "100%")
    allowed = status.get("disruptionsAllowed")
    return Pdb(
        name=f"{namespace}/{ctx.string(meta.get('name'), 'metadata.name')}", namespace=namespace,
        selector=label_selector(ctx, spec.get("selector"), "spec.selector"),
        disruptions_allowed=ctx.integer(allowed, "status.disruptionsAllowed", 0) if allowed is not None else 0,
        fully_blocking=fully_blocking,
        always_evict_unhealthy=spec.get("unhealthyPodEvictionPolicy") == "AlwaysAllow",
        has_status=allowed is not None,
    )


def load_nodeclaim(obj: dict, ctx: Ctx) -> tuple[NodeClaimInfo, str | None, str | None]:
    """The NodeClaim and the node it backs: (info, status.nodeName, status.providerID)."""
    meta = _meta(obj, ctx)
    status = ctx.mapping(obj.get("status"), "status")
    conditions = _conditions(ctx, status)
    info = NodeClaimInfo(
        name=ctx.string(meta.get("name"), "metadata.name"),
        deleting=meta.get("deletionTimestamp") is not None,
        terminating=conditions.get("InstanceTerminating") == "True",
        consolidatable=conditions.get("Consolidatable") == "True",
        last_pod_event=ctx.string(status.get("lastPodEventTime"), "status.lastPodEventTime") or None)
    return (info, ctx.string(status.get("nodeName"), "status.nodeName") or None,
            ctx.string(status.get("providerID"), "status.providerID") or None)


def load_node_info(obj: dict, ctx: Ctx) -> tuple[NodeInfo, str | None]:
    meta = _meta(obj, ctx)
    spec = ctx.mapping(obj.get("spec"), "spec")
    ready = _conditions(ctx, ctx.mapping(obj.get("status"), "status")).get("Ready")
    name = ctx.string(meta.get("name"), "metadata.name")
    labels = ctx.string_map(meta.get("labels"), "metadata.labels")
    labels.setdefault(L.HOSTNAME, name)
    return (NodeInfo(name, labels, ctx.string_map(meta.get("annotations"), "metadata.annotations"),
                     meta.get("deletionTimestamp") is not None, None if ready is None else ready == "True"),
            ctx.string(spec.get("providerID"), "spec.providerID") or None)


def _name(obj: dict) -> str:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name = meta.get("name") or "(unnamed)"
    return f"{meta['namespace']}/{name}" if meta.get("namespace") else str(name)


def load_snapshot(objects: Iterable[Mapping], origins: Sequence[str] | None = None) -> Snapshot:
    """Everything consolidation reads from a snapshot; raises InputError naming the object and key."""
    every = [(o, origin) for o, origin in documents(list(objects), origins) if isinstance(o, dict)]
    docs = [(o, origin) for o, origin in every if o.get("kind")]
    # PodDisruptionBudgets are read here, not by the scheduling core (which would list them as unmodelled).
    scheduling = [(o, origin) for o, origin in docs if o["kind"] not in _CONTROLLERS and o["kind"] != "PodDisruptionBudget"]
    inputs = load_objects([o for o, _ in scheduling], [origin for _, origin in scheduling])
    snap = Snapshot(inputs)
    for obj, _ in every:
        if (gate := _feature_gate(obj)) is not None:
            snap.spot_to_spot, snap.spot_to_spot_source = gate
    claims_by_node: dict = {}
    claims_by_provider: dict = {}
    raw_nodes = []
    for obj, origin in docs:
        kind, api = obj["kind"], str(obj.get("apiVersion") or "")
        ctx = Ctx(origin, kind, _name(obj))
        if kind == "NodePool" and api.startswith("karpenter.sh/"):
            snap.pools[ctx.string(_meta(obj, ctx).get("name"), "metadata.name")] = load_pool_disruption(obj, ctx)
        elif kind == "NodeClaim" and api.startswith("karpenter.sh/"):
            info, node_name, provider = load_nodeclaim(obj, ctx)
            snap.nodeclaims_given = True
            if node_name:
                claims_by_node[node_name] = info
            if provider:
                claims_by_provider[provider] = info
        elif kind == "Node" and api == "v1":
            raw_nodes.append(load_node_info(obj, ctx))
        elif kind == "Pod" and api == "v1":
            if not isinstance(obj.get("metadata"), dict) or not obj["metadata"].get("name"):
                raise ctx.error("metadata.name", "missing")
            snap.pods.append(load_pod_info(obj, ctx))
        elif kind == "PodDisruptionBudget" and api.startswith("policy/"):
            if not isinstance(obj.get("metadata"), dict) or not obj["metadata"].get("name"):
                raise ctx.error("metadata.name", "missing")
            snap.pdbs.append(load_pdb(obj, ctx))
    for node, provider in sorted(raw_nodes, key=lambda item: item[0].name):
        node.claim = claims_by_node.get(node.name) or (claims_by_provider.get(provider) if provider else None)
        if node.claim is None and not snap.nodeclaims_given and L.NODEPOOL in node.labels:
            node.claim = NodeClaimInfo(name=node.name, deleting=node.deleting, synthesized=True)
        snap.nodes.append(node)
    return snap
