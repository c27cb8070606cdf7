"""karpenter-platform: everything Karpenter needs on an existing EKS cluster, one stack per environment.

This file only loads the typed config and composes components; all logic lives in components/.
"""

from pathlib import Path

import pulumi

from components.aws import KarpenterAws
from components.cluster import ExistingCluster
from components.config import load_from_pulumi
from components.karpenter import Karpenter
from components.kubernetes import cluster_provider
from components.nodeclasses import NodeClasses
from components.nodepools import NodePools
from components.odigos import Odigos

# Validates the stack file and every team file first: nothing is declared while any is wrong.
config = load_from_pulumi(Path(__file__).resolve().parent)

cluster = ExistingCluster("cluster", config.settings.cluster)
aws_side = KarpenterAws("karpenter-aws", config, cluster)
provider = cluster_provider("cluster", cluster)
k8s_opts = pulumi.ResourceOptions(provider=provider)

# Order (and, reversed, the order of `pulumi destroy`): CRDs -> controller -> node classes ->
# NodePools. Node classes and NodePools also depend on the AWS side, so on destroy the roles,
# queue and access entry outlive every node Karpenter still has to drain. See docs/kubernetes.md.
karpenter = Karpenter(
    "karpenter", config, cluster_name=cluster.name, cluster_endpoint=cluster.endpoint, queue_name=aws_side.queue_name,
    controller_role_arn=aws_side.controller_role_arn, depends_on=[aws_side], opts=k8s_opts,
)
node_classes = NodeClasses(
    "node-classes", config, cluster_name=cluster.name, node_role_name=aws_side.node_role_name,
    subnet_tags=aws_side.subnet_selector_tags, security_group_tags=aws_side.security_group_selector_tags,
    depends_on=[karpenter.controller, aws_side], opts=k8s_opts,
)
node_pools = NodePools("node-pools", config, depends_on=[node_classes, karpenter.controller, aws_side], opts=k8s_opts)
if config.settings.odigos.enabled:
    # prepare_image: the provisioner's image_ref once the Provisioner component is composed here;
    # until then the node-tainting Job runs odigos.prepareImage (kubectl).
    odigos = Odigos("odigos", config, cluster_name=cluster.name, pool_names=sorted(node_pools.pools),
                    karpenter_controller=karpenter.controller, prepare_image=None, opts=k8s_opts)

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
