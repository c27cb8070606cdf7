"""PodDisruptionBudget limits as Karpenter reads them (pkg/utils/pdb/pdb.go): a pod is evictable
when the one PDB selecting it allows a disruption now; several PDBs on one pod block it (the
eviction API refuses); pods Karpenter does not evict are never blocked."""
from __future__ import annotations

from typing import Iterable

from kubefacts.duration import go_seconds_or_none

from ..state.objects import DO_NOT_DISRUPT, Pdb, PodInfo


def is_active(pod: PodInfo) -> bool:
    """pod.IsActive: neither terminal nor terminating."""
    return not pod.terminal and not pod.terminating


def do_not_disrupt(pod: PodInfo) -> bool:
    """pod.IsDoNotDisruptActive. A duration value ("10m") protects the pod for that long after it
    started; offline it is taken as still active (stated among the assumptions)."""
    value = pod.annotations.get(DO_NOT_DISRUPT)
    if value is None:
        return False
    if value == "true":
        return True
    return go_seconds_or_none(value) is not None  # an unparsable value is ignored, as upstream


def owned_by_node(pod: PodInfo) -> bool:
    return pod.owned_by("v1", "Node")  # mirror (static) pods


def owned_by_daemonset(pod: PodInfo) -> bool:
    return pod.owned_by("apps/v1", "DaemonSet")


def is_reschedulable(pod: PodInfo) -> bool:
    """pod.IsReschedulable: pods that need a place elsewhere when their node goes."""
    return ((is_active(pod) or (pod.owned_by("apps/v1", "StatefulSet") and pod.terminating))
            and not owned_by_daemonset(pod) and not owned_by_node(pod))


def is_evictable(pod: PodInfo) -> bool:
    """pod.IsEvictable: pods the termination controller would call the eviction API on."""
    return is_active(pod) and not pod.tolerates_disrupted and not owned_by_node(pod) and not do_not_disrupt(pod)


def is_disruptable(pod: PodInfo) -> bool:
    """pod.IsDisruptable: an active pod with karpenter.sh/do-not-disrupt blocks its node."""
    return not is_active(pod) or not do_not_disrupt(pod)


class Limits:
    def __init__(self, pdbs: Iterable[Pdb]) -> None:
        self.pdbs = list(pdbs)

    def _matching(self, pod: PodInfo) -> list[Pdb]:
        return [p for p in self.pdbs if p.namespace == pod.namespace and p.selector.matches(pod.labels)]

    def blocking(self, pod: PodInfo, fully: bool = False) -> list[Pdb]:
        """The PDBs that stop this pod's eviction (isEvictable); [] when it can be evicted."""
        if not self.pdbs:  # nothing can block it (the common case in a pass's every pod check)
            return []
        if not is_evictable(pod):
            return []
        matching = self._matching(pod)
        if len(matching) > 1:
            return matching
        for pdb in matching:
            if pdb.always_evict_unhealthy and pod.ready_false:
                return []
            if (pdb.fully_blocking if fully else pdb.disruptions_allowed == 0):
                return [pdb]
        return []

    def can_evict_pods(self, pods: Iterable[PodInfo]) -> tuple[PodInfo, list[Pdb]] | None:
        """CanEvictPods: None when every pod is evictable, else the first blocked pod and its PDBs."""
        for pod in pods:
            if blocked := self.blocking(pod):
                return pod, blocked
        return None

    def is_currently_reschedulable(self, pod: PodInfo) -> bool:
        """IsCurrentlyReschedulable: reschedulable, not protected, not behind a fully blocking PDB."""
        return is_reschedulable(pod) and is_disruptable(pod) and not self.blocking(pod, fully=True)
