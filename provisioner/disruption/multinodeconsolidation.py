"""Multi-node consolidation (pkg/controllers/disruption/multinodeconsolidation.go): the largest
prefix of the candidates, by savings ratio and within the Underutilized budgets, that can be
deleted or replaced by one cheaper node of another type (binary search, at most 100)."""
from __future__ import annotations

from typing import cast

from ..scheduling.requirements import Requirements
from .budgets import take_within_budgets
from .consolidation_core import Consolidation
from .replacement import below, choose, same_type_ceiling

MAX_MULTI_NODE = 100  # at most 100 candidates per attempt


class MultiNodeConsolidation(Consolidation):
    name = "multi-node"

    def consolidation_type(self) -> str:
        return "multi"

    def compute_commands(self, budgets: dict, candidates: list) -> list:
        """MultiNodeConsolidation.ComputeCommands and firstNConsolidationOption."""
        state = self.state
        disruptable, over_budget = take_within_budgets(state.sorted(candidates), budgets)
        if len(disruptable) < 2:
            return []
        lo, hi = 1, min(len(disruptable), MAX_MULTI_NODE)
        if len(disruptable) <= hi:
            hi = len(disruptable) - 1
        best = None
        while lo <= hi:
            mid = (lo + hi) // 2
            cmd, _ = self.compute(disruptable[:mid + 1])
            valid = False
            if cmd is not None:
                current = cmd.replacement
                valid = current is None
                if current is not None:
                    # filterOutSameInstanceType: never relaunch the type of a candidate being replaced
                    # A replace command carries the requirements its options were priced with (compute).
                    reqs = cast(Requirements, cmd.requirements)
                    ceiling = same_type_ceiling(cmd.options, cmd.candidates)
                    options = below(cmd.options, reqs, ceiling)
                    if options:
                        replacement = choose(options, reqs)
                        if replacement is not None:
                            replacement.nodepool = current.nodepool
                        cmd.replacements = [replacement] if replacement is not None else []
                        valid = replacement is not None
                if valid and not self.approve(cmd)[0]:
                    valid = False
            if valid:
                best, lo = cmd, mid + 1
            else:
                hi = mid - 1
        if best is None:
            return []
        # Only when multi-node acts is the budget what stops the others: otherwise single-node
        # consolidation, which takes one node at a time, still considers them.
        for c, (b, _) in over_budget.items():
            taken = sum(1 for x in best.candidates if x.pool == c.pool)
            state.note(c, b.describe(taken) if b else "its NodePool has no budget")
        return [best]
