"""What one disruption pass computes once and every method reads (pkg/controllers/disruption
helpers.go GetCandidatesWithTotals, BuildDisruptionBudgetMapping, SimulateScheduling): each
NodePool's instance types, the PDB limits, the candidates (NewCandidate, types.go) with their
prices, the Balanced policy's NodePool totals, one scheduling simulator, and the sentence that
keeps each node out (the first one given wins, as the methods run in upstream's order).
"""
from __future__ import annotations

from datetime import datetime
from functools import partial
from typing import Iterable

from kubefacts import labels as L
from ..catalog import Catalog
from ..planning import nodepool_instance_types
from .budgets import budget_mapping
from .candidates import PodFacts, new_candidate, offering_price, pod_facts, pool_totals
from ..memo import remember, same
from .pass_memo import PassMemo
from ..state.cluster import Cluster, pods_by_node
from .pdb import Limits
from .simulation import Simulator
from .types import Candidate


def _by_name(types: list, memo: PassMemo | None) -> dict:
    """A NodePool's instance types by name; kept while they are the same objects (the catalog
    hands a pass the list an earlier pass had, unless overlays made it afresh)."""
    kept = memo.types.get(id(types)) if memo is not None else None
    if kept is not None and kept[0] == types:  # `same` at C speed: an InstanceType equals itself alone (eq=False)
        return kept[1]
    found = {it.name: it for it in types}
    if memo is not None:
        remember(memo.types, id(types), (list(types), found), 64)  # (a list's id may be reused: its items are compared)
    return found


class PassState:
    def __init__(self, cluster: Cluster, catalog: Catalog, region: str, zones: Iterable[str], spot_discount: float,
                 spot_to_spot: bool, now: datetime | None, explain: bool = True, memo: PassMemo | None = None) -> None:
        """explain False: only the pass's command matters, not why each node stays (a replay): a
        consolidation simulation ends as soon as it cannot give a command (Simulator.run's ceiling).
        memo: what earlier passes over this changing cluster derived (a replay's), or None."""
        assert cluster.inputs is not None  # read with the scheduling models (state.reader, not facts=True)
        self.cluster = cluster
        self.spot_to_spot = spot_to_spot
        self.explain = explain
        self.now = now
        node_zones = {n.labels[L.ZONE] for n in cluster.nodes if L.ZONE in n.labels}
        zones = tuple(dict.fromkeys(list(zones) + sorted(node_zones)))
        self.pools, notes = nodepool_instance_types(cluster.inputs, catalog, region, zones, spot_discount)
        self.pool_models = {np_.name: np_ for np_, _ in self.pools}
        self.pool_types = {np_.name: _by_name(its, memo) for np_, its in self.pools}
        self.limits = Limits(cluster.pdbs)
        groups = cluster.node_pods  # kept grouped by the reader (a replay's), or grouped here
        self.by_node = {name: g.infos for name, g in groups.items()} if groups is not None else pods_by_node(cluster)
        self.simulator = Simulator(cluster, self.pools, notes, self.limits, memo, self.by_node)
        if memo is not None:
            memo.forget({n.name for n in cluster.nodes})
        self.memo = self.simulator.memo  # the pod facts hold only without PDBs, as the simulator's do
        self.share = memo.share if memo is not None and not explain else None
        self.reasons: dict = {}  # node -> decisive reason
        self.managed = [n for n in cluster.nodes if n.claim is not None or L.NODEPOOL in n.labels]
        self.prices = {}
        for n in self.managed:
            it = self.pool_types.get(n.labels.get(L.NODEPOOL, ""), {}).get(n.labels.get(L.INSTANCE_TYPE, ""))
            self.prices[n.name] = offering_price(it, n.labels.get(L.ZONE), n.labels.get(L.CAPACITY_TYPE)) or 0.0
        self.candidates: list[Candidate] = []
        for n in self.managed:
            pods = self.by_node.get(n.name, [])
            facts = partial(self._pod_facts, n.name, pods) if self.memo is not None else None
            made = new_candidate(n, cluster, self.limits, self.pool_types, pods, facts)
            if isinstance(made, Candidate):
                self.candidates.append(made)
            else:
                self.reasons[n.name] = made
        self.totals = pool_totals(self.candidates, cluster, self.prices, self.by_node)
        self.eligible: dict = {}  # method name -> number of candidates ShouldDisrupt kept

    def _pod_facts(self, name: str, pods: list) -> PodFacts:
        """pod_facts of a node's pods, kept while they are the same objects."""
        assert self.memo is not None
        kept = self.memo.pod_facts.get(name)
        if kept is not None and same(kept[0], pods):
            return kept[1]
        facts = pod_facts(pods, self.limits)
        self.memo.pod_facts[name] = (pods, facts)
        return facts

    def note(self, c: Candidate, why: str) -> None:
        self.reasons.setdefault(c.name, why)

    def budgets(self, reason: str) -> dict:
        """BuildDisruptionBudgetMapping for a reason, at the pass's time."""
        return budget_mapping(self.cluster, reason, self.now)

    @staticmethod
    def sorted(cands: Iterable[Candidate]) -> list:
        """sortCandidates: highest savings per unit of disruption first (ties by name here)."""
        return sorted(cands, key=lambda c: (-c.savings_ratio, c.name))
