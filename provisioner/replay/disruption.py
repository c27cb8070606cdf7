"""Karpenter's disruption controller over the replayed cluster: the replayed state as the objects
the one cluster model reads (provisioner.state.reader.load_cluster), and one pass of the methods in
upstream's order (pkg/controllers/disruption/controller.go: emptiness, drift, multi-node
consolidation, single-node consolidation; the first that produces a command ends the pass) through
the disruption API `provisioner consolidate` uses, so the replay decides exactly as that command does.

The objects are made in objects.py; a replay's passes put the state together from the reads of
earlier passes (pass_cache.py), or read all the objects with load_cluster.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from datetime import datetime

from ..disruption.snapshot import PodInfo

# One pass of the disruption controller, the documented pure function (provisioner/README.md).
from ..disruption.controller import disruption_pass as _pass_api
from ..catalog import Catalog
from ..state.cluster import Cluster as State
from .cluster import Cluster, SimPod
from .objects import PdbSpec, cluster_objects, pdb_status
from .pass_cache import PassCache, pass_view
from ..state.reader import load_cluster

__all__ = ["Command", "PassCache", "PdbSpec", "any_consolidatable", "cluster_objects", "disruption_pass", "pdb_status",
           "pod_info"]

REASON_DRIFTED = "Drifted"


@dataclass
class Command:
    reason: str  # empty | underutilized | drifted
    nodes: list
    replacements: list = field(default_factory=list)  # ("api", disruption Replacement)


def pod_info(pod: SimPod) -> PodInfo:
    owners = (pod.owner,) if pod.owner else ()
    if pod.daemon:
        owners = (("apps/v1", "DaemonSet"),)
    return PodInfo(name=pod.name, namespace=pod.spec.namespace, node_name=pod.node, labels=pod.labels,
                   annotations=pod.annotations, owners=owners, priority=None, terminal=False, terminating=False,
                   ready_false=False, tolerates_disrupted=False)


def any_consolidatable(cluster: Cluster, pools: dict, now: float) -> bool:
    """Whether some Ready, managed node not being deleted is past its consolidateAfter (what
    emptiness and consolidation both require of a candidate, candidates.py _consolidatable)."""
    for n in cluster.nodes.values():
        spec = pools.get(n.pool) if n.pool else None
        if (spec is not None and n.ready and not n.deleting and not n.disrupting and spec.consolidate_after is not None
                and now >= n.last_pod_event + spec.consolidate_after):
            return True
    return False


def disruption_pass(cluster: Cluster, pools: dict, pdbs: list, drifted: set, now_s: float, wall: datetime,
                    catalog: Catalog, region: str, zones: Iterable[str], spot_discount: float, spot_to_spot: bool,
                    objects: Iterable = (), cache: PassCache | None = None) -> Command | None:
    """One pass of the disruption controller at replay time `now_s` (wall clock `wall`, for
    scheduled budgets): the command it starts, or None. `objects`: the NodePools, EC2NodeClasses,
    NodeOverlays and DaemonSets as given (read by the disruption API, when it is there).
    `cache`: kept across the passes of one replay (PassCache); None reads everything afresh."""
    if not drifted and not any_consolidatable(cluster, pools, now_s):
        return None  # every candidate would fail the Consolidatable check: the pass finds nothing
    # The user's objects were judged when the replay read them; the rest are the replay's own.
    objects = list(objects)
    state: State | None = None
    key: tuple | None = None
    if cache is not None and (view := pass_view(cluster, objects, pools, pdbs, drifted, now_s, wall, cache)) is not None:
        key = view.key if cache.skip else None
        if key is not None and key == cache.quiet:
            cache.skipped += 1
            return None
        state = view.state()
    if state is None:  # read afresh: no cache, or objects it does not read apart (pass_cache.py)
        state = load_cluster(objects + cluster_objects(cluster, pools, pdbs, drifted, now_s, wall), judged=True)
    result = _pass_api(state, catalog, wall, region=region, zones=tuple(zones), spot_discount=spot_discount,
                       spot_to_spot=spot_to_spot, explain=False,  # the replay reads only the command
                       memo=cache.memo if cache is not None else None)
    if cache is not None:
        cache.passes += 1
        cache.quiet = key if not result.commands else None
    if not result.commands:
        return None
    cmd = result.commands[0]
    return Command(cmd.reason, list(cmd.candidates), [("api", r) for r in cmd.replacements])
