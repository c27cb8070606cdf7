"""EC2NodeClasses (karpenter.k8s.aws/v1): pure builders and the component declaring them."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s
from pydantic import BaseModel

from .config import PlatformConfig
from .config.nodeclasses import BOTTLEROCKET_OS_DEVICE, BOTTLEROCKET_OS_SIZE, ROOT_DEVICE, NodeClass
from .discovery import discovery_tags
from .kubernetes import custom_resource

NODE_CLASS_TAG = "karpenter-platform.io/node-class"
FLOATING_AMI_ANNOTATION = "karpenter-platform.io/floating-ami"
MANAGED_BY = {"app.kubernetes.io/managed-by": "karpenter-platform"}
# Karpenter keeps an EC2NodeClass (finalizer) until every node using it is gone; deleting the
# stack's NodePools drains those nodes first, which can take as long as the longest drain.
DELETE_TIMEOUT = "30m"


def nodeclass_manifest(
    name: str,
    node_class: NodeClass,
    *,
    cluster_name: pulumi.Input[str],
    role: pulumi.Input[str],
    subnet_tags: pulumi.Input[Mapping[str, str]] | None = None,
    security_group_tags: pulumi.Input[Mapping[str, str]] | None = None,
    subnet_terms: pulumi.Input[Sequence[Mapping[str, Any]]] | None = None,
) -> dict[str, Any]:
    """The EC2NodeClass object exactly as it will be applied. Unless the node class overrides them,
    the role is the stack's node role, the security group is selected by tag (the discovery tag
    unless the AWS side says otherwise) and subnets by `subnet_terms` when given (the AWS side's
    selector: the discovery tag, or ids resolved in the cluster's VPC), else by tag. Inputs that
    are Outputs stay at their leaves: the rest is known at preview."""
    discovery = discovery_tags(cluster_name)
    spec: dict[str, Any] = {}
    if node_class.instance_profile is not None:
        spec["instanceProfile"] = node_class.instance_profile
    else:
        spec["role"] = node_class.role or role
    if node_class.ami_family is not None:
        spec["amiFamily"] = node_class.ami_family
    spec["amiSelectorTerms"] = [_dump(term) for term in node_class.ami_terms]
    if node_class.subnet_selector_terms:
        spec["subnetSelectorTerms"] = [_dump(t) for t in node_class.subnet_selector_terms]
    elif subnet_terms is not None:
        spec["subnetSelectorTerms"] = subnet_terms
    else:
        spec["subnetSelectorTerms"] = [{"tags": _tags(subnet_tags, discovery)}]
    spec["securityGroupSelectorTerms"] = (
        [_dump(t) for t in node_class.security_group_selector_terms] if node_class.security_group_selector_terms
        else [{"tags": _tags(security_group_tags, discovery)}])
    spec["metadataOptions"] = node_class.metadata_options.model_dump(by_alias=True)
    devices = block_device_mappings(node_class)
    if devices is not None:
        spec["blockDeviceMappings"] = devices
    spec["tags"] = {**node_class.tags, NODE_CLASS_TAG: name}
    spec["detailedMonitoring"] = node_class.detailed_monitoring
    # The EC2NodeClass's own optional keys, written only when set (so an import renders as it was).
    for key in ("instance_store_policy", "kubelet", "user_data", "associate_public_ip_address",
                "capacity_reservation_selector_terms", "placement_group_selector", "network_interfaces", "cpu_options",
                "connection_tracking", "ip_prefix_count", "context"):
        value = getattr(node_class, key)
        if value is not None:
            field = type(node_class).model_fields[key]
            spec[field.alias or key] = _dump(value)
    metadata: dict[str, Any] = {"name": name, "labels": dict(MANAGED_BY)}
    if floats(node_class):
        # Visible on the object (kubectl get -o yaml) as well as in the `pulumi up` output.
        metadata["annotations"] = {FLOATING_AMI_ANNOTATION: f"{node_class.floating_alias}: nodes change AMI without a config change"}
    return {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": metadata, "spec": spec}


def _dump(value: Any) -> Any:
    if isinstance(value, list):
        return [_dump(v) for v in value]
    if isinstance(value, BaseModel):
        return value.model_dump(by_alias=True, exclude_none=True)
    return value


def block_device_mappings(node_class: NodeClass) -> list[dict[str, Any]] | None:
    """The node's block devices: `blockDeviceMappings` as written, else the root volume on the AMI
    family's device (Karpenter's amifamily DefaultBlockDeviceMappings: Windows `/dev/sda1`;
    Bottlerocket a 4Gi OS volume `/dev/xvda` plus the data volume `/dev/xvdb`). None for a Custom
    family without a device name: Karpenter then uses the AMI's own mappings."""
    if node_class.block_device_mappings is not None:
        return [_dump(m) for m in node_class.block_device_mappings]
    volume = node_class.root_volume
    family = node_class.family
    device = volume.device_name or ROOT_DEVICE.get(family)
    if device is None:
        return None
    ebs: dict[str, Any] = {
        "volumeSize": volume.size,
        "volumeType": volume.type,
        "encrypted": volume.encrypted,
        "deleteOnTermination": True,
    }
    if volume.kms_key_id:
        ebs["kmsKeyID"] = volume.kms_key_id
    if volume.iops:
        ebs["iops"] = volume.iops
    if volume.throughput:
        ebs["throughput"] = volume.throughput
    devices = [{"deviceName": device, "rootVolume": True, "ebs": ebs}]
    if family == "Bottlerocket" and volume.device_name is None:
        os_ebs = {k: v for k, v in ebs.items() if k not in ("iops", "throughput")}
        devices.insert(0, {"deviceName": BOTTLEROCKET_OS_DEVICE, "ebs": {**os_ebs, "volumeSize": BOTTLEROCKET_OS_SIZE,
                                                                        "volumeType": "gp3"}})
    return devices


def _tags(given: Any, fallback: dict[str, Any]) -> Any:
    if given is None:
        return fallback
    return dict(given) if isinstance(given, Mapping) else given


def floats(node_class: NodeClass) -> bool:
    return node_class.floating_alias is not None


class NodeClasses(pulumi.ComponentResource):
    """The stack's EC2NodeClasses, all using the node role.

    `depends_on` is applied to every EC2NodeClass itself (children do not inherit a component's
    dependencies, and `pulumi destroy` orders deletes by the recorded ones)."""

    def __init__(
        self,
        name: str,
        config: PlatformConfig,
        *,
        cluster_name: pulumi.Input[str],
        node_role_name: pulumi.Input[str],
        subnet_tags: pulumi.Input[Mapping[str, str]] | None = None,
        security_group_tags: pulumi.Input[Mapping[str, str]] | None = None,
        subnet_terms: pulumi.Input[Sequence[Mapping[str, Any]]] | None = None,
        depends_on: Sequence[pulumi.Resource] = (),
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("karpenter-platform:index:NodeClasses", name, None, opts)
        self.classes: dict[str, k8s.apiextensions.CustomResource] = {}
        for class_name, node_class in sorted(config.settings.node_classes.items()):
            if floats(node_class):
                pulumi.log.warn(f"EC2NodeClass {class_name}: amiAlias {node_class.floating_alias} floats; nodes are replaced "
                                "(drift) whenever a new AMI is released", resource=self)
            manifest = nodeclass_manifest(class_name, node_class, cluster_name=cluster_name, role=node_role_name,
                                          subnet_tags=subnet_tags, security_group_tags=security_group_tags,
                                          subnet_terms=subnet_terms)
            self.classes[class_name] = custom_resource(
                "ec2nodeclass", manifest, parent=self, depends_on=depends_on, delete_timeout=DELETE_TIMEOUT)
        self.register_outputs({"names": sorted(self.classes)})
