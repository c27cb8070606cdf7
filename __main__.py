"""karpenter-platform: everything Karpenter needs on an existing EKS cluster, one stack per environment.

This file only loads the typed config and composes components; all logic lives in components/.
"""

from pathlib import Path

import pulumi

from components.aws import KarpenterAws
from components.cluster import ExistingCluster
from components.platform import load_from_pulumi
from components.karpenter import Karpenter
from components.kubernetes import cluster_provider
from components.nodeclasses import NodeClasses
from components.nodeoverlays import NodeOverlays
from components.nodepools import NodePools
from components.odigos import Odigos
from components.provisioner import Provisioner

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
    subnet_terms=aws_side.subnet_selector_terms, security_group_tags=aws_side.security_group_selector_tags,
    depends_on=[karpenter.controller, aws_side], opts=k8s_opts,
)
node_pools = NodePools("node-pools", config, depends_on=[node_classes, karpenter.controller, aws_side], opts=k8s_opts)
node_overlays = NodeOverlays("node-overlays", config, depends_on=[karpenter.controller], opts=k8s_opts)
provisioner = Provisioner("provisioner", config, cluster, opts=k8s_opts) if config.settings.provisioner.enabled else None
if config.settings.odigos.enabled:
    # The node-tainting Job runs the provisioner image when it is built here, else odigos.prepareImage.
    # With a startup taint (host-path/csi) the release waits for the NodePools: the Odigos guide
    # puts the taint on the NodePools before the integration is turned on (docs/odigos.md).
    odigos = Odigos("odigos", config, cluster_name=cluster.name, pool_names=sorted(node_pools.pools),
                    karpenter_controller=karpenter.controller, node_pools=node_pools,
                    prepare_image=provisioner.image_ref if provisioner is not None else None, opts=k8s_opts)

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
if provisioner is not None:
    pulumi.export("provisionerImage", provisioner.image_ref)
    pulumi.export("provisionerRepositoryUrl", provisioner.repository_url)
