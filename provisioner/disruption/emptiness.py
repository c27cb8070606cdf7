"""Emptiness (pkg/controllers/disruption/emptiness.go): every empty candidate the Empty budgets
allow, in one delete command, whatever the NodePool's consolidation policy."""
from __future__ import annotations

from .budgets import take_within_budgets
from .candidates import should_disrupt_empty
from .pass_state import PassState
from .types import GRACEFUL, Candidate, Command


class Emptiness:
    name = "emptiness"

    def __init__(self, state: PassState):
        self.state = state

    def should_disrupt(self, c: Candidate) -> str | None:
        """Emptiness.ShouldDisrupt."""
        return should_disrupt_empty(c)

    def explains(self, c: Candidate) -> bool:
        return c.empty

    def reason(self) -> str:
        return "Empty"

    def disruption_class(self) -> str:
        return GRACEFUL

    def consolidation_type(self) -> str:
        return "empty"

    def compute_commands(self, budgets: dict, candidates: list) -> list:
        """Emptiness.ComputeCommands: candidates by savings ratio, each taking one from its
        NodePool's Empty budget; those over budget wait."""
        taken, over = take_within_budgets(self.state.sorted(candidates), budgets)
        for c, (b, used) in over.items():
            self.state.note(c, f"empty, but {b.describe(used) if b else 'its NodePool has no budget'}")
        if not taken:
            return []
        return [Command(taken, [], self.name, "empty")]
