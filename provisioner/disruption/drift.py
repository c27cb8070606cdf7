"""Which NodePools and EC2NodeClasses drift when manifests change, and which nodes Karpenter replaces.

Pure: objects in, a DriftReport out. Follows Karpenter v1.14.1:

* kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go `NodePool.Hash()`: the static hash covers
  `spec.template` only (metadata labels and annotations, taints, startupTaints, nodeClassRef,
  expireAfter, terminationGracePeriod); `requirements` carry `hash:"ignore"`; limits, weight and
  the disruption block are outside the template. Options SlicesAsSets, IgnoreZeroValue, ZeroNil.
* pkg/controllers/nodeclaim/disruption/drift.go: static drift compares the nodepool-hash
  annotations (only when both the NodeClaim and the NodePool carry hash and version, and the
  versions match); requirement drift is decided per NodeClaim from its labels
  (`NewLabelRequirements(labels).Compatible(nodePoolRequirements)`); NodeClaims not Launched
  never drift.
* aws/karpenter-provider-aws pkg/apis/v1/ec2nodeclass.go `EC2NodeClass.Hash()`: the spec minus
  the fields tagged `hash:"ignore"` (subnet, security group, capacity reservation and AMI
  selector terms, amiFamily, ipPrefixCount), plus the AMI family resolved from the alias.
* pkg/cloudprovider/drift.go: AMI, subnet, security group and capacity reservation drift are
  decided from the EC2NodeClass status against the instance. Offline, the status of the new
  selector terms is unknown, so a change of terms is judged from the terms themselves: subnets
  drift unless every old term is kept (terms are ORed: more terms select more subnets),
  security groups drift unless the terms select the same set, AMIs drift unless the terms are
  the same.

We compare canonical forms of the counted fields, not Go's hashstructure bytes.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from ..errors import InputError
from ..labels import NORMALIZED_LABELS

NODEPOOL_API = "karpenter.sh/v1"
NODECLASS_API = "karpenter.k8s.aws/v1"
NODEPOOL_HASH = "karpenter.sh/nodepool-hash"
NODEPOOL_HASH_VERSION = "karpenter.sh/nodepool-hash-version"
NODECLASS_HASH = "karpenter.k8s.aws/ec2nodeclass-hash"
NODECLASS_HASH_VERSION = "karpenter.k8s.aws/ec2nodeclass-hash-version"
NODEPOOL_LABEL = "karpenter.sh/nodepool"
CAPACITY_TYPE_LABEL = "karpenter.sh/capacity-type"
RESERVATION_ID_LABEL = "karpenter.k8s.aws/capacity-reservation-id"

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
# Labels every Karpenter node carries (set from the NodePool and the launched instance type), so
# a requirement on them never meets a node without the label.
ALWAYS_LABELLED = frozenset({NODEPOOL_LABEL, CAPACITY_TYPE_LABEL, "kubernetes.io/arch", "kubernetes.io/os",
                             "node.kubernetes.io/instance-type", "topology.kubernetes.io/zone",
                             "topology.kubernetes.io/region", "karpenter.k8s.aws/instance-category",
                             "karpenter.k8s.aws/instance-family", "karpenter.k8s.aws/instance-generation",
                             "karpenter.k8s.aws/instance-size", "karpenter.k8s.aws/instance-cpu",
                             "karpenter.k8s.aws/instance-memory"})
AMI_FAMILIES = {"al2": "AL2", "al2023": "AL2023", "bottlerocket": "Bottlerocket", "windows2019": "Windows2019",
                "windows2022": "Windows2022", "windows2025": "Windows2025"}
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}

POOL_KINDS = ("hash", "requirements", "nodeclass", "removed")
NODECLASS_KINDS = ("hash", "ami", "subnets", "securitygroups", "removed")


# --------------------------------------------------------------------------------------------
# Report


@dataclass(frozen=True, order=True)
class Cause:
    path: str
    kind: str

    def to_dict(self) -> dict:
        return {"path": self.path, "kind": self.kind}


@dataclass
class NodePoolDrift:
    name: str
    causes: list[Cause] = field(default_factory=list)
    nodes: int | None = None

    @property
    def drift(self) -> bool:
        return bool(self.causes)

    def to_dict(self) -> dict:
        return {"name": self.name, "drift": self.drift, "causes": [c.to_dict() for c in self.causes],
                "nodes": self.nodes}


@dataclass
class NodeClassDrift:
    name: str
    causes: list[Cause] = field(default_factory=list)

    @property
    def drift(self) -> bool:
        return bool(self.causes)

    def to_dict(self) -> dict:
        return {"name": self.name, "drift": self.drift, "causes": [c.to_dict() for c in self.causes]}


@dataclass
class DriftReport:
    nodepools: list[NodePoolDrift]
    nodeclasses: list[NodeClassDrift]
    with_snapshot: bool = False
    # pool name -> names of the nodes it would replace (only with a snapshot); not part of the JSON
    replaced: dict[str, list[str]] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """Exactly the `provisioner drift -o json` shape."""
        replaced = sum(p.nodes or 0 for p in self.nodepools) if self.with_snapshot else None
        return {"nodepools": [p.to_dict() for p in self.nodepools],
                "nodeclasses": [c.to_dict() for c in self.nodeclasses],
                "summary": {"nodepools_drifted": sum(p.drift for p in self.nodepools), "nodes_replaced": replaced}}


# --------------------------------------------------------------------------------------------
# Requirements, as pkg/scheduling/requirement.go represents them


@dataclass(frozen=True)
class Requirement:
    """Karpenter's set representation: complement + values, integer bounds (Gt/Lt made inclusive)."""
    complement: bool
    values: frozenset
    gte: int | None = None
    lte: int | None = None

    @staticmethod
    def of(operator: str, values: Sequence[str]) -> "Requirement":
        if operator == "In":
            return Requirement(False, frozenset(values))
        if operator == "NotIn":
            return Requirement(True, frozenset(values))
        if operator == "Exists":
            return Requirement(True, frozenset())
        if operator == "DoesNotExist":
            return Requirement(False, frozenset())
        number = int(values[0])
        if operator == "Gt":
            return Requirement(True, frozenset(), gte=number + 1)
        if operator == "Lt":
            return Requirement(True, frozenset(), lte=number - 1)
        if operator == "Gte":
            return Requirement(True, frozenset(), gte=number)
        return Requirement(True, frozenset(), lte=number)

    @property
    def operator(self) -> str:
        if self.complement:
            return "NotIn" if self.values else "Exists"  # bounds alone read as Exists
        return "In" if self.values else "DoesNotExist"

    def has(self, value: str) -> bool:
        inside = value not in self.values if self.complement else value in self.values
        return inside and _within(value, self.gte, self.lte)

    def intersection(self, other: "Requirement") -> "Requirement":
        gte = max((b for b in (self.gte, other.gte) if b is not None), default=None)
        lte = min((b for b in (self.lte, other.lte) if b is not None), default=None)
        if gte is not None and lte is not None and gte > lte:
            return Requirement(False, frozenset())
        if self.complement and other.complement:
            values = self.values | other.values
        elif self.complement:
            values = other.values - self.values
        elif other.complement:
            values = self.values - other.values
        else:
            values = self.values & other.values
        values = frozenset(v for v in values if _within(v, gte, lte))
        complement = self.complement and other.complement
        return Requirement(complement, values, gte if complement else None, lte if complement else None)


def _within(value: str, gte: int | None, lte: int | None) -> bool:
    if gte is None and lte is None:
        return True
    try:
        number = int(value)
    except ValueError:
        return False
    return (gte is None or number >= gte) and (lte is None or number <= lte)


def requirement_set(requirements: Iterable[tuple[str, str, Sequence[str]]]) -> dict[str, Requirement]:
    """Requirements by (normalized) key, same-key requirements intersected (Requirements.Add)."""
    result: dict[str, Requirement] = {}
    for key, operator, values in requirements:
        key = NORMALIZED_LABELS.get(key, key)
        requirement = Requirement.of(operator, values)
        result[key] = requirement.intersection(result[key]) if key in result else requirement
    return result


def labels_compatible(labels: Mapping[str, str], requirements: Mapping[str, Requirement]) -> bool:
    """`NewLabelRequirements(labels).Compatible(requirements)` (pkg/scheduling/requirements.go):
    a key the labels lack is fine only under NotIn/DoesNotExist; a present key must intersect."""
    node = requirement_set((k, "In", [v]) for k, v in labels.items())
    for key, incoming in requirements.items():
        if key not in node:
            if incoming.operator not in ("NotIn", "DoesNotExist"):
                return False
            continue
        existing = node[key]
        if not _has_intersection(existing, incoming):
            if incoming.operator in ("NotIn", "DoesNotExist") and existing.operator in ("NotIn", "DoesNotExist"):
                continue
            return False
    return True


def _has_intersection(a: Requirement, b: Requirement) -> bool:
    merged = a.intersection(b)
    return merged.complement or bool(merged.values)


def requirements_admit_all(old: Mapping[str, Requirement], new: Mapping[str, Requirement],
                           template_labels: Mapping[str, str]) -> bool:
    """True when every node the old requirements could launch (labels compatible with `old`, and
    carrying the template labels) is compatible with `new`: a widening, which does not drift."""
    for key, req in new.items():
        fixed = template_labels.get(key)
        if fixed is not None:
            if not req.has(fixed):
                return False
            continue
        prior = old.get(key)
        absent_possible = key not in ALWAYS_LABELLED and (prior is None or prior.operator in ("NotIn", "DoesNotExist"))
        if absent_possible and req.operator not in ("NotIn", "DoesNotExist"):
            return False
        if prior is None:
            prior = Requirement(True, frozenset())
        if not prior.complement:
            if any(prior.has(v) and not req.has(v) for v in prior.values):
                return False
            continue
        if prior.gte is not None and prior.lte is not None and prior.lte - prior.gte <= 1024:
            if any(prior.has(str(v)) and not req.has(str(v)) for v in range(prior.gte, prior.lte + 1)):
                return False
            continue
        if not req.complement:
            return False  # infinitely many old values, finitely many new ones
        if any(prior.has(v) for v in req.values):
            return False
        if req.gte is not None and (prior.gte is None or prior.gte < req.gte):
            return False
        if req.lte is not None and (prior.lte is None or prior.lte > req.lte):
            return False
    return True


# --------------------------------------------------------------------------------------------
# Reading objects


@dataclass
class NodePool:
    name: str
    hashed: dict             # the hash-counted view of spec.template, canonical
    requirements: dict       # key -> Requirement
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
    """One node as drift sees it: a NodeClaim and/or its Node."""
    name: str
    pool: str
    nodeclass: str | None
    labels: dict
    claim_annotations: dict | None  # None when only the Node is known


def _where(origins, index) -> str | None:
    return origins[index] if origins and index < len(origins) else None


def _mapping(value: Any, path: str, where: str | None, obj: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"expected a mapping, got {type(value).__name__}", origin=where, obj=obj, path=path)
    return dict(value)


def _string_map(value: Any, path: str, where: str | None, obj: str) -> dict:
    result = _mapping(value, path, where, obj)
    for key, item in result.items():
        if not isinstance(key, str) or not isinstance(item, (str, int, float, bool)) or item is None:
            raise InputError("expected string keys and values", origin=where, obj=obj, path=f"{path}.{key}")
    return {k: str(v) for k, v in result.items()}


def parse_duration(text: Any, path: str, where: str | None, obj: str) -> float | None:
    """Seconds of a Go duration ("1h30m"); None for "Never" (a nil duration, which the hash skips)."""
    if text == "Never":
        return None
    if not isinstance(text, str) or not re.fullmatch(r"(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+", text):
        raise InputError(f"{text!r} is not a duration (e.g. 720h, 90m or Never)", origin=where, obj=obj, path=path)
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in _DURATION.findall(text))


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


def _requirements(raw: Any, where, obj) -> tuple[list, list]:
    path = "spec.template.spec.requirements"
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        raise InputError("expected a list", origin=where, obj=obj, path=path)
    parsed, canon = [], []
    for i, item in enumerate(raw):
        here = f"{path}[{i}]"
        if not isinstance(item, Mapping):
            raise InputError("expected a mapping", origin=where, obj=obj, path=here)
        key, operator, values = item.get("key"), item.get("operator"), item.get("values") or []
        if not isinstance(key, str) or not key:
            raise InputError("missing or not a string", origin=where, obj=obj, path=f"{here}.key")
        if operator not in OPERATORS:
            raise InputError(f"{operator!r} is not an operator; use one of {', '.join(OPERATORS)}",
                             origin=where, obj=obj, path=f"{here}.operator")
        if not isinstance(values, list) or not all(isinstance(v, (str, int)) for v in values):
            raise InputError("expected a list of strings", origin=where, obj=obj, path=f"{here}.values")
        values = [str(v) for v in values]
        if operator in ("Gt", "Lt", "Gte", "Lte") and (len(values) != 1 or not re.fullmatch(r"\d+", values[0])):
            raise InputError(f"{operator} takes a single non-negative integer value", origin=where, obj=obj,
                             path=f"{here}.values")
        parsed.append((key, operator, values))
        canon.append({"key": NORMALIZED_LABELS.get(key, key), "operator": operator, "values": sorted(set(values))})
    return parsed, canonical(canon)


def read_nodepool(obj: Mapping, where: str | None) -> NodePool:
    meta = _mapping(obj.get("metadata"), "metadata", where, "NodePool")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError("missing", origin=where, obj="NodePool", path="metadata.name")
    label = f'NodePool "{name}"'
    spec = _mapping(obj.get("spec"), "spec", where, label)
    template = _mapping(spec.get("template"), "spec.template", where, label)
    tmeta = _mapping(template.get("metadata"), "spec.template.metadata", where, label)
    tspec = _mapping(template.get("spec"), "spec.template.spec", where, label)
    labels = _string_map(tmeta.get("labels"), "spec.template.metadata.labels", where, label)
    annotations = _string_map(tmeta.get("annotations"), "spec.template.metadata.annotations", where, label)
    for key in ("taints", "startupTaints"):
        if tspec.get(key) is not None and not isinstance(tspec[key], list):
            raise InputError("expected a list", origin=where, obj=label, path=f"spec.template.spec.{key}")
    ref = _mapping(tspec.get("nodeClassRef"), "spec.template.spec.nodeClassRef", where, label)
    expire = DEFAULT_EXPIRE_AFTER if tspec.get("expireAfter") is None else tspec["expireAfter"]
    hashed_spec = {
        "taints": tspec.get("taints"),
        "startupTaints": tspec.get("startupTaints"),
        "nodeClassRef": ref,
        "expireAfter": parse_duration(expire, "spec.template.spec.expireAfter", where, label),
    }
    if tspec.get("terminationGracePeriod") is not None:
        hashed_spec["terminationGracePeriod"] = parse_duration(
            tspec["terminationGracePeriod"], "spec.template.spec.terminationGracePeriod", where, label)
    hashed = {"metadata": {"labels": labels, "annotations": annotations}, "spec": hashed_spec}
    parsed, canon = _requirements(tspec.get("requirements"), where, label)
    nodeclass = ref.get("name") if isinstance(ref.get("name"), str) else None
    return NodePool(name, canonical_template(hashed), requirement_set(parsed), canon, labels, nodeclass,
                    _string_map(meta.get("annotations"), "metadata.annotations", where, label))


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
    meta = _mapping(obj.get("metadata"), "metadata", where, "EC2NodeClass")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InputError("missing", origin=where, obj="EC2NodeClass", path="metadata.name")
    label = f'EC2NodeClass "{name}"'
    spec = _mapping(obj.get("spec"), "spec", where, label)
    for key in ("tags", "kubelet", "metadataOptions", "placementGroupSelector", "cpuOptions", "connectionTracking"):
        _mapping(spec.get(key), f"spec.{key}", where, label)
    for key in NODECLASS_HASH_IGNORED | {"blockDeviceMappings", "networkInterfaces"}:
        if key not in ("amiFamily", "ipPrefixCount") and spec.get(key) is not None and not isinstance(spec[key], list):
            raise InputError("expected a list", origin=where, obj=label, path=f"spec.{key}")
    hashed = {k: v for k, v in spec.items() if k not in NODECLASS_HASH_IGNORED}
    hashed["metadataOptions"] = {**DEFAULT_METADATA_OPTIONS, **(spec.get("metadataOptions") or {})}
    hashed["amiFamily"] = resolved_ami_family(spec)  # in the hash as the resolved family, not the field
    terms = {k: canonical(spec.get(k) or [], k) for k in ("amiSelectorTerms", "subnetSelectorTerms",
                                                          "securityGroupSelectorTerms",
                                                          "capacityReservationSelectorTerms")}
    return NodeClass(name, canonical(hashed), terms,
                     _string_map(meta.get("annotations"), "metadata.annotations", where, label))


def read_manifests(objects: Sequence[Any], origins: Sequence[str] | None = None
                   ) -> tuple[dict[str, NodePool], dict[str, NodeClass]]:
    """NodePools and EC2NodeClasses by name; other kinds (and kind-less documents) are ignored."""
    pools: dict[str, NodePool] = {}
    classes: dict[str, NodeClass] = {}
    for obj, where in _expand(objects, origins):
        kind = obj.get("kind")
        if kind == "NodePool":
            _api(obj, NODEPOOL_API, where)
            pool = read_nodepool(obj, where)
            if pool.name in pools:
                raise InputError("defined twice", origin=where, obj=f'NodePool "{pool.name}"')
            pools[pool.name] = pool
        elif kind == "EC2NodeClass":
            _api(obj, NODECLASS_API, where)
            nodeclass = read_nodeclass(obj, where)
            if nodeclass.name in classes:
                raise InputError("defined twice", origin=where, obj=f'EC2NodeClass "{nodeclass.name}"')
            classes[nodeclass.name] = nodeclass
    return pools, classes


def _api(obj: Mapping, expected: str, where) -> None:
    if obj.get("apiVersion") != expected:
        raise InputError(f"apiVersion {obj.get('apiVersion')!r} is not supported; expected {expected}",
                         origin=where, obj=f"{obj.get('kind')} \"{(obj.get('metadata') or {}).get('name', '?')}\"")


def _expand(objects: Sequence[Any], origins: Sequence[str] | None):
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


def read_snapshot(objects: Sequence[Any], origins: Sequence[str] | None,
                  pools_before: Mapping[str, NodePool]) -> list[Machine]:
    """Karpenter nodes from Nodes and NodeClaims (`kubectl get -o yaml`); a NodeClaim and its Node
    (status.nodeName or providerID) are one machine. Deleting and not-launched NodeClaims are left
    out: drift.go clears Drifted on NodeClaims that are not Launched, and a deleting node is
    already being replaced."""
    nodes, claims = [], []
    for obj, where in _expand(objects, origins):
        kind = obj.get("kind")
        if kind not in ("Node", "NodeClaim"):
            continue
        meta = _mapping(obj.get("metadata"), "metadata", where, kind)
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            raise InputError("missing", origin=where, obj=kind, path="metadata.name")
        label = f'{kind} "{name}"'
        labels = _string_map(meta.get("labels"), "metadata.labels", where, label)
        annotations = _string_map(meta.get("annotations"), "metadata.annotations", where, label)
        spec = _mapping(obj.get("spec"), "spec", where, label)
        status = _mapping(obj.get("status"), "status", where, label)
        deleting = bool(meta.get("deletionTimestamp"))
        if kind == "Node":
            nodes.append({"name": name, "labels": labels, "provider": spec.get("providerID"), "deleting": deleting})
        else:
            conditions = status.get("conditions") or []
            if not isinstance(conditions, list):
                raise InputError("expected a list", origin=where, obj=label, path="status.conditions")
            launched = [c for c in conditions if isinstance(c, Mapping) and c.get("type") == "Launched"]
            is_launched = (str(launched[0].get("status")) == "True") if launched else bool(status.get("providerID"))
            ref = _mapping(spec.get("nodeClassRef"), "spec.nodeClassRef", where, label)
            claims.append({"name": name, "labels": labels, "annotations": annotations, "deleting": deleting,
                           "launched": is_launched, "node": status.get("nodeName"),
                           "provider": status.get("providerID"), "nodeclass": ref.get("name")})
    machines: list[Machine] = []
    claimed_nodes = set()
    by_provider = {n["provider"]: n for n in nodes if n["provider"]}
    by_name = {n["name"]: n for n in nodes}
    for claim in claims:
        node = by_name.get(claim["node"]) or by_provider.get(claim["provider"])
        if node is not None:
            claimed_nodes.add(node["name"])
        if claim["deleting"] or (node is not None and node["deleting"]) or not claim["launched"]:
            continue
        pool = claim["labels"].get(NODEPOOL_LABEL) or (node or {}).get("labels", {}).get(NODEPOOL_LABEL)
        if not pool:
            continue
        machines.append(Machine(node["name"] if node else claim["name"], pool, claim["nodeclass"] or _pool_class(
            pools_before, pool), claim["labels"], claim["annotations"]))
    for node in nodes:
        if node["name"] in claimed_nodes or node["deleting"]:
            continue
        pool = node["labels"].get(NODEPOOL_LABEL)
        if pool:
            machines.append(Machine(node["name"], pool, _pool_class(pools_before, pool), node["labels"], None))
    return sorted(machines, key=lambda m: m.name)


def _pool_class(pools: Mapping[str, NodePool], pool: str) -> str | None:
    return pools[pool].nodeclass if pool in pools else None


# --------------------------------------------------------------------------------------------
# Drift


def nodepool_causes(before: NodePool, after: NodePool) -> list[Cause]:
    """Static (hash) and requirement causes of one NodePool change."""
    causes = [Cause(p, "hash") for p in diff_paths(before.hashed, after.hashed, "spec.template")]
    if before.raw_requirements != after.raw_requirements and not requirements_admit_all(
            before.requirements, after.requirements, before.template_labels):
        causes.append(Cause("spec.template.spec.requirements", "requirements"))
    return causes


def nodeclass_causes(before: NodeClass, after: NodeClass) -> list[Cause]:
    """Static (hash) causes plus what cloudprovider/drift.go decides dynamically, judged offline."""
    causes = [Cause(p, "hash") for p in diff_paths(before.hashed, after.hashed, "spec")]
    old, new = before.terms, after.terms
    if old["amiSelectorTerms"] != new["amiSelectorTerms"]:
        causes.append(Cause("spec.amiSelectorTerms", "ami"))
    if not all(term in new["subnetSelectorTerms"] for term in old["subnetSelectorTerms"]):
        causes.append(Cause("spec.subnetSelectorTerms", "subnets"))
    if old["securityGroupSelectorTerms"] != new["securityGroupSelectorTerms"]:
        causes.append(Cause("spec.securityGroupSelectorTerms", "securitygroups"))
    return sorted(causes)


def reservations_dropped(before: NodeClass, after: NodeClass) -> bool:
    """Capacity reservation drift is possible when a reservation the old terms selected may no
    longer be selected (isCapacityReservationDrifted compares the instance's reservation with status)."""
    old, new = before.terms["capacityReservationSelectorTerms"], after.terms["capacityReservationSelectorTerms"]
    return not all(term in new for term in old)


def reservation_drifts(machine: Machine, after: NodeClass) -> bool:
    """A reserved node drifts when its reservation is no longer selected: an `id` term names
    another reservation and no tag/owner/match-criteria term could select it."""
    if machine.labels.get(CAPACITY_TYPE_LABEL) != "reserved":
        return False
    terms = after.terms["capacityReservationSelectorTerms"]
    if any(set(t) != {"id"} for t in terms):
        return True  # selection by tags can't be resolved offline: count it as possibly drifting
    return machine.labels.get(RESERVATION_ID_LABEL) not in {t["id"] for t in terms}


def _static_hash_applies(machine: Machine, owner_annotations: Mapping[str, str], hash_key: str,
                         version_key: str) -> bool:
    """areStaticFieldsDrifted: no hash or version on the NodeClaim (or a version differing from the
    owner's) means no static drift. Nodes known only as Node objects are assumed annotated."""
    if machine.claim_annotations is None:
        return True
    if hash_key not in machine.claim_annotations or version_key not in machine.claim_annotations:
        return False
    owner_version = owner_annotations.get(version_key)
    return owner_version is None or owner_version == machine.claim_annotations[version_key]


def drift(before: Sequence[Any], after: Sequence[Any], snapshot: Sequence[Any] | None = None, *,
          before_origins: Sequence[str] | None = None, after_origins: Sequence[str] | None = None,
          snapshot_origins: Sequence[str] | None = None) -> DriftReport:
    """What drifts going from `before` to `after` manifests, and (with a snapshot) which nodes go."""
    pools_before, classes_before = read_manifests(before, before_origins)
    pools_after, classes_after = read_manifests(after, after_origins)
    machines = read_snapshot(snapshot, snapshot_origins, pools_before) if snapshot is not None else None

    class_reports: dict[str, NodeClassDrift] = {}
    for name in sorted(set(classes_before) | set(classes_after)):
        if name not in classes_after:
            # The finalizer waits for the NodeClaims using it (nodeclass/controller.go finalize),
            # and IsDrifted cannot resolve it (cloudprovider.go): its nodes are not replaced.
            class_reports[name] = NodeClassDrift(name, [Cause("", "removed")])
        elif name not in classes_before:
            class_reports[name] = NodeClassDrift(name)
        else:
            class_reports[name] = NodeClassDrift(name, nodeclass_causes(classes_before[name], classes_after[name]))

    pool_reports: list[NodePoolDrift] = []
    replaced_names: dict[str, list[str]] = {}
    for name in sorted(set(pools_before) | set(pools_after)):
        mine = [m for m in machines or [] if m.pool == name]
        old, new = pools_before.get(name), pools_after.get(name)
        if old is None:
            pool_reports.append(NodePoolDrift(name, [], 0 if machines is not None else None))
            continue
        if new is None:
            # NodeClaims carry an ownerReference to their NodePool (scheduling/nodeclaimtemplate.go),
            # so deleting the NodePool deletes every NodeClaim of it.
            pool_reports.append(NodePoolDrift(name, [Cause("", "removed")], len(mine) if machines is not None else None))
            replaced_names[name] = [m.name for m in mine]
            continue
        causes = nodepool_causes(old, new)
        replaced: set[str] = set()
        for machine in mine:
            if any(c.kind == "hash" for c in causes) and _static_hash_applies(
                    machine, old.annotations, NODEPOOL_HASH, NODEPOOL_HASH_VERSION):
                replaced.add(machine.name)
            if any(c.kind == "requirements" for c in causes) and not labels_compatible(machine.labels, new.requirements):
                replaced.add(machine.name)
        nodeclass = old.nodeclass
        if nodeclass in classes_before and nodeclass in classes_after:
            class_causes = [c for c in class_reports[nodeclass].causes if c.kind != "removed"]
            reservations = reservations_dropped(classes_before[nodeclass], classes_after[nodeclass])
            causes += [Cause(c.path, "nodeclass") for c in class_causes]
            if reservations:
                causes.append(Cause("spec.capacityReservationSelectorTerms", "nodeclass"))
            for machine in mine:
                if machine.nodeclass != nodeclass:
                    continue
                for cause in class_causes:
                    if cause.kind != "hash" or _static_hash_applies(
                            machine, classes_before[nodeclass].annotations, NODECLASS_HASH, NODECLASS_HASH_VERSION):
                        replaced.add(machine.name)
                if reservations and reservation_drifts(machine, classes_after[nodeclass]):
                    replaced.add(machine.name)
        causes = sorted(set(causes), key=lambda c: (POOL_KINDS.index(c.kind), c.path))
        pool_reports.append(NodePoolDrift(name, causes, len(replaced) if machines is not None else None))
        replaced_names[name] = sorted(replaced)
    return DriftReport(pool_reports, [class_reports[n] for n in sorted(class_reports)], machines is not None,
                       replaced_names if machines is not None else {})
