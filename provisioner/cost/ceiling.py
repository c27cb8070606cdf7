"""A NodePool's worst-case hourly price within its limits (the most Karpenter could spend).

Karpenter launches a NodeClaim only while the pool's summed capacity stays within
`spec.limits` (it reserves the largest option of each NodeClaim against them), so for every
limited resource r the nodes of the pool hold at most limit_r of it. Whatever mix of the pool's
instance types is bought, its price is therefore at most

    min over limited r of ( limit_r x max over the pool's types of price / capacity_r )

(`nodes` counts as a resource of one per node). A resource bounds the spend only when every
type has some of it (a GPU limit does not bound a pool that also allows CPU-only types). The
price is the dearest offering in the zones and capacity types the pool allows. The figure is an
upper bound; with no usable limit it is None (unbounded).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kubefacts import labels as L
from kubefacts.platform import TEAM_LABEL

from ..api import nodepool_instance_types, resolve_catalog
from ..catalog import DEFAULT_REGION, DEFAULT_SPOT_DISCOUNT, DEFAULT_ZONES
from ..loader import load_objects
from ..scheduling.instance_selection import Template


@dataclass(frozen=True)
class PoolCeiling:
    nodepool: str
    team: str | None
    usd_hour: float | None  # None: no limit bounds the spend
    limiting: str | None  # the resource whose limit gives the bound
    instance_type: str | None  # the type with the highest price per unit of that resource

    def to_dict(self) -> dict:
        return {"nodepool": self.nodepool, "team": self.team,
                "worst_case_usd_hour": None if self.usd_hour is None else round(self.usd_hour, 4),
                "limiting_resource": self.limiting, "instance_type": self.instance_type}


def _dearest(tpl: Template) -> np.ndarray:
    zone, ct = tpl.requirements.get(L.ZONE), tpl.requirements.get(L.CAPACITY_TYPE)
    return np.asarray([max((o.price for o in it.offerings if o.available and zone.has(o.zone)
                            and ct.has(o.capacity_type)), default=0.0) for it in tpl.types])


def pool_ceiling(pool, types) -> PoolCeiling:
    """The worst case of one NodePool model over its catalog instance types."""
    team = pool.labels.get(TEAM_LABEL)
    if pool.replicas is not None:
        pass  # static pools are priced like any other: replicas cannot exceed the limits either
    tpl = Template(pool, types, (L.CPU,), (), 0)
    if not len(tpl.types):
        return PoolCeiling(pool.name, team, 0.0, None, None)
    prices = _dearest(tpl)
    best: tuple[float | None, str | None, str | None] = (None, None, None)  # (USD per hour, resource, type)
    for resource, limit in sorted(pool.limits.items()):
        if resource == L.NODES:
            per_unit, amount = prices, limit / 1000
        else:
            capacity = np.asarray([it.capacity.get(resource, 0) for it in tpl.types], dtype=float) / 1000
            if (capacity <= 0).any():
                continue
            per_unit, amount = prices / capacity, limit / 1000
        i = int(np.argmax(per_unit))
        bound = float(per_unit[i] * amount)
        if best[0] is None or bound < best[0]:
            best = (bound, resource, tpl.types[i].name)
    return PoolCeiling(pool.name, team, *best)


def pool_ceilings(objects, catalog=None, region: str = DEFAULT_REGION, zones=DEFAULT_ZONES,
                  spot_discount: float = DEFAULT_SPOT_DISCOUNT, judged: bool = False) -> list:
    """PoolCeiling per NodePool of these Kubernetes object dicts (NodePools and EC2NodeClasses;
    a pool whose node class is missing is priced with a default one). `judged`: the caller
    judged the whole objects (kubefacts.validation) and passes the parts that decide prices."""
    inputs = load_objects(objects, judged=judged)
    from ..models import NodeClass
    for pool in inputs.nodepools:
        inputs.nodeclasses.setdefault(pool.node_class_ref.name, NodeClass(pool.node_class_ref.name))
    pools, _ = nodepool_instance_types(inputs, resolve_catalog(catalog), region, zones, spot_discount)
    return [pool_ceiling(pool, types) for pool, types in pools]


def team_totals(ceilings) -> dict:
    """team -> summed worst case (None when any of its pools is unbounded)."""
    totals: dict = {}
    for c in ceilings:
        if c.team is None:
            continue
        if c.usd_hour is None or totals.get(c.team, 0.0) is None:
            totals[c.team] = None
        else:
            totals[c.team] = totals.get(c.team, 0.0) + c.usd_hour
    return totals
