"""Karpenter's label requirements against node labels (pkg/scheduling/requirement.go, requirements.go).

Only what drift needs: a requirement as Karpenter represents it (complement + values, integer
bounds), same-key intersection, `Compatible` of a node's labels, and whether new requirements
admit every node the old ones could have launched (a widening).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from ..labels import NORMALIZED_LABELS

# Labels every Karpenter node carries (set from the NodePool and the launched instance type), so
# a requirement on them never meets a node without the label.
ALWAYS_LABELLED = frozenset({"karpenter.sh/nodepool", "karpenter.sh/capacity-type", "kubernetes.io/arch",
                             "kubernetes.io/os", "node.kubernetes.io/instance-type", "topology.kubernetes.io/zone",
                             "topology.kubernetes.io/region", "karpenter.k8s.aws/instance-category",
                             "karpenter.k8s.aws/instance-family", "karpenter.k8s.aws/instance-generation",
                             "karpenter.k8s.aws/instance-size", "karpenter.k8s.aws/instance-cpu",
                             "karpenter.k8s.aws/instance-memory"})


@dataclass(frozen=True)
class Requirement:
    """Karpenter's set representation: complement + values, integer bounds (Gt/Lt made inclusive)."""
    complement: bool
    values: frozenset
    gte: int | None = None
    lte: int | None = None

    @staticmethod
    def of(operator: str, values: Sequence[str]) -> "Requirement":
        if operator == "In":
            return Requirement(False, frozenset(values))
        if operator == "NotIn":
            return Requirement(True, frozenset(values))
        if operator == "Exists":
            return Requirement(True, frozenset())
        if operator == "DoesNotExist":
            return Requirement(False, frozenset())
        number = int(values[0])
        if operator == "Gt":
            return Requirement(True, frozenset(), gte=number + 1)
        if operator == "Lt":
            return Requirement(True, frozenset(), lte=number - 1)
        if operator == "Gte":
            return Requirement(True, frozenset(), gte=number)
        return Requirement(True, frozenset(), lte=number)

    @property
    def operator(self) -> str:
        if self.complement:
            return "NotIn" if self.values else "Exists"  # bounds alone read as Exists
        return "In" if self.values else "DoesNotExist"

    def has(self, value: str) -> bool:
        inside = value not in self.values if self.complement else value in self.values
        return inside and _within(value, self.gte, self.lte)

    def intersection(self, other: "Requirement") -> "Requirement":
        gte = max((b for b in (self.gte, other.gte) if b is not None), default=None)
        lte = min((b for b in (self.lte, other.lte) if b is not None), default=None)
        if gte is not None and lte is not None and gte > lte:
            return Requirement(False, frozenset())
        if self.complement and other.complement:
            values = self.values | other.values
        elif self.complement:
            values = other.values - self.values
        elif other.complement:
            values = self.values - other.values
        else:
            values = self.values & other.values
        values = frozenset(v for v in values if _within(v, gte, lte))
        complement = self.complement and other.complement
        return Requirement(complement, values, gte if complement else None, lte if complement else None)


def _within(value: str, gte: int | None, lte: int | None) -> bool:
    if gte is None and lte is None:
        return True
    try:
        number = int(value)
    except ValueError:
        return False
    return (gte is None or number >= gte) and (lte is None or number <= lte)


def requirement_set(requirements: Iterable[tuple[str, str, Sequence[str]]]) -> dict[str, Requirement]:
    """Requirements by (normalized) key, same-key requirements intersected (Requirements.Add)."""
    result: dict[str, Requirement] = {}
    for key, operator, values in requirements:
        key = NORMALIZED_LABELS.get(key, key)
        requirement = Requirement.of(operator, values)
        result[key] = requirement.intersection(result[key]) if key in result else requirement
    return result


def labels_compatible(labels: Mapping[str, str], requirements: Mapping[str, Requirement]) -> bool:
    """`NewLabelRequirements(labels).Compatible(requirements)` (pkg/scheduling/requirements.go):
    a key the labels lack is fine only under NotIn/DoesNotExist; a present key must intersect."""
    node = requirement_set((k, "In", [v]) for k, v in labels.items())
    for key, incoming in requirements.items():
        if key not in node:
            if incoming.operator not in ("NotIn", "DoesNotExist"):
                return False
            continue
        existing = node[key]
        if not _has_intersection(existing, incoming):
            if incoming.operator in ("NotIn", "DoesNotExist") and existing.operator in ("NotIn", "DoesNotExist"):
                continue
            return False
    return True


def _has_intersection(a: Requirement, b: Requirement) -> bool:
    merged = a.intersection(b)
    return merged.complement or bool(merged.values)


def requirements_admit_all(old: Mapping[str, Requirement], new: Mapping[str, Requirement],
                           template_labels: Mapping[str, str]) -> bool:
    """True when every node the old requirements could launch (labels compatible with `old`, and
    carrying the template labels) is compatible with `new`: a widening, which does not drift."""
    for key, req in new.items():
        fixed = template_labels.get(key)
        if fixed is not None:
            if not req.has(fixed):
                return False
            continue
        prior = old.get(key)
        absent_possible = key not in ALWAYS_LABELLED and (prior is None or prior.operator in ("NotIn", "DoesNotExist"))
        if absent_possible and req.operator not in ("NotIn", "DoesNotExist"):
            return False
        if prior is None:
            prior = Requirement(True, frozenset())
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

