"""Pure builders for Karpenter's IAM: the six controller policies, both trust policies, the node role.

The controller policies follow Karpenter v1.14.1's getting-started CloudFormation template
statement by statement (tests compare them with the reference facts); only the placeholders
`${AWS::Partition}`, `${AWS::Region}`, `${AWS::AccountId}`, `${ClusterName}`, the node role ARN and
the queue ARN are filled in here. Nothing in this module touches Pulumi.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .naming import IAM_INSTANCE_PROFILE_NAME_MAX, IAM_POLICY_NAME_MAX, IAM_ROLE_NAME_MAX, scoped

POLICY_VERSION = "2012-10-17"
# IAM's limit for a managed policy document; whitespace is not counted, so measure minified JSON.
MANAGED_POLICY_MAX_CHARS = 6144

Document = dict[str, Any]
Statement = dict[str, Any]


@dataclass(frozen=True)
class Scope:
    """Where the controller acts: the values the upstream template takes from `${AWS::...}` and `${ClusterName}`."""

    partition: str
    region: str
    account_id: str
    cluster_name: str

    @property
    def cluster_arn(self) -> str:
        return f"arn:{self.partition}:eks:{self.region}:{self.account_id}:cluster/{self.cluster_name}"

    @property
    def instance_profiles(self) -> str:
        return f"arn:{self.partition}:iam::{self.account_id}:instance-profile/*"

    def ec2(self, kind: str, account: str = "*") -> str:
        return f"arn:{self.partition}:ec2:{self.region}:{account}:{kind}/*"


def document(statements: list[Statement]) -> Document:
    return {"Version": POLICY_VERSION, "Statement": statements}


def minified_size(doc: Document) -> int:
    """The size IAM checks against its limits (whitespace outside strings is not counted)."""
    return len(json.dumps(doc, separators=(",", ":")))


# --- the six controller policies -------------------------------------------------------------

# The tags Karpenter puts on everything it launches; the conditions below only let it touch those.
def _owned(scope: Scope, kind: str) -> dict[str, str]:
    return {f"aws:{kind}/kubernetes.io/cluster/{scope.cluster_name}": "owned"}


def _nodepool(kind: str) -> dict[str, str]:
    return {f"aws:{kind}/karpenter.sh/nodepool": "*"}


def _launched(scope: Scope) -> list[str]:
    return [scope.ec2(kind) for kind in
            ("fleet", "instance", "volume", "network-interface", "launch-template", "spot-instances-request")]


def node_lifecycle_statements(scope: Scope) -> list[Statement]:
    """Launch, tag and terminate instances, fleets and launch templates of this cluster only."""
    return [
        {
            "Sid": "AllowScopedEC2InstanceAccessActions",
            "Effect": "Allow",
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            "Resource": [
                scope.ec2("image", account=""),
                scope.ec2("snapshot", account=""),
                scope.ec2("security-group"),
                scope.ec2("subnet"),
                scope.ec2("capacity-reservation"),
                scope.ec2("placement-group"),
            ],
        },
        {
            "Sid": "AllowScopedEC2LaunchTemplateAccessActions",
            "Effect": "Allow",
            "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
            "Resource": [scope.ec2("launch-template")],
            "Condition": {"StringEquals": _owned(scope, "ResourceTag"), "StringLike": _nodepool("ResourceTag")},
        },
        {
            "Sid": "AllowScopedEC2InstanceActionsWithTags",
            "Effect": "Allow",
            "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
            "Resource": _launched(scope),
            "Condition": {
                "StringEquals": {**_owned(scope, "RequestTag"), "aws:RequestTag/eks:eks-cluster-name": scope.cluster_name},
                "StringLike": _nodepool("RequestTag"),
            },
        },
        {
            "Sid": "AllowScopedResourceCreationTagging",
            "Effect": "Allow",
            "Action": ["ec2:CreateTags"],
            "Resource": _launched(scope),
            "Condition": {
                "StringEquals": {
                    **_owned(scope, "RequestTag"),
                    "aws:RequestTag/eks:eks-cluster-name": scope.cluster_name,
                    "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                },
                "StringLike": _nodepool("RequestTag"),
            },
        },
        {
            "Sid": "AllowScopedResourceTagging",
            "Effect": "Allow",
            "Action": ["ec2:CreateTags"],
            "Resource": [scope.ec2("instance")],
            "Condition": {
                "StringEquals": _owned(scope, "ResourceTag"),
                "StringLike": _nodepool("ResourceTag"),
                "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": scope.cluster_name},
                "ForAllValues:StringEquals": {"aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]},
            },
        },
        {
            "Sid": "AllowScopedDeletion",
            "Effect": "Allow",
            "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
            "Resource": [scope.ec2("instance"), scope.ec2("launch-template")],
            "Condition": {"StringEquals": _owned(scope, "ResourceTag"), "StringLike": _nodepool("ResourceTag")},
        },
    ]


def iam_integration_statements(scope: Scope, node_role_arn: str) -> list[Statement]:
    """Pass the node role to EC2 and manage the instance profiles Karpenter creates for it."""
    region_tag = "topology.kubernetes.io/region"
    nodeclass_tag = "karpenter.k8s.aws/ec2nodeclass"
    request_tags = {
        **_owned(scope, "RequestTag"),
        "aws:RequestTag/eks:eks-cluster-name": scope.cluster_name,
        f"aws:RequestTag/{region_tag}": scope.region,
    }
    resource_tags = {**_owned(scope, "ResourceTag"), f"aws:ResourceTag/{region_tag}": scope.region}
    return [
        {
            "Sid": "AllowPassingInstanceRole",
            "Effect": "Allow",
            "Action": ["iam:PassRole"],
            "Resource": [node_role_arn],
            "Condition": {"StringEquals": {"iam:PassedToService": ["ec2.amazonaws.com", "ec2.amazonaws.com.cn"]}},
        },
        {
            "Sid": "AllowScopedInstanceProfileCreationActions",
            "Effect": "Allow",
            "Action": ["iam:CreateInstanceProfile"],
            "Resource": [scope.instance_profiles],
            "Condition": {"StringEquals": request_tags, "StringLike": {f"aws:RequestTag/{nodeclass_tag}": "*"}},
        },
        {
            "Sid": "AllowScopedInstanceProfileTagActions",
            "Effect": "Allow",
            "Action": ["iam:TagInstanceProfile"],
            "Resource": [scope.instance_profiles],
            "Condition": {
                "StringEquals": {**resource_tags, **request_tags},
                "StringLike": {f"aws:ResourceTag/{nodeclass_tag}": "*", f"aws:RequestTag/{nodeclass_tag}": "*"},
            },
        },
        {
            "Sid": "AllowScopedInstanceProfileActions",
            "Effect": "Allow",
            "Action": ["iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"],
            "Resource": [scope.instance_profiles],
            "Condition": {"StringEquals": resource_tags, "StringLike": {f"aws:ResourceTag/{nodeclass_tag}": "*"}},
        },
    ]


def eks_integration_statements(scope: Scope) -> list[Statement]:
    """Find the API server endpoint of this cluster."""
    return [{
        "Sid": "AllowAPIServerEndpointDiscovery",
        "Effect": "Allow",
        "Action": ["eks:DescribeCluster"],
        "Resource": [scope.cluster_arn],
    }]


def interruption_statements(queue_arn: str) -> list[Statement]:
    """Read and delete interruption messages from this cluster's queue."""
    return [{
        "Sid": "AllowInterruptionQueueActions",
        "Effect": "Allow",
        "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
        "Resource": [queue_arn],
    }]


def zonal_shift_statements(scope: Scope) -> list[Statement]:
    """Read ARC zonal shift status of this cluster only."""
    return [{
        "Sid": "AllowZonalShiftStatusReadOnly",
        "Effect": "Allow",
        "Action": ["arc-zonal-shift:GetManagedResource"],
        "Resource": ["*"],
        "Condition": {"StringEquals": {"arc-zonal-shift:ResourceIdentifier": scope.cluster_arn}},
    }]


def resource_discovery_statements(scope: Scope) -> list[Statement]:
    """Read-only discovery: instance types, offerings, prices, AMIs, subnets, security groups, profiles."""
    return [
        {
            "Sid": "AllowRegionalReadActions",
            "Effect": "Allow",
            "Action": [
                "ec2:DescribeCapacityReservations",
                "ec2:DescribeImages",
                "ec2:DescribeInstances",
                "ec2:DescribeInstanceStatus",
                "ec2:DescribeInstanceTypeOfferings",
                "ec2:DescribeInstanceTypes",
                "ec2:DescribeLaunchTemplates",
                "ec2:DescribePlacementGroups",
                "ec2:DescribeSecurityGroups",
                "ec2:DescribeSpotPriceHistory",
                "ec2:DescribeSubnets",
            ],
            "Resource": ["*"],
            "Condition": {"StringEquals": {"aws:RequestedRegion": scope.region}},
        },
        {
            "Sid": "AllowSSMReadActions",
            "Effect": "Allow",
            "Action": ["ssm:GetParameter"],
            "Resource": [f"arn:{scope.partition}:ssm:{scope.region}::parameter/aws/service/*"],
        },
        {"Sid": "AllowPricingReadActions", "Effect": "Allow", "Action": ["pricing:GetProducts"], "Resource": ["*"]},
        {"Sid": "AllowUnscopedInstanceProfileListAction", "Effect": "Allow", "Action": ["iam:ListInstanceProfiles"], "Resource": ["*"]},
        {
            "Sid": "AllowInstanceProfileReadActions",
            "Effect": "Allow",
            "Action": ["iam:GetInstanceProfile"],
            "Resource": [scope.instance_profiles],
        },
    ]


# Upstream's policy keys, in upstream order; the managed policy is `KarpenterController<key>Policy-<cluster>`.
CONTROLLER_POLICY_KEYS = ("NodeLifecycle", "IAMIntegration", "EKSIntegration", "Interruption", "ZonalShift", "ResourceDiscovery")
# The same keys as Pulumi resource-name suffixes (and so as file names in build/<stack>/iam/).
CONTROLLER_POLICY_SLUGS = {
    "NodeLifecycle": "node-lifecycle",
    "IAMIntegration": "iam-integration",
    "EKSIntegration": "eks-integration",
    "Interruption": "interruption",
    "ZonalShift": "zonal-shift",
    "ResourceDiscovery": "resource-discovery",
}


def controller_policy_keys(*, interruption: bool) -> list[str]:
    """The controller policies a stack gets. Without an interruption queue the Interruption policy
    would have no resource to name, so it is left out."""
    return [key for key in CONTROLLER_POLICY_KEYS if interruption or key != "Interruption"]


def controller_policies(scope: Scope, *, node_role_arn: str, queue_arn: str | None) -> dict[str, Document]:
    """The controller's managed policy documents by upstream key (no Interruption without a queue)."""
    builders = {
        "NodeLifecycle": lambda: node_lifecycle_statements(scope),
        "IAMIntegration": lambda: iam_integration_statements(scope, node_role_arn),
        "EKSIntegration": lambda: eks_integration_statements(scope),
        "Interruption": lambda: interruption_statements(queue_arn or ""),
        "ZonalShift": lambda: zonal_shift_statements(scope),
        "ResourceDiscovery": lambda: resource_discovery_statements(scope),
    }
    return {key: document(builders[key]()) for key in controller_policy_keys(interruption=queue_arn is not None)}


def controller_policy_name(key: str, cluster_name: str) -> str:
    return scoped(cluster_name, IAM_POLICY_NAME_MAX, prefix=f"KarpenterController{key}Policy-")


# Inline on the controller role, so its name needs no cluster to be unique.
EXTRA_POLICY_NAME = "KarpenterControllerExtra"


def extra_policy(statements: list[Statement]) -> Document | None:
    """The stack's own additional controller statements as one policy, or None when there are none."""
    return document([dict(s) for s in statements]) if statements else None


# --- trust policies --------------------------------------------------------------------------

def pod_identity_trust() -> Document:
    """EKS Pod Identity: the agent assumes the role and tags the session with the pod's identity."""
    return document([{
        "Sid": "AllowEksAuthToAssumeRoleForPodIdentity",
        "Effect": "Allow",
        "Principal": {"Service": "pods.eks.amazonaws.com"},
        "Action": ["sts:AssumeRole", "sts:TagSession"],
    }])


def oidc_provider_path(issuer_url: str) -> str:
    """`oidc.eks.<region>.amazonaws.com/id/<ID>`: the issuer as IAM names its OIDC provider."""
    return issuer_url.removeprefix("https://").rstrip("/")


def irsa_trust(*, partition: str, account_id: str, issuer_url: str, namespace: str, service_account: str) -> Document:
    """IRSA: only the controller's service account, with tokens for STS, through the cluster's OIDC provider."""
    provider = oidc_provider_path(issuer_url)
    return document([{
        "Effect": "Allow",
        "Principal": {"Federated": f"arn:{partition}:iam::{account_id}:oidc-provider/{provider}"},
        "Action": ["sts:AssumeRoleWithWebIdentity"],
        "Condition": {"StringEquals": {
            f"{provider}:sub": f"system:serviceaccount:{namespace}:{service_account}",
            f"{provider}:aud": "sts.amazonaws.com",
        }},
    }])


def controller_role_name(cluster_name: str) -> str:
    return scoped(cluster_name, IAM_ROLE_NAME_MAX, suffix="-karpenter")


# --- node role -------------------------------------------------------------------------------

NODE_MANAGED_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
)


def node_trust(dns_suffix: str) -> Document:
    """EC2 may assume the node role (upstream: `ec2.${AWS::URLSuffix}`, the partition's DNS suffix)."""
    return document([{"Effect": "Allow", "Principal": {"Service": f"ec2.{dns_suffix}"}, "Action": ["sts:AssumeRole"]}])


def node_managed_policy_arns(partition: str) -> dict[str, str]:
    return {name: f"arn:{partition}:iam::aws:policy/{name}" for name in NODE_MANAGED_POLICIES}


def node_role_name(cluster_name: str) -> str:
    return scoped(cluster_name, IAM_ROLE_NAME_MAX, prefix="KarpenterNodeRole-")


def node_instance_profile_name(cluster_name: str) -> str:
    return scoped(cluster_name, IAM_INSTANCE_PROFILE_NAME_MAX, prefix="KarpenterNodeInstanceProfile-")


def role_name_from_arn(arn: str) -> str:
    """`arn:aws:iam::123456789012:role/some/path/Name` -> `Name` (what `EC2NodeClass.spec.role` takes)."""
    resource = arn.split(":", 5)[5]
    if not resource.startswith("role/"):
        raise ValueError(f"{arn!r} is not an IAM role ARN")
    return resource.rsplit("/", 1)[1]
