"""Single-node consolidation (pkg/controllers/disruption/singlenodeconsolidation.go): candidates
by savings ratio, NodePools interleaved; the first that can be deleted or replaced by one cheaper
node is the command."""
from __future__ import annotations

from typing import cast

from .candidates import can_pass_threshold
from .consolidation_core import Consolidation


class SingleNodeConsolidation(Consolidation):
    name = "single-node"

    def consolidation_type(self) -> str:
        return "single"

    def compute_commands(self, budgets: dict, candidates: list) -> list:
        """SingleNodeConsolidation.ComputeCommands (sortCandidates, then per NodePool in turn)."""
        state = self.state
        by_pool: dict = {}
        for c in state.sorted(candidates):
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
                state.note(c, b.describe() if b else "its NodePool has no budget")
        for c in ordered:
            b = budgets.get(c.pool)
            if b is None or b.remaining == 0:
                continue
            if (score := can_pass_threshold(c, state.totals)) is not None:
                state.note(c, f"NodePool {c.pool!r} has consolidationPolicy Balanced and even deleting the node "
                              f"would score {score.score:.2f}, below the threshold {score.threshold:.2f}")
                continue
            cmd, why = self.compute([c])
            if cmd is None:
                state.note(c, cast(str, why))  # no command: compute says why
                continue
            approved, why = self.approve(cmd)
            if not approved:
                state.note(c, cast(str, why))  # refused: approve says why
                continue
            return [cmd]
        return []
