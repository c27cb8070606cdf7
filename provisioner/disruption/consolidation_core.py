"""What single- and multi-node consolidation share (pkg/controllers/disruption/consolidation.go):
ShouldDisrupt, computeConsolidation (simulate, then price the one replacement) and the Balanced
policy's ApproveCommand (balanced.go)."""
from __future__ import annotations

from typing import Iterable

from kubefacts import labels as L
from .candidates import score_move, should_disrupt_consolidation
from .pass_state import PassState
from .replacement import Replacement, choose, claim_requirements, price_filter
from .types import GRACEFUL, Candidate, Command

REASON = "Underutilized"


class Consolidation:
    """The consolidation struct upstream's two consolidation methods embed."""
    name = ""

    def __init__(self, state: PassState):
        self.state = state

    def should_disrupt(self, c: Candidate) -> str | None:
        """consolidation.ShouldDisrupt."""
        return should_disrupt_consolidation(c)

    def explains(self, c: Candidate) -> bool:
        return not c.empty  # an empty node is emptiness's to explain

    def reason(self) -> str:
        return REASON

    def disruption_class(self) -> str:
        return GRACEFUL

    def approve(self, cmd: Command) -> tuple[bool, str | None]:
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
            score = score_move(share, sum(c.reschedule_cost for c in cands), self.state.totals.get(pool))
            if not score.approved:
                return False, (f"NodePool {pool!r} has consolidationPolicy Balanced and this move scores "
                               f"{score.score:.2f}, below the threshold {score.threshold:.2f} (its savings of "
                               f"${share:.4f}/h are too small for the pods it would disrupt)")
        return True, None

    def compute(self, cands: list[Candidate]) -> tuple[Command | None, str | None]:
        """computeConsolidation: a delete or replace command, or why there is none."""
        state = self.state
        price = sum(c.price for c in cands)
        sim = state.simulator.run(cands, ceiling=None if state.explain else price)
        if sim.abandoned:
            return None, sim.abandoned
        if sim.errors:
            pod, why = sorted(sim.errors.items())[0]
            more = f" (and {len(sim.errors) - 1} other pod(s))" if len(sim.errors) > 1 else ""
            return None, f"its pods would not all fit elsewhere: {pod}: {why}{more}"
        if sim.uninitialized:
            return None, f"its pods would move to node {sim.uninitialized}, which is not initialized yet"
        if not sim.nodeclaims:
            return self._command(cands), None
        if len(sim.nodeclaims) != 1:
            return None, (f"removing it would need {len(sim.nodeclaims)} new nodes; consolidation replaces with at most one")
        claim = sim.nodeclaims[0]
        pool = state.pool_models[claim.nodepool]
        types = [state.pool_types[claim.nodepool][name] for name in claim.instance_type_options]
        pods = [state.simulator.pod_models[name] for name in claim.pods if name in state.simulator.pod_models]
        reqs = claim_requirements(pool, pods)
        all_spot = all(c.capacity_type == L.CAPACITY_TYPE_SPOT for c in cands)
        options, reqs, why = price_filter(types, reqs, price, all_spot, len(cands) == 1, state.spot_to_spot)
        if why:
            return None, why
        replacement = choose(options, reqs)
        if replacement is None:
            return None, "no cheaper replacement exists"
        replacement.nodepool = claim.nodepool
        cmd = self._command(cands, [replacement])
        cmd.options, cmd.requirements = options, reqs  # for the multi-node same-type filter
        return cmd, None

    def _command(self, cands: list[Candidate], replacements: Iterable[Replacement] = ()) -> Command:
        return Command(list(cands), list(replacements), self.name, "underutilized")
