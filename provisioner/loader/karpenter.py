"""Node-shaped objects: NodePool (karpenter.sh/v1), EC2NodeClass (karpenter.k8s.aws/v1),
NodeOverlay (karpenter.sh/v1alpha1) and existing Nodes.

The Karpenter objects arrive judged (kubefacts.validation, through provisioner.screen: schema,
CEL, restricted labels, aliases, overlay rules); these builders only read them into models."""
from __future__ import annotations


from kubefacts import labels as L
from kubefacts import quantity
from kubefacts.labels import NODEPOOL_OPERATORS
from kubefacts.platform import LARGEST_POD_ANNOTATION, largest_pod_requests

from ..models import ExistingNode, KubeletConfig, NodeClaimObject, NodeClass, NodeClassRef, NodeOverlay, NodePool
from ..scheduling.taints import Taint
from .fields import Ctx

_ALIAS_FAMILIES = {"al2": "AL2", "al2023": "AL2023", "bottlerocket": "Bottlerocket",
                   "windows2019": "Windows2019", "windows2022": "Windows2022", "windows2025": "Windows2025"}


def load_nodepool(obj: dict, ctx: Ctx) -> NodePool:
    metadata, spec = ctx.parts(obj, "metadata", "spec")
    template = ctx.mapping(spec.get("template"), "spec.template")
    tspec = ctx.mapping(template.get("spec"), "spec.template.spec")
    ref = ctx.mapping(tspec.get("nodeClassRef"), "spec.template.spec.nodeClassRef")
    ref_name = ctx.string(ref.get("name"), "spec.template.spec.nodeClassRef.name")
    labels = ctx.string_map(ctx.mapping(template.get("metadata"), "spec.template.metadata").get("labels"),
                            "spec.template.metadata.labels")
    requirements = ctx.requirements(tspec.get("requirements"), "spec.template.spec.requirements",
                                    NODEPOOL_OPERATORS, min_values=True)
    limits = ctx.resource_list(spec.get("limits"), "spec.limits", quantity.MAX_MILLI)
    weight = ctx.integer(spec.get("weight"), "spec.weight", 0)
    if spec.get("weight") is not None and not 1 <= weight <= 100:
        # The NodePool CRD (pkg/apis/v1/nodepool.go: Minimum 1, Maximum 100): the API server refuses
        # it, and a weight of 1000 would outrank every valid pool here.
        raise ctx.error("spec.weight", f"{weight} is outside 1-100 (the NodePool CRD's range)")
    return NodePool(
        name=ctx.string(metadata.get("name"), "metadata.name"),
        node_class_ref=NodeClassRef(ctx.string(ref.get("group"), "nodeClassRef.group", "karpenter.k8s.aws"),
                                    ctx.string(ref.get("kind"), "nodeClassRef.kind", "EC2NodeClass"), ref_name),
        requirements=requirements, labels=labels,
        taints=ctx.taints(tspec.get("taints"), "spec.template.spec.taints"),
        startup_taints=ctx.taints(tspec.get("startupTaints"), "spec.template.spec.startupTaints"),
        limits=limits, weight=weight,
        replicas=ctx.integer(spec.get("replicas"), "spec.replicas"),
        largest_pod=_largest_pod(ctx.mapping(metadata.get("annotations"), "metadata.annotations")),
    )


def _largest_pod(annotations: dict) -> tuple:
    """The platform's declared largest pod, (resource, milli) pairs. A malformed value is no
    input error here: Karpenter ignores the annotation, and the policy pack refuses it by name."""
    raw = annotations.get(LARGEST_POD_ANNOTATION)
    if raw is None:
        return ()
    try:
        return tuple(sorted((name, quantity.milli(value)) for name, value in largest_pod_requests(raw).items()))
    except ValueError:
        return ()


def _ami_family(ctx: Ctx, spec: dict) -> str:
    for i, term in enumerate(ctx.sequence(spec.get("amiSelectorTerms"), "spec.amiSelectorTerms")):
        alias = ctx.string(ctx.mapping(term, f"spec.amiSelectorTerms[{i}]").get("alias"), f"spec.amiSelectorTerms[{i}].alias")
        if alias:  # the CRD's CEL rules admit only these families
            return _ALIAS_FAMILIES[alias.split("@", 1)[0]]
    family = ctx.string(spec.get("amiFamily"), "spec.amiFamily")
    if family:
        return family
    return "Custom" if spec.get("amiSelectorTerms") else "AL2023"


def _root_volume(ctx: Ctx, spec: dict, family: str) -> int | None:
    device = {"Bottlerocket": "/dev/xvdb"}.get(family, "/dev/sda1" if family.startswith("Windows") else "/dev/xvda")
    mappings = [ctx.mapping(m, f"spec.blockDeviceMappings[{i}]")
                for i, m in enumerate(ctx.sequence(spec.get("blockDeviceMappings"), "spec.blockDeviceMappings"))]

    def size(i: int, mapping: dict):
        ebs = ctx.mapping(mapping.get("ebs"), f"spec.blockDeviceMappings[{i}].ebs")
        raw = ebs.get("volumeSize")
        return None if raw is None else ctx.quantity(raw, f"spec.blockDeviceMappings[{i}].ebs.volumeSize")

    for i, m in enumerate(mappings):
        if m.get("rootVolume"):
            return size(i, m)
    if family == "Custom" and mappings:
        return size(len(mappings) - 1, mappings[-1])
    for i, m in enumerate(mappings):
        if m.get("deviceName") == device:
            return size(i, m)
    return None


def load_nodeclass(obj: dict, ctx: Ctx) -> NodeClass:
    metadata, spec = ctx.parts(obj, "metadata", "spec")
    kubelet = ctx.mapping(spec.get("kubelet"), "spec.kubelet")
    eviction = ctx.string_map(kubelet.get("evictionHard"), "spec.kubelet.evictionHard")
    for signal, value in eviction.items():
        if not value.endswith("%"):
            ctx.quantity(value, f"spec.kubelet.evictionHard.{signal}")
    family = _ami_family(ctx, spec)
    subnets = ctx.sequence(ctx.mapping(obj.get("status"), "status").get("subnets"), "status.subnets")
    zones = frozenset(str(s["zone"]) for s in subnets if isinstance(s, dict) and s.get("zone")) or None
    max_pods = kubelet.get("maxPods")
    return NodeClass(
        name=ctx.string(metadata.get("name"), "metadata.name"),
        ami_family=family,
        kubelet=KubeletConfig(
            max_pods=None if isinstance(max_pods, str) else ctx.integer(max_pods, "spec.kubelet.maxPods"),
            pods_per_core=ctx.integer(kubelet.get("podsPerCore"), "spec.kubelet.podsPerCore"),
            kube_reserved=tuple(sorted(ctx.resource_list(kubelet.get("kubeReserved"), "spec.kubelet.kubeReserved").items())),
            system_reserved=tuple(sorted(ctx.resource_list(kubelet.get("systemReserved"), "spec.kubelet.systemReserved").items())),
            eviction_hard=tuple(sorted(eviction.items())),
        ),
        root_volume=_root_volume(ctx, spec, family),
        instance_store_policy=ctx.string(spec.get("instanceStorePolicy"), "spec.instanceStorePolicy") or None,
        zones=zones,
    )


def load_overlay(obj: dict, ctx: Ctx) -> NodeOverlay:
    metadata, spec = ctx.parts(obj, "metadata", "spec")
    price = spec.get("price")
    adjustment = spec.get("priceAdjustment")
    capacity = ctx.resource_list(spec.get("capacity"), "spec.capacity")
    return NodeOverlay(
        name=ctx.string(metadata.get("name"), "metadata.name"),
        requirements=ctx.requirements(spec.get("requirements"), "spec.requirements", NODEPOOL_OPERATORS),
        weight=ctx.integer(spec.get("weight"), "spec.weight", 0),
        price=None if price is None else str(price),
        price_adjustment=None if adjustment is None else str(adjustment),
        capacity=capacity,
    )


def load_node(obj: dict, ctx: Ctx, allow_empty: bool = False) -> ExistingNode:
    """allow_empty: a Node whose NodeClaim is in the input may not report allocatable yet."""
    metadata, spec, status = ctx.parts(obj, "metadata", "spec", "status")
    if not status.get("allocatable") and not allow_empty:
        raise ctx.error("status.allocatable", "missing: an existing Node needs status.allocatable")
    allocatable = ctx.resource_list(status.get("allocatable"), "status.allocatable")
    capacity = ctx.resource_list(status.get("capacity"), "status.capacity") or dict(allocatable)
    # Known ephemeral taints stay: cluster state drops them only on a managed node not yet initialized
    # (state/statenode.py), and keeps them on an unmanaged one, as statenode.go Taints() does.
    taints = ctx.taints(spec.get("taints"), "spec.taints")
    if spec.get("unschedulable"):  # a cordoned node carries this taint
        taints += (Taint("node.kubernetes.io/unschedulable", "", "NoSchedule"),)
    name = ctx.string(metadata.get("name"), "metadata.name")
    labels = ctx.string_map(metadata.get("labels"), "metadata.labels")
    labels.setdefault(L.HOSTNAME, name)
    return ExistingNode(name, labels, taints, allocatable, capacity,
                        provider_id=ctx.string(spec.get("providerID"), "spec.providerID"),
                        deleting=metadata.get("deletionTimestamp") is not None)


def load_nodeclaim(obj: dict, ctx: Ctx) -> NodeClaimObject:
    """A NodeClaim Karpenter created; it is cluster state once launched (status.providerID)."""
    metadata, spec, status = ctx.parts(obj, "metadata", "spec", "status")
    allocatable = ctx.resource_list(status.get("allocatable"), "status.allocatable")
    conditions = ctx.sequence(status.get("conditions"), "status.conditions")
    terminating = any(isinstance(c, dict) and c.get("type") == "InstanceTerminating" and c.get("status") == "True"
                      for c in conditions)
    return NodeClaimObject(
        name=ctx.string(metadata.get("name"), "metadata.name"),
        labels=ctx.string_map(metadata.get("labels"), "metadata.labels"),
        taints=ctx.taints(spec.get("taints"), "spec.taints"),
        startup_taints=ctx.taints(spec.get("startupTaints"), "spec.startupTaints"),
        capacity=ctx.resource_list(status.get("capacity"), "status.capacity") or dict(allocatable),
        allocatable=allocatable,
        provider_id=ctx.string(status.get("providerID"), "status.providerID"),
        node_name=ctx.string(status.get("nodeName"), "status.nodeName"),
        deleting=metadata.get("deletionTimestamp") is not None or terminating,
    )
