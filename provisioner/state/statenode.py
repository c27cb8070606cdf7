"""One node of cluster state: a Node, its NodeClaim, or both (pkg/controllers/state/statenode.go).

For the scheduler, `node` and `nodeclaim` are the loader's models (None when the state was read
with load_cluster(facts=True): then a NodeClaim without a Node is a StateNode of `claim` alone). A StateNode read for disruption
(provisioner.state.reader) also carries the Node's metadata and Ready condition (`meta`), the
NodeClaim's conditions and deletion (`claim`) and the pods bound to it (`pods`); its name and
labels are then the Node's, as upstream's Name() and Labels() are for a registered node.

A NodeClaim that launched (it has a providerID) but has no Node yet is in-flight capacity: the
scheduler sees it with the NodeClaim's labels, taints and allocatable. A Karpenter-managed node
that is registered but not initialized ignores its startup taints and the known ephemeral ones,
and takes any resource its Node still reports as zero (an extended resource before its device
plugin starts) from the NodeClaim. Unmanaged nodes are always registered and initialized.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

from kubefacts import labels as L
from ..models import ExistingNode, NodeClaimObject
from ..scheduling.taints import Taint
from .objects import NodeClaimInfo, NodeInfo

# scheduling.KnownEphemeralTaints (exact key/value/effect) and KnownEphemeralTaintKeyPrefixes.
KNOWN_EPHEMERAL_TAINTS = (
    Taint("node.kubernetes.io/not-ready", "", "NoSchedule"), Taint("node.kubernetes.io/not-ready", "", "NoExecute"),
    Taint("node.kubernetes.io/unreachable", "", "NoSchedule"),
    Taint("node.cloudprovider.kubernetes.io/uninitialized", "true", "NoSchedule"),
    Taint("karpenter.sh/unregistered", "", "NoExecute"),
)
EPHEMERAL_TAINT_PREFIXES = ("readiness.k8s.io/",)


def _matches(a: Taint, b: Taint) -> bool:
    """corev1.Taint.MatchTaint: same key and effect (the value is not compared)."""
    return a.key == b.key and a.effect == b.effect


def is_known_ephemeral(taint: Taint) -> bool:
    return any(_matches(t, taint) for t in KNOWN_EPHEMERAL_TAINTS) or taint.key.startswith(EPHEMERAL_TAINT_PREFIXES)


@dataclass(eq=False)
class StateNode:
    node: ExistingNode | None = None
    nodeclaim: NodeClaimObject | None = None
    meta: NodeInfo | None = None  # the Node's disruption facts (set by state.reader)
    claim: NodeClaimInfo | None = None  # the NodeClaim's disruption facts (set by state.reader)
    pods: list = field(default_factory=list)  # PodInfo of the pods bound to it (set by state.reader)

    @property
    def managed(self) -> bool:
        return self.nodeclaim is not None

    @property
    def registered(self) -> bool:
        if self.managed:
            return self.node is not None and self.node.labels.get(L.REGISTERED) == "true"
        return True

    @property
    def initialized(self) -> bool:
        if self.managed:
            return self.node is not None and self.node.labels.get(L.INITIALIZED) == "true"
        return True

    @property
    def name(self) -> str:
        if self.meta is not None:
            return self.meta.name
        if self.node is None or (self.managed and not self.registered):
            # No NodeClaim model: facts mode, where a NodeClaim without its Node is `claim` alone.
            return self.nodeclaim.name if self.nodeclaim is not None else cast(NodeClaimInfo, self.claim).name
        return self.node.name

    @property
    def labels(self) -> dict:
        if self.meta is not None:
            return self.meta.labels
        if self.nodeclaim is None and self.claim is not None:
            return self.claim.labels  # facts mode: a NodeClaim without its Node
        if self.node is None or (self.managed and not self.registered):
            nodeclaim = cast(NodeClaimObject, self.nodeclaim)  # no registered Node: the NodeClaim stands for it
            labels = dict(nodeclaim.labels)
            labels.setdefault(L.HOSTNAME, nodeclaim.node_name or nodeclaim.name)
            return labels
        return self.node.labels

    @property
    def taints(self) -> tuple:
        if self.node is None or (self.managed and not self.registered):
            taints = cast(NodeClaimObject, self.nodeclaim).taints  # no registered Node: the NodeClaim stands for it
        else:
            taints = self.node.taints
        nodeclaim = self.nodeclaim
        if nodeclaim is not None and not self.initialized:  # managed, not initialized
            startup = nodeclaim.startup_taints
            taints = tuple(t for t in taints if not is_known_ephemeral(t) and not any(_matches(s, t) for s in startup))
        return taints

    def _resources(self, which: str) -> dict:
        if not self.initialized and self.nodeclaim is not None:
            claimed = getattr(self.nodeclaim, which)
            if self.node is None:
                return dict(claimed)
            out = dict(getattr(self.node, which))
            for name, value in claimed.items():
                if not out.get(name):  # zero or absent on the Node: the NodeClaim's figure
                    out[name] = value
            return out
        return dict(getattr(self.node, which))

    @property
    def allocatable(self) -> dict:
        return self._resources("allocatable")

    @property
    def capacity(self) -> dict:
        return self._resources("capacity")

    @property
    def annotations(self) -> dict:
        return self.meta.annotations if self.meta is not None else {}

    @property
    def conditions(self) -> dict:
        """The Node's status conditions, type -> status."""
        return self.meta.conditions if self.meta is not None else {}

    @property
    def ready(self) -> bool | None:
        """The Node's Ready condition (None: not known)."""
        return self.meta.ready if self.meta is not None else None

    @property
    def deleting(self) -> bool:
        """The Node's deletionTimestamp is set."""
        if self.meta is not None:
            return self.meta.deleting
        return self.node is not None and self.node.deleting

    @property
    def marked_for_deletion(self) -> bool:
        """MarkedForDeletion / Deleted(): the NodeClaim is deleting/terminating, or the Node is
        deleting (for a StateNode read for disruption, either; else the NodeClaim's when managed)."""
        if self.meta is not None or self.claim is not None:
            claim = self.claim
            return self.deleting or (claim is not None and (claim.deleting or claim.terminating))
        if self.nodeclaim is not None:
            return self.nodeclaim.deleting
        return self.node is not None and self.node.deleting

    def as_existing(self) -> ExistingNode:
        """What the scheduler places pods on (scheduling.ExistingNode)."""
        node = self.node
        return ExistingNode(self.name, self.labels, self.taints, self.allocatable, self.capacity,
                            provider_id=node.provider_id if node else cast(NodeClaimObject, self.nodeclaim).provider_id,
                            deleting=self.marked_for_deletion, initialized=self.initialized)
