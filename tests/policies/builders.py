"""Small, valid resources to start each test from (the shape the program declares)."""

from __future__ import annotations

import copy
import json
from typing import Any

from policies import model as m
from tests.policies.analyzer import resource

CLUSTER = "acme-prod"
NODE_ROLE = f"KarpenterNodeRole-{CLUSTER}"
NODE_ROLE_ARN = f"arn:aws:iam::123456789012:role/{NODE_ROLE}"
QUEUE_ARN = f"arn:aws:sqs:us-east-1:123456789012:{CLUSTER}"

GENERAL_REQUIREMENTS = [
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
    {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
    {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["2"]},
]


def nodepool(name: str = "web-api", team: str = "web", **changes: Any) -> dict[str, Any]:
    """A NodePool; keyword changes: requirements, taints, startup_taints, limits, budgets,
    expire_after, annotations (None removes the key)."""
    spec_template: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
        "requirements": copy.deepcopy(changes.get("requirements", GENERAL_REQUIREMENTS)),
        "expireAfter": changes.get("expire_after", "720h"),
    }
    if changes.get("taints"):
        spec_template["taints"] = changes["taints"]
    if changes.get("startup_taints"):
        spec_template["startupTaints"] = changes["startup_taints"]
    if spec_template["expireAfter"] is None:
        del spec_template["expireAfter"]
    metadata: dict[str, Any] = {"name": name, "labels": {"karpenter-platform.io/team": team,
                                                         "app.kubernetes.io/managed-by": "karpenter-platform"}}
    if changes.get("annotations"):
        metadata["annotations"] = changes["annotations"]
    spec: dict[str, Any] = {
        "template": {"metadata": {"labels": {"karpenter-platform.io/team": changes.get("node_team", team)}},
                     "spec": spec_template},
        "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "1m",
                       "budgets": changes.get("budgets", [{"nodes": "10%"}])},
        "limits": changes.get("limits", {"cpu": "100", "memory": "400Gi"}),
    }
    if spec["disruption"]["budgets"] is None:
        del spec["disruption"]["budgets"]
    if spec["limits"] is None:
        del spec["limits"]
    return resource(m.NODEPOOL, f"nodepool-{name}",
                    {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": metadata, "spec": spec})


def nodeclass(name: str = "default", **changes: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "role": changes.get("role", NODE_ROLE),
        "amiSelectorTerms": changes.get("ami_terms", [{"alias": "al2023@v20251117"}]),
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
        "metadataOptions": changes.get("metadata_options", {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled",
                                                            "httpPutResponseHopLimit": 1, "httpTokens": "required"}),
        "blockDeviceMappings": changes.get("block_devices", [
            {"deviceName": "/dev/xvda", "rootVolume": True,
             "ebs": {"volumeSize": "50Gi", "volumeType": "gp3", "encrypted": True, "deleteOnTermination": True}}]),
    }
    for key in ("role", "metadataOptions", "blockDeviceMappings", "amiSelectorTerms"):
        if spec[key] is None:
            del spec[key]
    if "kubelet" in changes:
        spec["kubelet"] = changes["kubelet"]
    return resource(m.NODECLASS, f"ec2nodeclass-{name}",
                    {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": name}, "spec": spec})


def trust(service: str) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"Service": service}, "Action": ["sts:AssumeRole"]}]})


def node_role(name: str = NODE_ROLE) -> dict[str, Any]:
    return resource(m.IAM_ROLE, "karpenter-aws-node", {"name": name, "assumeRolePolicy": trust("ec2.amazonaws.com")})


def access_entry(principal: str = NODE_ROLE_ARN, kind: str = "EC2_LINUX", **kwargs: Any) -> dict[str, Any]:
    return resource(m.ACCESS_ENTRY, "karpenter-aws-node-access-entry",
                    {"clusterName": CLUSTER, "principalArn": principal, "type": kind}, **kwargs)


def iam_policy(name: str, statements: list[dict[str, Any]], **props: Any) -> dict[str, Any]:
    document = json.dumps({"Version": "2012-10-17", "Statement": statements})
    return resource(m.IAM_POLICY, name, {"name": name, "policy": document, **props})


def release(name: str, chart: str, version: str | None = "1.14.1", values: dict[str, Any] | None = None,
            **props: Any) -> dict[str, Any]:
    body = {"name": name, "chart": chart, "namespace": "kube-system", "values": values or {},
            "repositoryOpts": {}, **props}
    if version is not None:
        body["version"] = version
    protect = body.pop("protect", False)
    return resource(m.HELM_RELEASE, f"{name}-release", body, protect=protect)


def queue(name: str = CLUSTER) -> dict[str, Any]:
    return resource(m.SQS_QUEUE, "karpenter-aws-interruption-queue", {"name": name, "messageRetentionSeconds": 300})


EVENTS = [
    ("health-event", "aws.health", "AWS Health Event"),
    ("spot-interruption", "aws.ec2", "EC2 Spot Instance Interruption Warning"),
    ("rebalance", "aws.ec2", "EC2 Instance Rebalance Recommendation"),
    ("instance-state-change", "aws.ec2", "EC2 Instance State-change Notification"),
    ("capacity-reservation-interruption", "aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning"),
]


def rules_and_targets(arn: str = QUEUE_ARN, skip: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    out = []
    for short, source, detail_type in EVENTS:
        if short in skip:
            continue
        rule_name = f"{CLUSTER}-{short}"
        out.append(resource(m.EVENT_RULE, f"rule-{short}", {
            "name": rule_name, "eventPattern": json.dumps({"source": [source], "detail-type": [detail_type]})}))
        out.append(resource(m.EVENT_TARGET, f"rule-{short}-target", {
            "rule": rule_name, "arn": arn, "targetId": "KarpenterInterruptionQueueTarget"}))
    return out


def tag(resource_id: str, key: str = "karpenter.sh/discovery") -> dict[str, Any]:
    return resource(m.EC2_TAG, f"discovery-{resource_id}", {"resourceId": resource_id, "key": key, "value": CLUSTER})
