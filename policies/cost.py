"""Cost policies: instance-size caps, and dollar ceilings (each NodePool's worst case at its limits,
summed per team against its budget).

A pool's worst case is `provisioner.cost.ceiling` (the most Karpenter could spend within
`spec.limits`, from the catalog and the pool's requirements); the team's budget for the
environment reaches the pool as the annotation karpenter-platform.io/budget-usd-hour (from the
team file's `budget`), so the policy judges the declared objects alone.
"""

from __future__ import annotations

import functools
import json
import math
from collections import defaultdict
from typing import Any, Iterable, Mapping

from components.config.teams import BUDGET_ANNOTATION, TEAM_LABEL

from . import catalog
from .helm import karpenter_version
from .model import NODEPOOL, Resource, Stack, Violation, contains_unknown
from .nodepools import _NODECLASS_FIELDS, _known_requirements, _node_class, _pools, _valid_pool_types
from .registry import policy


def pool_worst_case(stack: Stack, pool: Resource) -> float | None:
    """USD/hour at the pool's limits; None when unknown (preview), unbounded or invalid."""
    template = pool.prop("spec", "template", "spec", default={})
    limits = pool.prop("spec", "limits", default={})
    node_class = _node_class(stack, pool)
    class_spec = {k: node_class.prop("spec", k) for k in _NODECLASS_FIELDS if node_class.prop("spec", k) is not None} \
        if node_class is not None else None
    if contains_unknown(template) or contains_unknown(limits) or contains_unknown(class_spec):
        return None
    whole_class = None if node_class is None else node_class.props
    if not contains_unknown(pool.props) and not contains_unknown(whole_class):
        try:
            # an invalid pool has no worst case (has-instance-types says why)
            catalog.judge(pool.props, whole_class, release=karpenter_version(stack))
        except catalog.InvalidObject:
            return None
    key = json.dumps([template, limits, class_spec, node_class.prop("metadata", "name") if node_class else None],
                     sort_keys=True, default=str)
    return _worst_case(key)


@functools.lru_cache(maxsize=256)
def _worst_case(key: str) -> float | None:
    template, limits, class_spec, class_name = json.loads(key)
    try:
        from provisioner import InputError, pool_ceilings  # loads the scheduler: only when a pool is judged
    except ImportError:  # pragma: no cover - the provisioner ships in this repository
        return None
    objects = [{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "pool"},
                "spec": {"limits": limits or {}, "template": {"spec": _integral(template)}}}]
    if class_name is not None:
        objects.append({"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": class_name},
                        "spec": _integral(class_spec or {})})
    try:
        ceilings = pool_ceilings(objects, judged=True)
    except (InputError, ValueError, TypeError):
        return None  # nodepool-has-instance-types reports invalid pools
    return ceilings[0].usd_hour if ceilings else None


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_integral(v) for v in value]
    return value


@policy(
    "team-budget",
    f"""A team's NodePools together must not be able to cost more per hour than the team's budget
    for the environment (team file `budget`, carried on each pool as the annotation
    {BUDGET_ANNOTATION}). Each pool's worst case is the most Karpenter could spend within its
    `spec.limits` from the catalog and its requirements (docs/cost.md); limits are the only brake
    on spend, and this turns them into dollars. The message names the pools and their worst cases.""",
    group="NodePool",
)
def team_budget(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    pools_by_team: dict[str, list] = defaultdict(list)
    budgets: dict[str, float] = {}
    for pool in stack.of_type(NODEPOOL):
        team = pool.prop("metadata", "labels", TEAM_LABEL)
        raw = pool.prop("metadata", "annotations", BUDGET_ANNOTATION)
        if not isinstance(team, str) or raw is None or contains_unknown(raw):
            continue
        try:
            budgets[team] = float(raw)
            if not math.isfinite(budgets[team]):  # "inf" would pass every team, "nan" too
                raise ValueError(raw)
        except (TypeError, ValueError):
            yield Violation(pool.urn, f"{pool.label} annotation {BUDGET_ANNOTATION}={raw!r} is not a number of USD/hour")
            continue
        pools_by_team[team].append(pool)
    for team, pools in sorted(pools_by_team.items()):
        worst = [(pool, pool_worst_case(stack, pool)) for pool in pools]
        known = [(p, w) for p, w in worst if w is not None]
        total = sum(w for _, w in known)
        # Compared in the cents the message prints: never "$5.86 above its budget of $5.86".
        if round(total, 2) > round(budgets[team], 2):
            named = ", ".join(f"{p.prop('metadata', 'name')} ${w:,.2f}/h" for p, w in
                              sorted(known, key=lambda item: -item[1]))
            yield Violation(known[0][0].urn, f"team {team}: its NodePools can cost up to ${total:,.2f}/h at their "
                                             f"limits, above its budget of ${budgets[team]:,.2f}/h ({named}); lower "
                                             "their limits, cap instance size or raise the budget")


# --- size cap ----------------------------------------------------------------------------------

INSTANCE_CPU = "karpenter.k8s.aws/instance-cpu"


@policy(
    "nodepool-size-capped",
    f"""A NodePool should cap instance size. Karpenter packs a batch of pending pods into one
    NodeClaim while any allowed type still fits them, so an uncapped pool ends on the largest (and
    rarely cheapest) types: measured plans were 1.3-1.6x an LP lower bound without a cap and about
    1.1x with one (BENCHMARKS.md). Flags a pool whose admitted types exceed `maxVcpu`, and suggests
    the smallest cap (32 vCPU or more) that no mandatory policy refuses in any environment (a cap
    must still hold the pool's declared largest pod). A team opts
    out by writing its own requirement on {INSTANCE_CPU} (for instance `operator: Exists`): a
    deliberate choice, not an omission.""",
    schema={"maxVcpu": {"type": "integer", "minimum": 1,
                        "description": "Largest vCPU count a pool may admit without its own instance-cpu requirement."}},
    defaults=lambda environment: {"maxVcpu": 64},
    group="NodePool",
)
def size_capped(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]:
    limit = int(config.get("maxVcpu") or 64)
    for pool in _pools(stack):
        requirements = _known_requirements(pool)
        if requirements is None or any(r.get("key") == INSTANCE_CPU for r in requirements):
            continue
        types = _valid_pool_types(stack, pool)
        if types is None or not types.candidates:
            continue
        sizes = [(max((int(v) for v in c.label_values.get(INSTANCE_CPU, ()) if v.isdigit()), default=0), c.name)
                 for c in types.candidates]
        largest, name = max(sizes)
        if largest > limit:
            yield Violation(pool.urn, f"{pool.label} has no size cap: it admits up to {largest} vCPU ({name}); "
                                      + _cap_advice(stack, pool, requirements, limit, sorted({s for s, _ in sizes})))


def _cap_advice(stack: Stack, pool: Resource, requirements: list, limit: int, sizes: list[int]) -> str:
    """The smallest cap from 32 vCPU up to `limit` that no mandatory policy refuses in any
    environment (e.g. one that still holds the declared largest pod), or why there is none."""
    from .advice import refusals

    classes = [c for c in [_node_class(stack, pool)] if c is not None]
    caps = [min(limit, 32)] + [s for s in sizes if min(limit, 32) < s <= limit]
    refused = ""
    for cap in caps:
        capped = list(requirements) + [{"key": INSTANCE_CPU, "operator": "Lt", "values": [str(cap + 1)]}]
        found = refusals(pool, classes, capped)
        if not found:
            return f"add {INSTANCE_CPU} Lt {cap + 1} (or any requirement on {INSTANCE_CPU} to opt out)"
        refused = refused or f"{INSTANCE_CPU} Lt {cap + 1} would fail {found[0]}"
    return (f"no cap up to {limit} vCPU holds in every environment ({refused}); opt out with a requirement on "
            f"{INSTANCE_CPU} (e.g. operator: Exists) or raise maxVcpu")
