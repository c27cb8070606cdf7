"""The disruption facts of cluster objects (what the scheduling loader leaves out): a NodePool's
`disruption` block, Node and NodeClaim conditions and deletion, pod annotations, owners and
priority, PodDisruptionBudgets. Read by provisioner.state.reader; held by Cluster and StateNode.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kubefacts.duration import go_nanoseconds, go_seconds_or_none

from ..models import LabelSelector

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
DISRUPTED_TAINT_KEY = "karpenter.sh/disrupted"
POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced")
REASONS = ("Underutilized", "Empty", "Drifted")


def go_duration(text: str) -> float | None:
    """Seconds of a Go duration string ("1h30m", "90s"), or None when time.ParseDuration would
    refuse it (not one, or beyond its int64 nanoseconds)."""
    return go_seconds_or_none(text)


def duration_error(text: str, example: str) -> str:
    """Go's reason for refusing `text`, with an example of what it reads."""
    try:
        go_nanoseconds(text)
    except ValueError as err:
        return f"{err} (expected e.g. {example})"
    return f"invalid duration {text!r} (expected e.g. {example})"


@dataclass(frozen=True)
class Budget:
    nodes: str  # "10%" or "3"
    reasons: tuple | None  # None: every reason
    schedule: str | None = None
    duration: str | None = None
    defaulted: bool = field(default=False, compare=False)  # the CRD's default: the NodePool sets no budgets


@dataclass
class PoolDisruption:
    """spec.disruption of a NodePool, with the CRD's defaults."""
    policy: str = "WhenEmptyOrUnderutilized"
    consolidate_after: float | None = 0.0  # seconds; None is "Never"
    consolidate_after_text: str = "0s"
    budgets: tuple = (Budget("10%", None, defaulted=True),)
    static: bool = False  # spec.replicas is set


@dataclass
class PodInfo:
    name: str  # namespace/name
    namespace: str
    node_name: str | None
    labels: dict
    annotations: dict
    owners: tuple  # (apiVersion, kind)
    priority: int | None
    terminal: bool
    terminating: bool
    ready_false: bool  # condition Ready=False
    tolerates_disrupted: bool

    def owned_by(self, api_version: str, kind: str) -> bool:
        return (api_version, kind) in self.owners


@dataclass
class NodeClaimInfo:
    """A NodeClaim's disruption facts (its status conditions as upstream's NodeClaim controllers set them)."""
    name: str
    deleting: bool = False
    terminating: bool = False  # condition InstanceTerminating=True
    # Condition Consolidatable is True; the controller clears it (it is absent) while
    # consolidateAfter runs (pkg/controllers/nodeclaim/disruption/consolidation.go). None: unknown.
    consolidatable: bool | None = None
    last_pod_event: str | None = None  # status.lastPodEventTime
    synthesized: bool = False  # no NodeClaim in the snapshot: taken from the Node
    # Condition Drifted=True (pkg/controllers/nodeclaim/disruption/drift.go): its lastTransitionTime
    # ("" when the condition has none), which orders drift candidates; None: not drifted.
    drifted: str | None = None
    conditions: dict = field(default_factory=dict)  # every status condition: type -> status
    # Read only by load_cluster(facts=True) (drift counts nodes from them): the NodeClaim's own
    # labels and annotations (its nodepool-hash), spec.nodeClassRef.name, and whether it launched
    # (condition Launched=True, or without that condition a status.providerID).
    labels: dict = field(default_factory=dict)
    annotations: dict = field(default_factory=dict)
    nodeclass: str | None = None
    launched: bool = True


@dataclass
class NodeInfo:
    """A Node's metadata and conditions as disruption reads them."""
    name: str
    labels: dict
    annotations: dict
    deleting: bool  # metadata.deletionTimestamp is set
    ready: bool | None  # None: no Ready condition in the snapshot
    conditions: dict = field(default_factory=dict)  # every status condition: type -> status


@dataclass
class Pdb:
    name: str  # namespace/name
    namespace: str
    selector: LabelSelector
    disruptions_allowed: int
    fully_blocking: bool
    always_evict_unhealthy: bool
    has_status: bool


