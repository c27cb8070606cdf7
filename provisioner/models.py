"""Core models: what the scheduler reasons about, free of YAML and Kubernetes clients.

Quantities are integers in milli-units (see quantity.py). Requirements are scheduling.Requirements.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .scheduling.requirements import Requirements
from .scheduling.taints import HostPort, Taint, Toleration

ALL_NAMESPACES = None  # an affinity term whose namespaceSelector is {} selects every namespace


@dataclass(frozen=True)
class LabelSelector:
    """metav1.LabelSelector; `nothing` models a nil selector, which selects no pod."""
    match_labels: tuple = ()
    match_expressions: tuple = ()  # (key, operator, frozenset(values))
    nothing: bool = False

    def matches(self, labels: dict) -> bool:
        if self.nothing:
            return False
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        for key, operator, values in self.match_expressions:
            present = key in labels
            if operator == "In" and not (present and labels[key] in values):
                return False
            if operator == "NotIn" and present and labels[key] in values:
                return False
            if operator == "Exists" and not present:
                return False
            if operator == "DoesNotExist" and present:
                return False
        return True

    def with_expression(self, key: str, operator: str, values) -> "LabelSelector":
        return LabelSelector(self.match_labels, self.match_expressions + ((key, operator, frozenset(values)),),
                             self.nothing)


@dataclass(frozen=True)
class TopologySpreadConstraint:
    topology_key: str
    max_skew: int
    when_unsatisfiable: str  # DoNotSchedule | ScheduleAnyway
    selector: LabelSelector
    min_domains: int | None = None
    node_affinity_policy: str = "Honor"
    node_taints_policy: str = "Ignore"
    match_label_keys: tuple = ()


@dataclass(frozen=True)
class PodAffinityTerm:
    topology_key: str
    selector: LabelSelector
    namespaces: frozenset | None  # None: all namespaces


@dataclass(eq=False)
class PodSpec:
    """Everything that decides where a pod may run; replicas of one controller share one object."""
    namespace: str
    labels: dict
    requests: dict  # resource name -> milli-units, pods=1000 included
    node_selector: dict = field(default_factory=dict)
    required_terms: tuple = ()  # tuple[Requirements], OR-ed
    preferred_terms: tuple = ()  # tuple[(weight, Requirements)]
    tolerations: tuple = ()  # tuple[Toleration]
    spread: tuple = ()  # tuple[TopologySpreadConstraint]
    affinity: tuple = ()  # required pod affinity terms
    affinity_preferred: tuple = ()  # (weight, PodAffinityTerm)
    anti_affinity: tuple = ()
    anti_affinity_preferred: tuple = ()
    host_ports: tuple = ()  # tuple[HostPort]
    volume_alternatives: tuple = ()  # Requirements alternatives from its volumes' topology (volumetopology.go)
    key: tuple = ()  # canonical content, so equal specs from different controllers group together

    @property
    def has_anti_affinity(self) -> bool:
        return bool(self.anti_affinity or self.anti_affinity_preferred)


@dataclass(eq=False)
class Pod:
    name: str  # "<namespace>/<name>"
    spec: PodSpec
    node_name: str | None = None
    daemon: bool = False  # owned by a DaemonSet (only meaningful for pods bound to existing nodes)
    owner_kinds: frozenset = frozenset()  # kinds of its ownerReferences (IsOwnedBy...)
    terminating: bool = False  # metadata.deletionTimestamp is set
    volumes: frozenset = frozenset()  # (CSI driver, "namespace/claim"): what counts against CSINode limits


@dataclass(frozen=True)
class NodeClassRef:
    group: str
    kind: str
    name: str


@dataclass(eq=False)
class NodePool:
    name: str
    node_class_ref: NodeClassRef
    requirements: Requirements = field(default_factory=Requirements)
    labels: dict = field(default_factory=dict)
    taints: tuple = ()
    startup_taints: tuple = ()
    limits: dict = field(default_factory=dict)
    weight: int = 0
    replicas: int | None = None
    # The team's declared largest pod (kubefacts.platform.LARGEST_POD_ANNOTATION): (resource,
    # milli-units) pairs; () when the pool declares none (or a malformed one, the pack's to refuse).
    largest_pod: tuple = ()


@dataclass(frozen=True)
class KubeletConfig:
    max_pods: int | None = None
    pods_per_core: int | None = None
    kube_reserved: tuple = ()  # (resource, milli-units)
    system_reserved: tuple = ()
    eviction_hard: tuple = ()  # (signal, raw value: quantity or percent)


@dataclass(frozen=True)
class NodeClass:
    name: str
    ami_family: str = "AL2023"
    kubelet: KubeletConfig = KubeletConfig()
    root_volume: int | None = None  # milli-bytes
    instance_store_policy: str | None = None
    zones: frozenset | None = None  # from status.subnets, when the object came from a cluster


@dataclass(eq=False)
class NodeOverlay:
    name: str
    requirements: Requirements
    weight: int = 0
    price: str | None = None
    price_adjustment: str | None = None
    capacity: dict = field(default_factory=dict)


@dataclass(eq=False)
class ExistingNode:
    name: str
    labels: dict
    taints: tuple
    allocatable: dict
    capacity: dict
    provider_id: str = ""
    deleting: bool = False  # metadata.deletionTimestamp is set
    initialized: bool = True  # see state.StateNode: unmanaged nodes are always initialized
    volume_limits: dict = field(default_factory=dict)  # CSI driver -> attachable volumes (CSINode)


@dataclass(eq=False)
class NodeClaimObject:
    """A karpenter.sh/v1 NodeClaim read from the cluster (not one the scheduler plans)."""
    name: str
    labels: dict
    taints: tuple
    startup_taints: tuple
    capacity: dict
    allocatable: dict
    provider_id: str = ""
    node_name: str = ""
    deleting: bool = False  # deletionTimestamp set or the InstanceTerminating condition true


@dataclass(frozen=True)
class VolumeClaim:
    """A PersistentVolumeClaim: bound to a volume, or waiting for one of a StorageClass."""
    namespace: str
    name: str
    volume_name: str = ""
    storage_class: str = ""
    deleting: bool = False
    lost: bool = False
    bind_completed: bool = True


@dataclass(frozen=True)
class Volume:
    """A PersistentVolume: its required node affinity terms (OR-ed), and whether it is local/hostPath."""
    name: str
    terms: tuple = ()  # tuple[Requirements]
    local: bool = False
    deleting: bool = False
    driver: str = ""  # the CSI driver (spec.csi.driver, or the in-tree plugin's CSI name)


@dataclass(frozen=True)
class StorageClass:
    name: str
    binding_mode: str = "Immediate"
    allowed_topologies: tuple = ()  # tuple[Requirements], OR-ed
    provisioner: str = ""


@dataclass(eq=False)
class DaemonSet:
    name: str  # "<namespace>/<name>"
    spec: PodSpec


@dataclass(eq=False)
class Offering:
    """Where and at what price a type can launch: a catalog fact and what the scheduler reads."""
    zone: str
    capacity_type: str
    price: float
    available: bool = True
    price_is_estimate: bool = False


@dataclass(eq=False)
class InstanceType:
    name: str
    requirements: Requirements
    capacity: dict
    overhead: dict
    offerings: list
    allocatable: dict = field(default_factory=dict)

    def __post_init__(self):
        if not self.allocatable:
            self.allocatable = {k: v - self.overhead.get(k, 0) for k, v in self.capacity.items()}


@dataclass
class Inputs:
    """What the loader found in a set of Kubernetes objects."""
    nodepools: list = field(default_factory=list)
    nodeclasses: dict = field(default_factory=dict)
    pods: list = field(default_factory=list)  # pending pods to place
    bound_pods: list = field(default_factory=list)  # pods already on existing nodes
    daemonsets: list = field(default_factory=list)
    nodes: list = field(default_factory=list)
    overlays: list = field(default_factory=list)
    namespaces: dict = field(default_factory=dict)  # name -> labels
    warnings: list = field(default_factory=list)
    nodeclaims: list = field(default_factory=list)  # NodeClaimObject: launched capacity (cluster state)
    ignored: list = field(default_factory=list)  # (pod name, reason): pods Karpenter does not provision for
    claims: dict = field(default_factory=dict)  # (namespace, name) -> VolumeClaim
    volumes: dict = field(default_factory=dict)  # name -> Volume
    storage_classes: dict = field(default_factory=dict)  # name -> StorageClass
    volume_limits: dict = field(default_factory=dict)  # node name -> {CSI driver: count} (CSINode)


__all__ = [
    "ALL_NAMESPACES", "LabelSelector", "TopologySpreadConstraint", "PodAffinityTerm", "PodSpec", "Pod",
    "NodeClassRef", "NodePool", "KubeletConfig", "NodeClass", "NodeOverlay", "ExistingNode", "DaemonSet",
    "NodeClaimObject", "VolumeClaim", "Volume", "StorageClass",
    "Offering", "InstanceType", "Inputs", "HostPort", "Taint", "Toleration",
]
