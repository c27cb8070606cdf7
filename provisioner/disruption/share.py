"""Single-node consolidation's candidates shared with a twin process (a replay's two-process
mode, provisioner.replay.twin): each simulates every other candidate in the pass's order, and
the two agree on the earliest that gives a command. The pass's answer is the one a single
process gives (SingleNodeConsolidation.ComputeCommands returns the first candidate, in order,
whose computeConsolidation gives an approved command), only half of the simulations are each
process's own."""
from __future__ import annotations

from typing import Protocol


class Apart(Exception):
    """The twin is gone or out of step: this process simulates every candidate from now on."""


class Share(Protocol):
    def mine(self, index: int) -> bool:
        """Whether this process simulates the candidate at `index` of the pass's order."""
        ...

    def agree(self, names: tuple[str, ...], first: int | None) -> int | None:
        """Given the pass's candidates and the index of the first of this process's own that
        gives a command (None: none does), the earliest of both processes' (None: none); raises
        Apart when the twin is gone or out of step (and is then parted for good)."""
        ...

    def apart(self, why: str) -> None:
        """Part from the twin for good: from now on `mine` is every candidate."""
        ...
