"""The existing EKS cluster: looked up by name (or through another stack), never managed here.

Every regional lookup names the cluster's region (`cluster.region`), as every regional
resource does, so the stack finds the cluster, its subnets and its registry whatever the
provider's default region (`aws:region`) is. Caller identity and partition have no region: the
account is the credentials' account and the partition is the credentials' partition in every
region; the cluster's own ARN confirms that partition (a clear error otherwise).
"""

from __future__ import annotations

from typing import Sequence

import pulumi
import pulumi_aws as aws

from .arns import partition_of
from .config.cluster import ClusterConfig, SubnetSelection


def subnet_filters(subnets: SubnetSelection, vpc_id: str) -> list[aws.ec2.GetSubnetsFilterArgsDict]:
    """DescribeSubnets filters for subnets selected by tags: the tags, within the cluster's VPC.
    Karpenter's own subnet lookup filters by the selector's tags only, so the VPC filter is what
    keeps a generic tag (e.g. `kubernetes.io/role/internal-elb`) from reaching other VPCs."""
    vpc: list[aws.ec2.GetSubnetsFilterArgsDict] = [{"name": "vpc-id", "values": [vpc_id]}]
    return vpc + [{"name": f"tag:{key}", "values": [value]} for key, value in sorted(subnets.tags.items())]


def same_partition(provider_partition: str, cluster_arn: str, region: str) -> str:
    """The partition, once the provider's and the cluster's agree (else a RunError saying so)."""
    cluster_partition = partition_of(cluster_arn)
    if provider_partition != cluster_partition:
        raise pulumi.RunError(
            f"the AWS provider works in partition {provider_partition!r} but the cluster (region {region}) is in "
            f"{cluster_partition!r}: set aws:region to a region of {cluster_partition!r}")
    return provider_partition


class ExistingCluster(pulumi.ComponentResource):
    """Facts about the cluster every other component needs (name, endpoint, CA, OIDC issuer,
    VPC, security group, subnets, account, partition), all known at `pulumi preview`."""

    def __init__(self, name: str, config: ClusterConfig, opts: pulumi.ResourceOptions | None = None):
        super().__init__("karpenter-platform:index:ExistingCluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        invoke = pulumi.InvokeOptions(parent=self)
        self.config = config
        self.region = config.region
        if config.stack_reference is not None:
            reference = pulumi.StackReference(f"{name}-source", stack_name=config.stack_reference.name, opts=child)
            self.name = pulumi.Output.from_input(reference.require_output(config.stack_reference.output)).apply(str)
        else:
            assert config.name is not None  # ClusterConfig holds exactly one of name and stackReference
            self.name = pulumi.Output.from_input(config.name)
        looked_up = aws.eks.get_cluster_output(name=self.name, region=self.region, opts=invoke)
        self.endpoint = looked_up.endpoint
        self.certificate_authority = looked_up.certificate_authorities.apply(lambda cas: cas[0].data)
        self.oidc_issuer = looked_up.identities.apply(lambda ids: ids[0].oidcs[0].issuer)
        self.vpc_id = looked_up.vpc_config.vpc_id
        self.cluster_security_group_id = looked_up.vpc_config.cluster_security_group_id
        identity = aws.get_caller_identity_output(opts=invoke)
        self.account_id = identity.account_id
        partition = aws.get_partition_output(opts=invoke)
        self.partition = pulumi.Output.all(partition.partition, looked_up.arn).apply(
            lambda a: same_partition(a[0], a[1], self.region))
        self.dns_suffix = partition.dns_suffix
        self.subnet_ids: pulumi.Output[Sequence[str]]
        if config.subnets.ids:
            self.subnet_ids = pulumi.Output.from_input(list(config.subnets.ids))
        else:
            filters = self.vpc_id.apply(lambda vpc: subnet_filters(config.subnets, vpc))
            self.subnet_ids = aws.ec2.get_subnets_output(filters=filters, region=self.region, opts=invoke).ids
        self.security_group_id = (
            pulumi.Output.from_input(config.security_group.id)
            if config.security_group.id
            else self.cluster_security_group_id
        )
        self.register_outputs({"name": self.name, "endpoint": self.endpoint})
