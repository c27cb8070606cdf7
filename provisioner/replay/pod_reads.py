"""The replayed pods as the disruption passes read them (provisioner/replay/pass_cache.py), kept
between passes: each pod's object read once while it is the same (as load_objects and load_cluster
read a Pod), and the lists a pass's state holds (every PodInfo, the bound, pending and ignored pods,
each node's pods) kept in the cluster's order and changed only where Cluster.pod_log says a pod was
added, bound or removed. Each node's pods are kept grouped as state.cluster.NodePods too, a new one
made only when the node's pods changed (so what a pass derives from one is reused by identity).

The cluster's order is the order of its pods dict: a pod added under a new name goes last, one
added under a name there keeps its place, a removed one leaves it. Each name gets a sequence number
when it enters, so the lists are kept sorted by it."""
from __future__ import annotations

from bisect import bisect_left
from operator import attrgetter
from typing import Any, Protocol, TypeVar

from ..errors import InputError
from ..loader.fields import Ctx
from ..loader.pods import load_pod
from ..loader.provisionable import pod_reason
from ..loader.storage import volume_refs
from ..memo import forget_absent, remember
from ..state.cluster import NodePods
from ..state.reader import load_pod_info
from .cluster import Cluster
from .objects import pod_object

_SIG = attrgetter("node", "labels", "annotations", "raw_spec", "owner", "daemon")  # what a pod's item is made of
SIG, KEY, MODEL, INFO, BOUND, PENDING, IGNORED, WHY = range(8)  # an item's fields (_item)


class _Ordered:
    """Values in the order of their sequence numbers."""
    __slots__ = ("seqs", "values")

    def __init__(self) -> None:
        self.seqs: list = []
        self.values: list = []

    def put(self, seq: int, value: Any) -> None:
        i = bisect_left(self.seqs, seq)
        if i < len(self.seqs) and self.seqs[i] == seq:
            self.values[i] = value
        else:
            self.seqs.insert(i, seq)
            self.values.insert(i, value)

    def drop(self, seq: int) -> None:
        i = bisect_left(self.seqs, seq)
        if i < len(self.seqs) and self.seqs[i] == seq:
            del self.seqs[i]
            del self.values[i]


class PodReads:
    """The pods' reads and lists (module docstring), for the Cluster whose pod_log it set last."""

    def __init__(self) -> None:
        self.reads: dict = {}  # pod name -> (object without nodeName, Pod, PodInfo, pending reason)
        self.templates: dict = {}  # workload -> (the last object read of it without its name, its read)
        self.order: dict | None = None  # pod name -> (sequence number, item)
        self.log: list | None = None  # the Cluster.pod_log this set, to be told of the changes since
        self.seq = 0
        self.keys = _Ordered()  # (read, node) of every pod: what a pass reads of it
        self.infos = _Ordered()  # PodInfo of every pod
        self.bound = _Ordered()  # Pod models of the bound pods
        self.pending = _Ordered()  # Pod models of the pending pods Karpenter provisions for
        self.ignored = _Ordered()  # (name, why) of the other pending pods
        self.on: dict = {}  # node name -> _Ordered items of its pods
        self.groups: dict = {}  # node name -> NodePods of its pods (models aligned with infos, bound = models)
        self._dirty: set = set()  # nodes whose pods changed since their NodePods were made

    def update(self, cluster: Cluster) -> bool:
        """Bring the reads up to date with the cluster's pods; False when a pod must be read with
        the other objects (it has volumes, whose claims the loader joins) or cannot be read."""
        log, order = cluster.pod_log, self.order
        afresh = log is None or log is not self.log or order is None  # (or another reader took it)
        self.log = cluster.pod_log = []
        readable, untold = True, False
        if not afresh:
            assert order is not None and log is not None
            olds: dict = {}
            for name, change in log:
                if name not in olds:
                    olds[name] = order.get(name)
                if change == "add" and name not in order:
                    self.seq += 1
                    order[name] = (self.seq, None)
                elif change == "remove":
                    order.pop(name, None)
            for name, old in olds.items():
                if old is not None:
                    self._leave(*old)
                new, pod = order.get(name), cluster.pods.get(name)
                if new is not None and pod is not None:
                    item = _item(pod, old[1] if old is not None else None, self)
                    order[name] = (new[0], item)
                    if item is None:
                        readable = False
                        break
                    self._enter(new[0], item)
                elif new is not None or pod is not None:
                    untold = True
            afresh = readable and (untold or len(order) != len(cluster.pods))  # (a change not told)
        if afresh:
            olds = order or {}
            order = {}
            self.keys, self.infos, self.bound, self.pending, self.ignored = (_Ordered() for _ in range(5))
            self.on, self.groups = {}, {}
            for name, pod in cluster.pods.items():
                old = olds.get(name)
                item = _item(pod, old[1] if old is not None else None, self)
                if item is None:
                    readable = False
                    break
                self.seq += 1
                order[name] = (self.seq, item)
                self._enter(self.seq, item)
        self.order = order if readable else None  # (read afresh next time)
        if readable:
            self._regroup()
        forget_absent(self.reads, cluster.pods, 1000)  # pods long gone
        return readable

    def read(self, workload: Any, base: dict) -> tuple:
        """_read_pod of a pod's object, from the read of an earlier pod of its workload when the
        two objects differ in metadata.name alone: a read takes the name into the models' names
        only (load_pod's pod_spec, load_pod_info and pod_reason read the rest), so the earlier
        read with this name is this object's read. Each model is a copy of its own (so the pods'
        specs are distinct objects, as separate reads make them)."""
        meta = base["metadata"]
        unnamed = {**base, "metadata": {**meta, "name": None}}
        kept = self.templates.get(workload)
        if kept is None or kept[0] != unnamed:
            entry = _read_pod(base)
            remember(self.templates, workload, (unnamed, entry), 1000)
            return entry
        _, model, info, reason = kept[1]
        if model is None:
            return (base, None, None, None)
        name = f"{info.namespace}/{meta['name']}"
        spec = _clone(model.spec)
        model = _copy(model, None)
        model.name, model.spec = name, spec
        info = _copy(info, None)
        info.name = name
        return (base, model, info, reason)

    def _regroup(self) -> None:
        """A new NodePods for each node whose pods changed (the others keep theirs)."""
        for node in self._dirty:
            on = self.on.get(node)
            if on is None:
                self.groups.pop(node, None)
                continue
            models = [item[MODEL] for item in on.values]
            self.groups[node] = NodePods([item[INFO] for item in on.values], models, models, list(on.seqs))
        self._dirty.clear()

    def _enter(self, seq: int, item: tuple) -> None:
        self.keys.put(seq, item[KEY])
        self.infos.put(seq, item[INFO])
        if item[BOUND]:
            node = item[SIG][0]
            on = self.on.get(node)
            if on is None:
                on = self.on[node] = _Ordered()
            on.put(seq, item)
            self._dirty.add(node)
            self.bound.put(seq, item[MODEL])
        elif item[PENDING]:
            self.pending.put(seq, item[MODEL])
        else:
            self.ignored.put(seq, item[WHY])

    def _leave(self, seq: int, item: tuple | None) -> None:
        if item is None:
            return
        self.keys.drop(seq)
        self.infos.drop(seq)
        if item[BOUND]:
            node = item[SIG][0]
            on = self.on[node]
            on.drop(seq)
            self._dirty.add(node)
            if not on.seqs:
                del self.on[node]
            self.bound.drop(seq)
        elif item[PENDING]:
            self.pending.drop(seq)
        else:
            self.ignored.drop(seq)


def _item(pod: Any, old: tuple | None, reads: PodReads) -> tuple | None:
    """The pod's item: its node and object fields, (its read, node), its models bound to the node,
    whether it is bound, pending (and provisioned for), ignored, and (name, why it is ignored); None
    when it has volumes or cannot be read. `old` the item its name had: its read is reused while
    the object is the same."""
    sig = _SIG(pod)
    if old is not None and old[SIG] == sig:
        return old
    node = sig[0]
    if old is not None and old[SIG][1:] == sig[1:]:
        entry = old[KEY][0]  # bound elsewhere, the same object otherwise
    else:
        base = pod_object(pod, None)
        entry = reads.reads.get(pod.name)
        if entry is None or entry[0] != base:
            try:
                entry = reads.read(pod.workload, base)
            except InputError:
                return None  # the pass reads all the objects, and raises it
            reads.reads[pod.name] = entry
    _, model, info, reason = entry
    if model is None:
        return None
    return (sig, (entry, node), _copy(model, node or None), _copy(info, node or None), bool(node),
            not node and reason is None, not node and reason is not None, (model.name, reason))


def _read_pod(base: dict) -> tuple:
    """(object, Pod model, PodInfo, why it is not provisioned for when pending) of a pod's object
    without spec.nodeName, as load_objects and load_cluster read it; the models None when it has
    volumes."""
    meta = base["metadata"]
    ctx = Ctx(None, "Pod", f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta["name"]))
    if volume_refs(ctx, base.get("spec"), "spec"):
        return (base, None, None, None)
    return (base, load_pod(base, ctx, {}), load_pod_info(base, ctx), pod_reason(base))


class _Bound(Protocol):
    node_name: str | None


_Model = TypeVar("_Model", bound=_Bound)  # a pod's models.Pod or PodInfo
_T = TypeVar("_T")


def _copy(model: _Model, node_name: str | None) -> _Model:
    """A copy of a cached pod model bound to `node_name` (the cached read stays unbound;
    dataclasses.replace costs several times more)."""
    out = _clone(model)
    out.node_name = node_name
    return out


def _clone(obj: _T) -> _T:
    """A shallow copy of a dataclass instance without running its __init__."""
    out = object.__new__(type(obj))
    out.__dict__.update(obj.__dict__)
    return out
