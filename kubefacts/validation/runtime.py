"""Karpenter's runtime checks of objects the API server admitted: what the controllers refuse
(or what makes a node that can never launch or register). Each returns `(key path, message)`
pairs; the object is already schema-valid (kubefacts.validation runs these only then).

Sources (Karpenter v1.14.1):
- kubernetes-sigs/karpenter `pkg/apis/v1/nodepool_validation.go` (NodePool.RuntimeValidate:
  validateLabels, validateRequirementsNodePoolKeyDoesNotExist) and `nodeclaim_validation.go`
  (validateTaints/validateTaintsField, ValidateRequirement), `pkg/apis/v1/nodepool.go` (budget
  schedules parsed by robfig/cron's ParseStandard);
- k8s.io/kubelet `pkg/apis/well_known_labels.go`: kubelet refuses `--node-labels` in the
  kubernetes.io/k8s.io domains outside its list, and Karpenter passes a NodePool's labels that way;
- aws/karpenter-provider-aws `pkg/providers/amifamily/*.go` (DescribeImageQuery): an alias
  version other than `latest` is looked up as an SSM parameter of that release; a version that
  names no release resolves no AMI and the EC2NodeClass never becomes ready.
"""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import re2

from .. import cron
from .. import labels as L

Problem = tuple[str, str]
# A released AMI version as the SSM parameter paths name them: v20251117 (AL2, AL2023),
# 1.20.3 or v1.20.3 (Bottlerocket).
_ALIAS_VERSION = re2.compile(r"latest|v?[0-9][0-9.]*")


def _items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def template_labels(labels: dict[str, Any], path: str, release: str) -> Iterator[Problem]:
    """NodeClaimTemplate.validateLabels, and kubelet's refusal of kubernetes.io/k8s.io labels."""
    for key, value in labels.items():
        key, value = str(key), str(value)
        where = f"{path}.{key}"
        problem = L.qualified_name(key)
        if problem:
            yield where, f"invalid label key {problem}"
        try:
            L.check_label_value(value)
        except ValueError as err:
            yield where, str(err)
        why = L.restricted_label(key, release)
        if why:
            yield where, why
        elif (refusal := L.kubelet_refuses(key)) is not None:
            yield where, refusal


def taints(spec: dict[str, Any], path: str) -> Iterator[Problem]:
    """validateTaints: qualified keys (and values), known effects, no key/effect pair twice across
    `taints` and `startupTaints`."""
    seen: set[tuple[str, str]] = set()
    for field in ("taints", "startupTaints"):
        for index, taint in enumerate(_items(spec.get(field))):
            taint = _mapping(taint)
            where = f"{path}.{field}[{index}]"
            key, value, effect = str(taint.get("key", "")), str(taint.get("value", "")), str(taint.get("effect", ""))
            problem = L.qualified_name(key) if key else "the key is empty"
            if problem:
                yield f"{where}.key", f"invalid taint key {problem}"
            if value and (problem := L.qualified_name(value)):
                yield f"{where}.value", f"invalid taint value {problem}"
            if effect and effect not in L.EFFECTS:
                yield f"{where}.effect", f"unknown taint effect {effect!r}"
            if (key, effect) in seen:
                yield where, f"duplicate taint Key/Effect pair {key}={effect}"
            seen.add((key, effect))


def requirement(item: dict[str, Any], where: str, release: str, *, nodepool: bool, restricted: bool = True) -> Iterator[Problem]:
    """ValidateRequirement (key normalized first), and validateRequirementsNodePoolKeyDoesNotExist."""
    raw_key = str(item.get("key", ""))
    key = L.normalize(raw_key, release)
    operator = str(item.get("operator", ""))
    values = [str(v) for v in _items(item.get("values"))]
    if operator not in L.NODEPOOL_OPERATORS:
        yield f"{where}.operator", f"key {key} has an unsupported operator {operator} not in {sorted(L.NODEPOOL_OPERATORS)}"
    if nodepool and raw_key == L.NODEPOOL:
        yield f"{where}.key", f'invalid key: "{raw_key}" in requirements, restricted'
    elif restricted and (why := L.restricted_label(key, release)) is not None:
        yield f"{where}.key", why
    if (problem := L.qualified_name(key)) is not None:
        yield f"{where}.key", f"key {key} is not a qualified name, {problem}"
    for value in values:
        try:
            L.check_label_value(value)
        except ValueError as err:
            yield f"{where}.values", f"invalid value for key {key}: {err}"
    min_values = item.get("minValues")
    if operator == L.IN:
        if not values:
            yield f"{where}.values", f"key {key} with operator {operator} must have a value defined"
        elif isinstance(min_values, int) and len(values) < min_values:
            yield f"{where}.values", (f"key {key} with operator {operator} must have at least minimum number of "
                                      "values defined in 'values' field")
        elif (problem := L.known_values(key, values, min_values if isinstance(min_values, int) else None)):
            yield f"{where}.values", problem
    if operator in L.NUMERIC_OPERATORS and (len(values) != 1 or L.int64_value(values[0]) is not None):
        yield f"{where}.values", f"key {key} with operator {operator} must have a single positive integer value"


def requirements(spec: dict[str, Any], path: str, release: str, *, nodepool: bool) -> Iterator[Problem]:
    for index, item in enumerate(_items(spec.get("requirements"))):
        yield from requirement(_mapping(item), f"{path}.requirements[{index}]", release, nodepool=nodepool)


def nodepool(obj: dict[str, Any], release: str) -> Iterator[Problem]:
    """NodePool.RuntimeValidate, and the budget schedules Karpenter parses (Budget.IsActive)."""
    spec = _mapping(obj.get("spec"))
    template = _mapping(spec.get("template"))
    template_spec = _mapping(template.get("spec"))
    yield from template_labels(_mapping(_mapping(template.get("metadata")).get("labels")),
                               "spec.template.metadata.labels", release)
    yield from taints(template_spec, "spec.template.spec")
    yield from requirements(template_spec, "spec.template.spec", release, nodepool=True)
    for index, budget in enumerate(_items(_mapping(spec.get("disruption")).get("budgets"))):
        schedule = _mapping(budget).get("schedule")
        if isinstance(schedule, str) and (problem := cron.problem(schedule)):
            yield f"spec.disruption.budgets[{index}].schedule", problem


def nodeclaim(obj: dict[str, Any], release: str) -> Iterator[Problem]:
    """Nothing beyond the CRD: v1 dropped the NodeClaim webhook, Karpenter writes NodeClaims
    from a NodePool it validated (their requirements carry karpenter.sh/nodepool and the
    provider's labels, which a NodePool may not use)."""
    return iter(())


def ec2nodeclass(obj: dict[str, Any], release: str) -> Iterator[Problem]:
    """An alias whose version names no AMI release resolves no AMI (DescribeImageQuery)."""
    for index, term in enumerate(_items(_mapping(obj.get("spec")).get("amiSelectorTerms"))):
        alias = _mapping(term).get("alias")
        if isinstance(alias, str) and "@" in alias:
            version = alias.split("@", 1)[1]
            if not _ALIAS_VERSION.fullmatch(version):
                yield (f"spec.amiSelectorTerms[{index}].alias",
                       f"{alias!r}: version {version!r} names no AMI release, so Karpenter resolves no AMI and the "
                       "EC2NodeClass never becomes ready (use 'latest' or a release such as v20251117)")


def nodeoverlay(obj: dict[str, Any], release: str) -> Iterator[Problem]:
    """NodeOverlay.RuntimeValidate: its requirements follow ValidateRequirement (restricted keys
    are the CRD's CEL rules, which allow a few a NodePool may not use)."""
    spec = _mapping(obj.get("spec"))
    for index, item in enumerate(_items(spec.get("requirements"))):
        yield from requirement(_mapping(item), f"spec.requirements[{index}]", release, nodepool=False, restricted=False)


CHECKS = {"NodePool": nodepool, "NodeClaim": nodeclaim, "EC2NodeClass": ec2nodeclass, "NodeOverlay": nodeoverlay}

__all__ = ["CHECKS", "Problem"]
