"""Cluster state from a set of loaded objects (pkg/controllers/state/cluster.go, provisioner.go).

Nodes and NodeClaims are joined by provider ID (a Node without one is keyed by its name, as
`UpdateNode` does); a NodeClaim enters state only once it launched (status.providerID). Nodes
marked for deletion are not used; the reschedulable pods bound to them (active, or a terminating
StatefulSet pod; not a DaemonSet's or a static pod: `IsReschedulable`) are scheduled again.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Collection, Iterable

from kubefacts import labels as L
from ..models import ExistingNode, Inputs, NodeClaimObject, Pod
from .objects import PoolDisruption
from .statenode import StateNode


@dataclass
class Cluster:
    """state.Cluster: the StateNodes, and for disruption what upstream reads beside them (each
    NodePool's disruption block, the PDBs, every pod, the SpotToSpotConsolidation gate)."""
    nodes: list = field(default_factory=list)  # [StateNode], in a stable order (by name)
    inputs: Inputs | None = None  # the scheduling core's view (pools, node classes, nodes, bound and pending pods)
    pools: dict = field(default_factory=dict)  # NodePool name -> PoolDisruption (spec.disruption)
    pods: list = field(default_factory=list)  # PodInfo of every pod read
    pdbs: list = field(default_factory=list)  # Pdb
    nodeclaims_given: bool = False  # the objects held NodeClaims (else each managed Node gets a synthesized one)
    spot_to_spot: bool | None = None  # the SpotToSpotConsolidation feature gate, when the objects show it
    spot_to_spot_source: str = ""
    # node name -> NodePods of the pods bound to it, when the reader kept them grouped (a replay's
    # pass cache, which hands the same NodePods while a node's pods are the same); None: group afresh.
    node_pods: dict | None = None

    def pool_of(self, node: StateNode) -> PoolDisruption | None:
        """The disruption block of the NodePool owning this StateNode, or None."""
        return self.pools.get(node.labels.get(L.NODEPOOL, ""))

    def active(self) -> list:
        return [n for n in self.nodes if not n.marked_for_deletion]

    def deleting(self) -> list:
        return [n for n in self.nodes if n.marked_for_deletion]


@dataclass(frozen=True, eq=False)
class NodePods:
    """The pods bound to one node, as group_pods finds them in a Cluster: `infos` its PodInfos in
    the order of Cluster.pods (what pods_by_node gives for the node),
    `models` for each of them the last of Inputs.bound_pods with its name (None when there is
    none), `bound` the Inputs.bound_pods bound to the node in their order, and `order` a number
    for each of `bound`, increasing along Inputs.bound_pods over all nodes (their indices, or any
    numbers in the same order). Read-only: the lists are shared by the passes that keep them."""
    infos: list
    models: list
    bound: list
    order: list


def pods_by_node(snap: Cluster) -> dict:
    """node name -> the PodInfos bound to it, in the order of Cluster.pods."""
    out: dict = {}
    for pod in snap.pods:
        if pod.node_name:
            out.setdefault(pod.node_name, []).append(pod)
    return out


def group_pods(snap: Cluster) -> dict:
    """node name -> NodePods, for every node name a pod is bound to: what Cluster.node_pods holds
    when a reader kept it (read afresh, for tests and for a reader that starts over)."""
    assert snap.inputs is not None
    models = {p.name: p for p in snap.inputs.bound_pods}
    infos = pods_by_node(snap)
    bound: dict = {}
    for i, pod in enumerate(snap.inputs.bound_pods):
        entry = bound.setdefault(pod.node_name, ([], []))
        entry[0].append(pod)
        entry[1].append(i)
    return {name: NodePods(infos.get(name, []), [models.get(p.name) for p in infos.get(name, [])],
                           *bound.get(name, ([], [])))
            for name in dict.fromkeys([*infos, *bound])}


def build_cluster(nodes: Iterable[ExistingNode], nodeclaims: Iterable[NodeClaimObject]) -> Cluster:
    by_id: dict = {}
    for node in nodes:
        by_id[node.provider_id or node.name] = StateNode(node=node)
    for claim in nodeclaims:
        if not claim.provider_id:
            continue  # not launched: not cluster state yet
        state = by_id.get(claim.provider_id)
        if state is None and claim.node_name and claim.node_name in by_id and by_id[claim.node_name].nodeclaim is None:
            state = by_id[claim.node_name]  # a Node without spec.providerID, named in the NodeClaim
        if state is None:
            by_id[claim.provider_id] = StateNode(nodeclaim=claim)
        else:
            state.nodeclaim = claim
    return Cluster(sorted(by_id.values(), key=lambda n: n.name))


def is_reschedulable(pod: Pod) -> bool:
    active = not pod.terminating
    return ((active or (pod.terminating and "StatefulSet" in pod.owner_kinds))
            and "DaemonSet" not in pod.owner_kinds and "Node" not in pod.owner_kinds)


def rescheduled_pods(bound_pods: Iterable[Pod], deleting_names: Collection[str]) -> list:
    """Pods of nodes being deleted, as pending pods (their nodeName cleared)."""
    return [replace(p, node_name=None) for p in bound_pods if p.node_name in deleting_names and is_reschedulable(p)]
