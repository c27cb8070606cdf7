"""What Karpenter v1.14's disruption controller would start in its current pass
(pkg/controllers/disruption/controller.go): the methods run in upstream's order (emptiness,
[static drift, drift: not evaluated here], multi-node, then single-node consolidation) and the
first that produces a command ends the pass.

`consolidate(snapshot, ...)` is pure: a Snapshot and a Catalog in, a ConsolidationResult out.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from kubefacts import labels as L
from ..api import nodepool_instance_types, resolve_catalog
from ..catalog import DEFAULT_REGION, DEFAULT_SPOT_DISCOUNT, DEFAULT_ZONES
from .budgets import REASON_EMPTY, REASON_UNDERUTILIZED, budget_mapping
from .candidates import (Candidate, can_pass_threshold, new_candidate, offering_price, pods_by_node, pool_totals,
                         score_move, should_disrupt_consolidation, should_disrupt_empty)
from .pdb import Limits
from .replacement import Replacement, choose, claim_requirements, price_filter, same_type_ceiling, below
from .simulation import Simulator

MAX_MULTI_NODE = 100  # multinodeconsolidation.go: at most 100 candidates per attempt


@dataclass
class Action:
    kind: str  # delete | replace
    reason: str  # empty | underutilized
    nodes: list
    replacement: Replacement | None
    savings: float
    method: str  # emptiness | multi-node | single-node

    def to_dict(self) -> dict:
        r = self.replacement
        return {"kind": self.kind, "reason": self.reason, "nodes": list(self.nodes),
                "replacement": None if r is None else {"instance_type": r.instance_type, "capacity_type": r.capacity_type,
                                                       "zone": r.zone, "price_usd_hour": round(float(r.price), 6)},
                "savings_usd_hour": round(float(self.savings), 6)}


@dataclass
class ConsolidationResult:
    actions: list = field(default_factory=list)
    blocked: list = field(default_factory=list)  # (node, why)
    price_before: float = 0.0
    assumptions: list = field(default_factory=list)
    candidates: dict = field(default_factory=dict)  # method -> number of eligible nodes

    @property
    def price_after(self) -> float:
        return self.price_before - sum(a.savings for a in self.actions)

    def to_dict(self) -> dict:
        """Exactly the documented `-o json` shape (plus `assumptions`)."""
        return {"actions": [a.to_dict() for a in self.actions],
                "blocked": [{"node": n, "why": w} for n, w in self.blocked],
                "summary": {"price_usd_hour_before": round(float(self.price_before), 6),
                            "price_usd_hour_after": round(float(self.price_after), 6)},
                "assumptions": list(self.assumptions)}


@dataclass
class _Command:
    candidates: list
    replacement: Replacement | None = None

    @property
    def source_cost(self) -> float:
        return sum(c.price for c in self.candidates)

    @property
    def savings(self) -> float:
        """Command.EstimatedSavings."""
        return self.source_cost - (self.replacement.price if self.replacement else 0.0)


WAITS = {
    "emptiness": "waits for a later pass: emptiness acted in this pass, and Karpenter runs one disruption method per pass",
    "multi-node": "waits for a later pass: multi-node consolidation acted in this pass, and Karpenter runs one "
                  "disruption method per pass",
    "single-node": "waits for a later pass: single-node consolidation acted on another node, and it starts one "
                   "command per pass",
}


class _Pass:
    def __init__(self, snap, catalog, region, zones, spot_discount, spot_to_spot, now):
        self.snap = snap
        self.spot_to_spot = spot_to_spot
        self.now = now
        node_zones = {n.labels[L.ZONE] for n in snap.nodes if L.ZONE in n.labels}
        zones = tuple(dict.fromkeys(list(zones) + sorted(node_zones)))
        self.pools, notes = nodepool_instance_types(snap.inputs, catalog, region, zones, spot_discount)
        self.pool_models = {np_.name: np_ for np_, _ in self.pools}
        self.pool_types = {np_.name: {it.name: it for it in its} for np_, its in self.pools}
        self.limits = Limits(snap.pdbs)
        self.simulator = Simulator(snap, self.pools, notes, self.limits)
        self.by_node = pods_by_node(snap)
        self.reasons: dict = {}  # node -> decisive reason
        self.managed = [n for n in snap.nodes if n.claim is not None or L.NODEPOOL in n.labels]
        self.prices = {}
        for n in self.managed:
            it = self.pool_types.get(n.labels.get(L.NODEPOOL, ""), {}).get(n.labels.get(L.INSTANCE_TYPE, ""))
            self.prices[n.name] = offering_price(it, n.labels.get(L.ZONE), n.labels.get(L.CAPACITY_TYPE)) or 0.0
        self.candidates: list[Candidate] = []
        for n in self.managed:
            made = new_candidate(n, snap, self.limits, self.pool_types, self.by_node.get(n.name, []))
            if isinstance(made, Candidate):
                self.candidates.append(made)
            else:
                self.reasons[n.name] = made
        self.totals = pool_totals(self.candidates, snap, self.prices, self.by_node)
        self.eligible: dict = {}

    # -- helpers ------------------------------------------------------------------------------
    def _note(self, c: Candidate, why: str) -> None:
        self.reasons.setdefault(c.name, why)

    @staticmethod
    def _sorted(cands) -> list:
        """sortCandidates: highest savings per unit of disruption first (ties by name here)."""
        return sorted(cands, key=lambda c: (-c.savings_ratio, c.name))

    def _approve(self, cmd: _Command) -> tuple[bool, str | None]:
        """balancedEvaluator.ApproveCommand (EvaluateBalancedMove): every Balanced pool in the
        move must score at least 1/k on its share of the savings."""
        by_pool: dict = {}
        for c in cmd.candidates:
            by_pool.setdefault(c.pool, []).append(c)
        savings, total = cmd.savings, cmd.source_cost
        for pool, cands in sorted(by_pool.items()):
            if cands[0].spec.policy != "Balanced":
                continue
            pool_cost = sum(c.price for c in cands)
            share = savings * (pool_cost / total) if total > 0 and len(by_pool) > 1 else savings
            score = score_move(share, sum(c.reschedule_cost for c in cands), self.totals.get(pool))
            if not score.approved:
                return False, (f"NodePool {pool!r} has consolidationPolicy Balanced and this move scores "
                               f"{score.score:.2f}, below the threshold {score.threshold:.2f} (its savings of "
                               f"${share:.4f}/h are too small for the pods it would disrupt)")
        return True, None

    def compute(self, cands) -> tuple[_Command | None, str | None]:
        """computeConsolidation: a delete or replace command, or why there is none."""
        sim = self.simulator.run(cands)
        if sim.errors:
            pod, why = sorted(sim.errors.items())[0]
            more = f" (and {len(sim.errors) - 1} other pod(s))" if len(sim.errors) > 1 else ""
            return None, f"its pods would not all fit elsewhere: {pod}: {why}{more}"
        if sim.uninitialized:
            return None, f"its pods would move to node {sim.uninitialized}, which is not initialized yet"
        if not sim.nodeclaims:
            return _Command(list(cands)), None
        if len(sim.nodeclaims) != 1:
            return None, (f"removing it would need {len(sim.nodeclaims)} new nodes; consolidation replaces with at most one")
        claim = sim.nodeclaims[0]
        pool = self.pool_models[claim.nodepool]
        types = [self.pool_types[claim.nodepool][name] for name in claim.instance_type_options]
        pods = [self.simulator.pod_models[name] for name in claim.pods if name in self.simulator.pod_models]
        reqs = claim_requirements(pool, pods)
        price = sum(c.price for c in cands)
        all_spot = all(c.capacity_type == L.CAPACITY_TYPE_SPOT for c in cands)
        options, reqs, why = price_filter(types, reqs, price, all_spot, len(cands) == 1, self.spot_to_spot)
        if why:
            return None, why
        replacement = choose(options, reqs)
        if replacement is None:
            return None, "no cheaper replacement exists"
        cmd = _Command(list(cands), replacement)
        cmd._options, cmd._reqs = options, reqs  # for the multi-node same-type filter
        return cmd, None

    # -- methods ------------------------------------------------------------------------------
    def emptiness(self) -> Action | None:
        """emptiness.go ComputeCommands: every empty candidate the Empty budgets allow, in one command."""
        eligible = []
        for c in self.candidates:
            why = should_disrupt_empty(c)
            if why is None:
                eligible.append(c)
            elif c.empty:
                self._note(c, why)
        self.eligible["emptiness"] = len(eligible)
        budgets = budget_mapping(self.snap, REASON_EMPTY, self.now)
        taken = []
        used: dict = {}
        for c in self._sorted(eligible):
            b = budgets.get(c.pool)
            if b is None or b.remaining - used.get(c.pool, 0) <= 0:
                self._note(c, f"empty, but {b.describe(used.get(c.pool, 0)) if b else 'its NodePool has no budget'}")
                continue
            taken.append(c)
            used[c.pool] = used.get(c.pool, 0) + 1
        if not taken:
            return None
        return Action("delete", "empty", [c.name for c in taken], None, sum(c.price for c in taken), "emptiness")

    def _consolidation_candidates(self) -> list:
        out = []
        for c in self.candidates:
            why = should_disrupt_consolidation(c)
            if why is None:
                out.append(c)
            elif not c.empty:
                self._note(c, why)
        return out

    def multi_node(self, eligible) -> Action | None:
        """multinodeconsolidation.go: the largest prefix of the sorted candidates (binary search,
        at most 100) that can be deleted or replaced by one cheaper node of a different type."""
        budgets = budget_mapping(self.snap, REASON_UNDERUTILIZED, self.now)
        disruptable, over_budget = [], {}
        used: dict = {}
        for c in self._sorted(eligible):
            b = budgets.get(c.pool)
            if b is None or b.remaining - used.get(c.pool, 0) <= 0:
                over_budget[c] = b
                continue
            disruptable.append(c)
            used[c.pool] = used.get(c.pool, 0) + 1
        # Only when multi-node acts is the budget what stops the others: otherwise single-node
        # consolidation, which takes one node at a time, still considers them.
        self._over_budget = {c: (b, used.get(c.pool, 0)) for c, b in over_budget.items()}
        if len(disruptable) < 2:
            return None
        lo, hi = 1, min(len(disruptable), MAX_MULTI_NODE)
        if len(disruptable) <= hi:
            hi = len(disruptable) - 1
        best = None
        while lo <= hi:
            mid = (lo + hi) // 2
            cmd, _ = self.compute(disruptable[:mid + 1])
            valid = cmd is not None and cmd.replacement is None
            if cmd is not None and cmd.replacement is not None:
                ceiling = same_type_ceiling(cmd._options, cmd.candidates)
                options = below(cmd._options, cmd._reqs, ceiling)
                if options:
                    cmd.replacement = choose(options, cmd._reqs)
                    valid = cmd.replacement is not None
            if valid and not self._approve(cmd)[0]:
                valid = False
            if valid:
                best, lo = cmd, mid + 1
            else:
                hi = mid - 1
        if best is None:
            return None
        for c, (b, _) in self._over_budget.items():
            taken = sum(1 for x in best.candidates if x.pool == c.pool)
            self._note(c, b.describe(taken) if b else "its NodePool has no budget")
        return self._action(best, "multi-node")

    def single_node(self, eligible) -> Action | None:
        """singlenodeconsolidation.go: candidates by savings ratio, NodePools interleaved; the
        first that can be deleted or replaced by one cheaper node is the command."""
        budgets = budget_mapping(self.snap, REASON_UNDERUTILIZED, self.now)
        by_pool: dict = {}
        for c in self._sorted(eligible):
            by_pool.setdefault(c.pool, []).append(c)
        ordered = []
        for i in range(max((len(v) for v in by_pool.values()), default=0)):
            for pool in sorted(by_pool):  # upstream walks a Go map here: pool order is unspecified
                if i < len(by_pool[pool]):
                    ordered.append(by_pool[pool][i])
        # Single-node consolidation takes nothing from the budgets while it looks, so a NodePool
        # without budget skips all its candidates, also those after the command is found.
        for c in ordered:
            b = budgets.get(c.pool)
            if b is None or b.remaining == 0:
                self._note(c, b.describe() if b else "its NodePool has no budget")
        for c in ordered:
            b = budgets.get(c.pool)
            if b is None or b.remaining == 0:
                continue
            if (score := can_pass_threshold(c, self.totals)) is not None:
                self._note(c, f"NodePool {c.pool!r} has consolidationPolicy Balanced and even deleting the node "
                              f"would score {score.score:.2f}, below the threshold {score.threshold:.2f}")
                continue
            cmd, why = self.compute([c])
            if cmd is None:
                self._note(c, why)
                continue
            approved, why = self._approve(cmd)
            if not approved:
                self._note(c, why)
                continue
            return self._action(cmd, "single-node")
        return None

    @staticmethod
    def _action(cmd: _Command, method: str) -> Action:
        return Action("replace" if cmd.replacement else "delete", "underutilized", [c.name for c in cmd.candidates],
                      cmd.replacement, cmd.savings, method)

    def run(self) -> ConsolidationResult:
        action = self.emptiness()
        if action is None:
            eligible = self._consolidation_candidates()
            self.eligible["multi-node"] = self.eligible["single-node"] = len(eligible)
            action = self.multi_node(eligible)
            if action is None:
                action = self.single_node(eligible)
        else:
            self._consolidation_candidates()
        result = ConsolidationResult(price_before=sum(self.prices.values()), candidates=dict(self.eligible))
        acted = set(action.nodes) if action else set()
        if action:
            result.actions.append(action)
        for n in self.managed:
            if n.name in acted:
                continue
            why = self.reasons.get(n.name)
            if why is None:
                why = WAITS[action.method] if action else "no consolidation found for it in this pass"
            result.blocked.append((n.name, why))
        return result


def consolidate(snap, catalog=None, region: str = DEFAULT_REGION, zones=DEFAULT_ZONES,
                spot_discount: float = DEFAULT_SPOT_DISCOUNT, spot_to_spot: bool | None = None,
                now: datetime | None = None) -> ConsolidationResult:
    """The command Karpenter's disruption controller would start now for this snapshot, and why
    every other Karpenter-managed node is left alone.

    spot_to_spot: the SpotToSpotConsolidation feature gate; None reads it from the snapshot (a
    Karpenter Deployment's FEATURE_GATES or the chart's values), else off as upstream's default.
    now: when scheduled disruption budgets are evaluated (UTC); None takes them as active.
    """
    gate = spot_to_spot if spot_to_spot is not None else bool(snap.spot_to_spot)
    p = _Pass(snap, resolve_catalog(catalog), region, zones, spot_discount, gate, now)
    result = p.run()
    result.assumptions = assumptions(snap, now, spot_to_spot, gate)
    return result


def assumptions(snap, now=None, spot_to_spot=None, gate=False) -> list:
    """What the answer takes for granted because it depends on time or on state a snapshot lacks."""
    out = ["drift is not evaluated here (see `provisioner drift`): no node is taken as drifted, so the methods "
           "that run are emptiness, multi-node and single-node consolidation"]
    claims = [n for n in snap.nodes if n.claim is not None]
    if any(n.claim.synthesized for n in claims):
        out.append("the snapshot has no NodeClaims: every node with a karpenter.sh/nodepool label is taken as "
                   "Karpenter-managed by a NodeClaim that is not being deleted")
    if any(n.claim.synthesized for n in claims):
        out.append("consolidateAfter: nodes without a NodeClaim in the snapshot are taken as past their NodePool's "
                   "consolidateAfter since their last pod event (the NodeClaim's Consolidatable condition says)")
    out.append("time: the candidates are taken as still valid after Karpenter's 15 s validation wait, and no node "
               "is nominated for a pending pod")
    if any(b.schedule for spec in snap.pools.values() for b in spec.budgets):
        out.append("disruption budgets with a schedule are taken as active" if now is None else
                   f"disruption budgets with a schedule are evaluated at {now.strftime('%Y-%m-%dT%H:%MZ')} (UTC)")
    source = ("set on the command line" if spot_to_spot is not None else
              f"read from {snap.spot_to_spot_source}" if snap.spot_to_spot is not None else
              "not found in the snapshot, so off as Karpenter's default")
    out.append(f"the SpotToSpotConsolidation feature gate is {'on' if gate else 'off'} ({source})")
    if any(p.annotations.get("karpenter.sh/do-not-disrupt") not in (None, "true") for p in snap.pods):
        out.append("karpenter.sh/do-not-disrupt annotations with a duration are taken as still in effect")
    if any(n.ready is None for n in snap.nodes):
        out.append("nodes without a Ready condition in the snapshot are taken as Ready")
    if any(not p.has_status for p in snap.pdbs):
        out.append("PodDisruptionBudgets without status.disruptionsAllowed allow no disruption, as Karpenter reads it")
    return out
