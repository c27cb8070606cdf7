"""Lower bounds on the hourly price of any plan, from linear-programming relaxations (HiGHS).

Both bounds see the same problem. A *pair* j is a (NodePool, instance type) with price_j, the
cheapest offering of the type in the pool's zones and capacity types, and A_j, the type's
allocatable after the pool's DaemonSet overhead (cpu, memory, pods and any extended resource). A
pod may use pair j when the pool's taints are tolerated, its requirements and the type's labels
admit the pod's required node affinity/selector, and A_j holds the pod alone. Pods with the same
requests and the same usable pairs form a class c of n_c pods with request vector R_c.

**Fluid bound** (`lower_bound`, method "fluid"). x_j >= 0 nodes of pair j (fractional), g_{j,c,r}
the amount of resource r that pair j gives to class c:

    minimise   sum_j price_j x_j
    subject to sum_c g_{j,c,r} <= A_{j,r} x_j            for every pair j and resource r
               sum_{j usable by c} g_{j,c,r} >= n_c R_{c,r}  for every class c and resource r

**Pattern bound** (method "patterns", the default: a configuration LP, Gilmore-Gomory). A
pattern (j, a) is a pair j and whole pod counts a_c >= 0 of classes that may use j with
sum_c a_c R_c <= A_j (and a_c <= 1 for a class whose pods repel each other on a hostname):
what one real node can hold. z_{j,a} >= 0 nodes with pattern (j, a):

    minimise   sum_{j,a} price_j z_{j,a}
    subject to sum_{j,a} a_c z_{j,a} >= n_c              for every class c

Why both bound every plan from below: a plan launches nodes, each of some pair, holding whole
pods that fit its allocatable; setting z_{j,a} = the number of its nodes of pair j holding
exactly the pods a (or x_j = nodes of j, g = requests placed) is a feasible point of the same
price, so the LP optimum is at most the plan's price. Only a pair's cheapest offering is
charged, and topology, preferences, limits and Karpenter's packing order are relaxed. Every
pattern is also a fluid point, so patterns >= fluid: the pattern bound adds that pods are whole
(seven 4-CPU pods fill 28 of a 32-vCPU node's ~31 allocatable cores).

The pattern LP has a column per feasible packing, so it is solved by column generation: a
restricted LP over the patterns found so far gives duals y_c; for each pair an integer knapsack
(`scipy.optimize.milp`) finds the pattern of largest value v_j = max sum_c y_c a_c. Patterns
with v_j > price_j join the LP (`patterns.py`). Whenever it stops (no such pattern, or a budget),
y / theta with theta = max(1, max_j V_j / price_j), V_j an upper bound on v_j (the knapsack's
dual bound), is feasible for the dual of the full pattern LP, so sum_c n_c y_c / theta (Farley's
bound) is a valid lower bound; at convergence theta = 1 and it equals the pattern LP optimum.
A pair is left out when another is no dearer, has at least its allocatable in every resource
and admits every class it admits (any pattern moves to it at no higher price).

Existing capacity. A plan pays nothing for pods it puts on nodes (and launched NodeClaims) that
already exist, so each such node e is a pair of price 0 that may be used once, with the room its
bound pods leave (allocatable minus their requests; DaemonSet pods still to come are not taken
off, so the room is if anything too large). A pod may use it when it tolerates the node's
taints and the node's labels are compatible with its required node affinity (undefined
well-known labels allowed, as for NodePools: again, if anything too permissive). In the fluid LP
it is a pair with 0 <= x_e <= 1; in the pattern LP its room is shared fluidly (g_{e,c} pods of
class c with sum_c g_{e,c} R_c <= room_e), a relaxation of whatever whole pods the plan puts
there. Pods that can only run on existing nodes cost no plan anything and are left out. Each of
these relaxations only lowers the bound, so it stays a bound; Farley's argument carries over (the
room rows are homogeneous in the duals).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kubefacts import labels as L
from ..api import nodepool_instance_types, resolve_catalog
from ..catalog import DEFAULT_REGION, DEFAULT_SPOT_DISCOUNT, DEFAULT_ZONES
from ..scheduling.daemons import strict_requirements
from ..scheduling.instance_selection import Template
from ..scheduling.nodeclaim import WELL_KNOWN
from ..scheduling.requirements import Requirements
from ..scheduling.resources import add
from ..scheduling.taints import TOLERATE_PREFER_NO_SCHEDULE, untolerated
from ..state import build_cluster

METHODS = ("patterns", "fluid")
MAX_ITERATIONS = 60  # column-generation rounds; the workloads of the presets bench converge in 5-25
TIME_LIMIT_S = 30.0  # CPU seconds per bound (steady under load); a stop at either limit still returns a valid (Farley) bound


@dataclass
class Bound:
    price_usd_hour: float
    classes: int
    pairs: int
    nodes: float  # fractional nodes in the optimum
    carriers: tuple = ()  # ((nodepool, instance type, fractional nodes), ...) with nodes > 0, most first
    method: str = "fluid"
    fluid_usd_hour: float = 0.0  # the fluid bound of the same problem (patterns >= fluid)
    iterations: int = 0  # column-generation rounds (patterns)
    converged: bool = True  # False: stopped at a limit; the price is Farley's bound, still valid
    packing_usd_hour: float | None = None  # whole nodes over the generated patterns (`packing=True`)


@dataclass
class _Problem:
    dims: tuple
    prices: np.ndarray  # per pair; inf when no allowed offering
    alloc: np.ndarray  # pairs x dims, milli-units
    pair_names: list  # (nodepool, instance type); ("", node name) for existing capacity
    classes: list  # [(frozenset of pairs, request tuple, count, repels)]
    existing: np.ndarray  # per pair: True for an existing node (price 0, usable once)


def _pair_prices(tpl: Template) -> np.ndarray:
    prices = []
    for it in tpl.types:
        allowed = [o.price for o in it.offerings if o.available and tpl.requirements.get(L.ZONE).has(o.zone)
                   and tpl.requirements.get(L.CAPACITY_TYPE).has(o.capacity_type)]
        prices.append(min(allowed) if allowed else np.inf)
    return np.asarray(prices)


def repels_itself(spec) -> bool:
    """Two pods of `spec` may not share a node: a required anti-affinity term on the hostname
    whose selector matches the pod's own labels in its namespace."""
    return any(t.topology_key == L.HOSTNAME and t.selector.matches(spec.labels)
               and (t.namespaces is None or spec.namespace in t.namespaces) for t in spec.anti_affinity)


def _problem(inputs, catalog, region, zones, spot_discount) -> _Problem:
    pools, _ = nodepool_instance_types(inputs, resolve_catalog(catalog), region, zones, spot_discount)
    names = {n for p in inputs.pods for n in p.spec.requests} | {n for d in inputs.daemonsets for n in d.spec.requests}
    dims = (L.CPU, L.MEMORY, L.PODS) + tuple(sorted(names - {L.CPU, L.MEMORY, L.PODS}))
    templates = [t for t in (Template(np_, its, dims, inputs.daemonsets, i) for i, (np_, its) in enumerate(pools)
                             if np_.replicas is None) if len(t.types)]
    offsets: dict[int, int] = {}
    price_list: list[float] = []
    alloc_rows: list[list[int]] = []
    pair_names: list[tuple[str, str]] = []
    for tpl in templates:
        offsets[tpl.index] = len(price_list)
        pair_names.extend((tpl.nodepool.name, it.name) for it in tpl.types)
        price_list.extend(_pair_prices(tpl).tolist())
        alloc_rows.extend(tpl.alloc.tolist())
    n_new = len(price_list)
    nodes = _existing_room(inputs, dims)
    for name, _, room in nodes:
        pair_names.append(("", name))
        price_list.append(0.0)
        alloc_rows.append(room)
    alloc = np.asarray(alloc_rows, dtype=float).reshape(len(price_list), len(dims))
    prices = np.asarray(price_list, dtype=float)
    existing = np.arange(len(prices)) >= n_new
    counts: dict = {}
    seen: dict = {}  # identical pods (one Deployment) share their pairs
    for pod in inputs.pods:
        spec = pod.spec
        ident = spec.key or id(spec)
        cached = seen.get(ident)
        if cached is None:
            request = tuple(int(spec.requests.get(d, 0)) for d in dims)
            pairs: list[int] = []
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
            if pairs and any(np.isfinite(prices[p]) for p in pairs):  # else it costs no plan anything
                pairs.extend(n_new + i for i, (_, node, room) in enumerate(nodes)
                             if _fits_existing(spec, node, room, request))
            key = frozenset(p for p in pairs if np.isfinite(prices[p]))
            # Pods that repel each other keep a class of their own (their cap of one per node).
            cached = seen[ident] = (key, request, ident if repels_itself(spec) else None) if key else ()
        if cached:  # else no plan can place it either; it is unschedulable in every plan
            counts[cached] = counts.get(cached, 0) + 1
    classes = [(key, request, n, repel is not None) for (key, request, repel), n in counts.items()]
    return _Problem(dims, prices, alloc, pair_names, classes, existing)


def _existing_room(inputs, dims) -> list:
    """[(name, ExistingNode, room per dim)] for the nodes and launched NodeClaims a plan may fill
    (as `api.plan_pools` sees them: not those being deleted)."""
    if not inputs.nodes and not inputs.nodeclaims:
        return []
    active = build_cluster(inputs.nodes, inputs.nodeclaims).active()
    names = {s.node.name: s.name for s in active if s.node is not None}
    used: dict = {}
    for pod in inputs.bound_pods:
        if pod.node_name in names:
            used[names[pod.node_name]] = add(used.get(names[pod.node_name], {}), pod.spec.requests)
    out = []
    for state in active:
        node = state.as_existing()
        room = [node.allocatable.get(d, 0) - used.get(node.name, {}).get(d, 0) for d in dims]
        if all(r >= 0 for r in room):  # an overcommitted node takes no pod in the plan either
            out.append((node.name, node, room))
    return out


def _fits_existing(spec, node, room, request) -> bool:
    if any(r > free for r, free in zip(request, room)):
        return False
    if untolerated(node.taints, spec.tolerations + (TOLERATE_PREFER_NO_SCHEDULE,)) is not None:
        return False
    labels = Requirements.from_labels(node.labels)
    terms = range(len(spec.required_terms)) if spec.required_terms else [0]
    return any(labels.compatible(strict_requirements(spec, term), WELL_KNOWN) is None for term in terms)


def _scale(dims) -> np.ndarray:
    # Work in cores / GiB / pods so every coefficient is of order one (milli-units span 1e3..1e16).
    return np.asarray([2**30 * 1e3 if d in (L.MEMORY, L.EPHEMERAL_STORAGE) else 1e3 for d in dims])


def _carriers(problem: _Problem, x) -> tuple:
    return tuple(sorted(((*problem.pair_names[j], float(x[j])) for j in range(len(x))
                         if x[j] > 1e-9 and not problem.existing[j]),
                        key=lambda c: (-c[2], c[0], c[1])))


def _fluid(problem: _Problem) -> Bound:
    from scipy.optimize import linprog  # optional dependency (extras bench, tune)
    from scipy.sparse import coo_matrix

    aggregated: dict = {}  # the fluid LP only needs each pair set's summed requests
    for pairs, request, n, _ in problem.classes:
        aggregated[pairs] = aggregated.get(pairs, 0) + n * np.asarray(request, dtype=float)
    class_list = list(aggregated.items())
    prices, n_pairs, n_dims = problem.prices, len(problem.prices), len(problem.dims)
    scale = _scale(problem.dims)
    capacity = problem.alloc / scale
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
        b_ub[base + c * n_dims: base + (c + 1) * n_dims] = -demand / scale
    a_ub = coo_matrix((vals, (rows, cols)), shape=(len(b_ub), g_index)).tocsr()
    cost = np.zeros(g_index)
    cost[:n_pairs] = np.where(np.isfinite(prices), prices, 0.0)
    bounds = [(0, 1 if problem.existing[j] else None if np.isfinite(p) else 0) for j, p in enumerate(prices)]
    bounds += [(0, None)] * (g_index - n_pairs)
    result = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if result.status != 0:
        raise RuntimeError(f"LP failed: {result.message}")
    x = np.where(problem.existing, 0.0, result.x[:n_pairs])
    return Bound(float(result.fun), len(class_list), n_pairs, float(x.sum()), _carriers(problem, x), "fluid",
                 float(result.fun))


def lower_bound(inputs, catalog=None, region: str = DEFAULT_REGION, zones=DEFAULT_ZONES,
                spot_discount: float = DEFAULT_SPOT_DISCOUNT, method: str = "patterns",
                max_iterations: int = MAX_ITERATIONS, time_limit: float = TIME_LIMIT_S, packing: bool = False) -> Bound:
    """The lower bound of `method` ("patterns": the configuration LP, tighter; "fluid"). `packing`
    (patterns only) also prices a whole-node packing over the patterns found (`Bound.packing_usd_hour`)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}")
    problem = _problem(inputs, catalog, region, zones, spot_discount)
    if not problem.classes:  # no pod can be placed by any plan (or there are none): nothing to buy
        return Bound(0.0, 0, len(problem.prices), 0.0, method=method)
    fluid = _fluid(problem)
    if method == "fluid":
        return fluid
    from .patterns import pattern_bound  # the column generation (imports this module's types)
    return pattern_bound(problem, fluid, max_iterations, time_limit, packing)
