"""The kinds the advisor lists and watches, and how to reach each through the API."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    """One watched resource. `group` is "" for the core API; custom resources are cluster-scoped."""

    kind: str
    group: str
    version: str
    plural: str
    # An optional kind may not be served at all (its CRD absent, or an older Karpenter): a 404 on
    # list counts as "none of them" instead of keeping the advisor unready.
    optional: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def custom(self) -> bool:
        return self.group not in ("", "apps", "policy")


POD = Kind("Pod", "", "v1", "pods")
NODE = Kind("Node", "", "v1", "nodes")
DAEMONSET = Kind("DaemonSet", "apps", "v1", "daemonsets")
NODEPOOL = Kind("NodePool", "karpenter.sh", "v1", "nodepools")
NODECLAIM = Kind("NodeClaim", "karpenter.sh", "v1", "nodeclaims")
EC2NODECLASS = Kind("EC2NodeClass", "karpenter.k8s.aws", "v1", "ec2nodeclasses")
# NodeOverlays change what instance types offer (Odigos' k8s-virtual-device mount method adds its
# device through one): without them, pods needing such a resource would look unschedulable.
NODEOVERLAY = Kind("NodeOverlay", "karpenter.sh", "v1alpha1", "nodeoverlays", optional=True)

# PodDisruptionBudgets only matter to the consolidation what-if (a PDB allowing no eviction
# keeps its pods' nodes); namespaced, in the policy group.
PDB = Kind("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets")

# Every kind the plan needs: readiness waits for a first full list of each, because planning
# with (say) NodePools not listed yet would call every pending pod unschedulable.
WATCHED: tuple[Kind, ...] = (NODEPOOL, EC2NODECLASS, NODEOVERLAY, NODECLAIM, NODE, DAEMONSET, POD, PDB)
