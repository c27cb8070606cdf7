"""The disruption method interface, its candidates and commands (pkg/controllers/disruption/types.go).

Every method (emptiness, drift, multi-node and single-node consolidation) answers the same five
questions as upstream's `Method`; the controller (controller.py) runs them in upstream's order.
Where upstream returns a bool or drops a node silently, these return the sentence saying why, so
that every Karpenter-managed node can be explained.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..models import InstanceType
from ..scheduling.requirements import Requirements
from ..state.objects import PoolDisruption
from ..state.statenode import StateNode
from .replacement import Replacement

GRACEFUL = "graceful"  # GracefulDisruptionClass: respects blocking PDBs and do-not-disrupt
EVENTUAL = "eventual"  # EventualDisruptionClass: bounded by the NodePool's terminationGracePeriod
PER_NODE_BASE_DISRUPTION_COST = 1.0  # PerNodeBaseDisruptionCost


@dataclass(eq=False)
class Candidate:
    """Candidate: a StateNode considered for disruption, with its NodePool, offering and pods."""
    node: StateNode  # the Candidate embeds its StateNode, as upstream's does
    pool: str
    spec: PoolDisruption  # its NodePool's disruption block
    instance_type: InstanceType | None  # from the NodePool's catalog
    zone: str | None
    capacity_type: str | None
    price: float
    pods: list  # every pod bound to the node
    reschedulable: list = field(default_factory=list)
    reschedule_cost: float = PER_NODE_BASE_DISRUPTION_COST

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def empty(self) -> bool:
        """Candidate.IsEmpty: no pod adds a positive reschedule cost."""
        return self.reschedule_cost <= PER_NODE_BASE_DISRUPTION_COST

    @property
    def savings_ratio(self) -> float:
        """Candidate.SavingsRatio."""
        return self.price / self.reschedule_cost


@dataclass
class Command:
    """Command: candidates to delete and, for a replace, the NodeClaims to launch first."""
    candidates: list
    replacements: list = field(default_factory=list)  # [replacement.Replacement]
    method: str = ""  # the Method's name: emptiness | drift | multi-node | single-node
    reason: str = ""  # empty | drifted | underutilized
    options: list = field(default_factory=list)  # consolidation's priced options (multi-node's same-type filter)
    requirements: Requirements | None = None  # ... and the requirements they were priced with

    @property
    def replacement(self) -> Replacement | None:
        return self.replacements[0] if self.replacements else None

    @property
    def decision(self) -> str:
        """Command.Decision: replace when there are replacements, else delete."""
        return "replace" if self.replacements else "delete"

    @property
    def source_cost(self) -> float:
        return sum(c.price for c in self.candidates)

    @property
    def savings(self) -> float:
        """Command.EstimatedSavings."""
        return self.source_cost - sum(r.price for r in self.replacements)

    @property
    def pods(self) -> list:
        """The reschedulable pods the command evicts, "namespace/name"."""
        return [p.name for c in self.candidates for p in c.reschedulable]


@runtime_checkable
class Method(Protocol):
    """Method (types.go): ShouldDisrupt, ComputeCommands, Reason, Class, ConsolidationType."""
    name: str  # how commands and reports name the method

    def should_disrupt(self, candidate: Candidate) -> str | None:
        """ShouldDisrupt: None when the candidate is one for this method, else why not."""

    def explains(self, candidate: Candidate) -> bool:
        """Whether a candidate ShouldDisrupt refused is this method's to explain (not upstream's:
        it reports only why nodes stay)."""

    def compute_commands(self, budgets: dict, candidates: list) -> list:
        """ComputeCommands: the commands to start (at most one here), given each NodePool's
        budget for Reason() (budgets.PoolBudget) and the candidates ShouldDisrupt kept."""

    def reason(self) -> str:
        """Reason: the v1.DisruptionReason budgets are counted for (Empty, Drifted, Underutilized)."""

    def disruption_class(self) -> str:
        """Class: GRACEFUL or EVENTUAL."""

    def consolidation_type(self) -> str:
        """ConsolidationType: "empty", "multi", "single", or "" for drift."""
