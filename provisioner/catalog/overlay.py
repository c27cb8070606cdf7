"""NodeOverlay (karpenter.sh/v1alpha1): extended-resource capacity and price changes per NodePool.

Follows pkg/controllers/nodeoverlay: an overlay applies to an instance type of a NodePool when its
requirements are compatible with the NodePool's labels plus the type's labels, and to the offerings
its requirements allow. Higher weight wins (equal weights: later name first); a field set by a
heavier overlay is not changed by a lighter one.
"""
from __future__ import annotations

from kubefacts import labels as L
from ..models import InstanceType, NodeOverlay, NodePool, Offering
from ..scheduling.requirements import Requirement, Requirements


def adjusted_price(price: float, change: str | None) -> float:
    """cloudprovider.AdjustedPrice: "1.2" sets, "+10%"/"-15%" scale, "+0.5"/"-0.5" shift (never below 0)."""
    if not change:
        return price
    if change[0] not in "+-":
        return float(change)
    if change.endswith("%"):
        adjusted = price * (1 + float(change[:-1]) / 100)
    else:
        adjusted = price + float(change)
    return max(adjusted, 0.0)


def _ordered(overlays):
    by_name = sorted(overlays, key=lambda o: o.name, reverse=True)
    return sorted(by_name, key=lambda o: -o.weight)


def apply_overlays(nodepool: NodePool, types: list, overlays: list) -> list:
    if not overlays:
        return types
    ordered = _ordered(overlays)
    pool_reqs = Requirements([Requirement.in_(L.NODEPOOL, nodepool.name)])
    pool_reqs.add(*Requirements.from_labels(nodepool.labels).values())
    result = []
    for it in types:
        base = pool_reqs.merged(it.requirements)
        prices: dict = {}  # offering index -> (price, estimate)
        added: dict = {}
        for overlay in ordered:
            if not base.is_compatible(overlay.requirements):
                continue
            matching = [i for i, o in enumerate(it.offerings) if _offering_matches(o, overlay.requirements)]
            if not matching:
                continue
            if overlay.price is not None or overlay.price_adjustment is not None:
                for i in matching:
                    if i not in prices:
                        o = it.offerings[i]
                        estimate = o.price_is_estimate and overlay.price is None
                        prices[i] = (adjusted_price(o.price, overlay.price or overlay.price_adjustment), estimate)
            for name, amount in overlay.capacity.items():
                added.setdefault(name, amount)
        if not prices and not added:
            result.append(it)
            continue
        offers = [Offering(o.zone, o.capacity_type, prices[i][0], o.available, prices[i][1]) if i in prices else o
                  for i, o in enumerate(it.offerings)]
        result.append(InstanceType(it.name, it.requirements, {**it.capacity, **added}, it.overhead, offers,
                                   {**it.allocatable, **added}))
    return result


def _offering_matches(offering: Offering, reqs: Requirements) -> bool:
    zone, capacity_type = reqs.raw(L.ZONE), reqs.raw(L.CAPACITY_TYPE)
    return (zone is None or zone.has(offering.zone)) and (capacity_type is None or capacity_type.has(offering.capacity_type))


__all__ = ["apply_overlays", "adjusted_price", "NodeOverlay"]
