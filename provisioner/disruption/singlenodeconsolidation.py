"""Single-node consolidation (pkg/controllers/disruption/singlenodeconsolidation.go): candidates
by savings ratio, NodePools interleaved; the first that can be deleted or replaced by one cheaper
node is the command."""
from __future__ import annotations

from typing import cast

from .candidates import can_pass_threshold
from .consolidation_core import Consolidation
from .share import Apart, Share
from .types import Candidate, Command


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
        eligible = []
        for c in ordered:
            b = budgets.get(c.pool)
            if b is None or b.remaining == 0:
                continue
            if (score := can_pass_threshold(c, state.totals)) is not None:
                state.note(c, f"NodePool {c.pool!r} has consolidationPolicy Balanced and even deleting the node "
                              f"would score {score.score:.2f}, below the threshold {score.threshold:.2f}")
                continue
            eligible.append(c)
        if state.share is not None and not state.explain and len(eligible) > 1:  # both decide alike
            try:
                return self._shared(state.share, eligible)
            except Apart:  # the twin is gone: every candidate is simulated here
                pass
        for c in eligible:
            cmd = self._command_for(c)
            if cmd is not None:
                return [cmd]
        return []

    def _command_for(self, c: Candidate) -> Command | None:
        """computeConsolidation and ApproveCommand for one candidate: its command, or None."""
        state = self.state
        cmd, why = self.compute([c])
        if cmd is None:
            state.note(c, cast(str, why))  # no command: compute says why
            return None
        approved, why = self.approve(cmd)
        if not approved:
            state.note(c, cast(str, why))  # refused: approve says why
            return None
        return cmd

    def _shared(self, share: Share, eligible: list[Candidate]) -> list[Command]:
        """The loop above with a twin: this process's half in order up to its first command, then
        the earliest of both halves; a winner of the other half is simulated here too."""
        first: tuple[int, Command] | None = None
        for i, c in enumerate(eligible):
            if share.mine(i) and (cmd := self._command_for(c)) is not None:
                first = (i, cmd)
                break
        winner = share.agree(tuple(c.name for c in eligible), first[0] if first else None)
        if winner is None:
            return []
        if first is not None and first[0] == winner:
            return [first[1]]
        cmd = self._command_for(eligible[winner])
        if cmd is None:  # the twin read the pass otherwise: out of step
            share.apart(f"candidate {eligible[winner].name} gives a command only in the twin")
            raise Apart("out of step")
        return [cmd]
