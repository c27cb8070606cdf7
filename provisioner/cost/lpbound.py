"""A lower bound on the hourly price of any plan, from a linear-programming relaxation (HiGHS).

The bound. Group pods into classes by the set J(c) of (NodePool, instance type) pairs each could run
on: the NodePool's taints are tolerated, its requirements and the type's labels admit the pod's
required node affinity/selector, and the type's allocatable minus its DaemonSet overhead holds the
pod alone. Variables: x_j >= 0 nodes of pair j (fractional), and g_{j,c,r} >= 0, the amount of
resource r (cpu, memory, pods, and any extended resource) that pair j's capacity gives to class c.

    minimise   sum_j price_j * x_j
    subject to sum_c g_{j,c,r} <= A_{j,r} * x_j        for every pair j and resource r
               sum_{j in J(c)} g_{j,c,r} >= D_{c,r}    for every class c and resource r

A_{j,r} is the allocatable after DaemonSet overhead, D_{c,r} the summed requests of the class, and
price_j the cheapest offering of the type that the NodePool allows. Every real plan is a feasible
point (x_j = nodes launched, g = requests placed), so the optimum bounds every plan from below:
integrality, bin packing, topology and preferences are what the relaxation drops.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import labels as L
from ..api import nodepool_instance_types, resolve_catalog
from ..catalog import DEFAULT_REGION, DEFAULT_SPOT_DISCOUNT, DEFAULT_ZONES
from ..scheduling.daemons import strict_requirements
from ..scheduling.instance_selection import Template
from ..scheduling.nodeclaim import WELL_KNOWN
from ..scheduling.taints import TOLERATE_PREFER_NO_SCHEDULE, untolerated


@dataclass
class Bound:
    price_usd_hour: float
    classes: int
    pairs: int
    nodes: float  # fractional nodes in the optimum
    carriers: tuple = ()  # ((nodepool, instance type, fractional nodes), ...) with nodes > 0, most first


def _pair_prices(tpl: Template) -> np.ndarray:
    prices = []
    for it in tpl.types:
        allowed = [o.price for o in it.offerings if o.available and tpl.requirements.get(L.ZONE).has(o.zone)
                   and tpl.requirements.get(L.CAPACITY_TYPE).has(o.capacity_type)]
        prices.append(min(allowed) if allowed else np.inf)
    return np.asarray(prices)


def lower_bound(inputs, catalog=None, region: str = DEFAULT_REGION, zones=DEFAULT_ZONES,
                spot_discount: float = DEFAULT_SPOT_DISCOUNT) -> Bound:
    from scipy.optimize import linprog  # optional dependency (extras bench, tune)
    from scipy.sparse import coo_matrix

    pools, _ = nodepool_instance_types(inputs, resolve_catalog(catalog), region, zones, spot_discount)
    names = {n for p in inputs.pods for n in p.spec.requests} | {n for d in inputs.daemonsets for n in d.spec.requests}
    dims = (L.CPU, L.MEMORY, L.PODS) + tuple(sorted(names - {L.CPU, L.MEMORY, L.PODS}))
    templates = [t for t in (Template(np_, its, dims, inputs.daemonsets, i) for i, (np_, its) in enumerate(pools)
                             if np_.replicas is None) if len(t.types)]
    offsets, prices, alloc, pair_names = {}, [], [], []
    for tpl in templates:
        offsets[tpl.index] = len(prices)
        pair_names.extend((tpl.nodepool.name, it.name) for it in tpl.types)
        prices.extend(_pair_prices(tpl).tolist())
        alloc.extend(tpl.alloc.tolist())
    alloc = np.asarray(alloc, dtype=float).reshape(len(prices), len(dims))
    classes: dict = {}
    seen: dict = {}  # identical pods (one Deployment) share their pairs
    for pod in inputs.pods:
        spec = pod.spec
        request = np.asarray([spec.requests.get(d, 0) for d in dims], dtype=np.int64)
        ident = spec.key or id(spec)
        cached = seen.get(ident)
        if cached is not None:
            if cached:
                classes[cached] = classes[cached] + request
            continue
        pairs = []
        for tpl in templates:
            if untolerated(tpl.taints, spec.tolerations + (TOLERATE_PREFER_NO_SCHEDULE,)) is not None:
                continue
            terms = range(len(spec.required_terms)) if spec.required_terms else [0]
            for term in terms:
                reqs = strict_requirements(spec, term)
                if tpl.requirements.compatible(reqs, WELL_KNOWN) is not None:
                    continue
                merged = tpl.requirements.merged(reqs)
                options = tpl.fitting(tpl.restrict(tpl.all, merged, list(reqs.keys())), request)
                pairs.extend(offsets[tpl.index] + int(i) for i in options)
        key = frozenset(p for p in pairs if np.isfinite(prices[p]))
        seen[ident] = key
        if not key:
            continue  # no plan can place it either; it is unschedulable in every plan
        classes[key] = classes.get(key, 0) + request
    class_list = list(classes.items())
    n_pairs, n_dims = len(prices), len(dims)
    if not class_list:  # no pod can be placed by any plan (or there are none): nothing to buy
        return Bound(0.0, 0, n_pairs, 0.0)
    # Work in cores / GiB / pods so every coefficient is of order one (milli-units span 1e3..1e16).
    scale = np.asarray([2**30 * 1e3 if d in (L.MEMORY, L.EPHEMERAL_STORAGE) else 1e3 for d in dims])
    capacity = alloc / scale
    # Variables: x_j first, then one g per (class, pair of the class, resource).
    rows, cols, vals = [], [], []
    base = n_pairs * n_dims  # capacity rows come first, then the coverage rows
    g_index = n_pairs
    for c, (pairs, _) in enumerate(class_list):
        for j in sorted(pairs):
            for r in range(n_dims):
                rows += [j * n_dims + r, base + c * n_dims + r]
                cols += [g_index, g_index]
                vals += [1.0, -1.0]
                g_index += 1
    for j in range(n_pairs):
        for r in range(n_dims):
            rows.append(j * n_dims + r)
            cols.append(j)
            vals.append(-capacity[j, r])
    b_ub = np.zeros(base + len(class_list) * n_dims)
    for c, (_, demand) in enumerate(class_list):
        b_ub[base + c * n_dims: base + (c + 1) * n_dims] = -np.asarray(demand, dtype=float) / scale
    a_ub = coo_matrix((vals, (rows, cols)), shape=(len(b_ub), g_index)).tocsr()
    cost = np.zeros(g_index)
    cost[:n_pairs] = np.where(np.isfinite(prices), prices, 0.0)
    bounds = [(0, None if np.isfinite(p) else 0) for p in prices] + [(0, None)] * (g_index - n_pairs)
    result = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if result.status != 0:
        raise RuntimeError(f"LP failed: {result.message}")
    x = result.x[:n_pairs]
    carriers = tuple(sorted(((*pair_names[j], float(x[j])) for j in range(n_pairs) if x[j] > 1e-9),
                            key=lambda c: (-c[2], c[0], c[1])))
    return Bound(float(result.fun), len(class_list), n_pairs, float(x.sum()), carriers)
