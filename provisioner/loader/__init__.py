"""Turn Kubernetes object dicts (parsed YAML or API responses) into core models.

Kinds that are not modelled are ignored and listed in one warning; documents without a `kind`
(renders also hold Helm value files) are skipped silently. What Kubernetes does to objects before
Karpenter sees them is applied here: controllers run pods (only those not already in the input,
following owner references), Job pods carry the Job controller's labels, hostNetwork pods claim
their container ports on the host.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Iterable, Mapping, Sequence

from ..errors import InputError
from ..models import Inputs, VolumeClaim
from ..screen import screen
from ..scheduling.volumes import VolumeError, pod_volume_alternatives
from .fields import Ctx, mapping_or_empty
from .karpenter import load_node, load_nodeclaim, load_nodeclass, load_nodepool, load_overlay
from .pods import (CONTROLLER_KINDS, MAX_PODS, check_pod_ceiling, load_controller, load_daemonset, load_pod,
                   replica_count)
from .provisionable import TERMINAL_PHASES, pod_reason, spec_reason
from .storage import claim_templates, load_claim, load_csinode, load_storage_class, load_volume, volume_refs


_LOADED = {("karpenter.sh", "NodePool"), ("karpenter.k8s.aws", "EC2NodeClass"), ("karpenter.sh", "NodeOverlay"),
           ("karpenter.sh", "NodeClaim"), ("", "Node"), ("", "Pod"), ("apps", "DaemonSet"),
           ("", "PersistentVolumeClaim"), ("", "PersistentVolume"), ("storage.k8s.io", "StorageClass"),
           ("storage.k8s.io", "CSINode")}
MODELLED = _LOADED | {("", "Namespace")} | {(g, k) for k, g in CONTROLLER_KINDS.items()}


def _group(obj: Mapping) -> str:
    api_version = str(obj.get("apiVersion") or "")
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def _name(obj: Mapping) -> str:
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    name = name or "(unnamed)"
    return f"{namespace}/{name}" if namespace else str(name)


def _meta(obj: Mapping) -> dict:
    return mapping_or_empty(obj.get("metadata"))


def documents(objects, origins):
    """(object, origin) for every object, a `kind: List`'s items (and a bare YAML list) expanded."""
    for i, obj in enumerate(objects):
        origin = origins[i] if origins is not None else None
        if isinstance(obj, dict) and obj.get("kind") == "List" and isinstance(obj.get("items"), list):
            for j, item in enumerate(obj["items"]):
                yield item, f"{origin}, items[{j}]" if origin else f"items[{j}]"
        elif isinstance(obj, list):
            yield from ((item, origin) for item in obj)
        else:
            yield obj, origin


class _Owners:
    """Owner references among the input's objects: which controllers already have their
    ReplicaSets or Pods in the input, so a dump's replicas are counted once."""

    def __init__(self, docs):
        self.keys: dict = {}  # uid or (kind, namespace, name) -> controller key
        for obj, _ in docs:
            if CONTROLLER_KINDS.get(obj["kind"]) == _group(obj):
                meta = _meta(obj)
                key = (obj["kind"], str(meta.get("namespace") or "default"), str(meta.get("name")))
                self.keys[key] = key
                if meta.get("uid"):
                    self.keys[str(meta["uid"])] = key
        self.children: Counter = Counter()  # controller key -> owned objects in the input
        self.pods: Counter = Counter()  # controller key -> owned pods in the input (not terminal)
        for obj, _ in docs:
            kind = obj["kind"]
            if not (kind == "Pod" and _group(obj) == "" or CONTROLLER_KINDS.get(kind) == _group(obj)):
                continue
            for owner in self.owners(obj):
                self.children[owner] += 1
                status = mapping_or_empty(obj.get("status"))
                if kind == "Pod" and status.get("phase") not in TERMINAL_PHASES:
                    self.pods[owner] += 1

    def owners(self, obj) -> list:
        meta = _meta(obj)
        refs = meta.get("ownerReferences")
        out = []
        for ref in refs if isinstance(refs, list) else []:
            if not isinstance(ref, dict):
                continue
            key = self.keys.get(str(ref.get("uid"))) if ref.get("uid") else None
            if key is None:
                key = self.keys.get((str(ref.get("kind")), str(meta.get("namespace") or "default"), str(ref.get("name"))))
            if key is not None:
                out.append(key)
        return out


def load_objects(objects: Iterable[Mapping], origins: Sequence[str] | None = None, *,
                 max_pods: int = MAX_PODS, judged: bool = False) -> Inputs:
    """Models for every NodePool, EC2NodeClass, NodeOverlay, NodeClaim, Node, Namespace, Pod,
    Deployment, ReplicaSet, StatefulSet, Job, ReplicationController, DaemonSet,
    PersistentVolumeClaim, PersistentVolume and StorageClass in `objects`; raises InputError.

    `origins[i]`, when given, says where `objects[i]` came from and prefixes error messages.
    More than `max_pods` pods in all (MAX_PODS by default) is refused, naming the object that
    crosses the ceiling. A Karpenter object the API server or Karpenter refuses raises
    InvalidObjects (kubefacts.validation's words); provisioner.screen drops such objects first
    when a command runs with --skip-invalid. `judged`: the caller has judged the whole objects
    already and passes partial ones (the policy pack's pool_instance_types).
    """
    objects = list(objects)
    # Karpenter objects are judged by the one validator (CRD schema, CEL, runtime checks) first;
    # the model builders below only read what it admitted.
    if not judged:
        screen(objects, origins)
    docs = [(obj, origin) for obj, origin in documents(objects, origins)
            if isinstance(obj, dict) and obj.get("kind")]
    for obj, origin in docs:
        for field in ("kind", "apiVersion"):
            if not isinstance(obj.get(field, ""), str):
                raise InputError(f"expected a string, got {type(obj[field]).__name__}", origin=origin,
                                 obj=_name(obj), path=field)
    inputs = Inputs()
    # Namespaces first: pod affinity namespaceSelectors are resolved against their labels.
    for obj, _ in docs:
        if obj["kind"] == "Namespace" and _group(obj) == "":
            meta = _meta(obj)
            labels = mapping_or_empty(meta.get("labels"))
            inputs.namespaces[str(meta.get("name"))] = {str(k): str(v) for k, v in labels.items()}
    owners = _Owners(docs)
    claimed_nodes = set()  # Nodes with a NodeClaim in the input may not report allocatable yet
    for obj, _ in docs:
        if obj["kind"] == "NodeClaim" and _group(obj) == "karpenter.sh" and isinstance(obj.get("status"), dict):
            claimed_nodes.update({str(obj["status"].get("nodeName") or ""), str(obj["status"].get("providerID") or "")})
    claimed_nodes.discard("")
    seen: dict = {}
    controllers: dict = {}  # (kind, namespace, name) -> (object, origin)
    unmodelled: Counter = Counter()
    pod_volumes: list = []  # (pod, refs, ctx, controller pod index or None)
    default_class = None
    for obj, origin in docs:
        kind, group = obj["kind"], _group(obj)
        ctx = Ctx(origin, kind, _name(obj))
        if (group, kind) in _LOADED or CONTROLLER_KINDS.get(kind) == group:
            metadata = obj.get("metadata")
            if not isinstance(metadata, dict) or not metadata.get("name"):
                raise ctx.error("metadata.name", "missing")
        if group == "karpenter.sh" and kind == "NodePool":
            pool = load_nodepool(obj, ctx)
            _unique(seen, ("NodePool", pool.name), origin, ctx)
            inputs.nodepools.append(pool)
        elif group == "karpenter.k8s.aws" and kind == "EC2NodeClass":
            nodeclass = load_nodeclass(obj, ctx)
            _unique(seen, ("EC2NodeClass", nodeclass.name), origin, ctx)
            inputs.nodeclasses[nodeclass.name] = nodeclass
        elif group == "karpenter.sh" and kind == "NodeOverlay":
            inputs.overlays.append(load_overlay(obj, ctx))
        elif group == "karpenter.sh" and kind == "NodeClaim":
            claim = load_nodeclaim(obj, ctx)
            _unique(seen, ("NodeClaim", claim.name), origin, ctx)
            inputs.nodeclaims.append(claim)
        elif group == "" and kind == "Node":
            meta = _meta(obj)
            spec = mapping_or_empty(obj.get("spec"))
            allow = str(meta.get("name")) in claimed_nodes or str(spec.get("providerID") or "") in claimed_nodes
            node = load_node(obj, ctx, allow_empty=allow)
            _unique(seen, ("Node", node.name), origin, ctx)
            inputs.nodes.append(node)
        elif group == "" and kind == "Pod":
            pod = load_pod(obj, ctx, inputs.namespaces)
            if len(inputs.pods) + len(inputs.bound_pods) >= max_pods:
                raise ctx.error("", f"more than {max_pods:,} pods in the input (raise the ceiling with --max-pods)")
            status = mapping_or_empty(obj.get("status"))
            if pod.node_name:
                if status.get("phase") not in TERMINAL_PHASES:  # terminal pods hold no resources
                    inputs.bound_pods.append(pod)
                    refs = volume_refs(ctx, obj.get("spec"), "spec")
                    if refs:
                        pod_volumes.append((pod, refs, ctx, "bound"))
                continue
            reason = pod_reason(obj)
            if reason is not None:
                inputs.ignored.append((pod.name, reason))
                continue
            refs = volume_refs(ctx, obj.get("spec"), "spec")
            if refs:
                pod_volumes.append((pod, refs, ctx, None))
            inputs.pods.append(pod)
        elif CONTROLLER_KINDS.get(kind) == group:
            meta = _meta(obj)
            key = (kind, str(meta.get("namespace") or "default"), str(meta.get("name")))
            if key in controllers:
                # The API server holds one object per name: two different specs cannot both run, and
                # the same one twice (a file given twice) is one object, not twice the pods.
                first, first_origin = controllers[key]
                if first != obj:
                    where = f" (first defined in {first_origin})" if first_origin else ""
                    raise ctx.error("metadata.name", f"{kind} {key[1]}/{key[2]} is defined twice with different "
                                                     f"specs{where}; the cluster holds one object per name")
                inputs.warnings.append(f"{kind} {key[1]}/{key[2]} is defined twice, identically; counted once")
                continue
            controllers[key] = (obj, origin)
            _load_controller(obj, ctx, kind, inputs, owners, pod_volumes, max_pods)
        elif group == "apps" and kind == "DaemonSet":
            inputs.daemonsets.append(load_daemonset(obj, ctx, inputs.namespaces))
        elif group == "" and kind == "PersistentVolumeClaim":
            volume_claim = load_claim(obj, ctx)
            inputs.claims[(volume_claim.namespace, volume_claim.name)] = volume_claim
        elif group == "" and kind == "PersistentVolume":
            volume = load_volume(obj, ctx)
            inputs.volumes[volume.name] = volume
        elif group == "storage.k8s.io" and kind == "CSINode":
            node_name, limits = load_csinode(obj, ctx)
            inputs.volume_limits[node_name] = limits
        elif group == "storage.k8s.io" and kind == "StorageClass":
            sc, is_default = load_storage_class(obj, ctx)
            inputs.storage_classes[sc.name] = sc
            if is_default:
                default_class = sc.name
        elif not (group == "" and kind == "Namespace"):
            unmodelled[kind] += 1
    if unmodelled:
        listed = ", ".join(f"{kind} ({n})" for kind, n in sorted(unmodelled.items()))
        inputs.warnings.append(f"kinds read but not modelled, ignored: {listed}")
    _apply_volumes(inputs, pod_volumes, default_class)
    node_names = {n.name for n in inputs.nodes}
    for pod in inputs.bound_pods:
        if pod.node_name not in node_names:
            inputs.warnings.append(f"pod {pod.name} is bound to node {pod.node_name}, which is not in the input; ignored")
    inputs.bound_pods = [p for p in inputs.bound_pods if p.node_name in node_names]
    return inputs


def _load_controller(obj, ctx, kind, inputs, owners: _Owners, pod_volumes, max_pods: int = MAX_PODS) -> None:
    meta = _meta(obj)
    key = (kind, str(meta.get("namespace") or "default"), str(meta.get("name")))
    if kind == "Deployment" and owners.children[key] > owners.pods[key]:
        return  # its ReplicaSets are in the input and run its pods
    spec = mapping_or_empty(obj.get("spec"))
    template = mapping_or_empty(spec.get("template"))
    present = owners.pods[key]
    count = max(replica_count(obj, ctx, kind) - present, 0)
    if not count:
        return
    check_pod_ceiling(ctx, kind, count, max(max_pods - len(inputs.pods) - len(inputs.bound_pods), 0))
    pods = load_controller(obj, ctx, kind, inputs.namespaces, count=count, start=present)
    reason = spec_reason(template.get("spec"))
    if reason is not None:
        inputs.ignored.extend((p.name, reason) for p in pods)
        return
    refs = volume_refs(ctx, template.get("spec"), "spec.template.spec")
    if kind == "StatefulSet":
        name = key[2]
        templates = claim_templates(ctx, spec)
        for i, pod in enumerate(pods, start=present):
            extra = tuple(("pvc", f"{tpl}-{name}-{i}", sc) for tpl, sc in templates)
            if refs or extra:
                pod_volumes.append((pod, refs + extra, ctx, None))
    elif refs:
        for pod in pods:
            pod_volumes.append((pod, refs, ctx, None))
    inputs.pods.extend(pods)


def _apply_volumes(inputs: Inputs, pod_volumes, default_class) -> None:
    """Volume topology per pod; pods whose claims Karpenter cannot use are ignored."""
    if not pod_volumes:
        return
    ignored = set()
    specs: dict = {}
    for pod, refs, _ctx, bound in pod_volumes:
        namespace = pod.spec.namespace
        claims = []
        for ref in refs:
            if ref[0] == "pvc":
                claim = inputs.claims.get((namespace, ref[1]))
                if claim is None and len(ref) == 3:  # a StatefulSet claim its controller will create
                    claim = VolumeClaim(namespace, ref[1], storage_class=ref[2] or default_class or "")
                if claim is None:
                    if bound:
                        continue  # usage of a running pod: an unknown claim counts for nothing
                    inputs.ignored.append((pod.name, f"persistentvolumeclaim {namespace}/{ref[1]} not found"))
                    ignored.add(pod)
                    break
                if not claim.volume_name and not claim.storage_class and default_class:
                    claim = replace(claim, storage_class=default_class)
            else:  # a generic ephemeral volume: its claim is created with the pod
                claim = VolumeClaim(namespace, f"{pod.name.split('/', 1)[1]}-{ref[1]}", storage_class=ref[2] or default_class or "")
            claims.append(claim)
        if pod in ignored:
            continue
        pod.volumes = frozenset((driver, f"{c.namespace}/{c.name}") for c in claims
                                if (driver := _driver(c, inputs)))
        if bound:
            continue
        try:
            alternatives = pod_volume_alternatives(claims, inputs.volumes, inputs.storage_classes)
        except VolumeError as exc:
            inputs.ignored.append((pod.name, str(exc)))
            ignored.add(pod)
            continue
        if not alternatives:
            continue
        cache_key = (id(pod.spec), repr([sorted((k, repr(r)) for k, r in reqs._reqs.items()) for reqs in alternatives]))
        spec = specs.get(cache_key)
        if spec is None:
            spec = specs[cache_key] = replace(pod.spec, volume_alternatives=alternatives,
                                              key=pod.spec.key + (cache_key[1],))
        pod.spec = spec
    if ignored:
        inputs.pods = [p for p in inputs.pods if p not in ignored]


def _driver(claim: VolumeClaim, inputs: Inputs) -> str:
    """scheduling.ResolveDriver: the bound volume's CSI driver, else the StorageClass provisioner."""
    if claim.volume_name:
        volume = inputs.volumes.get(claim.volume_name)
        return volume.driver if volume else ""
    sc = inputs.storage_classes.get(claim.storage_class)
    return sc.provisioner if sc else ""


def _unique(seen: dict, key, origin, ctx: Ctx) -> None:
    if key in seen:
        where = f" (first defined in {seen[key]})" if seen[key] else ""
        raise ctx.error("metadata.name", f"duplicate {key[0]} {key[1]!r}{where}")
    seen[key] = origin


__all__ = ["MAX_PODS", "MODELLED", "load_objects", "InputError"]
