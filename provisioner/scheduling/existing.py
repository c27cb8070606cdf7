"""Existing nodes as the scheduler's set-up sees them (scheduler.go NewScheduler, existingnode.go
NewExistingNode), derived once per node and its bound pods.

A disruption pass simulates scheduling once per candidate set over the same cluster less a few
nodes; what each node contributes (its label requirements, DaemonSet overhead, what is left of
its allocatable, host ports, attached volumes, the required anti-affinity of its pods) does not
change between those simulations, so it is prepared once and shared by all of them, as upstream
shares the scheduler's set-up across a pass (kubernetes-sigs/karpenter PR #3271).
"""
from __future__ import annotations

from .. import labels as L
from .daemons import overhead_for_node
from .nodeclaim import ExistingTarget, hostname_requirement
from .requirements import Requirements
from .resources import add


class PreparedNode:
    """One existing node, its bound pods, and what the scheduler derives from them. Read-only
    once built: targets made from it share its requirement objects and remaining vector (both
    are replaced, never changed in place, when a pod lands)."""
    __slots__ = ("node", "bound", "requirements", "label_requirements", "available", "schedulable", "ports",
                 "specs", "anti", "positions", "sort_key", "_vector")

    def __init__(self, node, bound, daemonsets, positions=None):
        """bound: the pods bound to this node; positions: each pod's index in the flat list of
        bound pods the run was given (it orders the anti-affinity groups they create)."""
        self.node, self.bound = node, list(bound)
        used: dict = {}
        daemon_used: dict = {}
        ports = []
        for pod in self.bound:
            used = add(used, pod.spec.requests)
            ports.extend(pod.spec.host_ports)
            if pod.daemon:
                daemon_used = add(daemon_used, pod.spec.requests)
        daemon_left, daemon_ports = overhead_for_node(daemonsets, node.labels, node.taints, daemon_used)
        self.available = {k: v - used.get(k, 0) - daemon_left.get(k, 0) for k, v in node.allocatable.items()}
        self.schedulable = all(v >= 0 for v in self.available.values())
        self.ports = tuple(ports) + tuple(daemon_ports)
        self.label_requirements = Requirements.from_labels(node.labels)
        reqs = self.label_requirements.copy()
        reqs.add(hostname_requirement(node.labels[L.HOSTNAME]))
        self.requirements = reqs
        self.specs = [p.spec for p in self.bound]
        self.positions = list(range(len(self.bound)) if positions is None else positions)
        positions = self.positions
        self.anti = [(pos, pod.spec, term) for pos, pod in zip(positions, self.bound) for term in pod.spec.anti_affinity]
        # sortExistingNodes: initialized nodes first, then by name.
        self.sort_key = (not getattr(node, "initialized", True), node.name)
        self._vector = (None, None)

    def with_pods(self, pods, positions, daemonsets) -> "PreparedNode":
        """This node after more pods were bound to it (a later provisioning round)."""
        return PreparedNode(self.node, self.bound + list(pods), daemonsets, self.positions + list(positions))

    def remaining(self, dims: tuple) -> list:
        """What is left of the allocatable, per scheduling dimension (shared: never mutated)."""
        have, vector = self._vector
        if have != dims:
            vector = [self.available.get(d, 0) for d in dims]
            self._vector = (dims, vector)
        return vector

    def target(self, dims: tuple, index: int) -> ExistingTarget:
        node = self.node
        target = ExistingTarget(node, self.requirements, self.remaining(dims), self.schedulable, self.ports, index)
        target.volume_limits = dict(getattr(node, "volume_limits", None) or {})
        for pod in self.bound:
            for driver, claim in pod.volumes:
                target.volume_usage.setdefault(driver, set()).add(claim)
        return target


def prepare_nodes(nodes, bound_pods, daemonsets) -> list:
    """A PreparedNode per node, its pods taken from `bound_pods` (pods bound elsewhere ignored)."""
    by_node: dict = {}
    for pos, pod in enumerate(bound_pods):
        by_node.setdefault(pod.node_name, []).append((pos, pod))
    out = []
    for node in nodes:
        mine = by_node.get(node.name, [])
        out.append(PreparedNode(node, [p for _, p in mine], daemonsets, [pos for pos, _ in mine]))
    return out
