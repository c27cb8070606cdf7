"""EC2NodeClasses (karpenter.k8s.aws/v1): pure builders and the component declaring them."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from .config import PlatformConfig
from .config.nodeclasses import NodeClass

DISCOVERY_TAG = "karpenter.sh/discovery"


def nodeclass_manifest(name: str, node_class: NodeClass, *, cluster_name: str, role: str) -> dict[str, Any]:
    """The EC2NodeClass object exactly as it will be applied."""
    volume = node_class.root_volume
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
    selector = [{"tags": {DISCOVERY_TAG: cluster_name}}]
    spec: dict[str, Any] = {
        "role": role,
        "amiSelectorTerms": [{"alias": node_class.ami_alias}],
        "subnetSelectorTerms": selector,
        "securityGroupSelectorTerms": selector,
        "metadataOptions": node_class.metadata_options.model_dump(by_alias=True),
        "blockDeviceMappings": [{"deviceName": volume.device_name, "rootVolume": True, "ebs": ebs}],
        "tags": {**node_class.tags, "karpenter-platform.io/node-class": name},
        "detailedMonitoring": node_class.detailed_monitoring,
    }
    if node_class.kubelet is not None:
        spec["kubelet"] = node_class.kubelet.model_dump(by_alias=True, exclude_none=True)
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "karpenter-platform"}},
        "spec": spec,
    }


class NodeClasses(pulumi.ComponentResource):
    """The stack's EC2NodeClasses, all using the node role."""

    def __init__(
        self,
        name: str,
        config: PlatformConfig,
        *,
        cluster_name: pulumi.Input[str],
        node_role_name: pulumi.Input[str],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("karpenter-platform:index:NodeClasses", name, None, opts)
        self.classes: dict[str, k8s.apiextensions.CustomResource] = {}
        for class_name, node_class in sorted(config.settings.node_classes.items()):
            manifest = pulumi.Output.all(cluster_name, node_role_name).apply(
                lambda args, n=class_name, c=node_class: nodeclass_manifest(n, c, cluster_name=args[0], role=args[1])
            )
            self.classes[class_name] = k8s.apiextensions.CustomResource(
                f"ec2nodeclass-{class_name}",
                api_version="karpenter.k8s.aws/v1",
                kind="EC2NodeClass",
                metadata=manifest["metadata"],
                spec=manifest["spec"],
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.register_outputs({"names": sorted(self.classes)})
