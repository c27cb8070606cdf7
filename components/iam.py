"""Pure builders for Karpenter's IAM: the controller policies, both trust policies, the node role.

The controller policies and the node role are the pinned release's getting-started CloudFormation
template, statement by statement, read from the project's generated data (components/reference/;
tests compare them with the upstream files); only the placeholders `${AWS::Partition}`,
`${AWS::Region}`, `${AWS::AccountId}`, `${ClusterName}`, the node role ARN and the queue ARN are
filled in here. `version=None` means the newest supported release. Nothing here touches Pulumi.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from . import reference
from .naming import IAM_INSTANCE_PROFILE_NAME_MAX, IAM_POLICY_NAME_MAX, IAM_ROLE_NAME_MAX, scoped
from .reference.cfn import substitute

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


# --- the controller policies, from the pinned release's data -----------------------------------

def _release(version: str | None) -> "reference.Release":
    return reference.release(version or reference.newest())


def _scope_values(scope: Scope) -> dict[str, str]:
    return {"AWS::Partition": scope.partition, "AWS::Region": scope.region,
            "AWS::AccountId": scope.account_id, "ClusterName": scope.cluster_name}


_STATEMENT_ORDER = ("Sid", "Effect", "Principal", "Action", "Resource", "Condition")


def normalised(statement: Statement) -> Statement:
    """Upstream writes a single Action or Resource as a string; we always write lists (same
    meaning to IAM, one shape for policies and tests), in a fixed key order."""
    out = {key: statement[key] for key in _STATEMENT_ORDER if key in statement}
    out.update({k: v for k, v in statement.items() if k not in out})
    for key in ("Action", "Resource"):
        if isinstance(out.get(key), str):
            out[key] = [out[key]]
    return out


def _statements(key: str, values: dict[str, str], version: str | None) -> list[Statement]:
    """Policy `key`'s statements in `version` (newest when None) with placeholders filled in;
    empty when that release has no such policy."""
    for policy in _release(version).controller_policies:
        if policy["key"] == key:
            return [normalised(s) for s in substitute(policy["statements"], values)]
    return []


def node_lifecycle_statements(scope: Scope, *, version: str | None = None) -> list[Statement]:
    """Launch, tag and terminate instances, fleets and launch templates of this cluster only."""
    return _statements("NodeLifecycle", _scope_values(scope), version)


def iam_integration_statements(scope: Scope, node_role_arn: str, *, version: str | None = None) -> list[Statement]:
    """Pass the node role to EC2 and manage the instance profiles Karpenter creates for it."""
    return _statements("IAMIntegration", {**_scope_values(scope), "KarpenterNodeRole.Arn": node_role_arn}, version)


def eks_integration_statements(scope: Scope, *, version: str | None = None) -> list[Statement]:
    """Find the API server endpoint of this cluster."""
    return _statements("EKSIntegration", _scope_values(scope), version)


def interruption_statements(queue_arn: str, *, version: str | None = None) -> list[Statement]:
    """Read and delete interruption messages from this cluster's queue."""
    return _statements("Interruption", {"KarpenterInterruptionQueue.Arn": queue_arn}, version)


def zonal_shift_statements(scope: Scope, *, version: str | None = None) -> list[Statement]:
    """Read ARC zonal shift status of this cluster only (from 1.12)."""
    return _statements("ZonalShift", _scope_values(scope), version)


def resource_discovery_statements(scope: Scope, *, version: str | None = None) -> list[Statement]:
    """Read-only discovery: instance types, offerings, prices, AMIs, subnets, security groups, profiles."""
    return _statements("ResourceDiscovery", _scope_values(scope), version)


# Every key any supported release has, in upstream order; the managed policy is
# `KarpenterController<key>Policy-<cluster>`.
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


def controller_policy_keys(*, interruption: bool, version: str | None = None) -> list[str]:
    """The controller policies a stack gets: the release's, in upstream order. Without an
    interruption queue the Interruption policy would have no resource to name, so it is left out."""
    keys = [p["key"] for p in _release(version).controller_policies]
    unknown = set(keys) - set(CONTROLLER_POLICY_KEYS)
    if unknown:  # a new upstream policy needs a slug (its resource name) before it can be declared
        raise ValueError(f"Karpenter {version}: controller policies without a slug: {sorted(unknown)}")
    return [key for key in keys if interruption or key != "Interruption"]


def controller_policies(scope: Scope, *, node_role_arn: str, queue_arn: str | None,
                        version: str | None = None) -> dict[str, Document]:
    """The controller's managed policy documents by upstream key (no Interruption without a queue)."""
    values = {**_scope_values(scope), "KarpenterNodeRole.Arn": node_role_arn,
              "KarpenterInterruptionQueue.Arn": queue_arn or ""}
    return {key: document(_statements(key, values, version))
            for key in controller_policy_keys(interruption=queue_arn is not None, version=version)}


def controller_actions(version: str | None = None) -> set[str]:
    """Every IAM action the release's controller policies grant (what the upgrade planner compares)."""
    actions: set[str] = set()
    for policy in _release(version).controller_policies:
        for statement in policy["statements"]:
            action = statement.get("Action", [])
            actions.update([action] if isinstance(action, str) else action)
    return actions


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

def node_managed_policies(version: str | None = None) -> tuple[str, ...]:
    """The AWS managed policies upstream attaches to the node role in `version`."""
    return tuple(_release(version).node_role["managedPolicies"])


# The newest release's; every supported release has the same four (tested).
NODE_MANAGED_POLICIES = node_managed_policies()


def node_trust(dns_suffix: str, version: str | None = None) -> Document:
    """EC2 may assume the node role (upstream: `ec2.${AWS::URLSuffix}`, the partition's DNS suffix)."""
    trust = substitute(_release(version).node_role["trust"], {"AWS::URLSuffix": dns_suffix})
    return document([normalised(s) for s in trust["Statement"]])


def node_managed_policy_arns(partition: str, version: str | None = None) -> dict[str, str]:
    return {name: f"arn:{partition}:iam::aws:policy/{name}" for name in node_managed_policies(version)}


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
