"""The one reader of cluster state for disruption (pkg/controllers/state/cluster.go, fed by
informers upstream): Kubernetes object dicts in, a Cluster of StateNodes out.

The scheduling loader (provisioner.loader) turns objects into what placement needs; this reader
joins its view with the disruption facts it leaves out (provisioner.state.objects). Only Pods are
read as workloads here: a snapshot of a running cluster holds the pods themselves, so
controllers (Deployments, ...) would count them twice.
"""
from __future__ import annotations

import re
from typing import Iterable, Mapping, Sequence

from kubefacts import labels as L
from ..disruption.cron import CronError, Schedule  # the budget schedule grammar (validated on read)
from ..loader import documents, load_objects
from ..loader.fields import Ctx
from ..loader.pods import label_selector
from ..screen import screen
from .cluster import Cluster
from .objects import (DISRUPTED_TAINT_KEY, POLICIES, REASONS, Budget, NodeClaimInfo, NodeInfo, Pdb, PodInfo,
                      PoolDisruption, duration_error, go_duration)
from .statenode import StateNode

_CONTROLLERS = {"Deployment", "ReplicaSet", "StatefulSet", "Job"}


def _feature_gate(obj: dict) -> tuple[bool, str] | None:
    """SpotToSpotConsolidation from a Karpenter Deployment (env FEATURE_GATES, as the chart sets
    it) or from the chart's values (settings.featureGates), as a render holds them."""
    if obj.get("kind") == "Deployment":
        spec = ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}
        for container in spec.get("containers") or []:
            for env in (container.get("env") or []) if isinstance(container, dict) else []:
                if isinstance(env, dict) and env.get("name") == "FEATURE_GATES":
                    env_gates = dict(g.split("=", 1) for g in str(env.get("value") or "").split(",") if "=" in g)
                    if "SpotToSpotConsolidation" in env_gates:
                        name = (obj.get("metadata") or {}).get("name")
                        on = env_gates["SpotToSpotConsolidation"].strip().lower() == "true"
                        return on, f"Deployment {name}'s FEATURE_GATES"
    elif "kind" not in obj:
        # Chart values, bare or as the render writes a Helm release (`values:`).
        raw_values = obj.get("values")
        values: dict = raw_values if isinstance(raw_values, dict) else obj
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


def _drifted(ctx: Ctx, status: dict) -> str:
    """The Drifted condition's lastTransitionTime ("" when absent)."""
    for i, c in enumerate(ctx.sequence(status.get("conditions"), "status.conditions")):
        if isinstance(c, dict) and c.get("type") == "Drifted":
            return ctx.string(c.get("lastTransitionTime"), f"status.conditions[{i}].lastTransitionTime") or ""
    return ""


def load_pool_disruption(obj: dict, ctx: Ctx) -> PoolDisruption:
    spec = ctx.mapping(obj.get("spec"), "spec")
    disruption = ctx.mapping(spec.get("disruption"), "spec.disruption")
    policy = ctx.string(disruption.get("consolidationPolicy"), "spec.disruption.consolidationPolicy",
                        "WhenEmptyOrUnderutilized")
    if policy not in POLICIES:
        raise ctx.error("spec.disruption.consolidationPolicy", f"unknown policy {policy!r} (expected one of {', '.join(POLICIES)})")
    after_text = ctx.string(disruption.get("consolidateAfter"), "spec.disruption.consolidateAfter", "0s")
    after = None if after_text == "Never" else go_duration(after_text)
    if after is None and after_text != "Never":
        raise ctx.error("spec.disruption.consolidateAfter", duration_error(after_text, "30s, 5m, 1h or Never"))
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
        if schedule is not None and duration is not None:  # both or neither (checked above)
            try:
                Schedule(schedule)
            except CronError as exc:
                raise ctx.error(f"{path}.schedule", f"invalid cron {schedule!r}: {exc}") from None
            if go_duration(duration) is None:
                raise ctx.error(f"{path}.duration", duration_error(duration, "10h or 30m"))
        budgets.append(Budget(nodes, reasons, schedule, duration, defaulted=disruption.get("budgets") is None))
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
    meta, spec, status = ctx.parts(obj, "metadata", "spec", "status")
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


def _int_or_percent(value: object) -> tuple[str, object] | None:
    if value is None:
        return None
    if isinstance(value, int):
        return ("int", value)
    return ("str", str(value))


def load_pdb(obj: dict, ctx: Ctx) -> Pdb:
    meta, spec, status = ctx.parts(obj, "metadata", "spec", "status")
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


def load_nodeclaim(obj: dict, ctx: Ctx, facts: bool = False) -> tuple[NodeClaimInfo, str | None, str | None]:
    """The NodeClaim and the node it backs: (info, status.nodeName, status.providerID).
    `facts`: also its labels, annotations, node class and whether it launched (load_cluster's facts mode)."""
    meta = _meta(obj, ctx)
    status = ctx.mapping(obj.get("status"), "status")
    conditions = _conditions(ctx, status)
    info = NodeClaimInfo(
        name=ctx.string(meta.get("name"), "metadata.name"),
        deleting=meta.get("deletionTimestamp") is not None,
        terminating=conditions.get("InstanceTerminating") == "True",
        consolidatable=conditions.get("Consolidatable") == "True",
        drifted=_drifted(ctx, status) if conditions.get("Drifted") == "True" else None,
        last_pod_event=ctx.string(status.get("lastPodEventTime"), "status.lastPodEventTime") or None,
        conditions=conditions)
    provider = ctx.string(status.get("providerID"), "status.providerID") or None
    if facts:
        ref = ctx.mapping(ctx.mapping(obj.get("spec"), "spec").get("nodeClassRef"), "spec.nodeClassRef")
        info.labels = ctx.string_map(meta.get("labels"), "metadata.labels")
        info.annotations = ctx.string_map(meta.get("annotations"), "metadata.annotations")
        info.nodeclass = ctx.string(ref.get("name"), "spec.nodeClassRef.name") or None
        # Upstream's launch controller sets Launched; a dump without it launched once it has a providerID.
        launched = conditions.get("Launched")
        info.launched = launched == "True" if launched is not None else provider is not None
    return info, ctx.string(status.get("nodeName"), "status.nodeName") or None, provider


def load_node_info(obj: dict, ctx: Ctx) -> tuple[NodeInfo, str | None]:
    meta = _meta(obj, ctx)
    spec = ctx.mapping(obj.get("spec"), "spec")
    conditions = _conditions(ctx, ctx.mapping(obj.get("status"), "status"))
    ready = conditions.get("Ready")
    name = ctx.string(meta.get("name"), "metadata.name")
    labels = ctx.string_map(meta.get("labels"), "metadata.labels")
    labels.setdefault(L.HOSTNAME, name)
    return (NodeInfo(name, labels, ctx.string_map(meta.get("annotations"), "metadata.annotations"),
                     meta.get("deletionTimestamp") is not None, None if ready is None else ready == "True",
                     conditions),
            ctx.string(spec.get("providerID"), "spec.providerID") or None)


def _name(obj: dict) -> str:
    raw_meta = obj.get("metadata")
    meta: dict = raw_meta if isinstance(raw_meta, dict) else {}
    name = meta.get("name") or "(unnamed)"
    return f"{meta['namespace']}/{name}" if meta.get("namespace") else str(name)


def _named(obj: dict, ctx: Ctx) -> None:
    if not isinstance(obj.get("metadata"), dict) or not obj["metadata"].get("name"):
        raise ctx.error("metadata.name", "missing")


def load_cluster(objects: Iterable[Mapping], origins: Sequence[str] | None = None, *, judged: bool = False,
                 facts: bool = False) -> Cluster:
    """The cluster state disruption reads from these objects; raises InputError naming the object and key.
    `judged`: the caller judged the Karpenter objects already (the replay, which writes its own
    NodeClaims each pass from a cluster whose inputs were judged once).

    `facts`: the disruption facts alone, without the scheduling core's models (`inputs` is None,
    each StateNode's `node`/`nodeclaim` None), so a snapshot of bare Nodes and NodeClaims (no
    allocatable, as `kubectl get nodes,nodeclaims` or the replay's drift check give them) is
    read; a NodeClaim no Node matches yet is a StateNode of its own (`meta` None), launched or
    not (`claim.launched`), as upstream's UpdateNodeClaim keeps a launched one before its Node
    registers (pkg/controllers/state/cluster.go). Drift counts its nodes from this."""
    every = [(o, origin) for o, origin in documents(list(objects), origins) if isinstance(o, dict)]
    docs = [(o, origin) for o, origin in every if o.get("kind")]
    if facts:
        if not judged:
            screen([o for o, _ in docs], [origin for _, origin in docs])
        inputs = None
    else:
        # PodDisruptionBudgets are read here, not by the scheduling core (which would list them as unmodelled).
        scheduling = [(o, origin) for o, origin in docs if o["kind"] not in _CONTROLLERS and o["kind"] != "PodDisruptionBudget"]
        inputs = load_objects([o for o, _ in scheduling], [origin for _, origin in scheduling], judged=judged)
    cluster = Cluster(inputs=inputs)
    for obj, _ in every:
        if (gate := _feature_gate(obj)) is not None:
            cluster.spot_to_spot, cluster.spot_to_spot_source = gate
    claims_by_node: dict = {}
    claims_by_provider: dict = {}
    claims: list = []
    raw_nodes = []
    for obj, origin in docs:
        kind, api = obj["kind"], str(obj.get("apiVersion") or "")
        ctx = Ctx(origin, kind, _name(obj))
        if kind == "NodePool" and api.startswith("karpenter.sh/"):
            cluster.pools[ctx.string(_meta(obj, ctx).get("name"), "metadata.name")] = load_pool_disruption(obj, ctx)
        elif kind == "NodeClaim" and api.startswith("karpenter.sh/"):
            if facts:
                _named(obj, ctx)
            info, node_name, provider = load_nodeclaim(obj, ctx, facts)
            cluster.nodeclaims_given = True
            if node_name:
                claims_by_node[node_name] = info
            if provider:
                claims_by_provider[provider] = info
            if facts:
                claims.append(info)
        elif kind == "Node" and api == "v1":
            if facts:
                _named(obj, ctx)
            raw_nodes.append(load_node_info(obj, ctx))
        elif kind == "Pod" and api == "v1":
            _named(obj, ctx)
            cluster.pods.append(load_pod_info(obj, ctx))
        elif kind == "PodDisruptionBudget" and api.startswith("policy/"):
            _named(obj, ctx)
            cluster.pdbs.append(load_pdb(obj, ctx))
    # Upstream joins Nodes and NodeClaims by provider ID; a snapshot may lack spec.providerID, so
    # the NodeClaim's status.nodeName is tried first.
    models = {n.name: n for n in inputs.nodes} if inputs is not None else {}
    launched = {c.name: c for c in inputs.nodeclaims} if inputs is not None else {}
    by_name: dict = {}
    joined: set = set()
    for meta, provider in sorted(raw_nodes, key=lambda item: item[0].name):
        claim = claims_by_node.get(meta.name) or (claims_by_provider.get(provider) if provider else None)
        if claim is None and not cluster.nodeclaims_given and L.NODEPOOL in meta.labels:
            claim = NodeClaimInfo(name=meta.name, deleting=meta.deleting, synthesized=True)
        elif facts and claim is not None:
            joined.add(id(claim))
        state = StateNode(node=models.get(meta.name), nodeclaim=launched.get(claim.name) if claim else None,
                          meta=meta, claim=claim)
        by_name[meta.name] = state
        cluster.nodes.append(state)
    # facts: NodeClaims without a Node (not registered yet, or not launched) are StateNodes too.
    unjoined = [StateNode(claim=c) for c in claims if id(c) not in joined]
    if unjoined:
        cluster.nodes = sorted(cluster.nodes + unjoined, key=lambda n: n.name)
    for pod in cluster.pods:
        if pod.node_name and pod.node_name in by_name:
            by_name[pod.node_name].pods.append(pod)
    return cluster
