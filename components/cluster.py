"""The existing EKS cluster: looked up by name (or through another stack), never managed here."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from .config.cluster import ClusterConfig


class ExistingCluster(pulumi.ComponentResource):
    """Facts about the cluster every other component needs (name, endpoint, CA, OIDC issuer,
    security group, subnets, account, partition)."""

    def __init__(self, name: str, config: ClusterConfig, opts: pulumi.ResourceOptions | None = None):
        super().__init__("karpenter-platform:index:ExistingCluster", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        invoke = pulumi.InvokeOptions(parent=self)
        self.config = config
        if config.stack_reference is not None:
            reference = pulumi.StackReference(f"{name}-source", stack_name=config.stack_reference.name, opts=child)
            self.name = pulumi.Output.from_input(reference.require_output(config.stack_reference.output)).apply(str)
        else:
            self.name = pulumi.Output.from_input(config.name)
        looked_up = aws.eks.get_cluster_output(name=self.name, opts=invoke)
        self.region = config.region
        self.endpoint = looked_up.endpoint
        self.certificate_authority = looked_up.certificate_authorities.apply(lambda cas: cas[0].data)
        self.oidc_issuer = looked_up.identities.apply(lambda ids: ids[0].oidcs[0].issuer)
        self.vpc_id = looked_up.vpc_config.vpc_id
        self.cluster_security_group_id = looked_up.vpc_config.cluster_security_group_id
        identity = aws.get_caller_identity_output(opts=invoke)
        self.account_id = identity.account_id
        self.partition = aws.get_partition_output(opts=invoke).partition
        if config.subnets.ids:
            self.subnet_ids = pulumi.Output.from_input(list(config.subnets.ids))
        else:
            filters = [aws.ec2.GetSubnetsFilterArgs(name="vpc-id", values=[self.vpc_id])] + [
                aws.ec2.GetSubnetsFilterArgs(name=f"tag:{key}", values=[value])
                for key, value in sorted(config.subnets.tags.items())
            ]
            self.subnet_ids = aws.ec2.get_subnets_output(filters=filters, opts=invoke).ids
        self.security_group_id = (
            pulumi.Output.from_input(config.security_group.id)
            if config.security_group.id
            else self.cluster_security_group_id
        )
        self.register_outputs({"name": self.name, "endpoint": self.endpoint})
