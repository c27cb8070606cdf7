"""EC2NodeClasses (karpenter.k8s.aws/v1): pure builders and the component declaring them."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pulumi
import pulumi_kubernetes as k8s

from .config import PlatformConfig
from .config.nodeclasses import NodeClass
from .discovery import discovery_tags

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
    """The EC2NodeClass object exactly as it will be applied. The security group is selected by
    tag (the discovery tag unless the AWS side says otherwise); subnets by `subnet_terms` when
    given (the AWS side's selector: the discovery tag, or ids resolved in the cluster's VPC),
    else by tag. Inputs that are Outputs stay at their leaves: the rest is known at preview."""
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
    discovery = discovery_tags(cluster_name)
    spec: dict[str, Any] = {
        "role": role,
        "amiSelectorTerms": [{"alias": node_class.ami_alias}],
        "subnetSelectorTerms": subnet_terms if subnet_terms is not None else [{"tags": _tags(subnet_tags, discovery)}],
        "securityGroupSelectorTerms": [{"tags": _tags(security_group_tags, discovery)}],
        "metadataOptions": node_class.metadata_options.model_dump(by_alias=True),
        "blockDeviceMappings": [{"deviceName": volume.device_name, "rootVolume": True, "ebs": ebs}],
        "tags": {**node_class.tags, NODE_CLASS_TAG: name},
        "detailedMonitoring": node_class.detailed_monitoring,
    }
    if node_class.kubelet is not None:
        spec["kubelet"] = node_class.kubelet.model_dump(by_alias=True, exclude_none=True)
    metadata: dict[str, Any] = {"name": name, "labels": dict(MANAGED_BY)}
    if floats(node_class):
        # Visible on the object (kubectl get -o yaml) as well as in the `pulumi up` output.
        metadata["annotations"] = {FLOATING_AMI_ANNOTATION: f"{node_class.ami_alias}: nodes change AMI without a config change"}
    return {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": metadata, "spec": spec}


def _tags(given: Any, fallback: dict[str, Any]) -> Any:
    if given is None:
        return fallback
    return dict(given) if isinstance(given, Mapping) else given


def floats(node_class: NodeClass) -> bool:
    return node_class.ami_alias.endswith("@latest")


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
                pulumi.log.warn(f"EC2NodeClass {class_name}: amiAlias {node_class.ami_alias} floats; nodes are replaced "
                                "(drift) whenever a new AMI is released", resource=self)
            manifest = nodeclass_manifest(class_name, node_class, cluster_name=cluster_name, role=node_role_name,
                                          subnet_tags=subnet_tags, security_group_tags=security_group_tags,
                                          subnet_terms=subnet_terms)
            self.classes[class_name] = k8s.apiextensions.CustomResource(
                f"ec2nodeclass-{class_name}",
                api_version="karpenter.k8s.aws/v1",
                kind="EC2NodeClass",
                metadata=manifest["metadata"],
                spec=manifest["spec"],
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(depends_on),
                                            custom_timeouts=pulumi.CustomTimeouts(delete=DELETE_TIMEOUT)),
            )
        self.register_outputs({"names": sorted(self.classes)})
