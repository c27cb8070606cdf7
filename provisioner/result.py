"""The outcome of a simulation, and its `-o json` shape."""
from __future__ import annotations

from dataclasses import dataclass, field

from .quantity import format_resources


@dataclass
class NodeClaimResult:
    nodepool: str
    instance_type: str
    capacity_type: str
    zone: str
    price_usd_hour: float
    price_is_estimate: bool
    pods: list
    requests: dict  # milli-units: the pods' requests plus the DaemonSet overhead on this type
    allocatable: dict  # milli-units: the instance type's allocatable
    instance_type_options: list  # every type the NodeClaim could launch as, cheapest first
    labels: dict = field(default_factory=dict)  # the node's labels as Karpenter would set them (not in to_dict)
    round: int = 1  # the provisioning round that launched it

    def to_dict(self) -> dict:
        return {
            "nodepool": self.nodepool, "instance_type": self.instance_type, "capacity_type": self.capacity_type,
            "zone": self.zone, "price_usd_hour": round(self.price_usd_hour, 6),
            "price_is_estimate": self.price_is_estimate, "pods": list(self.pods),
            "requests": format_resources(self.requests), "allocatable": format_resources(self.allocatable),
            "instance_type_options": list(self.instance_type_options),
            "round": self.round,
        }


@dataclass
class PodVerdict:
    """A pod and the reason the simulation gives for it."""
    pod: str
    reason: str

    def to_dict(self) -> dict:
        return {"pod": self.pod, "reason": self.reason}


class Unschedulable(PodVerdict):
    """A pod no NodePool can schedule, and why."""


class Ignored(PodVerdict):
    """A pod Karpenter does not provision for (IsProvisionable / Validate), and why."""


@dataclass
class SimulationResult:
    nodeclaims: list = field(default_factory=list)
    unschedulable: list = field(default_factory=list)
    existing: dict = field(default_factory=dict)  # node name -> pods placed on it (not part of to_dict)
    pods: int = 0
    warnings: list = field(default_factory=list)
    ignored: list = field(default_factory=list)  # [Ignored]: not counted in `pods`
    rounds: int = 1  # provisioning rounds Karpenter would run to reach this outcome

    @property
    def scheduled(self) -> int:
        return self.pods - len(self.unschedulable)

    @property
    def price_usd_hour(self) -> float:
        return sum(nc.price_usd_hour for nc in self.nodeclaims)

    def to_dict(self) -> dict:
        """The documented `-o json` shape (`rounds` and `ignored` were added after the first three)."""
        return {
            "nodeclaims": [nc.to_dict() for nc in self.nodeclaims],
            "unschedulable": [u.to_dict() for u in self.unschedulable],
            "summary": {
                "pods": self.pods, "scheduled": self.scheduled, "unschedulable": len(self.unschedulable),
                "nodeclaims": len(self.nodeclaims), "price_usd_hour": round(self.price_usd_hour, 6),
            },
            "rounds": self.rounds,
            "ignored": [i.to_dict() for i in self.ignored],
        }
