"""Discovery: `karpenter.sh/discovery=<cluster>` on the subnets given by id and on one security
group, and the subnet selector the EC2NodeClasses get.

`aws.ec2.Tag` manages one tag on a resource it does not own: the subnets and the group stay
whoever's they were, and destroying this stack removes only the tag.

Subnets are tagged only when the config names them by id. Subnets selected by tags are found by
a lookup within the cluster's VPC (`ExistingCluster.subnet_ids`) whose answer is known only while
the program runs; declaring a Tag per answer inside an `apply` would hide those resources from
previews, so they are not tagged. The EC2NodeClasses select them by id instead: Karpenter's own
subnet lookup (DescribeSubnets filtered by the selector's tags, no VPC filter; pkg/providers/subnet
in karpenter-provider-aws v1.14.1) would otherwise also pick subnets of every other VPC in the
account and region that carry the same tags.
"""

from __future__ import annotations

from typing import Any, Sequence, TypeVar

import pulumi
import pulumi_aws as aws

from .config.cluster import SubnetSelection

DISCOVERY_TAG = "karpenter.sh/discovery"
# The EC2NodeClass CRD's limit on subnetSelectorTerms (v1.14.1: maxItems 30).
MAX_SELECTOR_TERMS = 30
_Name = TypeVar("_Name", bound="pulumi.Input[str]")


def discovery_tags(cluster_name: _Name) -> dict[str, _Name]:
    """The discovery tag for a cluster name, or for an Input of one (kept at the leaf)."""
    return {DISCOVERY_TAG: cluster_name}


def subnet_selector_terms(subnets: SubnetSelection, cluster_name: str,
                          resolved_ids: Sequence[str] = ()) -> list[dict[str, Any]]:
    """`EC2NodeClass.spec.subnetSelectorTerms`: the discovery tag this stack puts on subnets given
    by id; for subnets selected by tags, one `id` term per subnet the lookup found in the
    cluster's VPC (`resolved_ids`). A lookup that found nothing, or more than the CRD takes, is a
    RunError naming the tags: an EC2NodeClass without subnets launches nothing."""
    if subnets.ids:
        return [{"tags": discovery_tags(cluster_name)}]
    tags = ", ".join(f"{k}={v}" for k, v in sorted(subnets.tags.items()))
    if not resolved_ids:
        raise pulumi.RunError(f"karpenter-platform:cluster.subnets.tags: no subnet of the cluster's VPC has the tags {tags}")
    if len(set(resolved_ids)) > MAX_SELECTOR_TERMS:
        raise pulumi.RunError(f"karpenter-platform:cluster.subnets.tags: {len(set(resolved_ids))} subnets of the cluster's VPC have the "
                              f"tags {tags}; an EC2NodeClass takes at most {MAX_SELECTOR_TERMS}: narrow the tags or "
                              "give subnets.ids")
    return [{"id": subnet} for subnet in sorted(set(resolved_ids))]


def tagged_subnet_ids(subnets: SubnetSelection) -> list[str]:
    """The subnets that get the discovery tag: exactly those the config names by id."""
    return list(subnets.ids)


class DiscoveryTags(pulumi.ComponentResource):
    """One `aws.ec2.Tag` per subnet given by id and exactly one on the security group.

    Outputs: `subnet_selector_terms`, `security_group_selector_tags` (for the EC2NodeClasses),
    `security_group_id` (the group that was tagged), `subnet_ids` (the subnets that were tagged).
    """

    def __init__(self, name: str, *, cluster_name: pulumi.Input[str], subnets: SubnetSelection,
                 security_group_id: pulumi.Input[str], region: str,
                 resolved_subnet_ids: pulumi.Input[Sequence[str]] = (),
                 opts: pulumi.ResourceOptions | None = None):
        super().__init__("karpenter-platform:index:DiscoveryTags", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        cluster = pulumi.Output.from_input(cluster_name)
        self.subnet_ids = tagged_subnet_ids(subnets)
        for subnet_id in self.subnet_ids:
            aws.ec2.Tag(f"{name}-{subnet_id}", resource_id=subnet_id, key=DISCOVERY_TAG, value=cluster,
                        region=region, opts=child)
        # One group only: Karpenter attaches every group matching the selector to its nodes, and
        # the AWS Load Balancer Controller breaks on nodes with several groups tagged for the
        # cluster. The config model cannot express more than one.
        aws.ec2.Tag(f"{name}-security-group", resource_id=security_group_id, key=DISCOVERY_TAG, value=cluster,
                    region=region, opts=child)
        self.security_group_id = pulumi.Output.from_input(security_group_id)
        self.subnet_selector_terms: pulumi.Output[list[dict[str, Any]]] = pulumi.Output.all(
            cluster, pulumi.Output.from_input(resolved_subnet_ids)
        ).apply(lambda a: subnet_selector_terms(subnets, a[0], a[1]))
        self.security_group_selector_tags = cluster.apply(discovery_tags)
        self.register_outputs({"subnetIds": self.subnet_ids, "securityGroupId": self.security_group_id})
