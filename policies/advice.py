"""Whether a requirement change that advice proposes holds under the pack's mandatory policies in
every environment: the pure check behind `nodepool-size-capped`'s suggested cap and `offline.tune`
(the provisioner's `tune` takes it as its `accept` hook; the provisioner never imports policies).

A proposal is refused when the NodePool with the new requirements fails a NodePool policy that is
mandatory in some environment (dev, staging, prod) and the pool as it is does not fail it there:
e.g. a cap `instance-cpu Lt 33` on a pool whose declared largest pod needs 32 CPUs and 4 GPUs,
which `nodepool-fits-largest-pod` refuses in staging and prod.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from .engine import evaluate
from .levels import ENVIRONMENTS, MANDATORY
from .model import NODECLASS, NODEPOOL, Resource, Stack
from .registry import PolicySpec

# Advice is checked against what the team must satisfy, not against other advice (the size-cap
# advisory calls this check itself).
_SKIPPED = frozenset({"nodepool-size-capped"})


def with_requirements(pool: Resource, requirements: Sequence[Mapping[str, Any]]) -> Resource:
    """The pool with `spec.template.spec.requirements` replaced."""
    props = dict(pool.props)
    spec = dict(props.get("spec") or {})
    template = dict(spec.get("template") or {})
    template["spec"] = {**(template.get("spec") or {}), "requirements": [dict(r) for r in requirements]}
    spec["template"] = template
    props["spec"] = spec
    return Resource(pool.type, pool.name, pool.urn, props, pool.protect, pool.retain_on_delete, pool.parent,
                    pool.property_dependencies)


def _nodepool_policies() -> list[PolicySpec]:
    from .pack import ALL  # the pack imports the policy modules, which import this one

    return [p for p in ALL if p.group == "NodePool" and p.name not in _SKIPPED]


def refusals(pool: Resource, node_classes: Iterable[Resource], requirements: Sequence[Mapping[str, Any]],
             environments: Sequence[str] = ENVIRONMENTS) -> list[str]:
    """`<environment>: <policy>: <message>` for each mandatory NodePool finding the pool with
    `requirements` gets that the pool as it is does not; empty when the change holds everywhere."""
    classes = tuple(node_classes)
    changed = with_requirements(pool, requirements)
    policies = _nodepool_policies()
    found = []
    for environment in environments:
        before = {(f.policy, f.message) for f in evaluate(Stack(environment, (pool, *classes)), policies=policies)
                  if f.level == MANDATORY and f.urn == pool.urn}
        for finding in evaluate(Stack(environment, (changed, *classes)), policies=policies):
            if finding.level == MANDATORY and finding.urn == pool.urn and (finding.policy, finding.message) not in before:
                found.append(f"{environment}: {finding.policy}: {finding.message}")
    return found


def resources_from_objects(objects: Iterable[Any]) -> tuple[dict[str, Resource], list[Resource]]:
    """NodePools by name and the EC2NodeClasses of Kubernetes object dicts (a render's manifests),
    as the policies see them."""
    pools: dict[str, Resource] = {}
    classes: list[Resource] = []
    for obj in objects:
        if not isinstance(obj, Mapping):
            continue
        name = (obj.get("metadata") or {}).get("name")
        if obj.get("kind") == "NodePool" and isinstance(name, str):
            pools[name] = Resource(NODEPOOL, name, f"urn:pulumi:advice::nodepool::{name}", obj)
        elif obj.get("kind") == "EC2NodeClass" and isinstance(name, str):
            classes.append(Resource(NODECLASS, name, f"urn:pulumi:advice::nodeclass::{name}", obj))
    return pools, classes
