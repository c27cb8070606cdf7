"""Search NodePool requirement changes that make Karpenter's (simulated) plan cheaper.

Karpenter packs pending pods into one NodeClaim until only the largest allowed types still fit,
then launches the cheapest of those (scheduler.go, nodeclaim.go); which NodePools allow which
types therefore decides the price. The search only *narrows* pools: every change is a
requirement on an instance-type label whose admitted set is a strict subset of what the pool
admitted, and which keeps every architecture, capacity type and zone the pool could launch in.
It never changes taints, labels, capacity types, zones or architectures (the team set them for
reasons the simulator cannot see: interruption tolerance, image architectures, data locality).

Dimensions (TUNABLE_KEYS): the vCPU size window (`instance-cpu`: caps `Lt N`, floors `Gt N`, or
the `In` list of both), categories (memory per vCPU), a memory cap (`instance-memory Lt N`), a
GPU-count cap on pools whose every type has GPUs, instance families (those the LP bound's optimum
buys), a generation floor and one CPU manufacturer.

Greedy coordinate descent: for each NodePool that launches NodeClaims (most expensive first),
for each dimension, try every candidate value, keep the one that lowers the plan price most
without more unschedulable pods; repeat until a round improves nothing. Then a restart from the
LP optimum's families in every pool. Each trial is one full simulation (memoised by state, with
an evaluation budget), so the result is Karpenter's faithful plan for the tuned pools, by
construction.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

from kubefacts import labels as L
from kubefacts.platform import TEAM_LABEL
from ..api import nodepool_instance_types, plan_pools, resolve_catalog
from ..catalog import DEFAULT_REGION, DEFAULT_SPOT_DISCOUNT, DEFAULT_ZONES
from ..scheduling.instance_selection import _type_compatible  # the filter NodePool templates apply
from ..scheduling.requirements import Requirement
from .largest_pod import holds_largest_pod

CPU_KEY = "karpenter.k8s.aws/instance-cpu"
CATEGORY_KEY = "karpenter.k8s.aws/instance-category"
GENERATION_KEY = "karpenter.k8s.aws/instance-generation"
MANUFACTURER_KEY = "karpenter.k8s.aws/instance-cpu-manufacturer"
MEMORY_KEY = "karpenter.k8s.aws/instance-memory"  # MiB
GPU_COUNT_KEY = "karpenter.k8s.aws/instance-gpu-count"
FAMILY_KEY = "karpenter.k8s.aws/instance-family"
# The order coordinate descent visits them: size first (it matters most), then memory per vCPU.
TUNABLE_KEYS = (CPU_KEY, CATEGORY_KEY, MEMORY_KEY, GPU_COUNT_KEY, FAMILY_KEY, GENERATION_KEY, MANUFACTURER_KEY)
# Largest vCPU counts tried as caps (`instance-cpu Lt N+1`): the sizes EC2 families share.
CAP_LADDER = (2, 4, 8, 16, 32, 48, 64, 96, 128, 192)
# Largest memory tried as caps (`instance-memory Lt N+1`, GiB): one NodeClaim's memory, whatever its vCPUs.
MEMORY_LADDER_GIB = (4, 8, 16, 32, 64, 128, 192, 256, 384, 512, 768, 1024)
# Largest GPU counts tried as caps (`instance-gpu-count Lt N+1`): Karpenter otherwise fills 8-GPU nodes.
GPU_LADDER = (1, 2, 4, 8)
# Category subsets tried: the general-purpose trio and its parts (memory-per-vCPU 2, 4, 8 GiB).
CATEGORY_SETS = (("c", "m", "r"), ("c", "m"), ("m", "r"), ("c", "r"), ("c",), ("m",), ("r",))
MAX_ROUNDS = 3
MAX_EVALUATIONS = 240  # simulated plans per tune (the 1,000-pod workloads take ~0.1-0.2 s each)
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
    refused: int = 0  # distinct change sets the caller's `accept` vetoed

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
    def __init__(self, inputs, catalog, region, zones, spot_discount, max_evaluations: int | None = None,
                 accept=None):
        self.inputs = inputs
        self.accept = accept
        self._accepted: dict = {}  # (pool, canonical changes) -> the shell's verdict
        pools, self.notes = nodepool_instance_types(inputs, catalog, region, zones, spot_discount)
        self.types = {pool.name: types for pool, types in pools}
        self.pools = {pool.name: pool for pool, _ in pools}
        self.order = [pool.name for pool, _ in pools]
        self.evaluations = 0
        self.max_evaluations = max_evaluations
        self._plans: dict = {}  # canonical state -> Plan (restarts and coordinate rounds revisit states)

    # --- evaluation -------------------------------------------------------------------------------
    def pool_with(self, name: str, changes: dict):
        pool = self.pools[name]
        if not changes:
            return pool
        reqs = pool.requirements.without(*changes)
        reqs.add(*(Requirement.of(c["key"], c["operator"], c["values"]) for c in changes.values()))
        return dataclasses.replace(pool, requirements=reqs)

    def exhausted(self) -> bool:
        return self.max_evaluations is not None and self.evaluations >= self.max_evaluations

    def evaluate(self, state: dict) -> Plan:
        key = _canonical(state)
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        self.evaluations += 1
        pools = [(self.pool_with(name, state.get(name) or {}), self.types[name]) for name in self.order]
        result = plan_pools(self.inputs, pools, self.notes)
        spend: dict = {}
        for claim in result.nodeclaims:
            spend[claim.nodepool] = spend.get(claim.nodepool, 0.0) + claim.price_usd_hour
        plan = self._plans[key] = Plan(result.price_usd_hour, len(result.unschedulable), spend)
        return plan

    # --- candidates -------------------------------------------------------------------------------
    def admitted(self, name: str, changes: dict) -> list:
        """The instance types the pool, with `changes`, admits (its requirements against their labels)."""
        pool = self.pool_with(name, changes)
        return [it for it in self.types[name]
                if all(_type_compatible(it.requirements.raw(k), r) for k, r in pool.requirements._reqs.items())]

    def values(self, name: str, key: str, state: dict) -> set:
        """Values of `key` among the types the pool (with its current changes) admits."""
        out = set()
        for it in self.admitted(name, state.get(name) or {}):
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

    def _window(self, name: str, key: str, chosen: set) -> dict:
        """A requirement admitting exactly the numbers `chosen` of the pool's own values of `key`:
        `Lt` (a cap) or `Gt` (a floor) when that says it, else an `In` list (a size window)."""
        own = sorted(int(v) for v in self.values(name, key, {}) if v.isdigit())
        lo, hi = min(chosen), max(chosen)
        if {v for v in own if v <= hi} == chosen:
            return requirement_dict(key, "Lt", [hi + 1])
        if {v for v in own if v >= lo} == chosen:
            return requirement_dict(key, "Gt", [lo - 1])
        return requirement_dict(key, "In", sorted(chosen))

    def candidates(self, name: str, key: str, state: dict, hints: dict | None = None) -> list:
        """[(group, change)]: requirement changes on `key` that admit a strict, non-empty subset of
        what the pool admits now. Within a group, later changes admit less (a cap that leaves pods
        unschedulable rules out the smaller caps after it)."""
        own = self.pools[name].requirements.raw(key)
        if own is not None and own.min_values is not None:
            return []  # the team asked for flexibility on this key; a replacement would drop it
        current = self.values(name, key, state)
        if not current:
            return []
        out = []
        numbers = sorted(int(v) for v in current if v.isdigit())
        if key == CPU_KEY and numbers:
            for cap in sorted(CAP_LADDER, reverse=True):  # caps, keeping the current floor
                if numbers[0] <= cap < numbers[-1]:
                    out.append(("cap", self._window(name, key, {v for v in numbers if v <= cap})))
            for floor in numbers[1:]:  # floors, keeping the current cap: no small, dear-per-unit types
                out.append(("floor", self._window(name, key, {v for v in numbers if v >= floor})))
        elif key == MEMORY_KEY and numbers:
            for gib in sorted(MEMORY_LADDER_GIB, reverse=True):
                if numbers[0] <= gib * 1024 < numbers[-1]:
                    out.append(("cap", requirement_dict(key, "Lt", [gib * 1024 + 1])))
        elif key == GPU_COUNT_KEY and numbers and numbers[0] > 0:
            if len(current) == len(numbers) and self._all_have(name, key, state):
                for cap in sorted(GPU_LADDER, reverse=True):
                    if numbers[0] <= cap < numbers[-1]:
                        out.append(("cap", requirement_dict(key, "Lt", [cap + 1])))
        elif key == CATEGORY_KEY:
            subsets = [tuple(sorted(current - {v})) for v in sorted(current)] if not current <= {"c", "m", "r"} \
                else CATEGORY_SETS
            for subset in subsets:
                chosen = sorted(set(subset) & current)
                if chosen and set(chosen) != current:
                    out.append(("set", requirement_dict(key, "In", chosen)))
        elif key == MANUFACTURER_KEY:  # same architecture, so the same images run (e.g. intel vs amd)
            if len(current) > 1:
                out.extend(("set", requirement_dict(key, "In", [v])) for v in sorted(current))
        elif key == GENERATION_KEY and numbers:
            for floor in numbers[1:]:
                out.append(("floor", requirement_dict(key, "Gt", [floor - 1])))
        elif key == FAMILY_KEY:  # the families the LP bound's optimum buys in this pool, together and alone
            families = sorted((hints or {}).get(name, set()) & current)
            if families and set(families) != current:
                out.append(("set", requirement_dict(key, "In", families)))
            if len(families) > 1:
                out.extend(("set", requirement_dict(key, "In", [f])) for f in families)
        changes, seen = [], set()
        admitted = self.admitted(name, state.get(name) or {})
        before, reach = {it.name for it in admitted}, self._reach(name, admitted)
        for group, candidate in out:
            change = self.narrowed(name, key, candidate)
            if change is None or repr(change) in seen:
                continue
            seen.add(repr(change))
            narrower = self.admitted(name, {**(state.get(name) or {}), key: change})
            # The same types would give the same plan; and a change must not drop an architecture,
            # a capacity type or a zone the pool can launch in (e.g. one CPU maker on an amd64 +
            # arm64 pool would make it single-architecture): those are the team's choices.
            if narrower and {it.name for it in narrower} != before and self._reach(name, narrower) == reach \
                    and self.holds_largest_pod(name, narrower) \
                    and self.accepts(name, {**(state.get(name) or {}), key: change}):
                changes.append((group, change))
        return changes

    def holds_largest_pod(self, name: str, types: list) -> bool:
        """Some of `types` still holds the team's declared largest pod (the pool's annotation), the
        rule of the pack's `nodepool-fits-largest-pod`: tune never proposes a cap that pod cannot
        live with (a 32-CPU pod on a pool capped at 32 vCPUs, whose allocatable is less)."""
        return holds_largest_pod(dict(self.pools[name].largest_pod), (it.allocatable for it in types))

    def accepts(self, name: str, changes: dict) -> bool:
        """The shell's verdict on the pool's whole change set (e.g. the platform's policy pack: a cap
        that no longer holds the team's declared largest pod is never proposed); memoised."""
        if self.accept is None:
            return True
        key = (name, _canonical({name: changes}))
        if key not in self._accepted:
            self._accepted[key] = bool(self.accept(name, [dict(c) for _, c in sorted(changes.items())]))
        return self._accepted[key]

    def _reach(self, name: str, types: list) -> tuple:
        """The architectures, capacity types and zones the pool can launch with `types`."""
        reqs = self.pools[name].requirements
        archs = set()
        for it in types:
            req = it.requirements.raw(L.ARCH)
            if req is not None and not req.complement:
                archs |= req.values
        offers = {(o.capacity_type, o.zone) for it in types for o in it.offerings
                  if o.available and reqs.get(L.CAPACITY_TYPE).has(o.capacity_type) and reqs.get(L.ZONE).has(o.zone)}
        return frozenset(archs), frozenset(offers)

    def _all_have(self, name: str, key: str, state: dict) -> bool:
        """Every admitted type carries `key` (a bound on it would drop the types without it)."""
        return all((r := it.requirements.raw(key)) is not None and not r.complement and r.values
                   for it in self.admitted(name, state.get(name) or {}))

    # --- coordinate descent -------------------------------------------------------------------------
    def descend(self, state: dict, best: Plan, limit: int, hints: dict, max_rounds: int):
        """Greedy coordinate descent from `state`: per pool (dearest first) and key, the change
        that lowers the price most without more unschedulable pods than `limit`; until a round
        improves nothing."""
        for _ in range(max_rounds):
            improved = False
            for name in sorted(best.spend, key=lambda p: (-best.spend[p], p)):
                if name not in self.pools:
                    continue
                for key in TUNABLE_KEYS:
                    choice, stopped = None, set()
                    for group, change in self.candidates(name, key, state, hints):
                        if group in stopped:
                            continue
                        if self.exhausted():
                            return state, best
                        trial = {**state, name: {**state.get(name, {}), key: change}}
                        plan = self.evaluate(trial)
                        if plan.unschedulable > limit:
                            if group in ("cap", "floor"):
                                stopped.add(group)  # the group's later changes admit fewer types still
                            continue
                        if plan.price_usd_hour < (choice or best).price_usd_hour - EPSILON:
                            choice, chosen_state = plan, trial
                    if choice is not None:
                        best, state, improved = choice, chosen_state, True
            if not improved:
                break
        return state, best


def _canonical(state: dict):
    return tuple(sorted((name, tuple(sorted((k, c["operator"], tuple(c["values"])) for k, c in changes.items())))
                        for name, changes in state.items() if changes))


def _natural(value: str):
    return (0, int(value), "") if value.isdigit() else (1, 0, value)


def _lp_families(bound, search: _Search) -> dict:
    """nodepool -> families of the instance types that carry the LP bound's optimum in it."""
    out: dict = {}
    by_name = {name: {it.name: it for it in types} for name, types in search.types.items()}
    for pool, type_name, _ in getattr(bound, "carriers", ()):
        it = by_name.get(pool, {}).get(type_name)
        req = it.requirements.raw(FAMILY_KEY) if it is not None else None
        if req is not None and not req.complement:
            out.setdefault(pool, set()).update(req.values)
    return out


def tune(inputs, catalog=None, region: str = DEFAULT_REGION, zones=DEFAULT_ZONES,
         spot_discount: float = DEFAULT_SPOT_DISCOUNT, bound=None,
         max_rounds: int = MAX_ROUNDS, max_evaluations: int | None = MAX_EVALUATIONS, accept=None) -> TuneResult:
    """Requirement changes per NodePool that lower the simulated plan price without leaving more
    pods unschedulable. `bound`: a precomputed `lpbound.Bound` or its price (else computed here;
    needs scipy); a Bound also tells which families carry the optimum. `accept(nodepool,
    requirements)`: the caller's veto on a pool's whole change set (the `-o json` requirements
    list); the search only ever keeps, and so only prints, changes it accepts."""
    started = time.perf_counter()
    catalog = resolve_catalog(catalog)
    search = _Search(inputs, catalog, region, zones, spot_discount, max_evaluations, accept)
    if bound is None:
        from .lpbound import lower_bound
        bound = lower_bound(inputs, catalog, region, zones, spot_discount)
    hints = _lp_families(bound, search)
    bound_price = float(getattr(bound, "price_usd_hour", bound))
    baseline = search.evaluate({})
    limit = baseline.unschedulable
    state, best = search.descend({}, baseline, limit, hints, max_rounds)
    # Restart from the LP optimum's families in every pool that spends: descent from the baseline
    # stops where no single change helps, while a family restriction plus a different cap can.
    seed = {}
    for name in baseline.spend:
        families = sorted(hints.get(name, ()))
        if name in search.pools and families:
            change = search.narrowed(name, FAMILY_KEY, requirement_dict(FAMILY_KEY, "In", families))
            if change is not None and (change, "set") in ((c, g) for g, c in search.candidates(name, FAMILY_KEY, {}, hints)):
                seed[name] = {FAMILY_KEY: change}  # only when it passes the same checks as any candidate
    if seed and not search.exhausted():
        plan = search.evaluate(seed)
        if plan.unschedulable <= limit:
            other_state, other = search.descend(seed, plan, limit, hints, max_rounds)
            if other.price_usd_hour < best.price_usd_hour - EPSILON:
                state, best = other_state, other
    state = {name: changes for name, changes in state.items() if changes}
    teams = {name: pool.labels[TEAM_LABEL] for name, pool in search.pools.items()
             if TEAM_LABEL in pool.labels and name in state}
    refused = sum(1 for accepted in search._accepted.values() if not accepted)
    return TuneResult(baseline, best, state, bound_price, search.evaluations, time.perf_counter() - started, teams, refused)
