"""Search NodePool requirement changes that make Karpenter's (simulated) plan cheaper.

Karpenter packs pending pods into one NodeClaim until only the largest allowed types still fit,
then launches the cheapest of those (scheduler.go, nodeclaim.go); which NodePools allow which
types therefore decides the price. The search only *narrows* pools: every change is a
requirement on an instance-type label (size cap on `instance-cpu`, `instance-category`,
`instance-generation`, `instance-cpu-manufacturer` within the pool's architectures) whose admitted set is a subset of what the pool admitted. It never
changes taints, labels, capacity types, zones or architectures (the team set them for reasons
the simulator cannot see: interruption tolerance, image architectures, data locality).

Greedy coordinate descent: for each NodePool that launches NodeClaims (most expensive first),
for each dimension, try every candidate value, keep the one that lowers the plan price without
more unschedulable pods; repeat until a round improves nothing. Each trial is one full
simulation, so the result is Karpenter's faithful plan for the tuned pools, by construction.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

from ..api import nodepool_instance_types, plan_pools, resolve_catalog
from ..catalog import DEFAULT_REGION, DEFAULT_SPOT_DISCOUNT, DEFAULT_ZONES
from ..scheduling.instance_selection import _type_compatible  # the filter NodePool templates apply
from ..scheduling.requirements import Requirement

TEAM_LABEL = "karpenter-platform.io/team"  # set by the platform on every team NodePool
CPU_KEY = "karpenter.k8s.aws/instance-cpu"
CATEGORY_KEY = "karpenter.k8s.aws/instance-category"
GENERATION_KEY = "karpenter.k8s.aws/instance-generation"
MANUFACTURER_KEY = "karpenter.k8s.aws/instance-cpu-manufacturer"
TUNABLE_KEYS = (CPU_KEY, CATEGORY_KEY, GENERATION_KEY, MANUFACTURER_KEY)
# Largest vCPU counts tried as caps (`instance-cpu Lt N+1`): the sizes EC2 families share.
CAP_LADDER = (2, 4, 8, 16, 32, 48, 64, 96, 128, 192)
# Category subsets tried: the general-purpose trio and its parts (memory-per-vCPU 2, 4, 8 GiB).
CATEGORY_SETS = (("c", "m", "r"), ("c", "m"), ("m", "r"), ("c", "r"), ("c",), ("m",), ("r",))
MAX_ROUNDS = 3
EPSILON = 1e-9


@dataclass
class Plan:
    price_usd_hour: float
    unschedulable: int
    spend: dict  # nodepool -> $/h in this plan

    def to_dict(self) -> dict:
        return {"price_usd_hour": round(float(self.price_usd_hour), 6), "unschedulable": self.unschedulable}


@dataclass
class TuneResult:
    baseline: Plan
    tuned: Plan
    changes: dict  # nodepool -> {key: Requirement spec dict}
    bound_usd_hour: float
    evaluations: int = 0
    seconds: float = 0.0
    teams: dict = field(default_factory=dict)  # nodepool -> team (pools from this platform)

    def change_list(self) -> list:
        return [{"nodepool": pool, "requirements": [dict(r) for _, r in sorted(reqs.items())]}
                for pool, reqs in sorted(self.changes.items()) if reqs]

    def to_dict(self) -> dict:
        """Exactly the documented `tune -o json` shape."""
        return {"baseline": self.baseline.to_dict(), "tuned": self.tuned.to_dict(), "changes": self.change_list(),
                "bound_usd_hour": round(float(self.bound_usd_hour), 6)}


def requirement_dict(key: str, operator: str, values) -> dict:
    return {"key": key, "operator": operator, "values": [str(v) for v in values]}


def replace_requirements(requirements: list, changes: list) -> list:
    """A NodePool's `spec.template.spec.requirements` with each change replacing every entry of its
    key (or appended when the key is new)."""
    keys = {c["key"] for c in changes}
    return [r for r in requirements if r.get("key") not in keys] + [dict(c) for c in changes]


def apply_changes(objects, changes: list) -> list:
    """Kubernetes object dicts with `changes` (the `-o json` list) applied to their NodePools."""
    by_pool = {c["nodepool"]: c["requirements"] for c in changes}
    out = []
    for obj in objects:
        name = (obj.get("metadata") or {}).get("name") if isinstance(obj, dict) else None
        if isinstance(obj, dict) and obj.get("kind") == "NodePool" and name in by_pool:
            obj = {**obj, "spec": {**obj["spec"], "template": {**obj["spec"]["template"], "spec": {
                **obj["spec"]["template"]["spec"],
                "requirements": replace_requirements(obj["spec"]["template"]["spec"].get("requirements") or [],
                                                     by_pool[name])}}}}
        out.append(obj)
    return out


class _Search:
    def __init__(self, inputs, catalog, region, zones, spot_discount):
        self.inputs = inputs
        pools, self.notes = nodepool_instance_types(inputs, catalog, region, zones, spot_discount)
        self.types = {pool.name: types for pool, types in pools}
        self.pools = {pool.name: pool for pool, _ in pools}
        self.order = [pool.name for pool, _ in pools]
        self.evaluations = 0

    # --- evaluation -------------------------------------------------------------------------------
    def pool_with(self, name: str, changes: dict):
        pool = self.pools[name]
        if not changes:
            return pool
        reqs = pool.requirements.without(*changes)
        reqs.add(*(Requirement.of(c["key"], c["operator"], c["values"]) for c in changes.values()))
        return dataclasses.replace(pool, requirements=reqs)

    def evaluate(self, state: dict) -> Plan:
        self.evaluations += 1
        pools = [(self.pool_with(name, state.get(name) or {}), self.types[name]) for name in self.order]
        result = plan_pools(self.inputs, pools, self.notes)
        spend: dict = {}
        for claim in result.nodeclaims:
            spend[claim.nodepool] = spend.get(claim.nodepool, 0.0) + claim.price_usd_hour
        return Plan(result.price_usd_hour, len(result.unschedulable), spend)

    # --- candidates -------------------------------------------------------------------------------
    def values(self, name: str, key: str, state: dict) -> set:
        """Values of `key` among the types the pool (with its current changes) admits."""
        pool = self.pool_with(name, state.get(name) or {})
        out = set()
        for it in self.types[name]:
            if all(_type_compatible(it.requirements.raw(k), r) for k, r in pool.requirements._reqs.items()):
                req = it.requirements.raw(key)
                if req is not None and not req.complement:
                    out |= req.values
        return out

    def narrowed(self, name: str, key: str, change: dict) -> dict | None:
        """`change`, kept within what the pool's own requirement on `key` admits (a replaced
        requirement must never widen the pool): as is when it is a subset, else as `In` the
        catalog values both admit; None when none is left."""
        own = self.pools[name].requirements.raw(key)
        candidate = Requirement.of(key, change["operator"], change["values"])
        if own is None or own.intersection(candidate) == candidate:
            return change
        values = sorted((v for v in self.values(name, key, {}) if own.has(v) and candidate.has(v)), key=_natural)
        return requirement_dict(key, "In", values) if values else None

    def candidates(self, name: str, key: str, state: dict) -> list:
        own = self.pools[name].requirements.raw(key)
        if own is not None and own.min_values is not None:
            return []  # the team asked for flexibility on this key; a replacement would drop it
        current = self.values(name, key, state)
        if not current:
            return []
        out = []
        if key == CPU_KEY:
            numbers = sorted(int(v) for v in current if v.isdigit())
            for cap in sorted(CAP_LADDER, reverse=True):
                if numbers and numbers[0] <= cap < numbers[-1]:
                    out.append(requirement_dict(key, "Lt", [cap + 1]))
        elif key == CATEGORY_KEY:
            for subset in CATEGORY_SETS:
                chosen = sorted(set(subset) & current)
                if chosen and set(chosen) != current:
                    out.append(requirement_dict(key, "In", chosen))
        elif key == MANUFACTURER_KEY:  # same architecture, so the same images run (e.g. intel vs amd)
            if len(current) > 1:
                out.extend(requirement_dict(key, "In", [v]) for v in sorted(current))
        elif key == GENERATION_KEY:
            numbers = sorted(int(v) for v in current if v.isdigit())
            for floor in numbers[1:]:
                out.append(requirement_dict(key, "Gt", [floor - 1]))
        changes, seen = [], set()
        for candidate in out:
            change = self.narrowed(name, key, candidate)
            if change is not None and repr(change) not in seen:
                seen.add(repr(change))
                changes.append(change)
        return changes


def _natural(value: str):
    return (0, int(value), "") if value.isdigit() else (1, 0, value)


def tune(inputs, catalog=None, region: str = DEFAULT_REGION, zones=DEFAULT_ZONES,
         spot_discount: float = DEFAULT_SPOT_DISCOUNT, bound: float | None = None,
         max_rounds: int = MAX_ROUNDS) -> TuneResult:
    """Requirement changes per NodePool that lower the simulated plan price without leaving more
    pods unschedulable. `bound`: a precomputed LP bound (else computed here; needs scipy)."""
    started = time.perf_counter()
    catalog = resolve_catalog(catalog)
    search = _Search(inputs, catalog, region, zones, spot_discount)
    if bound is None:
        from .lpbound import lower_bound
        bound = lower_bound(inputs, catalog, region, zones, spot_discount).price_usd_hour
    baseline = search.evaluate({})
    best, state = baseline, {}
    for _ in range(max_rounds):
        improved = False
        pools = sorted(best.spend, key=lambda p: (-best.spend[p], p))
        for name in pools:
            if name not in search.pools:
                continue
            for key in TUNABLE_KEYS:
                choice = None
                for change in search.candidates(name, key, state):
                    trial = {**state, name: {**state.get(name, {}), key: change}}
                    plan = search.evaluate(trial)
                    if plan.unschedulable > baseline.unschedulable:
                        if key == CPU_KEY:
                            break  # smaller caps only fit fewer pods
                        continue
                    if plan.price_usd_hour < (choice or best).price_usd_hour - EPSILON:
                        choice, chosen_state = plan, trial
                if choice is not None:
                    best, state, improved = choice, chosen_state, True
        if not improved:
            break
    teams = {name: pool.labels[TEAM_LABEL] for name, pool in search.pools.items()
             if TEAM_LABEL in pool.labels and name in state}
    return TuneResult(baseline, best, state, bound, search.evaluations, time.perf_counter() - started, teams)
