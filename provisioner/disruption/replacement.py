"""The price rules a replacement NodeClaim must pass (pkg/controllers/disruption/consolidation.go
computeConsolidation and computeSpotToSpotConsolidation, multinodeconsolidation.go
filterOutSameInstanceType, pkg/controllers/provisioning/scheduling/nodeclaim.go
RemoveInstanceTypeOptionsByPriceAndMinValues, pkg/cloudprovider/types.go WorstLaunchPrice)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from kubefacts import labels as L
from ..scheduling.instance_selection import template_requirements
from ..models import InstanceType, NodePool, Offering, Pod
from ..scheduling.requirements import Requirement, Requirements

if TYPE_CHECKING:  # .types imports this module
    from .types import Candidate

MIN_SPOT_TO_SPOT_TYPES = 15  # MinInstanceTypesForSpotToSpotConsolidation
CT_PRIORITY = (L.CAPACITY_TYPE_RESERVED, L.CAPACITY_TYPE_SPOT, L.CAPACITY_TYPE_ON_DEMAND)


@dataclass
class Replacement:
    instance_type: str
    capacity_type: str
    zone: str
    price: float
    options: list  # instance type names left after the price filters, cheapest first
    nodepool: str = ""  # the NodePool the replacement NodeClaim launches from


def claim_requirements(nodepool: NodePool, pods: Iterable[Pod]) -> Requirements:
    """The zone and capacity-type requirements of a new NodeClaim: its NodePool's, narrowed by
    each pod's node selector and (when it has exactly one) required node-affinity term."""
    reqs = template_requirements(nodepool)
    keys = (L.ZONE, L.CAPACITY_TYPE)
    out = Requirements([r for k in keys if (r := reqs.raw(k)) is not None])
    for pod in pods:
        spec = pod.spec
        out.add(*[Requirement.in_(k, v) for k, v in spec.node_selector.items() if k in keys])
        if len(spec.required_terms) == 1:
            out.add(*[r for k in keys if (r := spec.required_terms[0].raw(k)) is not None])
    return out


def compatible_offerings(it: InstanceType, reqs: Requirements) -> list[Offering]:
    zone, ct = reqs.get(L.ZONE), reqs.get(L.CAPACITY_TYPE)
    return [o for o in it.offerings if o.available and zone.has(o.zone) and ct.has(o.capacity_type)]


def cheapest(it: InstanceType, reqs: Requirements) -> Offering | None:
    offerings = compatible_offerings(it, reqs)
    return min(offerings, key=lambda o: (o.price, o.zone)) if offerings else None


def worst_launch_price(it: InstanceType, reqs: Requirements) -> float:
    """WorstLaunchPrice: the dearest compatible offering of the capacity type it would launch as
    (reserved, then spot, then on-demand)."""
    offerings = compatible_offerings(it, reqs)
    for ct in CT_PRIORITY:
        prices = [o.price for o in offerings if o.capacity_type == ct]
        if prices:
            return max(prices)
    return math.inf


def order_by_price(types: Iterable[InstanceType], reqs: Requirements) -> list[InstanceType]:
    def key(it: InstanceType) -> tuple[float, str]:
        o = cheapest(it, reqs)
        return (o.price if o else math.inf, it.name)
    return sorted(types, key=key)


def below(types: Iterable[InstanceType], reqs: Requirements, max_price: float) -> list[InstanceType]:
    """RemoveInstanceTypeOptionsByPriceAndMinValues (minValues not re-checked)."""
    return [it for it in types if worst_launch_price(it, reqs) < max_price]


def price_filter(types: Iterable[InstanceType], reqs: Requirements, candidate_price: float, all_spot: bool,
                 single: bool, spot_to_spot: bool) -> tuple[list, Requirements, str | None]:
    """computeConsolidation's price rules for the one new NodeClaim: (options, requirements, why not)."""
    reqs = reqs.copy()
    types = order_by_price(types, reqs)
    if all_spot and reqs.get(L.CAPACITY_TYPE).has(L.CAPACITY_TYPE_SPOT):
        if not spot_to_spot:
            return [], reqs, ("the node is spot and could only be replaced by spot, but the SpotToSpotConsolidation "
                              "feature gate is off (enable it with --spot-to-spot, as in Karpenter's featureGates)")
        reqs.add(Requirement.in_(L.CAPACITY_TYPE, L.CAPACITY_TYPE_SPOT))
        types = [it for it in types if compatible_offerings(it, reqs)]
        options = below(types, reqs, candidate_price)
        if not options:
            return [], reqs, f"no cheaper spot replacement exists (the node costs ${candidate_price:.4f}/h)"
        if not single:
            return options, reqs, None
        if len(options) < MIN_SPOT_TO_SPOT_TYPES:
            return [], reqs, (f"spot-to-spot consolidation needs {MIN_SPOT_TO_SPOT_TYPES} cheaper instance types than "
                              f"the node's ${candidate_price:.4f}/h, only {len(options)} fit "
                              f"({', '.join(it.name for it in options[:5])}); widen the NodePool's requirements")
        return options[:MIN_SPOT_TO_SPOT_TYPES], reqs, None
    options = below(types, reqs, candidate_price)
    if not options:
        detail = ""
        if types:
            best = types[0]
            if offer := cheapest(best, reqs):
                detail = f": the cheapest type that fits, {best.name}, costs ${offer.price:.4f}/h"
        return [], reqs, (f"no cheaper replacement exists for ${candidate_price:.4f}/h{detail} "
                          "(or it needs more than the remaining nodes can take)")
    ct = reqs.get(L.CAPACITY_TYPE)
    if ct.has(L.CAPACITY_TYPE_SPOT) and ct.has(L.CAPACITY_TYPE_ON_DEMAND):
        reqs.add(Requirement.in_(L.CAPACITY_TYPE, L.CAPACITY_TYPE_SPOT))  # launch as spot
    return options, reqs, None


def same_type_ceiling(options: Iterable[InstanceType], candidates: Iterable[Candidate]) -> float:
    """filterOutSameInstanceType's price ceiling: the cheapest current price among candidates
    whose instance type is also an option, so a multi-node replace never relaunches the same type."""
    names = {it.name for it in options}
    ceiling = math.inf
    for c in candidates:
        if c.instance_type is None or c.instance_type.name not in names:
            continue
        prices = [o.price for o in c.instance_type.offerings if o.zone == c.zone and o.capacity_type == c.capacity_type]
        if prices:
            ceiling = min(ceiling, min(prices))
    return ceiling


def choose(options: Iterable[InstanceType], reqs: Requirements) -> Replacement | None:
    """What the new NodeClaim would launch: the first option's cheapest compatible offering (the
    price Command.EstimatedSavings uses)."""
    ordered = order_by_price(options, reqs)
    for it in ordered:
        offer = cheapest(it, reqs)
        if offer is not None:
            return Replacement(it.name, offer.capacity_type, offer.zone, offer.price, [t.name for t in ordered])
    return None
