"""A consolidation simulation taken from an earlier pass of the same replay, when it would come out
the same (Simulator.run, with a PassMemo and a ceiling).

It would when the run is made of the same things and every node that changed since could take
none of its pods, before and after: the same NodePools, instance types and DaemonSets (the same
objects), the same candidates' price, the same reschedulable pods of the candidates and of the
nodes being deleted and the same pending pods (the same objects), the same nodes in the same
order, and for each node that is not the same object with the same resources left, whether
initialized, whether its hostname is kept off the candidates' pods (consolidateAfter), neither
then nor now room for one pod of the run (resources.Fits on what the node has left, which is
also what the scheduler tries first).

That holds only when nothing else in the run reads a node: no NodePool limits (they count the
nodes' capacity), no running pod's required anti-affinity, and no pod of the run with topology
spread, pod (anti-)affinity, host ports or volumes (`free`). Whatever pods such a node holds,
each pod of the run is refused there in both runs, and every other choice is made on equal facts,
so the runs place alike; only the text of an error could differ, which a caller that reads only
commands (explain=False) does not show.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubefacts import labels as L
from ..models import Pod
from .pass_memo import same

if TYPE_CHECKING:  # simulation imports this module
    from .simulation import Simulation, Simulator

_MAX_KEPT = 4096  # candidate sets remembered (multi-node consolidation tries many prefixes)


@dataclass(eq=False)
class Kept:
    world: tuple[Any, ...]  # (NodePools, instance type lists, DaemonSets) of the pass
    ceiling: float
    moved: list[list[Any]]  # per candidate, in name order: its reschedulable pod models (the memo's list)
    pending: list[Pod]
    deleting: frozenset[str]
    from_deleting: list[Pod]
    nodes: list[tuple[str, Any, dict[str, int], bool, bool, bool]]  # (name, node, left, schedulable, initialized, avoided)
    simulation: Simulation


def free(pods: Iterable[Pod]) -> bool:
    """No pod with topology spread, pod (anti-)affinity, host ports or volumes."""
    for pod in pods:
        spec = pod.spec
        if (spec.spread or spec.affinity or spec.anti_affinity or spec.affinity_preferred
                or spec.anti_affinity_preferred or spec.host_ports or spec.volume_alternatives or pod.volumes):
            return False
    return True


def _room(left: dict[str, int], schedulable: bool, requests: Iterable[dict[str, int]]) -> bool:
    return schedulable and any(all(left.get(k, 0) >= v for k, v in r.items()) for r in requests)


class Reuse:
    """The facts of one run, to look up an earlier run of the same candidates and to be kept."""

    def __init__(self, sim: Simulator, names: set[str], ceiling: float, moved: list[Pod], from_deleting: list[Pod],
                 avoid: frozenset[str]) -> None:
        self.sim, self.ceiling, self.avoid = sim, ceiling, avoid
        self.key = frozenset(names)
        self.moved_models = [sim.reschedulable(n) for n in sorted(names)]
        self.moved, self.from_deleting = moved, from_deleting
        self.view = sim.existing.without(names).order

    def recall(self) -> Simulation | None:
        sim = self.sim
        kept = sim.memo.simulations.get(self.key) if sim.memo is not None else None
        if (kept is None or kept.ceiling != self.ceiling or not _same_world(kept.world, sim.world)
                or kept.deleting != sim.deleting
                or len(kept.moved) != len(self.moved_models) or not all(map(same, kept.moved, self.moved_models))
                or not same(kept.pending, sim.inputs.pods) or not same(kept.from_deleting, self.from_deleting)
                or len(kept.nodes) != len(self.view)):
            return None
        moved = _distinct(p.spec.requests for p in self.moved)
        others = _distinct(p.spec.requests for p in list(sim.inputs.pods) + self.from_deleting)
        both = moved + others
        for (name, node, left, schedulable, initialized, avoided), prep in zip(kept.nodes, self.view):
            now = prep.node
            if now.name != name:
                return None
            is_initialized, is_avoided = name in sim.initialized, self._avoided(prep)
            if (now is node and prep.available is left and initialized == is_initialized
                    and avoided == is_avoided):
                continue
            if initialized != is_initialized:
                return None
            if (_room(left, schedulable, others if avoided else both)
                    or _room(prep.available, prep.schedulable, others if is_avoided else both)):
                return None
        return kept.simulation

    def keep(self, simulation: Simulation) -> None:
        sim = self.sim
        assert sim.memo is not None
        table = sim.memo.simulations
        if len(table) >= _MAX_KEPT:
            table.clear()
        table[self.key] = Kept(sim.world, self.ceiling, self.moved_models, list(sim.inputs.pods), frozenset(sim.deleting),
                               self.from_deleting,
                               [(p.node.name, p.node, p.available, p.schedulable, p.node.name in sim.initialized,
                                 self._avoided(p)) for p in self.view], simulation)

    def _avoided(self, prep: Any) -> bool:
        return prep.node.labels.get(L.HOSTNAME, prep.node.name) in self.avoid


def _distinct(requests: Iterable[dict[str, int]]) -> list[dict[str, int]]:
    seen: dict[int, dict[str, int]] = {}
    for r in requests:
        seen.setdefault(id(r), r)
    return list(seen.values())


def _same_world(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    return len(a) == len(b) and all(map(same, a, b))


def world(pools: Sequence[tuple[Any, Sequence[Any]]], daemonsets: Sequence[Any]) -> tuple[Any, ...]:
    """What a pass's runs schedule against, as objects compared by identity (kept alive by the memo)."""
    return tuple(np_ for np_, _ in pools), tuple(its for _, its in pools), tuple(daemonsets)
