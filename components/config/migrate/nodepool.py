"""Provisioner (karpenter.sh/v1alpha5) and NodePool (karpenter.sh/v1beta1) to a karpenter.sh/v1
NodePool. `kubelet` is returned beside the NodePool: v1 keeps it on the EC2NodeClass (kubelet.py).

Mirrors, in order: aws/karpenter-provider-aws tools/karpenter-convert pkg/convert/convert.go
`convertProvisioner` (the v1alpha5 admission defaults of pkg/apis/v1alpha5/provisioner.go `SetDefaults`
written out, as karpenter-convert does without --ignore-defaults) with kubernetes-sigs/karpenter v0.32
pkg/utils/nodepool/nodepool.go `New` (labels and annotations into the template, ttlSecondsUntilExpired
to expireAfter, consolidation.enabled to WhenUnderutilized, else ttlSecondsAfterEmpty to WhenEmpty with
consolidateAfter, limits.resources to limits); then kubernetes-sigs/karpenter v1.0
pkg/apis/v1/nodepool_conversion.go `ConvertFrom` (WhenUnderutilized to WhenEmptyOrUnderutilized with
consolidateAfter 0s, disruption.expireAfter to template.spec.expireAfter, nodeClassRef.apiVersion to
group, kubelet out of the NodePool)."""

from __future__ import annotations

import copy
from typing import Any

from ..imports import Document
from .common import (GUIDE, NODECLASS_GROUP, NODECLASS_KIND, NODEPOOL_V1, V1BETA1_GUIDE, Log, mapping,
                     object_metadata, rename_annotations, seconds, unknown_keys)

PROVISIONER_KEYS = ("annotations", "labels", "taints", "startupTaints", "requirements", "kubeletConfiguration",
                    "kubelet", "provider", "providerRef", "ttlSecondsAfterEmpty", "ttlSecondsUntilExpired", "limits",
                    "weight", "consolidation")
# provisioner.go SetDefaults: what a v1alpha5 Provisioner got at admission when unset. v1beta1
# dropped this defaulting ("spec.template.spec.requirements Defaults Dropped").
_OS, _ARCH, _CAPACITY = "kubernetes.io/os", "kubernetes.io/arch", "karpenter.sh/capacity-type"
_INSTANCE_KEYS = ("node.kubernetes.io/instance-type", "karpenter.k8s.aws/instance-family",
                  "karpenter.k8s.aws/instance-category", "karpenter.k8s.aws/instance-generation")
KUBELET_DROPPED = {"containerRuntime": "v1beta1 dropped it (containerd is the only runtime from EKS 1.24); "
                                       "nothing to do unless nodes relied on dockerd"}


def _default_requirements(requirements: list[Any], doc: Document, log: Log) -> list[Any]:
    keys = {r.get("key") for r in requirements if isinstance(r, dict)}
    added = []
    for key, operator, values in ((_OS, "In", ["linux"]), (_ARCH, "In", ["amd64"]), (_CAPACITY, "In", ["on-demand"])):
        if key not in keys:
            added.append({"key": key, "operator": operator, "values": values})
    if not keys & set(_INSTANCE_KEYS):
        added += [{"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
                  {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]}]
    for requirement in added:
        log.changed(doc, "spec.requirements", f"added {requirement['key']} {requirement['operator']} {requirement['values']}: "
                    "v1alpha5 defaulted it at admission, v1 does not; written out so the pool launches the same nodes "
                    f"(karpenter-convert, provisioner.go SetDefaults; {V1BETA1_GUIDE})")
    return requirements + added


def _kubelet(value: Any, doc: Document, path: str, log: Log) -> dict[str, Any] | None:
    kubelet = mapping(value, doc, path, log)
    if not kubelet:
        return None
    kubelet = copy.deepcopy(kubelet)
    for key, why in KUBELET_DROPPED.items():
        if key in kubelet:
            log.lost(doc, f"{path}.{key}", f"{kubelet.pop(key)!r} not carried: {why}")
    return kubelet or None


def from_provisioner(doc: Document, log: Log) -> tuple[dict[str, Any], dict | None, dict | None] | None:
    """(v1 NodePool, its kubelet or None, the EC2NodeClass spec of an inline provider or None)."""
    spec = mapping(doc.body.get("spec"), doc, "spec", log)
    if spec is None:
        return None
    unknown_keys(spec, PROVISIONER_KEYS, doc, "spec", "karpenter.sh/v1alpha5 Provisioner", log)
    name = str(doc.body.get("metadata", {}).get("name") or "")
    template_metadata: dict[str, Any] = {}
    if spec.get("labels"):
        template_metadata["labels"] = copy.deepcopy(spec["labels"])
    annotations = mapping(spec.get("annotations"), doc, "spec.annotations", log)
    if annotations:
        template_metadata["annotations"] = rename_annotations(annotations, doc, "spec.annotations", log)
    if template_metadata:
        log.changed(doc, "spec", "labels and annotations moved to spec.template.metadata (v1beta1 NodePool layout)")
    template_spec: dict[str, Any] = {}
    requirements = spec.get("requirements") or []
    if not isinstance(requirements, list):
        log.error(doc, "spec.requirements", "expected a list")
        return None
    template_spec["requirements"] = _default_requirements(copy.deepcopy(requirements), doc, log)
    for key in ("taints", "startupTaints"):
        if key in spec:
            template_spec[key] = copy.deepcopy(spec[key])
    kubelet_key = "kubeletConfiguration" if "kubeletConfiguration" in spec else "kubelet"
    kubelet = _kubelet(spec.get(kubelet_key), doc, f"spec.{kubelet_key}", log)

    provider_class = None
    if "provider" in spec and "providerRef" in spec:
        log.error(doc, "spec.provider", "provider and providerRef are mutually exclusive (v1alpha5 validation)")
        return None
    if "provider" in spec:
        provider_class = spec["provider"]
        template_spec["nodeClassRef"] = {"group": NODECLASS_GROUP, "kind": NODECLASS_KIND, "name": name}
        log.changed(doc, "spec.provider", f"written as the EC2NodeClass {name!r} (named after the Provisioner, as "
                                          "karpenter-convert does) and referenced by spec.template.spec.nodeClassRef")
    elif "providerRef" in spec:
        ref = mapping(spec["providerRef"], doc, "spec.providerRef", log)
        if ref is None:
            return None
        if not isinstance(ref.get("name"), str) or not ref["name"]:
            log.error(doc, "spec.providerRef.name", "required")
            return None
        template_spec["nodeClassRef"] = {"group": NODECLASS_GROUP, "kind": NODECLASS_KIND, "name": ref["name"]}
        log.changed(doc, "spec.providerRef", f"written as spec.template.spec.nodeClassRef {{group: {NODECLASS_GROUP}, "
                    f"kind: {NODECLASS_KIND}, name: {ref['name']}}} (the AWSNodeTemplate becomes the EC2NodeClass of that name)")
    else:
        template_spec["nodeClassRef"] = {"group": NODECLASS_GROUP, "kind": NODECLASS_KIND, "name": "default"}
        log.changed(doc, "spec", "neither provider nor providerRef: nodeClassRef names the EC2NodeClass 'default'")

    disruption: dict[str, Any] = {}
    expire = spec.get("ttlSecondsUntilExpired")
    if expire is not None:
        duration = seconds(expire, doc, "spec.ttlSecondsUntilExpired", log)
        if duration is None:
            return None
        template_spec["expireAfter"] = duration
        log.changed(doc, "spec.ttlSecondsUntilExpired", f"{expire} written as spec.template.spec.expireAfter: {duration}; "
                    f"v1 expiry is forceful (nodes drain when expired, without waiting for a replacement; {GUIDE})")
    else:
        log.changed(doc, "spec.ttlSecondsUntilExpired", "absent: this Provisioner never expired nodes; v1 expires them "
                    "after 720h by default (karpenter-convert leaves it to that default, and policy "
                    "nodepool-expire-after-set refuses Never in staging and prod). Set expireAfter: Never to keep them")
    consolidation = mapping(spec.get("consolidation"), doc, "spec.consolidation", log)
    if consolidation is None:
        return None
    enabled = consolidation.get("enabled")
    empty = spec.get("ttlSecondsAfterEmpty")
    if enabled is True and empty is not None:
        log.error(doc, "spec.ttlSecondsAfterEmpty", "cannot be set with consolidation.enabled: true (v1alpha5 validation)")
        return None
    if enabled is True:
        disruption.update(consolidationPolicy="WhenEmptyOrUnderutilized", consolidateAfter="0s")
        log.changed(doc, "spec.consolidation.enabled", "true written as consolidationPolicy: WhenEmptyOrUnderutilized "
                    "(v1beta1 WhenUnderutilized, renamed in v1) with consolidateAfter: 0s (nodepool_conversion.go)")
    elif empty is not None:
        duration = seconds(empty, doc, "spec.ttlSecondsAfterEmpty", log)
        if duration is None:
            return None
        disruption.update(consolidationPolicy="WhenEmpty", consolidateAfter=duration)
        log.changed(doc, "spec.ttlSecondsAfterEmpty", f"{empty} written as consolidationPolicy: WhenEmpty, "
                    f"consolidateAfter: {duration} ({V1BETA1_GUIDE}, \"TTLSecondsAfterEmpty\")")
    else:
        # Keep what ran: the v1beta1 default (WhenUnderutilized) would start consolidating this pool.
        disruption.update(consolidationPolicy="WhenEmpty", consolidateAfter="Never")
        log.changed(doc, "spec", "neither consolidation nor ttlSecondsAfterEmpty: this Provisioner never removed empty or "
                    "underused nodes, so consolidationPolicy: WhenEmpty, consolidateAfter: Never keeps that "
                    "(karpenter-convert leaves v1beta1's default WhenUnderutilized, which starts consolidating); set "
                    "WhenEmptyOrUnderutilized with a consolidateAfter to let Karpenter consolidate")
    out_spec: dict[str, Any] = {"template": {**({"metadata": template_metadata} if template_metadata else {}),
                                             "spec": template_spec},
                                "disruption": disruption}
    if "limits" in spec:
        limits = mapping(spec["limits"], doc, "spec.limits", log)
        if limits is None:
            return None
        unknown_keys(limits, ("resources",), doc, "spec.limits", "karpenter.sh/v1alpha5 Provisioner", log)
        if limits.get("resources"):
            out_spec["limits"] = copy.deepcopy(limits["resources"])
            log.changed(doc, "spec.limits.resources", "written as spec.limits")
    if "weight" in spec:
        out_spec["weight"] = copy.deepcopy(spec["weight"])
    return _nodepool(doc, out_spec), kubelet, provider_class


def from_v1beta1(doc: Document, log: Log) -> tuple[dict[str, Any], dict | None] | None:
    """(v1 NodePool, its kubelet or None) for a v1beta1 NodePool (nodepool_conversion.go ConvertFrom)."""
    spec = mapping(doc.body.get("spec"), doc, "spec", log)
    template = mapping(spec.get("template") if spec is not None else None, doc, "spec.template", log)
    if spec is None or template is None:
        return None
    template_metadata = mapping(template.get("metadata"), doc, "spec.template.metadata", log)
    template_spec = mapping(template.get("spec"), doc, "spec.template.spec", log)
    disruption = mapping(spec.get("disruption"), doc, "spec.disruption", log)
    if template_metadata is None or template_spec is None or disruption is None:
        return None
    out_metadata = copy.deepcopy(template_metadata)
    if isinstance(out_metadata.get("annotations"), dict):
        out_metadata["annotations"] = rename_annotations(out_metadata["annotations"], doc,
                                                         "spec.template.metadata.annotations", log)
    out_template_spec = {k: copy.deepcopy(v) for k, v in template_spec.items()
                         if k not in ("kubelet", "nodeClassRef", "resources")}
    if template_spec.get("resources"):
        log.lost(doc, "spec.template.spec.resources", f"{template_spec['resources']!r} not carried: a v1 NodePool has no "
                 "template resources (Karpenter sets them on each NodeClaim from its pods, never from the NodePool); "
                 "nothing to do")
    ref = _node_class_ref(template_spec.get("nodeClassRef"), doc, log)
    if ref is None:
        return None
    out_template_spec["nodeClassRef"] = ref
    kubelet = _kubelet(template_spec.get("kubelet"), doc, "spec.template.spec.kubelet", log)
    out_disruption = {k: copy.deepcopy(v) for k, v in disruption.items()
                      if k not in ("consolidationPolicy", "consolidateAfter", "expireAfter")}
    if "expireAfter" in disruption:
        out_template_spec["expireAfter"] = disruption["expireAfter"]
        log.changed(doc, "spec.disruption.expireAfter", "moved to spec.template.spec.expireAfter; v1 expiry is forceful "
                    f"(nodes drain when expired, without waiting for a replacement; {GUIDE}, \"API Moves\")")
    if not _consolidation(disruption, out_disruption, doc, log):
        return None
    out_spec = {k: copy.deepcopy(v) for k, v in spec.items() if k not in ("template", "disruption")}
    out_spec["template"] = {**({"metadata": out_metadata} if out_metadata else {}), "spec": out_template_spec}
    out_spec["disruption"] = out_disruption
    return _nodepool(doc, out_spec), kubelet


def _consolidation(disruption: dict[str, Any], out: dict[str, Any], doc: Document, log: Log) -> bool:
    policy, after = disruption.get("consolidationPolicy"), disruption.get("consolidateAfter")
    path = "spec.disruption.consolidationPolicy"
    if policy in (None, "WhenUnderutilized"):
        out.update(consolidationPolicy="WhenEmptyOrUnderutilized", consolidateAfter="0s")
        said = "absent (v1beta1's default WhenUnderutilized)" if policy is None else "WhenUnderutilized"
        dropped = f"; its consolidateAfter {after!r} is dropped, as v1beta1 ignored it" if after is not None else ""
        log.changed(doc, path, f"{said} written as WhenEmptyOrUnderutilized (renamed in v1) with consolidateAfter: 0s, as "
                    f"the conversion webhook writes (nodepool_conversion.go){dropped}; raise consolidateAfter to "
                    "consolidate less eagerly")
        return True
    if policy in ("WhenEmpty", "WhenIdle"):
        if after is None:
            log.error(doc, "spec.disruption.consolidateAfter", f"required with consolidationPolicy {policy} "
                                                               "(the v1beta1 CRD's rule): a duration or Never")
            return False
        out.update(consolidationPolicy="WhenEmpty", consolidateAfter=after)
        if policy == "WhenIdle":
            log.changed(doc, path, f"'WhenIdle' is not a Karpenter policy (v1beta1 accepted WhenEmpty or "
                        f"WhenUnderutilized and refuses anything else); read as WhenEmpty (idle: no workload pods), "
                        f"consolidateAfter {after!r} kept. Use WhenEmptyOrUnderutilized if you meant consolidation")
        return True
    log.error(doc, path, f"{policy!r} is not a v1beta1 consolidationPolicy (WhenEmpty or WhenUnderutilized)")
    return False


def _node_class_ref(ref: Any, doc: Document, log: Log) -> dict[str, Any] | None:
    path = "spec.template.spec.nodeClassRef"
    ref = mapping(ref, doc, path, log)
    if ref is None:
        return None
    if not isinstance(ref.get("name"), str) or not ref["name"]:
        log.error(doc, f"{path}.name", "required")
        return None
    unknown_keys(ref, ("apiVersion", "kind", "name"), doc, path, "karpenter.sh/v1beta1 NodePool", log)
    api_version = ref.get("apiVersion") or ""
    group = api_version.split("/")[0] or NODECLASS_GROUP
    out = {"group": group, "kind": ref.get("kind") or NODECLASS_KIND, "name": ref["name"]}
    said = f"apiVersion {api_version!r}" if api_version else "no apiVersion"
    log.changed(doc, path, f"{said} written as group: {group} (v1 requires group, kind and name; {GUIDE}, \"Defaults "
                           "changed\")")
    return out


def _nodepool(doc: Document, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": NODEPOOL_V1, "kind": "NodePool", "metadata": object_metadata(doc.body), "spec": spec}
