"""Drift's inputs: NodePools and EC2NodeClasses as the views their static hashes count, and the
nodes drift counts, taken from the one cluster model (provisioner.state). Pure (objects in,
dataclasses out); bad input raises InputError with the key path.

Hash views follow kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go `NodePool.Hash()` (spec.template,
requirements `hash:"ignore"`) and aws/karpenter-provider-aws pkg/apis/v1/ec2nodeclass.go
`EC2NodeClass.Hash()` (spec minus the `hash:"ignore"` fields, plus the resolved AMI family), with
hashstructure's SlicesAsSets / IgnoreZeroValue / ZeroNil read as: lists are sets, unset and
non-pointer zero fields are absent. CRD defaults are applied first, as the API server stores them.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

from ..errors import InputError
from ..loader.fields import Ctx
from ..state.cluster import Cluster
from kubefacts.duration import go_seconds
from kubefacts.labels import NORMALIZED_LABELS
from .node_requirements import Requirements, requirement_set

NODEPOOL_API = "karpenter.sh/v1"
NODECLASS_API = "karpenter.k8s.aws/v1"
NODEPOOL_LABEL = "karpenter.sh/nodepool"
# NodePool CRD default (karpenter.sh_nodepools.yaml): the API server stores it when omitted.
DEFAULT_EXPIRE_AFTER = "720h"
# EC2NodeClass CRD defaults (karpenter.k8s.aws_ec2nodeclasses.yaml) for metadataOptions.
DEFAULT_METADATA_OPTIONS = {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
                            "httpPutResponseHopLimit": 1, "httpTokens": "required"}
# EC2NodeClassSpec fields tagged hash:"ignore" (they drift dynamically, from status, or not at all).
NODECLASS_HASH_IGNORED = frozenset({"subnetSelectorTerms", "securityGroupSelectorTerms",
                                    "capacityReservationSelectorTerms", "amiSelectorTerms", "amiFamily",
                                    "ipPrefixCount"})
# Free-form maps: their keys are data, not fields (a path stops at the map).
FREE_FORM_MAPS = frozenset({"labels", "annotations", "tags", "systemReserved", "kubeReserved", "evictionHard",
                            "evictionSoft", "evictionSoftGracePeriod"})
# Go non-pointer fields of the hashed structs: their zero value is skipped (IgnoreZeroValue), so
# writing it equals omitting it. Pointer fields (e.g. detailedMonitoring: false) do count.
NON_POINTER_FIELDS = frozenset({"key", "value", "effect", "group", "kind", "name", "role", "rootVolume",
                                "networkCardIndex", "deviceIndex", "interfaceType"})
DURATION_FIELDS = frozenset({"expireAfter", "terminationGracePeriod"})
AMI_FAMILIES = {"al2": "AL2", "al2023": "AL2023", "bottlerocket": "Bottlerocket", "windows2019": "Windows2019",
                "windows2022": "Windows2022", "windows2025": "Windows2025"}
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")


@dataclass
class NodePool:
    name: str
    hashed: dict             # the hash-counted view of spec.template, canonical
    requirements: Requirements  # the scheduling core's, keyed by label
    raw_requirements: list   # canonical, for "did they change at all"
    template_labels: dict
    nodeclass: str | None
    annotations: dict


@dataclass
class NodeClass:
    name: str
    hashed: dict
    terms: dict              # field -> canonical list of selector terms
    annotations: dict


@dataclass
class Machine:
    """One node as drift sees it: a StateNode (a NodeClaim and/or its Node) of a NodePool."""
    name: str
    pool: str
    nodeclass: str | None
    labels: dict
    claim_annotations: dict | None  # None when only the Node is known


def _where(origins: Sequence[str] | None, index: int) -> str | None:
    return origins[index] if origins and index < len(origins) else None


def _named(obj: Mapping, kind: str, where: str | None) -> tuple[dict, str, Ctx]:
    """(metadata, name, typed reader naming the object) of an object that must have a metadata.name."""
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    ctx = Ctx(where, kind, name if isinstance(name, str) and name else "(unnamed)")
    meta = ctx.mapping(meta, "metadata")
    if not isinstance(name, str) or not name:
        raise ctx.error("metadata.name", "missing")
    return meta, name, ctx


def parse_duration(text: Any, path: str, where: str | None, obj: str) -> float | None:
    """Seconds of a Go duration ("1h30m"); None for "Never" (a nil duration, which the hash skips)."""
    if text == "Never":
        return None
    try:
        return go_seconds(text)
    except ValueError as err:  # Go's reason: not a duration, or longer than int64 nanoseconds hold
        raise InputError(f"{text!r} is not a duration Karpenter reads (e.g. 720h, 90m or Never): {err}",
                         origin=where, obj=obj, path=path) from None


def canonical(value: Any, name: str = "", free_form: bool = False) -> Any:
    """The hash-relevant form: nulls and empty collections dropped, non-pointer zero fields dropped,
    lists as sets (SlicesAsSets), durations as seconds."""
    if isinstance(value, Mapping):
        result = {}
        for key, item in value.items():
            if not free_form:
                if item is None or (key in NON_POINTER_FIELDS and item in ("", 0, False)):
                    continue
                if key in DURATION_FIELDS:
                    item = _seconds_or_raw(item)
            elif name == "evictionSoftGracePeriod":
                item = _seconds_or_raw(item)
            item = canonical(item, str(key), free_form=not free_form and key in FREE_FORM_MAPS)
            if item in ({}, [], None):
                continue
            result[key] = item
        return result
    if isinstance(value, list):
        items = {json.dumps(canonical(v, name), sort_keys=True): canonical(v, name) for v in value if v is not None}
        return [items[k] for k in sorted(items)]
    return value


def _seconds_or_raw(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return parse_duration(value, "", None, "")
        except InputError:
            return value
    return value


def diff_paths(before: Any, after: Any, prefix: str, free_form: bool = False) -> list[str]:
    """Dotted paths where two canonical views differ; a path stops at lists and free-form maps."""
    if before == after:
        return []
    if isinstance(before, dict) and isinstance(after, dict) and not free_form:
        paths = []
        for key in sorted(set(before) | set(after)):
            if before.get(key) != after.get(key):
                sub = f"{prefix}.{key}" if prefix else key
                if isinstance(before.get(key), dict) and isinstance(after.get(key), dict) and key not in FREE_FORM_MAPS:
                    paths.extend(diff_paths(before[key], after[key], sub))
                else:
                    paths.append(sub)
        return paths
    return [prefix]


def _requirements(raw: Any, ctx: Ctx) -> tuple[list, list]:
    path = "spec.template.spec.requirements"
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise ctx.error(path, "expected a list")
    parsed, canon = [], []
    for i, item in enumerate(raw):
        here = f"{path}[{i}]"
        if not isinstance(item, Mapping):
            raise ctx.error(here, "expected a mapping")
        key, operator, values = item.get("key"), item.get("operator"), item.get("values") or []
        if not isinstance(key, str) or not key:
            raise ctx.error(f"{here}.key", "missing or not a string")
        if operator not in OPERATORS:
            raise ctx.error(f"{here}.operator", f"{operator!r} is not an operator; use one of {', '.join(OPERATORS)}")
        if not isinstance(values, list) or not all(isinstance(v, (str, int)) for v in values):
            raise ctx.error(f"{here}.values", "expected a list of strings")
        values = [str(v) for v in values]
        if operator in ("Gt", "Lt", "Gte", "Lte") and (len(values) != 1 or not re.fullmatch(r"\d+", values[0])):
            raise ctx.error(f"{here}.values", f"{operator} takes a single non-negative integer value")
        parsed.append((key, operator, values))
        canon.append({"key": NORMALIZED_LABELS.get(key, key), "operator": operator, "values": sorted(set(values))})
    return parsed, canonical(canon)


def read_nodepool(obj: Mapping, where: str | None) -> NodePool:
    meta, name, ctx = _named(obj, "NodePool", where)
    spec = ctx.mapping(obj.get("spec"), "spec")
    template = ctx.mapping(spec.get("template"), "spec.template")
    tmeta = ctx.mapping(template.get("metadata"), "spec.template.metadata")
    tspec = ctx.mapping(template.get("spec"), "spec.template.spec")
    labels = ctx.string_map(tmeta.get("labels"), "spec.template.metadata.labels")
    annotations = ctx.string_map(tmeta.get("annotations"), "spec.template.metadata.annotations")
    for key in ("taints", "startupTaints"):
        if tspec.get(key) is not None and not isinstance(tspec[key], list):
            raise ctx.error(f"spec.template.spec.{key}", "expected a list")
    ref = ctx.mapping(tspec.get("nodeClassRef"), "spec.template.spec.nodeClassRef")
    expire = DEFAULT_EXPIRE_AFTER if tspec.get("expireAfter") is None else tspec["expireAfter"]
    hashed_spec = {
        "taints": tspec.get("taints"),
        "startupTaints": tspec.get("startupTaints"),
        "nodeClassRef": ref,
        "expireAfter": parse_duration(expire, "spec.template.spec.expireAfter", where, ctx.label),
    }
    if tspec.get("terminationGracePeriod") is not None:
        hashed_spec["terminationGracePeriod"] = parse_duration(
            tspec["terminationGracePeriod"], "spec.template.spec.terminationGracePeriod", where, ctx.label)
    hashed = {"metadata": {"labels": labels, "annotations": annotations}, "spec": hashed_spec}
    parsed, canon = _requirements(tspec.get("requirements"), ctx)
    nodeclass = ref.get("name") if isinstance(ref.get("name"), str) else None
    return NodePool(name, canonical_template(hashed), requirement_set(parsed), canon, labels, nodeclass,
                    ctx.string_map(meta.get("annotations"), "metadata.annotations"))


def canonical_template(hashed: dict) -> dict:
    meta = {k: v for k, v in hashed["metadata"].items() if v}
    spec = {}
    for key, value in hashed["spec"].items():
        if key in DURATION_FIELDS:
            if value is not None:
                spec[key] = value
            continue
        value = canonical(value, key)
        if value not in (None, {}, []):
            spec[key] = value
    return {"metadata": meta, "spec": spec}


def resolved_ami_family(spec: Mapping) -> str | None:
    """EC2NodeClass.AMIFamily(): spec.amiFamily, else the alias' family (hashed instead of the field)."""
    if isinstance(spec.get("amiFamily"), str):
        return spec["amiFamily"]
    for term in spec.get("amiSelectorTerms") or []:
        if isinstance(term, Mapping) and isinstance(term.get("alias"), str):
            return AMI_FAMILIES.get(term["alias"].split("@")[0].lower(), term["alias"].split("@")[0])
    return "Custom"


def read_nodeclass(obj: Mapping, where: str | None) -> NodeClass:
    meta, name, ctx = _named(obj, "EC2NodeClass", where)
    spec = ctx.mapping(obj.get("spec"), "spec")
    for key in ("tags", "kubelet", "metadataOptions", "placementGroupSelector", "cpuOptions", "connectionTracking"):
        ctx.mapping(spec.get(key), f"spec.{key}")
    for key in NODECLASS_HASH_IGNORED | {"blockDeviceMappings", "networkInterfaces"}:
        if key not in ("amiFamily", "ipPrefixCount") and spec.get(key) is not None and not isinstance(spec[key], list):
            raise ctx.error(f"spec.{key}", "expected a list")
    hashed = {k: v for k, v in spec.items() if k not in NODECLASS_HASH_IGNORED}
    hashed["metadataOptions"] = {**DEFAULT_METADATA_OPTIONS, **(spec.get("metadataOptions") or {})}
    hashed["amiFamily"] = resolved_ami_family(spec)  # in the hash as the resolved family, not the field
    terms = {k: canonical(spec.get(k) or [], k) for k in ("amiSelectorTerms", "subnetSelectorTerms",
                                                          "securityGroupSelectorTerms",
                                                          "capacityReservationSelectorTerms")}
    return NodeClass(name, canonical(hashed), terms,
                     ctx.string_map(meta.get("annotations"), "metadata.annotations"))


def read_manifests(objects: Sequence[Any], origins: Sequence[str] | None = None
                   ) -> tuple[dict[str, NodePool], dict[str, NodeClass]]:
    """NodePools and EC2NodeClasses by name; other kinds (and kind-less documents) are ignored."""
    readers: dict[str, tuple[str, Callable[[Mapping, str | None], NodePool | NodeClass]]] = {
        "NodePool": (NODEPOOL_API, read_nodepool), "EC2NodeClass": (NODECLASS_API, read_nodeclass)}
    found: dict[str, dict[str, Any]] = {kind: {} for kind in readers}
    for obj, where in _expand(objects, origins):
        kind = obj.get("kind")
        if not isinstance(kind, str) or kind not in readers:
            continue
        api, read = readers[kind]
        _api(obj, api, where)
        item = read(obj, where)
        if item.name in found[kind]:
            raise InputError("defined twice", origin=where, obj=f'{kind} "{item.name}"')
        found[kind][item.name] = item
    return found["NodePool"], found["EC2NodeClass"]


def _api(obj: Mapping, expected: str, where: str | None) -> None:
    if obj.get("apiVersion") != expected:
        raise InputError(f"apiVersion {obj.get('apiVersion')!r} is not supported; expected {expected}",
                         origin=where, obj=f"{obj.get('kind')} \"{(obj.get('metadata') or {}).get('name', '?')}\"")


def _expand(objects: Sequence[Any], origins: Sequence[str] | None) -> Iterator[tuple[Any, str | None]]:
    """(object, origin) pairs, `kind: List` expanded, empty documents skipped."""
    for index, obj in enumerate(objects):
        where = _where(origins, index)
        if obj is None:
            continue
        if not isinstance(obj, Mapping):
            raise InputError(f"expected a Kubernetes object (a mapping), got {type(obj).__name__}", origin=where)
        if str(obj.get("kind", "")).endswith("List") and isinstance(obj.get("items"), list):
            for item in obj.get("items") or []:
                if not isinstance(item, Mapping):
                    raise InputError("expected a Kubernetes object in items", origin=where)
                yield item, where
        else:
            yield obj, where


def candidates(cluster: Cluster, pools_before: Mapping[str, NodePool]) -> list[Machine]:
    """Drift's nodes from the one cluster model (provisioner.state.reader.load_cluster(facts=True)):
    a StateNode (a NodeClaim and/or its Node) of a NodePool counts unless its Node or NodeClaim is
    deleting (it is already being replaced) or its NodeClaim is not launched (drift.go clears
    Drifted on NodeClaims that are not Launched). Its labels, annotations and node class are its
    NodeClaim's when the snapshot holds one, else its Node's (then its hash is assumed current)."""
    machines: list[Machine] = []
    for state in cluster.nodes:
        claim = state.claim if state.claim is not None and not state.claim.synthesized else None
        node = state.meta
        if (node is not None and node.deleting) or (claim is not None and (claim.deleting or not claim.launched)):
            continue
        node_pool = node.labels.get(NODEPOOL_LABEL) if node is not None else None
        if claim is None:
            if node is not None and node_pool:
                machines.append(Machine(node.name, node_pool, _pool_class(pools_before, node_pool), node.labels, None))
            continue
        pool = claim.labels.get(NODEPOOL_LABEL) or node_pool
        if pool:
            machines.append(Machine(state.name, pool, claim.nodeclass or _pool_class(pools_before, pool),
                                    claim.labels, claim.annotations))
    return sorted(machines, key=lambda m: m.name)


def _pool_class(pools: Mapping[str, NodePool], pool: str) -> str | None:
    return pools[pool].nodeclass if pool in pools else None

