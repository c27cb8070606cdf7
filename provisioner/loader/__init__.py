"""Turn Kubernetes object dicts (parsed YAML or API responses) into core models.

Kinds other than the ones below, and documents without a `kind`, are ignored: renders also hold
ServiceAccounts, ConfigMaps, Helm value files and the like.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from ..errors import InputError
from ..models import Inputs
from .fields import Ctx
from .karpenter import load_node, load_nodeclass, load_nodepool, load_overlay
from .pods import CONTROLLER_KINDS, MAX_PODS, load_controller, load_daemonset, load_pod


_LOADED = {("karpenter.sh", "NodePool"), ("karpenter.k8s.aws", "EC2NodeClass"), ("karpenter.sh", "NodeOverlay"),
           ("", "Node"), ("", "Pod"), ("apps", "DaemonSet")}


def _group(obj: Mapping) -> str:
    api_version = str(obj.get("apiVersion") or "")
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def _name(obj: Mapping) -> str:
    metadata = obj.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    name = name or "(unnamed)"
    return f"{namespace}/{name}" if namespace else str(name)


def _documents(objects, origins):
    for i, obj in enumerate(objects):
        origin = origins[i] if origins is not None else None
        if isinstance(obj, dict) and obj.get("kind") == "List" and isinstance(obj.get("items"), list):
            for j, item in enumerate(obj["items"]):
                yield item, f"{origin}, items[{j}]" if origin else f"items[{j}]"
        elif isinstance(obj, list):
            yield from ((item, origin) for item in obj)
        else:
            yield obj, origin


def load_objects(objects: Iterable[Mapping], origins: Sequence[str] | None = None, *,
                 max_pods: int = MAX_PODS) -> Inputs:
    """Models for every NodePool, EC2NodeClass, NodeOverlay, Node, Namespace, Pod, Deployment,
    ReplicaSet, StatefulSet, Job and DaemonSet in `objects`; raises InputError on invalid input.

    `origins[i]`, when given, says where `objects[i]` came from and prefixes error messages.
    More than `max_pods` pods in all (MAX_PODS by default) is refused, naming the object that
    crosses the ceiling.
    """
    docs = [(obj, origin) for obj, origin in _documents(list(objects), origins)
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
            meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
            labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
            inputs.namespaces[str(meta.get("name"))] = {str(k): str(v) for k, v in labels.items()}
    seen: dict = {}
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
        elif group == "" and kind == "Node":
            node = load_node(obj, ctx)
            _unique(seen, ("Node", node.name), origin, ctx)
            inputs.nodes.append(node)
        elif group == "" and kind == "Pod":
            pod = load_pod(obj, ctx, inputs.namespaces)
            if pod is not None:
                (inputs.bound_pods if pod.node_name else inputs.pods).append(pod)
                if len(inputs.pods) + len(inputs.bound_pods) > max_pods:
                    raise ctx.error("", f"more than {max_pods:,} pods in the input (raise the ceiling with --max-pods)")
        elif CONTROLLER_KINDS.get(kind) == group:
            room = max_pods - len(inputs.pods) - len(inputs.bound_pods)
            inputs.pods.extend(load_controller(obj, ctx, kind, inputs.namespaces, limit=max(room, 0)))
        elif group == "apps" and kind == "DaemonSet":
            inputs.daemonsets.append(load_daemonset(obj, ctx, inputs.namespaces))
    node_names = {n.name for n in inputs.nodes}
    for pod in inputs.bound_pods:
        if pod.node_name not in node_names:
            inputs.warnings.append(f"pod {pod.name} is bound to node {pod.node_name}, which is not in the input; ignored")
    inputs.bound_pods = [p for p in inputs.bound_pods if p.node_name in node_names]
    return inputs


def _unique(seen: dict, key, origin, ctx: Ctx) -> None:
    if key in seen:
        where = f" (first defined in {seen[key]})" if seen[key] else ""
        raise ctx.error("metadata.name", f"duplicate {key[0]} {key[1]!r}{where}")
    seen[key] = origin


__all__ = ["MAX_PODS", "load_objects", "InputError"]
