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
    # Namespaced kinds are listed across all namespaces; their objects must name one.
    namespaced: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def custom(self) -> bool:
        return self.group not in ("", "apps", "policy", "storage.k8s.io")


POD = Kind("Pod", "", "v1", "pods", namespaced=True)
NODE = Kind("Node", "", "v1", "nodes")
DAEMONSET = Kind("DaemonSet", "apps", "v1", "daemonsets", namespaced=True)
NODEPOOL = Kind("NodePool", "karpenter.sh", "v1", "nodepools")
NODECLAIM = Kind("NodeClaim", "karpenter.sh", "v1", "nodeclaims")
EC2NODECLASS = Kind("EC2NodeClass", "karpenter.k8s.aws", "v1", "ec2nodeclasses")
# NodeOverlays change what instance types offer (Odigos' k8s-virtual-device mount method adds its
# device through one): without them, pods needing such a resource would look unschedulable.
NODEOVERLAY = Kind("NodeOverlay", "karpenter.sh", "v1alpha1", "nodeoverlays", optional=True)

# PodDisruptionBudgets only matter to the consolidation what-if (a PDB allowing no eviction
# keeps its pods' nodes); namespaced, in the policy group.
PDB = Kind("PodDisruptionBudget", "policy", "v1", "poddisruptionbudgets", namespaced=True)

# Volume topology (volumetopology.go) and attach limits (volumeusage.go), as Karpenter reads them:
# a pod's claims, the volumes they are bound to, the StorageClasses of unbound ones, and each
# node's CSINode. Without them every pod with a claim would be ignored as "claim not found".
PVC = Kind("PersistentVolumeClaim", "", "v1", "persistentvolumeclaims", namespaced=True)
PV = Kind("PersistentVolume", "", "v1", "persistentvolumes")
STORAGECLASS = Kind("StorageClass", "storage.k8s.io", "v1", "storageclasses")
CSINODE = Kind("CSINode", "storage.k8s.io", "v1", "csinodes")

# Every kind the plan needs: readiness waits for a first full list of each, because planning
# with (say) NodePools not listed yet would call every pending pod unschedulable.
WATCHED: tuple[Kind, ...] = (NODEPOOL, EC2NODECLASS, NODEOVERLAY, NODECLAIM, NODE, DAEMONSET, POD, PDB,
                             PVC, PV, STORAGECLASS, CSINODE)
