"""Emptiness (pkg/controllers/disruption/emptiness.go): every empty candidate the Empty budgets
allow, in one delete command, whatever the NodePool's consolidation policy."""
from __future__ import annotations

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
        state = self.state
        taken = []
        used: dict = {}
        for c in state.sorted(candidates):
            b = budgets.get(c.pool)
            if b is None or b.remaining - used.get(c.pool, 0) <= 0:
                state.note(c, f"empty, but {b.describe(used.get(c.pool, 0)) if b else 'its NodePool has no budget'}")
                continue
            taken.append(c)
            used[c.pool] = used.get(c.pool, 0) + 1
        if not taken:
            return []
        return [Command(taken, [], self.name, "empty")]
