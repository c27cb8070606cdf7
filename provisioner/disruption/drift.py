"""Drift (pkg/controllers/disruption/drift.go): replace, one at a time, the candidates whose
NodeClaim carries Drifted=True, oldest drift first and empty ones before the others, within the
Drifted budgets, as soon as their pods can move (replacements launched as the simulation asks,
with no price rule).

Which NodeClaims drift is decided elsewhere, as upstream's NodeClaim disruption controller does
(pkg/controllers/nodeclaim/disruption/drift.go): provisioner.disruption.nodeclaim_drift, whose
`drift` and `DriftReport` are re-exported here for the `drift` command and its callers.
Not modelled: a NodeClaim's terminationGracePeriod (NewCandidate lets an eventual method take a
node whose pods block eviction when it is set); here such pods block drift as they block
consolidation.
"""
from __future__ import annotations

from .nodeclaim_drift import DriftReport, drift  # noqa: F401  (the drift preview's public names)
from .pass_state import PassState
from .replacement import Replacement
from .types import EVENTUAL, Candidate, Command


class Drift:
    name = "drift"

    def __init__(self, state: PassState):
        self.state = state

    def should_disrupt(self, c: Candidate) -> str | None:
        """Drift.ShouldDisrupt: not in a static NodePool, and the NodeClaim is Drifted."""
        if c.spec.static:
            return f"NodePool {c.pool!r} is static (spec.replicas): its drift is static drift, not modelled here"
        if c.node.claim is None or c.node.claim.drifted is None:
            return "not drifted"
        return None

    def explains(self, c: Candidate) -> bool:
        """Only a drifted node is told why drift leaves it."""
        return c.node.claim is not None and c.node.claim.drifted is not None

    def reason(self) -> str:
        return "Drifted"

    def disruption_class(self) -> str:
        return EVENTUAL

    def consolidation_type(self) -> str:
        return ""

    def compute_commands(self, budgets: dict, candidates: list) -> list:
        """Drift.ComputeCommands."""
        state = self.state
        ordered = sorted(candidates, key=lambda c: c.node.claim.drifted or "")  # Drifted lastTransitionTime
        empty = [c for c in ordered if not c.reschedulable]
        for c in empty + [c for c in ordered if c.reschedulable]:
            b = budgets.get(c.pool)
            if b is None or b.remaining == 0:
                state.note(c, f"drifted, but {b.describe() if b else 'its NodePool has no budget'}")
                continue
            sim = state.simulator.run([c], consolidation=False)  # SimulateScheduling without IsConsolidationSimulation
            if sim.errors:  # AllNonPendingPodsScheduled
                pod, why = sorted(sim.errors.items())[0]
                state.note(c, f"drifted, but its pods would not all fit elsewhere: {pod}: {why}")
                continue
            replacements = [Replacement(n.instance_type, n.capacity_type, n.zone, n.price_usd_hour,
                                        list(n.instance_type_options), n.nodepool) for n in sim.nodeclaims]
            return [Command([c], replacements, self.name, "drifted")]
        return []
