"""Discovery tags: `karpenter.sh/discovery=<cluster>` on the configured subnets and on one security group.

`aws.ec2.Tag` manages one tag on a resource it does not own: the subnets and the group stay
whoever's they were, and destroying this stack removes only the tag.

Subnets are tagged only when the config names them by id. Subnets selected by tags are found by
a lookup whose result is known only while the program runs; declaring resources inside an
`apply` would hide them from previews, so those subnets are not tagged at all: the EC2NodeClass
selects them by the very tags the config selects them by (`subnet_selector_tags`).
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from .config.cluster import SubnetSelection

DISCOVERY_TAG = "karpenter.sh/discovery"


def discovery_tags(cluster_name: str) -> dict[str, str]:
    return {DISCOVERY_TAG: cluster_name}


def subnet_selector_tags(subnets: SubnetSelection, cluster_name: str) -> dict[str, str]:
    """What `EC2NodeClass.spec.subnetSelectorTerms[].tags` must match: the discovery tag this stack
    puts on subnets given by id, or the configured tags of subnets selected by tags."""
    return discovery_tags(cluster_name) if subnets.ids else dict(subnets.tags)


def tagged_subnet_ids(subnets: SubnetSelection) -> list[str]:
    """The subnets that get the discovery tag: exactly those the config names by id."""
    return list(subnets.ids)


class DiscoveryTags(pulumi.ComponentResource):
    """One `aws.ec2.Tag` per subnet given by id and exactly one on the security group.

    Outputs: `subnet_selector_tags`, `security_group_selector_tags` (for the EC2NodeClasses),
    `security_group_id` (the group that was tagged), `subnet_ids` (the subnets that were tagged).
    """

    def __init__(self, name: str, *, cluster_name: pulumi.Input[str], subnets: SubnetSelection,
                 security_group_id: pulumi.Input[str], region: str, opts: pulumi.ResourceOptions | None = None):
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
        self.subnet_selector_tags = cluster.apply(lambda c: subnet_selector_tags(subnets, c))
        self.security_group_selector_tags = cluster.apply(discovery_tags)
        self.register_outputs({"subnetIds": self.subnet_ids, "securityGroupId": self.security_group_id})
