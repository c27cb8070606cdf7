"""The AWS side of Karpenter: controller and node roles, access entry, discovery tags, interruption queue.

A thin shell over the pure builders in `iam`, `interruption` and `discovery`: this module only
decides which resources a stack's config calls for and wires their outputs together.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Iterable, Mapping

import pulumi
import pulumi_aws as aws

from . import iam
from .arns import iam_role_arn
from .cluster import ExistingCluster
from .config import PlatformConfig
from .discovery import DiscoveryTags
from .interruption import InterruptionQueue

# The annotation IRSA reads on the controller's service account.
IRSA_ROLE_ANNOTATION = "eks.amazonaws.com/role-arn"
# amiAlias families (and EC2NodeClass amiFamily values, lower-cased) of Windows AMIs.
WINDOWS_FAMILIES = ("windows2019", "windows2022", "windows2025")


def ami_family(node_class: Any) -> str | None:
    """The node class's AMI family, lower-cased: `amiFamily` where the config has one, else the
    part of `amiAlias` before `@` (`windows2022@latest` -> `windows2022`)."""
    family = getattr(node_class, "ami_family", None)
    if family:
        return str(family).lower()
    alias = getattr(node_class, "ami_alias", None)
    return alias.split("@", 1)[0].lower() if alias else None


def node_access_entry_type(node_classes: Iterable[Any]) -> str:
    """The node role's access entry type: `EC2_WINDOWS` as soon as one node class launches
    Windows, else `EC2_LINUX`.

    EKS takes a principal in one access entry only (a second CreateAccessEntry for the same
    role fails with ResourceInUseException), so a role shared by Linux and Windows nodes cannot
    have both. `EC2_WINDOWS` gives the nodes what `EC2_LINUX` gives (`system:nodes`) plus
    `eks:kube-proxy-windows`, which kube-proxy needs on Windows, where it runs on the host: the
    aws-auth mapping Karpenter documents for a node role shared with Windows
    (troubleshooting.md, v1.14.1) carries the same groups."""
    windows = any(ami_family(c) in WINDOWS_FAMILIES for c in node_classes)
    return "EC2_WINDOWS" if windows else "EC2_LINUX"


def _node_policy_arn(policy: str, version: str | None, partition: str) -> str:
    return iam.node_managed_policy_arns(partition, version)[policy]


def _document_json(key: str, documents: Mapping[str, iam.Document]) -> str:
    return json.dumps(documents[key])


class KarpenterAws(pulumi.ComponentResource):
    """Everything Karpenter needs in AWS for one cluster.

    Outputs: `controller_role_arn`, `controller_role_name`, `node_role_name`, `node_role_arn`,
    `queue_name` / `queue_arn` / `queue_url` (None when `karpenter.interruptionHandling` is false),
    `instance_profile_name` (None unless `nodeRole.createInstanceProfile`),
    `service_account_annotations` (the IRSA annotation, or {} for Pod Identity),
    `subnet_selector_terms` and `security_group_selector_tags` (for the EC2NodeClasses).

    Every ARN a document or the access entry names is built from partition, account, region and
    the names set here (`components/arns.py`), never read from a resource, so every policy
    document and the access entry's principal are known at `pulumi preview`; what needs the
    resource to exist first (the access entry, the rules' targets) says so with `depends_on`.
    """

    def __init__(self, name: str, config: PlatformConfig, cluster: ExistingCluster,
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("karpenter-platform:index:KarpenterAws", name, None, opts)
        self._name = name
        self._child = pulumi.ResourceOptions(parent=self)
        self._cluster = cluster
        self._karpenter = config.settings.karpenter
        self._access_entry_type = node_access_entry_type(config.settings.node_classes.values())

        self._declare_node_role()
        self.queue_name: pulumi.Output[str] | None = None
        self.queue_arn: pulumi.Output[str] | None = None
        self.queue_url: pulumi.Output[str] | None = None
        if self._karpenter.interruption_handling:
            queue = InterruptionQueue(f"{name}-interruption", cluster_name=cluster.name, region=cluster.region,
                                      partition=cluster.partition, account_id=cluster.account_id,
                                      version=self._karpenter.version, opts=self._child)
            self.queue_name, self.queue_arn, self.queue_url = queue.queue_name, queue.queue_arn, queue.queue_url
        self._declare_controller_role()
        discovery = DiscoveryTags(f"{name}-discovery", cluster_name=cluster.name, subnets=config.settings.cluster.subnets,
                                  security_group_id=cluster.security_group_id, region=cluster.region,
                                  resolved_subnet_ids=cluster.subnet_ids, opts=self._child)
        self.subnet_selector_terms = discovery.subnet_selector_terms
        self.security_group_selector_tags = discovery.security_group_selector_tags
        self.register_outputs({
            "controllerRoleArn": self.controller_role_arn,
            "nodeRoleName": self.node_role_name,
            "nodeRoleArn": self.node_role_arn,
            "queueName": self.queue_name,
        })

    def _declare_node_role(self) -> None:
        """The nodes' role (or an existing one), its access entry, and an optional instance profile."""
        name, child, cluster, karpenter = self._name, self._child, self._cluster, self._karpenter
        node = karpenter.node_role
        role: aws.iam.Role | None = None
        if node.existing_arn:
            # Someone else's role: reference it only, never attach policies to it.
            self.node_role_arn: pulumi.Output[str] = pulumi.Output.from_input(node.existing_arn)
            self.node_role_name: pulumi.Output[str] = pulumi.Output.from_input(iam.role_name_from_arn(node.existing_arn))
        else:
            role_name = cluster.name.apply(iam.node_role_name)
            role = aws.iam.Role(
                f"{name}-node",
                name=role_name,
                description="Nodes launched by Karpenter",
                assume_role_policy=cluster.dns_suffix.apply(lambda suffix: json.dumps(iam.node_trust(suffix, karpenter.version))),
                permissions_boundary=karpenter.permissions_boundary,
                opts=child,
            )
            for policy in iam.node_managed_policies(karpenter.version):
                aws.iam.RolePolicyAttachment(
                    f"{name}-node-{policy}",
                    role=role.name,
                    policy_arn=cluster.partition.apply(functools.partial(_node_policy_arn, policy, karpenter.version)),
                    opts=child,
                )
            self.node_role_arn = pulumi.Output.all(cluster.partition, cluster.account_id, role_name).apply(
                lambda a: iam_role_arn(*a))
            self.node_role_name = role.name
        if node.create_access_entry:
            # Without it nodes boot and never join: the API server does not know the role. The
            # type is immutable and EKS refuses a second entry for the same principal, so a
            # change of type must delete the old entry before creating the new one.
            aws.eks.AccessEntry(
                f"{name}-node-access-entry",
                cluster_name=cluster.name,
                principal_arn=self.node_role_arn,
                type=self._access_entry_type,
                region=cluster.region,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[role] if role is not None else [],
                                            delete_before_replace=True),
            )
        self.instance_profile_name: pulumi.Output[str] | None = None
        if node.create_instance_profile:
            profile = aws.iam.InstanceProfile(
                f"{name}-node-instance-profile",
                name=cluster.name.apply(iam.node_instance_profile_name),
                role=self.node_role_name,
                opts=child,
            )
            self.instance_profile_name = profile.name

    def _controller_trust(self) -> pulumi.Input[str]:
        karpenter, cluster = self._karpenter, self._cluster
        if karpenter.identity == "podIdentity":
            return json.dumps(iam.pod_identity_trust())
        return pulumi.Output.all(cluster.partition, cluster.account_id, cluster.oidc_issuer).apply(
            lambda a: json.dumps(iam.irsa_trust(partition=a[0], account_id=a[1], issuer_url=a[2],
                                                namespace=karpenter.namespace, service_account=karpenter.service_account))
        )

    def _declare_controller_role(self) -> None:
        """The controller's role, the six (five without a queue) upstream policies, extra statements,
        and for Pod Identity the association with the controller's service account."""
        name, child, cluster, karpenter = self._name, self._child, self._cluster, self._karpenter
        role_name = cluster.name.apply(iam.controller_role_name)
        role = aws.iam.Role(
            f"{name}-controller",
            name=role_name,
            description="Karpenter controller",
            assume_role_policy=self._controller_trust(),
            permissions_boundary=karpenter.permissions_boundary,
            opts=child,
        )
        documents = pulumi.Output.all(
            partition=cluster.partition, account_id=cluster.account_id, cluster_name=cluster.name,
            node_role_arn=self.node_role_arn, queue_arn=self.queue_arn,
        ).apply(lambda a: iam.controller_policies(
            iam.Scope(a["partition"], cluster.region, a["account_id"], a["cluster_name"]),
            node_role_arn=a["node_role_arn"], queue_arn=a["queue_arn"], version=karpenter.version,
        ))
        self.controller_policy_arns: dict[str, pulumi.Output[str]] = {}
        for key in iam.controller_policy_keys(interruption=self.queue_arn is not None, version=karpenter.version):
            slug = iam.CONTROLLER_POLICY_SLUGS[key]
            policy = aws.iam.Policy(
                f"{name}-controller-{slug}",
                name=cluster.name.apply(functools.partial(iam.controller_policy_name, key)),
                policy=documents.apply(functools.partial(_document_json, key)),
                opts=child,
            )
            aws.iam.RolePolicyAttachment(f"{name}-controller-{slug}-attachment", role=role.name,
                                         policy_arn=policy.arn, opts=child)
            self.controller_policy_arns[key] = policy.arn
        extra = iam.extra_policy(karpenter.extra_iam_statements)
        if extra is not None:
            aws.iam.RolePolicy(f"{name}-controller-extra", role=role.name, name=iam.EXTRA_POLICY_NAME,
                               policy=json.dumps(extra), opts=child)
        if karpenter.identity == "podIdentity":
            aws.eks.PodIdentityAssociation(
                f"{name}-controller-pod-identity",
                cluster_name=cluster.name,
                namespace=karpenter.namespace,
                service_account=karpenter.service_account,
                role_arn=role.arn,
                region=cluster.region,
                opts=child,
            )
            self.service_account_annotations: pulumi.Output[dict[str, str]] = pulumi.Output.from_input({})
        # Known at preview; the helm release that reads it depends on this whole component.
        self.controller_role_arn: pulumi.Output[str] = pulumi.Output.all(
            cluster.partition, cluster.account_id, role_name).apply(lambda a: iam_role_arn(*a))
        if karpenter.identity != "podIdentity":
            self.service_account_annotations = self.controller_role_arn.apply(lambda arn: {IRSA_ROLE_ANNOTATION: arn})
        self.controller_role_name: pulumi.Output[str] = role.name
