"""The event loop of a replay: the trace's events and the cluster's reactions on one clock.

Rules (each cites the upstream file it follows; tests/provisioner/replay/ test each):
- kube-scheduler binds pending pods to Ready capacity at once (cluster.Cluster.kube_schedule).
- Karpenter batches pending pods (pkg/controllers/provisioning/batcher.go): a window opens at the
  first trigger and closes after `batch_idle` without a new trigger or `batch_max` after it opened.
- A launched NodeClaim is Ready `node_startup` later; until then it is in-flight capacity.
- Disruption (pkg/controllers/disruption/controller.go) runs when the cluster state changed (a pod
  bound or gone, a node added, Ready or gone, a drift, a budget window opening or closing), at most
  once per polling period (10 s), never on a blind tick. A NodeClaim turning Consolidatable is seen
  at the next change or at the 5-minute reset of the consolidation state (state/cluster.go). A consolidation command waits 15 s and is
  dropped if its candidates changed (validation.go). Replacements are launched first and the
  candidates drained once they are Ready (orchestration/queue.go).
- Expiration (pkg/controllers/nodeclaim/expiration/controller.go) deletes a NodeClaim at
  launch + expireAfter, forcefully: no budget gates it. Draining respects do-not-disrupt and
  PDBs until the NodeClaim's terminationGracePeriod runs out (node/termination/terminator).
- A spot interruption (pkg/controllers/interruption, aws provider) cordons and drains the node
  at the notice; the instance is reclaimed two minutes later.
- Evicted pods of a controller are recreated pending, as their controller would.
"""
from __future__ import annotations

import gc
import math
import os
import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Iterable, Sequence, cast

from kubefacts import labels as L
from ..api import nodepool_instance_types, resolve_catalog
from ..catalog import DEFAULT_REGION, DEFAULT_SPOT_DISCOUNT, DEFAULT_ZONES
from ..disruption.cron import Schedule
from ..disruption.drift import drift
from ..disruption.pdb import do_not_disrupt
from ..disruption.snapshot import go_duration, load_pdb, load_pool_disruption, load_snapshot
from ..errors import InputError
from ..scheduling.gcpause import gc_paused
from ..loader import load_objects
from ..loader.fields import Ctx
from .clock import CLUSTER, DISRUPT, PROVISION, SCHEDULE, TRACE, Clock
from .cluster import Cluster, SimNode, SimPod
from .disruption import Command, PassCache, PdbSpec, disruption_pass, pod_info, pdb_status
from .metrics import Disruption, Metrics
from .trace import Event, Trace
from .twin import Twin
from .workloads import Workload, key_of, load_workload

DEFAULT_START = datetime(2026, 1, 5, tzinfo=timezone.utc)  # a Monday, 00:00 UTC
POLLING_PERIOD = 10.0  # disruption controller.go pollingPeriod
INTERRUPTION_NOTICE = 120.0  # EC2 spot interruption warning
VALIDATION_WAIT = 15.0  # disruption/validation.go consolidationTTL
CONSOLIDATION_STATE_TTL = 300.0  # state/cluster.go ConsolidationState: reset after 5 minutes without change
DRAIN_RETRY = 10.0  # termination controller requeue while evictions are refused
DEFAULT_EXPIRE_AFTER = "720h"  # NodePool spec.template.spec.expireAfter default (v1)
KARPENTER_KINDS = ("NodePool", "EC2NodeClass", "NodeOverlay")
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "Job", "CronJob", "Pod")
MAX_NODES = 20_000  # a bounded refusal instead of a runaway replay
MAX_PODS_ALIVE = 100_000
MAX_STEPS = 5_000_000  # clock events per replay: a runaway (a per-minute CronJob for years) is refused
MAX_UNTIL = 366 * 86400.0
# The replay runs with the automatic garbage collector off (its full collections rescanned each
# pass's millions of short-lived objects: a third of the run) and collects itself once this many
# tracked objects have been made, net, since the last collection: runs leave few reference
# cycles, so memory stays bounded (BENCHMARKS.md).
GC_GROWTH = 1_000_000


@dataclass
class Options:
    until: float
    start: datetime = DEFAULT_START
    seed: int = 0
    batch_idle: float = 1.0
    batch_max: float = 10.0
    node_startup: float = 60.0
    region: str = DEFAULT_REGION
    zones: tuple = tuple(DEFAULT_ZONES)
    spot_discount: float = DEFAULT_SPOT_DISCOUNT
    spot_to_spot: bool = False
    catalog: object = None
    processes: int = 1  # 2: a twin process shares single-node consolidation's simulations (twin.py)


@dataclass
class _Pool:
    expire_after: float | None
    grace: float | None


@dataclass
class _Waiting:
    replacements: list
    candidates: list
    record: Disruption | None = None


def _meta(obj: dict) -> dict:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _int_or_percent(value: object) -> tuple[str, object] | None:
    if value is None:
        return None
    return ("int", value) if isinstance(value, int) else ("str", str(value))


class Replay:
    def __init__(self, objects: Sequence[Any], origins: Sequence[str | None] | None, trace: Trace,
                 options: Options) -> None:
        self.o = options
        self.trace = trace
        self.catalog = resolve_catalog(options.catalog)
        self.clock = Clock()
        self.metrics = Metrics()
        self.rng = random.Random(options.seed)
        self.workloads: dict = {}
        self.pdbs: dict = {}  # key -> PdbSpec
        self.drifted: set = set()
        self.waiting: list = []
        self.changed = False
        self.pass_at: float | None = None
        self.last_pass = -math.inf
        self.batch_open: float | None = None
        self.batch_last = 0.0
        self.batch_check = False
        self.schedule_due = False
        self.new_pending = False
        self.node_seq = 0
        self.passes = 0  # disruption passes run (a pass runs only after a change)
        self.budget_wake: float | None = None
        self.validating = False
        self.last_mark = 0.0  # when the cluster was last marked unconsolidated
        self.consolidated_mark: float | None = None  # last_mark when a pass last found nothing (lastConsolidationState)
        self.pass_cache = PassCache()  # what the disruption passes keep between them
        self._load(list(objects), list(origins) if origins else [None] * len(objects))

    # -- set-up -----------------------------------------------------------------------------------
    def _load(self, objects: list, origins: list) -> None:
        snap = load_snapshot(objects, origins)
        inputs = snap.inputs
        assert inputs is not None  # read with the scheduling models (not facts=True)
        self.karpenter = [(o, origin) for o, origin in zip(objects, origins)
                          if isinstance(o, dict) and o.get("kind") in KARPENTER_KINDS]
        self.pool_specs = dict(snap.pools)
        self.cluster = Cluster([], inputs)
        self._reload_pools(objects_changed=False)
        for obj, origin in zip(objects, origins):
            if not isinstance(obj, dict):
                continue
            kind = obj.get("kind")
            if kind == "PodDisruptionBudget":
                self._put_pdb(obj, origin)
            elif kind in ("Deployment", "StatefulSet", "ReplicaSet", "Job", "CronJob"):
                self._put_workload(obj, origin, None, False, 0.0)
        prices = self._price_lookup()
        for n in inputs.nodes:
            pool = n.labels.get(L.NODEPOOL)
            key = (n.labels.get(L.INSTANCE_TYPE), n.labels.get(L.ZONE), n.labels.get(L.CAPACITY_TYPE))
            node = SimNode(n.name, pool if pool in self.pool_specs else None, key[0] or "", key[2] or "", key[1] or "",
                           prices.get(key, 0.0), dict(n.labels), tuple(n.taints), dict(n.allocatable),
                           dict(n.capacity), 0.0, ready_at=0.0, initial=True)
            self._set_lifetime(node)
            self.cluster.nodes[node.name] = node
            self.metrics.node_added(node, launched=False)
        for pod in inputs.bound_pods:
            owner = next(iter(sorted(pod.owner_kinds)), None)
            sim = SimPod(pod.name, pod.spec, None, dict(pod.spec.labels), {}, (_api(owner), owner) if owner else None,
                         0.0, daemon=pod.daemon)
            self.cluster.add_pod(sim)
            self.cluster.bind(sim, pod.node_name, 0.0)
        for pod in inputs.pods:
            self.cluster.add_pod(SimPod(pod.name, pod.spec, None, dict(pod.spec.labels), {}, None, 0.0))
            self.new_pending = True
        for info in snap.pods:  # annotations (do-not-disrupt) of the starting pods
            if info.name in self.cluster.pods:
                self.cluster.pods[info.name].annotations = dict(info.annotations)
        for obj in objects:  # pod specs as given, for the disruption API's object reader
            if isinstance(obj, dict) and obj.get("kind") == "Pod" and isinstance(obj.get("spec"), dict):
                meta = _meta(obj)
                pod = self.cluster.pods.get(f"{meta.get('namespace') or 'default'}/{meta.get('name')}")
                if pod is not None:
                    pod.raw_spec = {k: v for k, v in obj["spec"].items() if k != "nodeName"}
        self.daemonset_objs = [o for o in objects if isinstance(o, dict) and o.get("kind") == "DaemonSet"]

    def _reload_pools(self, objects_changed: bool = True) -> None:
        objs = [o for o, _ in self.karpenter]
        inputs = load_objects(objs, [origin for _, origin in self.karpenter])
        base = self.cluster.inputs
        base.nodepools, base.nodeclasses, base.overlays = inputs.nodepools, inputs.nodeclasses, inputs.overlays
        zones = tuple(dict.fromkeys(list(self.o.zones)))
        pools, _ = nodepool_instance_types(base, self.catalog, self.o.region, zones, self.o.spot_discount)
        self.cluster.pools = pools
        self.pool_life = {}
        for obj, origin in self.karpenter:
            if obj.get("kind") != "NodePool":
                continue
            name = str(_meta(obj).get("name"))
            ctx = Ctx(origin, "NodePool", name)
            self.pool_specs[name] = load_pool_disruption(obj, ctx)
            tspec = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {})
            expire = str(tspec.get("expireAfter") or DEFAULT_EXPIRE_AFTER)
            grace = tspec.get("terminationGracePeriod")
            self.pool_life[name] = _Pool(None if expire == "Never" else go_duration(expire),
                                         go_duration(str(grace)) if grace else None)

    def _price_lookup(self) -> dict:
        out: dict[tuple, float] = {}
        for _, types in self.cluster.pools:
            for it in types:
                for off in it.offerings:
                    out.setdefault((it.name, off.zone, off.capacity_type), off.price)
        return out

    def _set_lifetime(self, node: SimNode) -> None:
        life = self.pool_life.get(node.pool) if node.pool else None
        if life is None:
            return
        node.grace = life.grace
        if life.expire_after is not None:
            node.expire_at = node.launched_at + life.expire_after
            if node.expire_at <= self.o.until:
                self.clock.at(node.expire_at, CLUSTER, "expire", node.name)

    def _put_pdb(self, obj: dict, origin: str | None) -> None:
        kind, ns, name = key_of(obj)
        ctx = Ctx(origin, kind, f"{ns}/{name}")
        raw = obj.get("spec")
        spec: dict = raw if isinstance(raw, dict) else {}
        self.pdbs[(ns, name)] = PdbSpec(load_pdb(obj, ctx), _int_or_percent(spec.get("minAvailable")),
                                        _int_or_percent(spec.get("maxUnavailable")), obj)

    def _put_workload(self, obj: dict, origin: str | None, run_for: float | None, from_trace: bool, now: float) -> None:
        w = load_workload(obj, origin, self.cluster.inputs.namespaces, run_for, require_run_for=from_trace)
        old = self.workloads.get(w.key)
        if old is not None:  # an update: the template and scale change, its pods stay
            w.pods, w.created, w.succeeded = old.pods, old.created, old.succeeded
        self.workloads[w.key] = w
        if w.kind == "CronJob":
            self._next_cron(w, now)
        else:
            self._reconcile(w, now)

    # -- workloads --------------------------------------------------------------------------------
    def _new_pod(self, w: Workload, now: float) -> SimPod:
        name = f"{w.namespace}/{w.name}" if w.kind == "Pod" else f"{w.namespace}/{w.name}-{w.created}"
        w.created += 1
        taken = self.cluster.pods.get(name)
        if taken is not None and taken.workload != w.key:
            # Another workload's pod has the name (a Job and a Deployment named alike): Kubernetes
            # gives each controller's pods names of their own, so this one gets a fresh one.
            name = self.cluster.fresh_name(name)
        pod = SimPod(name, w.spec, w.key, dict(w.labels), dict(w.annotations), w.owner, now, run_for=w.run_for,
                     raw_spec=w.raw_spec)
        w.pods.append(pod)
        self.cluster.add_pod(pod)
        if len(self.cluster.pods) > MAX_PODS_ALIVE:
            raise InputError(f"more than {MAX_PODS_ALIVE:,} pods alive at {now:g}s; refused", origin=self.trace.origin)
        self.new_pending = True
        self._touch(mark=False)  # a pending pod is no binding: the cluster stays consolidated (cluster.go)
        return pod

    def _reconcile(self, w: Workload, now: float) -> None:
        """The controller's loop: create or delete pods until it has what it wants (a scale-down
        deletes pending pods first, then the newest: ReplicaSet getPodsToDelete)."""
        wanted = w.wanted if w.kind != "Pod" else (1 if w.created == 0 else len(w.pods))
        while len(w.pods) < wanted:
            self._new_pod(w, now)
        if len(w.pods) > wanted:
            order = sorted(w.pods, key=lambda p: (p.node is not None, -p.created_at, p.name))
            for pod in order[:len(w.pods) - wanted]:
                self._remove(pod, now)

    def _remove(self, pod: SimPod, now: float) -> None:
        """A pod deleted by its owner or completing: not an eviction."""
        w = self.workloads.get(pod.workload)
        if w is not None and pod in w.pods:
            w.pods.remove(pod)
        self.cluster.remove_pod(pod, now)
        node = self.cluster.nodes.get(pod.node) if pod.node else None
        if node is not None:
            self._consolidatable_timer(node, now)
        self._touch()

    def _evicted(self, pod: SimPod, now: float) -> None:
        """A pod Karpenter drained: gone, and its controller makes a new one."""
        w = self.workloads.get(pod.workload)
        self._remove(pod, now)
        if w is not None:
            self._reconcile(w, now)
        elif pod.owner is not None:  # a starting pod whose controller is not in the input
            clone = SimPod(self.cluster.fresh_name(pod.name), pod.spec, None, pod.labels, pod.annotations, pod.owner,
                           now, run_for=pod.run_for, raw_spec=pod.raw_spec)
            self.cluster.add_pod(clone)
            self.new_pending = True

    def _next_cron(self, w: Workload, now: float) -> None:
        wall = self.o.start + timedelta(seconds=now)
        limit = self.o.start + timedelta(seconds=self.o.until)
        # robfig Schedule.Next: strictly after (a CronJob always has its schedule)
        fire = cast(Schedule, w.schedule).next_after(wall, limit)
        if fire is not None:
            self.clock.at((fire - self.o.start).total_seconds(), CLUSTER, "cron", (w.key, id(w)))

    def _cron(self, key: tuple, ident: int, now: float) -> None:
        w = self.workloads.get(key)
        if w is None or id(w) != ident:
            return  # deleted or replaced since
        stamp = int((self.o.start.timestamp() + now) // 60)
        children = [j for j in self.workloads.values() if j.parent == key and j.wanted > 0]
        if w.concurrency == "Forbid" and children:
            self._next_cron(w, now)
            return
        if w.concurrency == "Replace":
            for j in children:
                self._delete_workload(j, now)
        job = load_workload({**w.job_template, "metadata": {**w.job_template["metadata"], "name": f"{w.name}-{stamp}"}},
                            self.trace.origin, self.cluster.inputs.namespaces, w.run_for)
        job.parent = key
        self.workloads[job.key] = job
        self._reconcile(job, now)
        self._next_cron(w, now)

    def _delete_workload(self, w: Workload, now: float) -> None:
        for pod in list(w.pods):
            self._remove(pod, now)
        self.workloads.pop(w.key, None)
        for child in [j for j in self.workloads.values() if j.parent == w.key]:
            self._delete_workload(child, now)

    # -- trace events -----------------------------------------------------------------------------
    def _trace_event(self, ev: Event, now: float) -> None:
        origin = self.trace.origin
        if ev.action == "apply":
            obj = ev.body
            kind = obj["kind"]
            where = f"{origin}: {ev.path}.apply"
            if kind in KARPENTER_KINDS:
                self._apply_karpenter(obj, where, now)
            elif kind == "PodDisruptionBudget":
                self._put_pdb(obj, where)
                self._touch()
            else:
                self._put_workload(obj, where, ev.run_for, kind in ("Job", "CronJob"), now)
        elif ev.action == "scale":
            b = ev.body
            w = self.workloads.get((b["kind"], b["namespace"], b["name"]))
            if w is None:
                raise InputError(f"no {b['kind']} {b['namespace']}/{b['name']} exists at {ev.at:g}s",
                                 origin=origin, path=f"{ev.path}.scale.name")
            w.replicas = b["replicas"]
            self._reconcile(w, now)
        elif ev.action == "delete":
            b = ev.body
            kind, ns, name = b["kind"], b["namespace"], b["name"]
            missing = InputError(f"no {kind} {ns}/{name} exists at {ev.at:g}s", origin=origin,
                                 path=f"{ev.path}.delete.name")
            if kind == "PodDisruptionBudget":
                if self.pdbs.pop((ns, name), None) is None:
                    raise missing
                self._touch()
            elif kind == "NodeOverlay":
                before = len(self.karpenter)
                self.karpenter = [(o, og) for o, og in self.karpenter if key_of(o) != (kind, "default", name)]
                if len(self.karpenter) == before:
                    raise missing
                self._reload_pools()
            else:
                w = self.workloads.get((kind, ns, name))
                if w is None:
                    raise missing
                self._delete_workload(w, now)
        elif ev.action == "interrupt":
            self._interrupt_event(ev, now)

    def _apply_karpenter(self, obj: dict, where: str, now: float) -> None:
        before = [o for o, _ in self.karpenter]
        key = key_of(obj)
        kept = [(o, og) for o, og in self.karpenter if key_of(o)[0::2] != key[0::2]]
        self.karpenter = kept + [(obj, where)]
        after = [o for o, _ in self.karpenter]
        self._reload_pools()
        if obj["kind"] in ("NodePool", "EC2NodeClass"):
            nodes = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": n.name, "labels": n.labels}}
                     for n in self.cluster.nodes.values() if n.pool is not None]
            report = drift(before, after, nodes)
            for names in report.replaced.values():
                self.drifted.update(names)
        self._touch()

    def _interrupt_event(self, ev: Event, now: float) -> None:
        b = ev.body
        if "node" in b:
            node = self.cluster.nodes.get(b["node"])
            if node is None:
                raise InputError(f"no node {b['node']} exists at {ev.at:g}s", origin=self.trace.origin,
                                 path=f"{ev.path}.interrupt.node")
            targets = [node]
        else:
            pool = sorted((n for n in self.cluster.nodes.values() if n.instance_type == b["instanceType"]
                           and n.capacity_type == "spot" and not n.deleting), key=lambda n: n.name)
            count = math.ceil(b["fraction"] * len(pool) - 1e-9)
            targets = sorted(self.rng.sample(pool, count), key=lambda n: n.name) if count else []
        for node in targets:
            if node.deleting:
                continue
            record = self._record(now, "interrupted", [node.name])
            node.record = record
            self.clock.at(now + INTERRUPTION_NOTICE, CLUSTER, "reclaim", node.name)
            self._drain(node, now)

    # -- cluster reactions ------------------------------------------------------------------------
    def _touch(self, mark: bool = True) -> None:
        """A change: a kube-scheduler run and a disruption pass; `mark`: it is one of those that
        call Cluster.MarkUnconsolidated (state/cluster.go: a pod bound or deleted, a NodeClaim or
        Node added, initialized, marked for deletion or gone)."""
        self.changed = True
        self.schedule_due = True
        if mark:
            self.last_mark = self.clock.now

    def _node_name(self, pool: str) -> str:
        self.node_seq += 1
        return f"{pool}-{self.node_seq:05d}"

    def _launched(self, nodes: list[SimNode], now: float) -> None:
        for node in nodes:
            if len(self.cluster.nodes) > MAX_NODES:
                raise InputError(f"more than {MAX_NODES:,} nodes at {now:g}s; refused", origin=self.trace.origin)
            self.metrics.node_added(node, launched=True)
            self._set_lifetime(node)
            self.clock.at(now + self.o.node_startup, CLUSTER, "ready", node.name)
        if nodes:
            self._touch()

    def _schedule(self, now: float) -> None:
        self.schedule_due = False
        for pod in self.cluster.kube_schedule(now):
            self._bound(pod, now)
        if self.new_pending and any(p.nominated is None for p in self.cluster.pending.values()):
            self._trigger(now)
        self.new_pending = False

    def _bound(self, pod: SimPod, now: float) -> None:
        self.metrics.bound(now - pod.created_at)
        self.changed = True
        self.last_mark = now  # a new binding marks the cluster unconsolidated (cleanupOldBindings)
        if pod.run_for is not None:
            self.clock.at(now + pod.run_for, CLUSTER, "done", (pod.name, now))
        node = self.cluster.nodes[pod.node]
        self._consolidatable_timer(node, now)

    def _consolidatable_timer(self, node: SimNode, now: float) -> None:
        spec = self.pool_specs.get(node.pool) if node.pool else None
        if spec is not None and spec.consolidate_after:
            self.clock.at(now + spec.consolidate_after, CLUSTER, "consolidatable", (node.name, node.last_pod_event))

    def _trigger(self, now: float) -> None:
        """batcher.go Trigger: open a window, or extend its idle deadline."""
        self.batch_last = now
        if self.batch_open is None:
            self.batch_open = now
        if not self.batch_check:
            self.batch_check = True
            self.clock.at(min(now + self.o.batch_idle, self.batch_open + self.o.batch_max), PROVISION, "batch", None)

    def _batch(self, now: float) -> None:
        """batcher.go Wait: the window closes at idle or max; then the provisioner schedules."""
        self.batch_check = False
        opened = cast(float, self.batch_open)  # a "batch" event is only set while the window is open
        close = min(self.batch_last + self.o.batch_idle, opened + self.o.batch_max)
        if now + 1e-9 < close:
            self.batch_check = True
            self.clock.at(close, PROVISION, "batch", None)
            return
        self.batch_open = None
        before = list(self.cluster.pending)  # in creation order: no set order may reach the clock
        launched = self.cluster.provision(now, self.o.node_startup, self._node_name)
        for name in before:
            pod = self.cluster.pods.get(name)
            if pod is not None and pod.node is not None:
                self._bound(pod, now)
        self._launched(launched, now)

    def _ready(self, name: str, now: float) -> None:
        node = self.cluster.nodes.get(name)
        if node is None:
            return
        node.ready_at = now
        node.last_pod_event = max(node.last_pod_event, now)
        for pod in [p for p in self.cluster.pending.values() if p.nominated == name]:
            self.cluster.bind(pod, name, now)
            self._bound(pod, now)
        self._consolidatable_timer(node, now)
        self._touch()
        for wait in list(self.waiting):  # orchestration queue: replacements initialized -> drain
            if all(r in self.cluster.nodes and self.cluster.nodes[r].ready for r in wait.replacements):
                self.waiting.remove(wait)
                for cand in wait.candidates:
                    node = self.cluster.nodes.get(cand)
                    if node is not None:
                        self._drain(node, now)

    def _record(self, now: float, reason: str, nodes: Iterable[str], replacements: Iterable[str] = ()) -> Disruption:
        record = Disruption(now, reason, list(nodes), list(replacements))
        self.metrics.disruptions.append(record)
        return record

    def _drain(self, node: SimNode, now: float, force: bool = False) -> None:
        """The termination controller: evict what may go, retry the rest, delete the node when only
        DaemonSet pods are left (or at once when forced: grace period over, instance reclaimed)."""
        first = not node.deleting
        node.deleting = True
        if first:
            self._touch()
            if node.grace is not None:
                self.clock.at(now + node.grace, CLUSTER, "force", node.name)
        pods = [self.cluster.pods[p] for p in sorted(node.pods) if p in self.cluster.pods]
        ready = {n.name for n in self.cluster.nodes.values() if n.ready and not n.deleting}
        allowed = {key: pdb_status(spec, list(self.cluster.pods.values()), ready) for key, spec in self.pdbs.items()}
        held = 0
        for pod in pods:
            if pod.daemon:
                continue
            info = pod_info(pod)
            matching = [k for k, s in self.pdbs.items() if s.pdb.namespace == info.namespace and s.pdb.selector.matches(info.labels)]
            blocked = do_not_disrupt(info) or len(matching) > 1 or any(allowed[k] <= 0 for k in matching)
            if blocked and not force:
                held += 1
                continue
            for k in matching:
                allowed[k] -= 1
            if node.record is not None:
                node.record.pods_evicted += 1
            self._evicted(pod, now)
        if held == 0 or force:
            self._terminate(node, now)
        else:
            self.clock.at(now + DRAIN_RETRY, CLUSTER, "drain", node.name)

    def _terminate(self, node: SimNode, now: float) -> None:
        if node.name not in self.cluster.nodes:
            return
        for pod in self.cluster.terminate(node, now):
            if pod.daemon:
                self.cluster.remove_pod(pod, now)
            else:
                if node.record is not None:
                    node.record.pods_evicted += 1
                self._evicted(pod, now)
        self.metrics.node_gone(node, now)
        self.drifted.discard(node.name)
        self.new_pending = True
        self._touch()

    def _expire(self, name: str, now: float) -> None:
        node = self.cluster.nodes.get(name)
        if node is None or node.deleting:
            return
        node.record = self._record(now, "expired", [name])
        self._drain(node, now)

    def _disrupt(self, now: float) -> None:
        self.pass_at = None
        self.last_pass = now
        self.changed = False
        if now - self.last_mark >= CONSOLIDATION_STATE_TTL:
            self.last_mark = now  # ConsolidationState: reset after 5 minutes without change
        if self.consolidated_mark == self.last_mark and not self.drifted:
            return  # IsConsolidated: the consolidation methods return at once, and nothing drifted
        self.passes += 1
        wall = (self.o.start + timedelta(seconds=now)).replace(tzinfo=None)
        cmd = disruption_pass(self.cluster, self.pool_specs, list(self.pdbs.values()), self.drifted, now, wall,
                              self.catalog, self.o.region, self.o.zones, self.o.spot_discount, self.o.spot_to_spot,
                              [o for o, _ in self.karpenter] + self.daemonset_objs, cache=self.pass_cache)
        if cmd is None:
            self.consolidated_mark = self.last_mark  # markConsolidated
            self._wake_at_budget_boundary(now)
            return
        if cmd.reason in ("empty", "underutilized"):
            # validation.go: a consolidation command waits consolidationTTL (15 s) and is dropped if
            # its candidates changed meanwhile; the controller does nothing else while it waits.
            pods = {name: frozenset(self.cluster.nodes[name].pods) for name in cmd.nodes}
            self.validating = True
            self.clock.at(now + VALIDATION_WAIT, DISRUPT, "validate", (cmd, pods, now))
            return
        self._execute(cmd, now, now)

    def _validate(self, payload: tuple, now: float) -> None:
        cmd, pods, decided = payload
        self.validating = False
        self.changed = True  # the controller's next pass follows the wait
        for name, before in pods.items():
            node = self.cluster.nodes.get(name)
            if node is None or node.deleting or node.disrupting or frozenset(node.pods) != before:
                return  # no longer valid: dropped, the next pass decides again
        self._execute(cmd, now, decided)

    def _execute(self, cmd: Command, now: float, decided: float) -> None:
        """orchestration/queue.go: taint the candidates, launch the replacements, drain once they are Ready."""
        launched = []
        for _, r in cmd.replacements:  # Replacements of the disruption API (each names its NodePool)
            node = self.cluster.replacement_node(r.nodepool, r.instance_type, r.capacity_type, r.zone, now,
                                                 self._node_name(r.nodepool))
            if node is None:
                return  # no such offering (defensive): no command
            launched.append(node)
        record = self._record(decided, cmd.reason, cmd.nodes, [n.name for n in launched])
        for name in cmd.nodes:
            self.cluster.nodes[name].disrupting = True
            self.cluster.nodes[name].record = record
        self._launched(launched, now)
        if launched:
            self.waiting.append(_Waiting([n.name for n in launched], list(cmd.nodes), record))
        else:
            for name in cmd.nodes:
                node = self.cluster.nodes.get(name)
                if node is not None:
                    self._drain(node, now)
        self._touch()

    def _wake_at_budget_boundary(self, now: float) -> None:
        """A scheduled budget opening or closing changes what a pass may do: upstream notices it
        within its 5-minute consolidation-state timeout (state/cluster.go ConsolidationState);
        here the next pass runs at the boundary itself."""
        boundary = budget_boundary(self.pool_specs, self.o.start, now, self.o.until)
        if boundary is not None and (self.budget_wake is None or boundary < self.budget_wake or self.budget_wake <= now):
            self.budget_wake = boundary
            self.clock.at(boundary, CLUSTER, "budget", None)

    # -- loop -------------------------------------------------------------------------------------
    def run(self) -> dict:
        until = self.o.until
        for ev in self.trace.events:
            if ev.at <= until:
                self.clock.at(ev.at, TRACE, "trace", ev)
        for w in list(self.workloads.values()):
            self._reconcile(w, 0.0) if w.kind != "CronJob" else None
        self.schedule_due = True
        self.changed = True
        handlers: dict[str, Callable[[Any, float], None]] = {
            "trace": lambda p, t: self._trace_event(p, t),
            "ready": lambda p, t: self._ready(p, t),
            "done": self._done, "cron": lambda p, t: self._cron(p[0], p[1], t),
            "expire": lambda p, t: self._expire(p, t),
            "consolidatable": self._consolidatable,
            "batch": lambda p, t: self._batch(t), "disrupt": lambda p, t: self._disrupt(t),
            "drain": self._drain_retry, "force": self._force, "reclaim": self._force,
            "schedule": lambda p, t: self._schedule(t),
            "budget": self._budget, "validate": self._validate, "reset": self._reset,
        }
        if not 0 <= until <= MAX_UNTIL:
            raise InputError(f"--until must be between 0s and {MAX_UNTIL / 3600:g}h", origin=self.trace.origin)
        with gc_paused():
            if self.o.processes >= 2:
                return self._twinned(handlers, until)
            return self._loop(handlers, until)

    def _twinned(self, handlers: dict, until: float) -> dict:
        """The loop with a twin process sharing each pass's single-node consolidation simulations
        (twin.py); the result is the loop's alone. The twin never returns from here."""
        twin = Twin.fork()
        if twin is None:
            return self._loop(handlers, until)
        self.pass_cache.memo.share = twin
        if twin.rank == 1:
            try:
                self._loop(handlers, until)
            finally:
                os._exit(0)
        try:
            return self._loop(handlers, until)
        finally:
            self.pass_cache.memo.share = None
            twin.close()

    def _loop(self, handlers: dict, until: float) -> dict:
        now = 0.0
        steps = 0
        while True:
            if gc.get_count()[0] > GC_GROWTH:
                gc.collect()
            self._after(now)
            item = self.clock.pop(until)
            steps += 1
            if steps > MAX_STEPS:
                raise InputError(f"more than {MAX_STEPS:,} cluster events by {now:g}s; refused (shorten --until or "
                                 "the trace)", origin=self.trace.origin)
            if item is None or self.clock.now > now:
                self.metrics.sample(now, len(self.cluster.pending))
            if item is None:
                break
            now = self.clock.now
            kind, payload = item
            handlers[kind](payload, now)
        for node in list(self.cluster.nodes.values()):
            self.metrics.node_gone(node, until, terminated=False)
        return self.metrics.result(until)

    def _after(self, now: float) -> None:
        """What a change at `now` sets off: the kube-scheduler at once, a disruption pass at the
        next polling period."""
        if self.schedule_due:
            self.schedule_due = False
            self.clock.at(now, SCHEDULE, "schedule", None)
        if self.changed and self.pass_at is None and not self.validating:
            self.pass_at = max(now, self.last_pass + POLLING_PERIOD)
            self.clock.at(self.pass_at, DISRUPT, "disrupt", None)

    def _done(self, payload: tuple, now: float) -> None:
        name, bound_at = payload
        pod = self.cluster.pods.get(name)
        if pod is None or pod.bound_at != bound_at:
            return  # evicted and recreated since
        w = self.workloads.get(pod.workload)
        self._remove(pod, now)
        if w is not None:
            w.succeeded += 1
            self._reconcile(w, now)

    def _consolidatable(self, payload: tuple, now: float) -> None:
        """A NodeClaim turned Consolidatable. That condition alone does not mark the cluster
        unconsolidated (state/cluster.go triggerConsolidationOnChange looks at initialization and
        deletion only): consolidation sees it at the next 5-minute reset of ConsolidationState
        after the last change, or at the next change, whichever comes first."""
        name, stamp = payload
        node = self.cluster.nodes.get(name)
        if node is None or node.last_pod_event != stamp:
            return
        if now <= self.last_mark:
            self.changed = True
            return
        reset = self.last_mark + CONSOLIDATION_STATE_TTL * math.ceil((now - self.last_mark) / CONSOLIDATION_STATE_TTL)
        self.clock.at(reset, CLUSTER, "reset", self.last_mark)

    def _reset(self, mark: float, now: float) -> None:
        if mark == self.last_mark:  # no change since: the 5-minute reset is what lets consolidation look
            self.changed = True

    def _budget(self, payload: object, now: float) -> None:
        # Budget-constrained passes do not mark the cluster consolidated (emptiness.go and
        # consolidation.go): upstream looks again every 10 s and acts when the window changes.
        self.budget_wake = None
        self.consolidated_mark = None
        self.changed = True

    def _drain_retry(self, name: str, now: float) -> None:
        node = self.cluster.nodes.get(name)
        if node is not None:
            self._drain(node, now)

    def _force(self, name: str, now: float) -> None:
        node = self.cluster.nodes.get(name)
        if node is not None:
            self._drain(node, now, force=True)


def budget_boundary(pools: dict, start: datetime, now: float, until: float) -> float | None:
    """The first time after `now` at which a scheduled budget of these NodePools opens (its
    schedule fires) or closes (`duration` after its last firing): Budget.IsActive changes only there."""
    wall = start + timedelta(seconds=now)
    limit = start + timedelta(seconds=until)
    best = None
    for spec in pools.values():
        for budget in spec.budgets:
            if not budget.schedule:
                continue
            schedule = Schedule(budget.schedule)
            duration = timedelta(seconds=go_duration(budget.duration or "0s") or 0.0)
            opens = schedule.next_after(wall, limit)
            times = [opens] if opens else []
            fired = schedule.next_after(wall - duration, wall)
            last = None
            while fired is not None:  # the last firing in (now - duration, now]
                last = fired
                fired = schedule.next_after(fired, wall)
            if last is not None and last + duration > wall:
                times.append(last + duration)
            for t in times:
                seconds = (t - start).total_seconds()
                if now < seconds <= until and (best is None or seconds < best):
                    best = seconds
    return best


def _api(kind: str) -> str:
    return {"Job": "batch/v1", "ReplicationController": "v1"}.get(kind, "apps/v1")


def replay(objects: Sequence[Any], origins: Sequence[str | None] | None, trace: Trace, options: Options) -> dict:
    """The `-o json` result of replaying `trace` over the cluster in `objects`."""
    return Replay(objects, origins, trace, options).run()


ReplayOptions = Options  # its public name (provisioner.ReplayOptions)
