"""The replayed cluster: nodes (with their NodeClaims), pods, and the two things that place pods:
the kube-scheduler binding pending pods to Ready capacity, and Karpenter's provisioner launching
NodeClaims for what stays pending, both on the provisioner's scheduling core (provisioner.api
plan_pools), so a replayed pod schedules exactly as `simulate` places it.

- kube-scheduler: pending pods go to existing Ready, untainted-by-disruption capacity first (the
  scheduling core's existing-node path, sortExistingNodes: initialized nodes first, then by name).
- Karpenter (pkg/controllers/provisioning/provisioner.go Schedule): launched NodeClaims that are
  not Ready yet count as capacity (in-flight, startup taints ignored, state/statenode.go), pods
  they will take are nominated to them and bind when the node is Ready (`--node-startup` after
  launch); NodeClaims of pods no node takes are launched.

Both plan as plan_pools does, from what each node derives from its pods made when they change,
not at every run: plan_rounds over the nodes as plan_pools would prepare them (Cluster._prepared).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from kubefacts import labels as L
from ..api import plan_pools, plan_rounds
from ..memo import remember, same
from ..models import ExistingNode, Inputs, Pod, PodSpec
from ..result import SimulationResult
from ..scheduling.existing import PreparedMemo, PreparedNode
from ..scheduling.instance_selection import template_requirements
from ..scheduling.plan import node_labels
from ..scheduling.resources import fits, subtract, total
from ..state import build_cluster
from .metrics import Disruption

LOG_LIMIT = 200_000  # pod changes kept for a reader between two of its reads (Cluster.pod_log)


@dataclass(eq=False)
class SimNode:
    name: str
    pool: str | None  # None: not managed by Karpenter
    instance_type: str
    capacity_type: str
    zone: str
    price: float
    labels: dict
    taints: tuple
    allocatable: dict
    capacity: dict
    launched_at: float
    ready_at: float | None = None  # None while in flight
    initial: bool = False  # part of the starting cluster
    deleting: bool = False  # NodeClaim deleted: draining
    disrupting: bool = False  # tainted karpenter.sh/disrupted: waits for its replacements
    drifted: bool = False
    last_pod_event: float = 0.0
    expire_at: float | None = None
    grace: float | None = None  # terminationGracePeriod (seconds)
    terminated_at: float | None = None
    annotations: dict = field(default_factory=dict)
    record: Disruption | None = None  # the disruption record its drain's evictions count toward
    pods: set = field(default_factory=set)  # names of pods bound to it
    # Derived from `pods` (Cluster._pods_changed drops them when it changes), made again at next use:
    free: dict | None = field(default=None, repr=False)  # allocatable less its pods' requests
    models: list | None = field(default=None, repr=False)  # its pods' models, by pod name
    prepared: tuple | None = field(default=None, repr=False)  # (ExistingNode, models, DaemonSets, first position, PreparedNode)

    @property
    def ready(self) -> bool:
        return self.ready_at is not None

    def existing(self) -> ExistingNode:
        """The scheduling core's view (in flight: not initialized, so its startup taints are ignored)."""
        labels = dict(self.labels)
        if self.ready:
            labels[L.INITIALIZED] = "true"
        return ExistingNode(self.name, labels, self.taints, self.allocatable, self.capacity, deleting=self.deleting,
                            initialized=self.ready)


@dataclass(eq=False)
class SimPod:
    name: str  # namespace/name
    spec: PodSpec
    workload: tuple | None  # its controller's key
    labels: dict
    annotations: dict
    owner: tuple | None  # (apiVersion, kind) of its ownerReference
    created_at: float
    node: str | None = None
    nominated: str | None = None  # the in-flight node Karpenter planned it on
    bound_at: float | None = None
    run_for: float | None = None
    daemon: bool = False
    raw_spec: dict | None = None  # the pod spec as given (the disruption API reads objects)
    _model: Pod | None = field(default=None, repr=False)  # the last model made, reused while on the same node

    def model(self, node_name: str | None = None) -> Pod:
        """The scheduling core's Pod, the same object while the node is (so prepared nodes of
        earlier runs are reused: scheduling.existing.PreparedMemo); nothing it is made of
        changes in place (a changed pod is a new SimPod)."""
        made = self._model
        if made is None or made.node_name != node_name:
            made = self._model = Pod(self.name, self.spec, node_name=node_name,
                                     owner_kinds=frozenset({self.owner[1]}) if self.owner else frozenset(),
                                     daemon=self.daemon)
        return made


class Cluster:
    """Mutable state; every mutation goes through a method so the counters stay exact. A pod's
    node changes only by bind, and its other fields (what its object is made of) not while it is
    in the cluster once a reader set `pod_log` to a list (the disruption passes' PassCache, at
    their first pass): from then on the log says which pods were added, bound or removed, in
    order, since the reader last took it."""

    def __init__(self, pools: list, inputs: Inputs) -> None:
        self.pools = pools  # [(NodePool, [InstanceType])]
        self.inputs = inputs  # nodepools, nodeclasses, daemonsets, overlays (the static part)
        self.nodes: dict = {}  # name -> SimNode (not terminated)
        self.pods: dict = {}  # name -> SimPod
        self.pending: dict = {}  # name -> SimPod not bound (ordered by creation)
        self.seq = 0
        self.prepared = PreparedMemo()  # the nodes as the scheduler last prepared them
        self._unfit: tuple = ((), {})  # (what the nodes had left, {id: requests} fitting none of it): _some_fit
        self.pod_log: list | None = None  # (pod name, "add" | "bind" | "remove"), when read (above)

    def _log(self, name: str, change: str) -> None:
        log = self.pod_log
        if log is not None:
            # A reader that stops taking it reads the pods afresh instead (None).
            self.pod_log = log if len(log) < LOG_LIMIT else None
            log.append((name, change))

    # -- scheduling views -------------------------------------------------------------------------
    def pool_models(self) -> dict:
        return {p.name: p for p, _ in self.pools}

    def _bound_models(self, node: SimNode) -> list[Pod]:
        """The scheduling core's models of the pods bound to `node`, by pod name: made when its
        pods last changed (Cluster._pods_changed), the same list until they change again. Exact:
        the list is what `[self.pods[p].model(node.name) for p in sorted(node.pods)]` gives, as
        only bind, remove_pod and add_pod change a node's pods or the pod a name stands for, and
        a bound pod's model is only ever asked for on its own node (SimPod.model keeps it)."""
        made = node.models
        if made is None:
            made = node.models = [self.pods[p].model(node.name) for p in sorted(node.pods)]
        return made

    def _schedule(self, pending: list[SimPod], nodes: list[SimNode], pools: list) -> SimulationResult:
        """plan_pools over the pending pods, these nodes with the pods bound and nominated to them,
        and `pools`, planned from what each node prepared when its pods last changed (_prepared)
        instead of setting the whole cluster up again at every run.
        tests/provisioner/replay/test_kube_schedule_reuse.py compares it with plan_pools."""
        if any(n.deleting for n in nodes):  # plan_pools would schedule their pods again: its own path
            return self._schedule_afresh(pending, nodes, pools)
        models = [p.model() for p in pending]
        # plan_pools' result for these inputs: no warning, nothing ignored or rescheduled
        return plan_rounds(SimulationResult(pods=len(models)), self._prepared(nodes), models, pools,
                           self.inputs.daemonsets)

    def _schedule_afresh(self, pending: list[SimPod], nodes: list[SimNode], pools: list) -> SimulationResult:
        """plan_pools itself, over the cluster's inputs (no caller gives it nodes being deleted)."""
        names = {n.name for n in nodes}
        bound: list[Pod] = []
        for n in nodes:
            bound.extend(self._bound_models(n))
        nominated = [p.model(p.nominated) for p in self.pods.values() if p.node is None and p.nominated in names]
        inputs = Inputs(nodepools=self.inputs.nodepools, nodeclasses=self.inputs.nodeclasses,
                        pods=[p.model() for p in pending], bound_pods=bound + nominated,
                        daemonsets=self.inputs.daemonsets, nodes=[n.existing() for n in nodes],
                        overlays=self.inputs.overlays, namespaces=self.inputs.namespaces)
        return plan_pools(inputs, pools, memo=self.prepared)

    def _prepared(self, nodes: list[SimNode]) -> list[PreparedNode]:
        """What plan_pools hands the scheduler for these nodes, none of them being deleted
        (scheduling_view, then prepare_nodes): the nodes as build_cluster states them, each with
        the pods bound to it and then those nominated to it, at their positions in the run's list
        of pods (the bound ones node by node in `nodes`' order, then the nominated ones in the
        cluster's order). A node's PreparedNode is kept while the node reads the same (its
        ExistingNode's fields), its pods' models are the very same list (_bound_models) and the
        DaemonSets the very same objects, as PreparedMemo keeps one; only its positions are set
        afresh (PreparedNode.at). A node that pods are nominated to is prepared for the run alone.
        Nominated pods are unbound, so pending (every pod not bound, Cluster.pending) holds them
        all: whether there is one need not be asked of every pod."""
        names = {n.name for n in nodes}
        offsets, position = {}, 0
        for node in nodes:
            offsets[node.name] = position
            position += len(self._bound_models(node))
        nominated: dict = {}  # node name -> [(position, model)] of the pods nominated to it
        if any(p.nominated in names for p in self.pending.values()):
            for pod in self.pods.values():
                if pod.node is None and pod.nominated in names:
                    nominated.setdefault(pod.nominated, []).append((position, pod.model(pod.nominated)))
                    position += 1
        daemonsets = self.inputs.daemonsets
        prepared = []
        for state in build_cluster([n.existing() for n in nodes], ()).active():
            existing = state.as_existing()
            node = self.nodes[existing.name]
            models = self._bound_models(node)
            start = offsets[node.name]  # its bound pods' positions: start, start + 1, ...
            extra = nominated.get(node.name)
            kept = node.prepared
            if extra:
                prep = PreparedNode(existing, models + [m for _, m in extra], daemonsets,
                                    [*range(start, start + len(models)), *(pos for pos, _ in extra)])
            elif (kept is not None and kept[1] is models and same(kept[2], daemonsets)
                    and vars(kept[0]) == vars(existing)):  # ExistingNode compares by identity: compare its fields
                prep = kept[4]
                if kept[3] != start:
                    prep = prep.at(list(range(start, start + len(models))))
                    node.prepared = (kept[0], models, kept[2], start, prep)
            else:
                prep = PreparedNode(existing, models, daemonsets, range(start, start + len(models)))
                node.prepared = (existing, models, tuple(daemonsets), start, prep)
            prepared.append(prep)
        return prepared

    def kube_schedule(self, now: float) -> list:
        """Bind pending pods to Ready capacity; the pods bound."""
        pending = [p for p in self.pending.values() if p.nominated is None]
        if not pending:
            return []
        ready = [n for n in self.nodes.values() if n.ready and not n.deleting and not n.disrupting]
        if not ready or not self._some_fit(pending, ready):
            return []
        result = self._schedule(pending, ready, [])
        bound = []
        for node, names in sorted(result.existing.items()):
            for name in names:
                bound.append(self.bind(self.pods[name], node, now))
        return bound

    def _some_fit(self, pending: list[SimPod], nodes: list[SimNode]) -> bool:
        """Whether some pending pod's requests fit what some node's allocatable has left after its
        pods' requests (resources.Fits): the kube-scheduler's NodeResourcesFit, which the full
        scheduling run also applies (with DaemonSet overhead and nominated pods besides, which only
        take more), so when nothing fits here that run would bind nothing. Most runs while pods
        wait for new nodes are of that kind. What a node has left is summed when its pods last
        changed (Cluster._pods_changed); requests found to fit none of these nodes are not tried
        again while what each has left is the very same dict (never changed in place: a change
        makes a new one), since Fits reads nothing else."""
        free = []
        for node in nodes:
            left = node.free
            if left is None:
                left = node.free = subtract(node.allocatable, total(self.pods[p].spec.requests for p in node.pods))
            free.append(left)
        looked, unfit = self._unfit
        if not same(looked, free):
            unfit = {}
        self._unfit = (free, unfit)
        for pod in pending:
            requests = pod.spec.requests
            if id(requests) in unfit:  # kept with the dict itself: its id is not another's
                continue
            if any(fits(requests, left) for left in free):
                return True
            remember(unfit, id(requests), requests)
        return False

    def provision(self, now: float, startup: float, name_node: Callable[[str], str]) -> list:
        """Karpenter's provisioning pass: nominate pending pods to in-flight capacity, launch
        NodeClaims for the rest; the SimNodes launched."""
        pending = [p for p in self.pending.values() if p.nominated is None]
        if not pending:
            return []
        usable = [n for n in self.nodes.values() if not n.deleting and not n.disrupting]
        result = self._schedule(pending, usable, self.pools)
        for node, names in sorted(result.existing.items()):
            target = self.nodes[node]
            for name in names:
                pod = self.pods[name]
                if target.ready:
                    self.bind(pod, node, now)
                else:
                    pod.nominated = node
        launched = []
        for claim in result.nodeclaims:
            node = self.launch(claim.nodepool, claim.instance_type, claim.capacity_type, claim.zone,
                               claim.price_usd_hour, claim.labels, claim.allocatable, now, name_node(claim.nodepool))
            for name in claim.pods:
                self.pods[name].nominated = node.name
            launched.append(node)
        return launched

    # -- mutations --------------------------------------------------------------------------------
    @staticmethod
    def _pods_changed(node: SimNode) -> None:
        """What is derived from a node's pods is made again at its next use."""
        node.free = node.models = node.prepared = None

    def launch(self, pool_name: str, itype: str, ct: str, zone: str, price: float, labels: dict, allocatable: dict,
               now: float, name: str) -> SimNode:
        pool = self.pool_models().get(pool_name)
        labels = {**labels, L.HOSTNAME: name, L.NODEPOOL: pool_name}
        node = SimNode(name, pool_name, itype, ct, zone, price, labels, tuple(pool.taints) if pool else (),
                       dict(allocatable), dict(allocatable), now, last_pod_event=now)
        self.nodes[name] = node
        return node

    def replacement_node(self, pool_name: str, itype_name: str, ct: str, zone: str, now: float,
                         name: str) -> SimNode | None:
        """Launch a consolidation or drift replacement of this type/offering (labels as the
        scheduling core would set them)."""
        for pool, types in self.pools:
            if pool.name != pool_name:
                continue
            for it in types:
                if it.name != itype_name:
                    continue
                for off in it.offerings:
                    if off.zone == zone and off.capacity_type == ct:
                        labels = node_labels(template_requirements(pool), it, off)
                        return self.launch(pool_name, itype_name, ct, zone, off.price, labels, it.allocatable, now, name)
        return None

    def add_pod(self, pod: SimPod) -> None:
        old = self.pods.get(pod.name)
        if old is not None and old is not pod and old.node in self.nodes:
            # A pod recreated under the name of one still bound replaces it: the node must not
            # keep the old one's name (every name a node holds is a pod of the cluster).
            self.nodes[old.node].pods.discard(pod.name)
            self._pods_changed(self.nodes[old.node])
        self.pods[pod.name] = pod
        self._log(pod.name, "add")
        if pod.node is None:
            self.pending[pod.name] = pod

    def bind(self, pod: SimPod, node_name: str, now: float) -> SimPod:
        pod.node, pod.nominated, pod.bound_at = node_name, None, now
        self._log(pod.name, "bind")
        self.pending.pop(pod.name, None)
        node = self.nodes[node_name]
        node.pods.add(pod.name)
        self._pods_changed(node)
        node.last_pod_event = now
        return pod

    def remove_pod(self, pod: SimPod, now: float) -> None:
        self.pods.pop(pod.name, None)
        self._log(pod.name, "remove")
        self.pending.pop(pod.name, None)
        if pod.node is not None and pod.node in self.nodes:
            node = self.nodes[pod.node]
            node.pods.discard(pod.name)
            self._pods_changed(node)
            node.last_pod_event = now

    def terminate(self, node: SimNode, now: float) -> list:
        """The instance is gone: its remaining pods are gone too (their controllers recreate them);
        pods nominated to it are pending again. Returns the pods that were still bound."""
        node.terminated_at = now
        self.nodes.pop(node.name, None)
        left = [self.pods[p] for p in sorted(node.pods) if p in self.pods]
        for pod in self.pending.values():  # a nominated pod is not bound: pending has them all
            if pod.nominated == node.name:
                pod.nominated = None
        return left

    def fresh_name(self, base: str) -> str:
        self.seq += 1
        return f"{base}-{self.seq:05d}"
