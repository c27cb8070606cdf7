"""One pass of Karpenter v1.14's disruption controller (pkg/controllers/disruption/controller.go):
the methods run in upstream's order (NewMethods: emptiness, [static drift: static NodePools are
not modelled], drift, multi-node, then single-node consolidation) and the first that produces a
command ends the pass (Reconcile / disrupt).

`disruption_pass` is the pure function a replay calls on every cluster change; `consolidate` is
the `consolidate` command's what-if, the same pass without drift (it reads no drift).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable
from datetime import datetime, timezone

from ..planning import resolve_catalog
from ..state.cluster import Cluster
from ..catalog import DEFAULT_REGION, DEFAULT_SPOT_DISCOUNT, DEFAULT_ZONES
from .drift import Drift
from .emptiness import Emptiness
from .multinodeconsolidation import MultiNodeConsolidation
from .pass_memo import PassMemo
from .pass_state import PassState
from .replacement import Replacement
from .singlenodeconsolidation import SingleNodeConsolidation
from .types import Command, Method


@dataclass
class Action:
    """A command as the `consolidate` command reports it."""
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
class DisruptionCommand:
    """A command of disruption_pass (see provisioner/README.md, "Disruption API")."""
    method: str  # emptiness | drift | multi-node | single-node
    reason: str  # empty | drifted | underutilized
    decision: str  # delete | replace
    candidates: list  # StateNode names
    pods: list  # "namespace/name" of the reschedulable pods it evicts
    replacements: list  # replacement.Replacement (nodepool, instance_type, capacity_type, zone, price)
    savings_usd_hour: float

    def to_dict(self) -> dict:
        return {"method": self.method, "reason": self.reason, "decision": self.decision,
                "candidates": list(self.candidates), "pods": list(self.pods),
                "replacements": [{"nodepool": r.nodepool, "instance_type": r.instance_type,
                                  "capacity_type": r.capacity_type, "zone": r.zone,
                                  "price_usd_hour": round(float(r.price), 6)} for r in self.replacements],
                "savings_usd_hour": round(float(self.savings_usd_hour), 6)}


@dataclass
class DisruptionPass:
    commands: list = field(default_factory=list)  # [] or one DisruptionCommand
    blocked: list = field(default_factory=list)  # (node, why) for every other Karpenter-managed node
    eligible: dict = field(default_factory=dict)  # method -> candidates its ShouldDisrupt kept
    price_usd_hour: float = 0.0  # the Karpenter-managed nodes' price before the command

    def to_dict(self) -> dict:
        return {"commands": [c.to_dict() for c in self.commands],
                "blocked": [{"node": n, "why": w} for n, w in self.blocked]}


WAITS = {
    "emptiness": "waits for a later pass: emptiness acted in this pass, and Karpenter runs one disruption method per pass",
    "drift": "waits for a later pass: drift acted in this pass, and Karpenter runs one disruption method per pass",
    "multi-node": "waits for a later pass: multi-node consolidation acted in this pass, and Karpenter runs one "
                  "disruption method per pass",
    "single-node": "waits for a later pass: single-node consolidation acted on another node, and it starts one "
                   "command per pass",
}


def new_methods(state: PassState, drift: bool = True) -> list:
    """NewMethods, in upstream's order."""
    return [Emptiness(state)] + ([Drift(state)] if drift else []) + [MultiNodeConsolidation(state),
                                                                      SingleNodeConsolidation(state)]


def _eligible(state: PassState, method: Method) -> list:
    """GetCandidates' ShouldDisrupt filter; the nodes a method leaves are told why, when the
    method is about them (Method.explains: emptiness the empty ones, consolidation the others,
    drift the drifted ones)."""
    out = []
    for c in state.candidates:
        why = method.should_disrupt(c)
        if why is None:
            out.append(c)
        elif method.explains(c):
            state.note(c, why)
    return out


def run_pass(state: PassState, methods: Iterable[Method]) -> Command | None:
    """Reconcile: the first method with a command ends the pass. The later methods' filters
    still run, so every node is told why it stays; a method's eligible count is kept when it was
    reached, or when it counts against the same budgets as the method that acted."""
    command: Command | None = None
    acted: Method | None = None  # the method that gave `command`
    for method in methods:
        eligible = _eligible(state, method)
        if acted is not None:
            if method.reason() == acted.reason():
                state.eligible[method.name] = len(eligible)
            continue
        state.eligible[method.name] = len(eligible)
        commands = method.compute_commands(state.budgets(method.reason()), eligible) if eligible else []
        if commands:
            command, acted = commands[0], method
    return command


def _blocked(state: PassState, command: Command | None, otherwise: str) -> list:
    acted = {c.name for c in command.candidates} if command else set()
    out = []
    for n in state.managed:
        if n.name in acted:
            continue
        why = state.reasons.get(n.name)
        if why is None:
            why = WAITS[command.method] if command else otherwise
        out.append((n.name, why))
    return out


def _gate(cluster: Cluster, spot_to_spot: bool | None) -> bool:
    return spot_to_spot if spot_to_spot is not None else bool(cluster.spot_to_spot)


def disruption_pass(cluster: Cluster, catalog: object = None, now: datetime | None = None, *,
                    region: str = DEFAULT_REGION, zones: Iterable[str] = DEFAULT_ZONES,
                    spot_discount: float = DEFAULT_SPOT_DISCOUNT,
                    spot_to_spot: bool | None = None, explain: bool = True,
                    memo: PassMemo | None = None) -> DisruptionPass:
    """The disruption commands Karpenter would start in one pass over this cluster
    (state.Cluster from state.reader.load_cluster), at `now` (UTC; None: scheduled budgets
    active). Pure: the cluster is not changed. explain False: the same commands, but `blocked`
    may say less precisely why a node stays (consolidation simulations end once they cannot
    give a command), for callers that read only the commands. memo: a PassMemo kept across the
    passes of one changing cluster (a replay); the answer is the same without it."""
    if now is not None and now.tzinfo is not None:
        now = now.astimezone(timezone.utc).replace(tzinfo=None)
    state = PassState(cluster, resolve_catalog(catalog), region, zones, spot_discount, _gate(cluster, spot_to_spot), now,
                      explain, memo)
    command = run_pass(state, new_methods(state, drift=True))
    result = DisruptionPass(blocked=_blocked(state, command, "no disruption found for it in this pass"),
                            eligible=dict(state.eligible), price_usd_hour=sum(state.prices.values()))
    if command is not None:
        result.commands.append(DisruptionCommand(command.method, command.reason, command.decision,
                                                 [c.name for c in command.candidates], command.pods,
                                                 list(command.replacements), command.savings))
    return result


def consolidate(snap: Cluster, catalog: object = None, region: str = DEFAULT_REGION,
                zones: Iterable[str] = DEFAULT_ZONES,
                spot_discount: float = DEFAULT_SPOT_DISCOUNT, spot_to_spot: bool | None = None,
                now: datetime | None = None) -> ConsolidationResult:
    """The command Karpenter's disruption controller would start now for this snapshot, and why
    every other Karpenter-managed node is left alone (drift not evaluated: see `drift`).

    spot_to_spot: the SpotToSpotConsolidation feature gate; None reads it from the snapshot (a
    Karpenter Deployment's FEATURE_GATES or the chart's values), else off as upstream's default.
    now: when scheduled disruption budgets are evaluated (UTC); None takes them as active.
    """
    gate = _gate(snap, spot_to_spot)
    state = PassState(snap, resolve_catalog(catalog), region, zones, spot_discount, gate, now)
    command = run_pass(state, new_methods(state, drift=False))
    result = ConsolidationResult(price_before=sum(state.prices.values()), candidates=dict(state.eligible))
    if command is not None:
        result.actions.append(Action(command.decision, command.reason, [c.name for c in command.candidates],
                                     command.replacement, command.savings, command.method))
    result.blocked = _blocked(state, command, "no consolidation found for it in this pass")
    result.assumptions = assumptions(snap, now, spot_to_spot, gate)
    return result


def assumptions(snap: Cluster, now: datetime | None = None, spot_to_spot: bool | None = None,
                gate: bool = False) -> list:
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
