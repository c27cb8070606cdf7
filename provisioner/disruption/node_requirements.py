"""Requirement drift's set logic, over the scheduling core's requirement algebra
(provisioner.scheduling.requirements, Karpenter's pkg/scheduling/requirement.go and requirements.go).

What drift adds to it: `Compatible` of a node's labels, and whether new requirements admit every
node the old ones could have launched (a widening, which does not drift).
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from ..scheduling.requirements import Requirement, Requirements

# Labels every Karpenter node carries (set from the NodePool and the launched instance type), so
# a requirement on them never meets a node without the label.
ALWAYS_LABELLED = frozenset({"karpenter.sh/nodepool", "karpenter.sh/capacity-type", "kubernetes.io/arch",
                             "kubernetes.io/os", "node.kubernetes.io/instance-type", "topology.kubernetes.io/zone",
                             "topology.kubernetes.io/region", "karpenter.k8s.aws/instance-category",
                             "karpenter.k8s.aws/instance-family", "karpenter.k8s.aws/instance-generation",
                             "karpenter.k8s.aws/instance-size", "karpenter.k8s.aws/instance-cpu",
                             "karpenter.k8s.aws/instance-memory"})
_NEGATIVE = ("NotIn", "DoesNotExist")

__all__ = ["ALWAYS_LABELLED", "Requirement", "Requirements", "labels_compatible", "requirement_set",
           "requirements_admit_all"]


def requirement_set(requirements: Iterable[tuple[str, str, Sequence[str]]]) -> Requirements:
    """Requirements by (normalized) key, same-key requirements intersected (Requirements.Add)."""
    return Requirements(Requirement.of(key, operator, values) for key, operator, values in requirements)


def labels_compatible(labels: Mapping[str, str], requirements: Requirements) -> bool:
    """`NewLabelRequirements(labels).Compatible(requirements)` (pkg/scheduling/requirements.go):
    a key the labels lack is fine only under NotIn/DoesNotExist; a present key must intersect."""
    return Requirements.from_labels(dict(labels)).is_compatible(requirements)


def requirements_admit_all(old: Requirements, new: Requirements, template_labels: Mapping[str, str]) -> bool:
    """True when every node the old requirements could launch (labels compatible with `old`, and
    carrying the template labels) is compatible with `new`: a widening, which does not drift."""
    for req in new.values():
        key = req.key
        fixed = template_labels.get(key)
        if fixed is not None:
            if not req.has(fixed):
                return False
            continue
        prior = old.raw(key)
        absent_possible = key not in ALWAYS_LABELLED and (prior is None or prior.operator() in _NEGATIVE)
        if absent_possible and req.operator() not in _NEGATIVE:
            return False
        if prior is None:
            prior = Requirement(key, True)
        if not prior.complement:
            if any(prior.has(v) and not req.has(v) for v in prior.values):
                return False
            continue
        if prior.gte is not None and prior.lte is not None and prior.lte - prior.gte <= 1024:
            if any(prior.has(str(v)) and not req.has(str(v)) for v in range(prior.gte, prior.lte + 1)):
                return False
            continue
        if not req.complement:
            return False  # infinitely many old values, finitely many new ones
        if any(prior.has(v) for v in req.values):
            return False
        if req.gte is not None and (prior.gte is None or prior.gte < req.gte):
            return False
        if req.lte is not None and (prior.lte is None or prior.lte > req.lte):
            return False
    return True
