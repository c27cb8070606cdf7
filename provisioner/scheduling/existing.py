"""Existing nodes as the scheduler's set-up sees them (scheduler.go NewScheduler, existingnode.go
NewExistingNode), derived once per node and its bound pods.

A disruption pass simulates scheduling once per candidate set over the same cluster less a few
nodes; what each node contributes (its label requirements, DaemonSet overhead, what is left of
its allocatable, host ports, attached volumes, the required anti-affinity of its pods) does not
change between those simulations, so it is prepared once and shared by all of them, as upstream
shares the scheduler's set-up across a pass (kubernetes-sigs/karpenter PR #3271).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from kubefacts import labels as L
from ..memo import forget_absent, remember, same
from .daemons import overhead_for_node
from .nodeclaim import ExistingTarget, hostname_requirement
from .requirements import Requirements
from .resources import total
from .taints import HostPort, Taint

if TYPE_CHECKING:  # provisioner.models imports this package at runtime
    from provisioner.models import DaemonSet, ExistingNode, Pod, PodAffinityTerm, PodSpec

_T = TypeVar("_T")
# Topology.existing's view of a node: (labels, taints, label requirements, bound pod specs)
_Entry = tuple[dict[str, str], tuple[Taint, ...], Requirements, list["PodSpec"]]
# (position, node, spec, term) of a bound pod's required anti-affinity
_Anti = tuple[int, "ExistingNode", "PodSpec", "PodAffinityTerm"]


class PreparedNode:
    """One existing node, its bound pods, and what the scheduler derives from them. Read-only
    once built: targets made from it share its requirement objects and remaining vector (both
    are replaced, never changed in place, when a pod lands)."""
    __slots__ = ("node", "bound", "requirements", "label_requirements", "available", "schedulable", "ports",
                 "specs", "anti", "positions", "sort_key", "_vector", "volumes")
    node: ExistingNode
    bound: list[Pod]
    requirements: Requirements
    label_requirements: Requirements
    available: dict[str, int]
    schedulable: bool
    ports: tuple[HostPort, ...]
    specs: list[PodSpec]
    anti: list[tuple[int, PodSpec, PodAffinityTerm]]
    positions: list[int]
    sort_key: tuple[bool, str]
    _vector: tuple[tuple[str, ...] | None, list[int]]  # (dims, remaining per dim); dims None: not yet built
    volumes: dict[str, frozenset[str]]

    def __init__(self, node: ExistingNode, bound: Iterable[Pod], daemonsets: Sequence[DaemonSet],
                 positions: Iterable[int] | None = None) -> None:
        """bound: the pods bound to this node; positions: each pod's index in the flat list of
        bound pods the run was given (it orders the anti-affinity groups they create)."""
        self.node, self.bound = node, list(bound)
        used = total(pod.spec.requests for pod in self.bound)
        daemon_used = total(pod.spec.requests for pod in self.bound if pod.daemon)
        ports: list[HostPort] = []
        volumes: dict[str, set[str]] = {}
        for pod in self.bound:
            if pod.spec.host_ports:
                ports.extend(pod.spec.host_ports)
            for driver, claim in pod.volumes:
                volumes.setdefault(driver, set()).add(claim)
        daemon_left, daemon_ports = overhead_for_node(daemonsets, node.labels, node.taints, daemon_used)
        self.available = {k: v - used.get(k, 0) - daemon_left.get(k, 0) for k, v in node.allocatable.items()}
        self.schedulable = all(v >= 0 for v in self.available.values())
        self.ports = tuple(ports) + tuple(daemon_ports)
        self.volumes = {driver: frozenset(claims) for driver, claims in volumes.items()}  # CSI driver -> claims attached
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
        self._vector = (None, [])

    def at(self, positions: list[int]) -> "PreparedNode":
        """This node with its pods at other positions in the run's list of bound pods (only the
        order of the anti-affinity groups depends on them)."""
        out = object.__new__(PreparedNode)
        for slot in PreparedNode.__slots__:
            setattr(out, slot, getattr(self, slot))
        out.positions = positions
        if self.anti:
            out.anti = [(pos, pod.spec, term) for pos, pod in zip(positions, self.bound) for term in pod.spec.anti_affinity]
        return out

    def with_pods(self, pods: Iterable[Pod], positions: Iterable[int],
                  daemonsets: Sequence[DaemonSet]) -> "PreparedNode":
        """This node after more pods were bound to it (a later provisioning round)."""
        return PreparedNode(self.node, self.bound + list(pods), daemonsets, self.positions + list(positions))

    def remaining(self, dims: tuple[str, ...]) -> list[int]:
        """What is left of the allocatable, per scheduling dimension (shared: never mutated)."""
        have, vector = self._vector
        if have != dims:
            vector = [self.available.get(d, 0) for d in dims]
            self._vector = (dims, vector)
        return vector

    def target(self, dims: tuple[str, ...], index: int) -> ExistingTarget:
        node = self.node
        target = ExistingTarget(node, self.requirements, self.remaining(dims), self.schedulable, self.ports, index)
        target.volume_limits = dict(getattr(node, "volume_limits", None) or {})
        for driver, claims in self.volumes.items():  # the target adds the claims of pods it takes
            target.volume_usage[driver] = set(claims)
        return target


class PreparedMemo:
    """PreparedNodes kept across runs over a changing cluster (prepare_nodes' memo): one is reused
    while its node reads the same, its pods are the very same objects, and the DaemonSets have
    the same content (by name and PodSpec.key)."""

    def __init__(self) -> None:
        self.daemonsets: tuple[tuple[str, Any], ...] | None = None
        self.nodes: dict[str, tuple[ExistingNode, list[Pod], PreparedNode]] = {}


def _daemonsets_key(daemonsets: Sequence[DaemonSet]) -> tuple[tuple[str, Any], ...] | None:
    keys = tuple((d.name, d.spec.key) for d in daemonsets)
    return keys if all(k for _, k in keys) else None  # a spec without a canonical key: no memo


def prepare_nodes(nodes: Iterable[ExistingNode], bound_pods: Iterable[Pod],
                  daemonsets: Sequence[DaemonSet], memo: PreparedMemo | None = None) -> list[PreparedNode]:
    """A PreparedNode per node, its pods taken from `bound_pods` (pods bound elsewhere ignored);
    `memo`: PreparedNodes of earlier calls, reused where nothing they were made from changed."""
    by_node: dict[str | None, tuple[list[Pod], list[int]]] = {}
    for pos, pod in enumerate(bound_pods):
        mine = by_node.get(pod.node_name)
        if mine is None:
            mine = by_node[pod.node_name] = ([], [])
        mine[0].append(pod)
        mine[1].append(pos)
    return prepare_grouped(nodes, by_node, daemonsets, memo)


def prepare_grouped(nodes: Iterable[ExistingNode], by_node: Mapping[str | None, tuple[list[Pod], list[int]]],
                    daemonsets: Sequence[DaemonSet], memo: PreparedMemo | None = None) -> list[PreparedNode]:
    """prepare_nodes with the bound pods already grouped: node name -> (its pods, their positions).
    The positions need only be in the order of the pods in the run's flat list of bound pods, not
    their indices in it: they only order the anti-affinity groups (ExistingNodes.anti, a stable
    sort) and number a later round's pods after them (planning.plan_rounds), so numbers in the
    same order give the same run. The lists are kept by the memo, so must not change later."""
    if memo is not None:
        key = _daemonsets_key(daemonsets)
        if key is None or key != memo.daemonsets:
            memo.nodes.clear()
        memo.daemonsets = key
        if key is None:
            memo = None
    out = []
    for node in nodes:
        pods, positions = by_node.get(node.name) or ([], [])
        kept = memo.nodes.get(node.name) if memo is not None else None
        if (kept is not None and vars(kept[0]) == vars(node)  # ExistingNode compares by identity: compare its fields
                and same(kept[1], pods)):
            prep = kept[2] if kept[2].positions == positions else kept[2].at(positions)
        else:
            prep = PreparedNode(node, pods, daemonsets, positions)
            if memo is not None:
                memo.nodes[node.name] = (node, pods, prep)
        out.append(prep)
    if memo is not None:
        forget_absent(memo.nodes, {p.node.name for p in out})  # nodes long gone
    return out


def _sort_key(prep: PreparedNode) -> tuple[bool, str]:
    return prep.sort_key


class ExistingNodes:
    """The existing nodes of a run in the scheduler's order (sortExistingNodes: initialized first,
    then by name), with what the set-up sums over all of them: the topology's view of each node,
    the required anti-affinity of bound pods (in the order the pods were given), the capacity per
    NodePool counted against its limits, and the remaining-resource matrix the scheduler uses to
    skip full nodes. A disruption pass builds it once and takes `without(candidates)` per
    simulation, which costs what the candidates change, not what the cluster holds."""

    _entries: list[_Entry] | None
    _anti: list[_Anti] | None
    _pools: dict[str, tuple[dict[str, int], int]] | None
    _index: dict[str, int] | None

    def __init__(self, prepared: Iterable[PreparedNode] | None, _order: list[PreparedNode] | None = None,
                 _base: ExistingNodes | None = None, _removed: Sequence[int] = ()) -> None:
        self.order = _order if _order is not None else sorted(prepared or (), key=_sort_key)
        self._base, self._removed = _base, _removed  # a view: the base's rows less these indices
        self._entries = self._anti = self._pools = None
        self._index = None
        self._matrices: dict[tuple[str, ...], tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]] = {}
        self._too_small: dict[tuple[tuple[str, ...], tuple[int, ...]], list[bool]] = {}

    def __len__(self) -> int:
        return len(self.order)

    def index(self) -> dict[str, int]:
        if self._index is None:
            self._index = {p.node.name: i for i, p in enumerate(self.order)}
        return self._index

    def without(self, names: Iterable[str]) -> "ExistingNodes":
        """These nodes less the named ones (a view sharing this set's sums)."""
        index = self.index()
        removed = sorted(index[n] for n in set(names) if n in index)
        if not removed:
            return self
        return ExistingNodes(None, _order=_drop(self.order, removed), _base=self, _removed=removed)

    def entries(self) -> list[_Entry]:
        """Topology.existing: (labels, taints, requirements, bound pod specs) per node."""
        if self._entries is None:
            if self._base is not None:
                self._entries = _drop(self._base.entries(), self._removed)
            else:
                self._entries = [(p.node.labels, p.node.taints, p.label_requirements, p.specs) for p in self.order]
        return self._entries

    def anti(self) -> list[_Anti]:
        """(position, node, spec, term) of the bound pods' required anti-affinity, by position."""
        if self._anti is None:
            if self._base is not None:
                gone = {id(self._base.order[i].node) for i in self._removed}
                self._anti = [a for a in self._base.anti() if id(a[1]) not in gone]
            else:
                anti = [(pos, p.node, spec, term) for p in self.order for pos, spec, term in p.anti]
                anti.sort(key=lambda entry: entry[0])
                self._anti = anti
        return self._anti

    def pools(self) -> dict[str, tuple[dict[str, int], int]]:
        """NodePool -> (summed capacity, node count) of its existing nodes."""
        if self._pools is None:
            if self._base is not None:
                pools = {k: (dict(cap), n) for k, (cap, n) in self._base.pools().items()}
                for i in self._removed:
                    node = self._base.order[i].node
                    pool = node.labels.get(L.NODEPOOL)
                    if pool in pools:
                        cap, n = pools[pool]
                        for k, v in node.capacity.items():
                            cap[k] = cap.get(k, 0) - v
                        pools[pool] = (cap, n - 1)
            else:
                pools = {}
                for p in self.order:
                    pool = p.node.labels.get(L.NODEPOOL)
                    if pool is None:
                        continue
                    cap, n = pools.get(pool, ({}, 0))
                    for k, v in p.node.capacity.items():
                        cap[k] = cap.get(k, 0) + v
                    pools[pool] = (cap, n + 1)
            self._pools = pools
        return self._pools

    def matrix(self, dims: tuple[str, ...]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
        """(remaining per node and dimension, schedulable per node) as numpy arrays."""
        found = self._matrices.get(dims)
        if found is None:
            if self._base is not None:
                remaining, schedulable = self._base.matrix(dims)
                found = (np.delete(remaining, self._removed, axis=0), np.delete(schedulable, self._removed))
            else:
                found = (np.array([p.remaining(dims) for p in self.order]).reshape(len(self.order), len(dims)),
                         np.array([p.schedulable for p in self.order], dtype=bool))
            self._matrices[dims] = found
        return found

    def too_small(self, dims: tuple[str, ...], request: tuple[int, ...]) -> list[bool]:
        """Per node in order, whether it cannot take one pod of `request` even before anything
        lands (unschedulable, or less left than the request in some dimension). A view takes its
        base's answer less its removed nodes, so a pass compares each pod shape with the cluster
        once, not once per simulation."""
        key = (dims, request)
        found = self._too_small.get(key)
        if found is None:
            if self._base is not None:
                found = _drop(self._base.too_small(dims, request), self._removed)
            else:
                remaining, schedulable = self.matrix(dims)
                found = (~(schedulable & (remaining >= np.asarray(request, dtype=np.int64)).all(axis=1))).tolist()
            remember(self._too_small, key, found)
        return found


def _drop(items: list[_T], removed: Sequence[int]) -> list[_T]:
    """items less the (sorted) indices, by slices."""
    out, start = [], 0
    for i in removed:
        out.extend(items[start:i])
        start = i + 1
    out.extend(items[start:])
    return out
