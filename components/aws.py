"""The AWS side of Karpenter: controller and node roles, access entry, discovery tags, interruption queue.

Foundation stage: exposes the names the Kubernetes side needs; the resources themselves are
declared by the AWS-side work (issue #3) behind this same interface.
"""

from __future__ import annotations

import pulumi

from .cluster import ExistingCluster
from .config import PlatformConfig


class KarpenterAws(pulumi.ComponentResource):
    """Outputs: `controller_role_arn`, `node_role_name`, `node_role_arn`, `queue_name` (None when
    interruption handling is off)."""

    def __init__(self, name: str, config: PlatformConfig, cluster: ExistingCluster, opts: pulumi.ResourceOptions | None = None):
        super().__init__("karpenter-platform:index:KarpenterAws", name, None, opts)
        self.node_role_name = cluster.name.apply(lambda n: f"KarpenterNodeRole-{n}")
        self.node_role_arn = pulumi.Output.all(cluster.partition, cluster.account_id, self.node_role_name).apply(
            lambda a: f"arn:{a[0]}:iam::{a[1]}:role/{a[2]}"
        )
        self.controller_role_arn = pulumi.Output.all(cluster.partition, cluster.account_id, cluster.name).apply(
            lambda a: f"arn:{a[0]}:iam::{a[1]}:role/{a[2]}-karpenter"
        )
        self.queue_name = cluster.name if config.settings.karpenter.interruption_handling else None
        self.register_outputs({})
