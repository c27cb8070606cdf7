"""karpenter-platform: everything Karpenter needs on an existing EKS cluster, one stack per environment.

This file only loads the typed config and composes components; all logic lives in components/.
"""

from pathlib import Path

import pulumi

from components.aws import KarpenterAws
from components.cluster import ExistingCluster
from components.config import load_from_pulumi
from components.kubernetes import cluster_provider
from components.nodeclasses import NodeClasses
from components.nodepools import NodePools

# Validates the stack file and every team file first: nothing is declared while any is wrong.
config = load_from_pulumi(Path(__file__).resolve().parent)

cluster = ExistingCluster("cluster", config.settings.cluster)
aws_side = KarpenterAws("karpenter-aws", config, cluster)
provider = cluster_provider("cluster", cluster)
k8s_opts = pulumi.ResourceOptions(provider=provider)

node_classes = NodeClasses(
    "node-classes", config, cluster_name=cluster.name, node_role_name=aws_side.node_role_name, opts=k8s_opts
)
node_pools = NodePools("node-pools", config, opts=pulumi.ResourceOptions(provider=provider, depends_on=[node_classes]))

pulumi.export("environment", config.environment)
pulumi.export("clusterName", cluster.name)
pulumi.export("controllerRoleArn", aws_side.controller_role_arn)
pulumi.export("nodeRoleName", aws_side.node_role_name)
pulumi.export("nodeRoleArn", aws_side.node_role_arn)
pulumi.export("interruptionQueueName", aws_side.queue_name)
pulumi.export("controllerRoleName", aws_side.controller_role_name)
pulumi.export("interruptionQueueArn", aws_side.queue_arn)
pulumi.export("nodePools", sorted(node_pools.pools))
pulumi.export("nodeClasses", sorted(node_classes.classes))
