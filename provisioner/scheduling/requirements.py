"""Node selector requirements as sets, with Karpenter's intersection rules.

Mirrors sigs.k8s.io/karpenter pkg/scheduling/requirement(s).go: a requirement is a (possibly
complemented) value set with optional integer bounds; Gt/Lt become inclusive bounds.
"""
from __future__ import annotations

from collections.abc import Collection, KeysView, ValuesView
from typing import Iterable

from kubefacts import labels as L
from kubefacts.labels import DOES_NOT_EXIST, EXISTS, GT, GTE, IN, LT, NODEPOOL_OPERATORS, NOT_IN

_MAX_INT = 2**63 - 1
_Key = tuple[str, bool, frozenset[str], "int | None", "int | None", "int | None"]  # Requirement._key
_NEGATIVE_OPS = (NOT_IN, DOES_NOT_EXIST)


def _within(value: str, gte: int | None, lte: int | None) -> bool:
    if gte is None and lte is None:
        return True
    try:
        number = int(value)
    except ValueError:
        return False  # bounds only admit integers
    return (gte is None or number >= gte) and (lte is None or number <= lte)


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def _min(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else min(a, b)


class Requirement:
    __slots__ = ("key", "complement", "values", "gte", "lte", "min_values", "_hash", "_text")
    _hash: int | None
    _text: str | None

    def __init__(self, key: str, complement: bool, values: frozenset[str] = frozenset(),
                 gte: int | None = None, lte: int | None = None, min_values: int | None = None) -> None:
        self.key = key
        self.complement = complement
        self.values = values
        self.gte = gte
        self.lte = lte
        self.min_values = min_values
        self._hash = None
        self._text = None

    @classmethod
    def of(cls, key: str, operator: str, values: Iterable[str] = (), min_values: int | None = None,
           operators: Collection[str] = NODEPOOL_OPERATORS) -> "Requirement":
        """Build from a NodeSelectorRequirement; raises ValueError on an unknown operator."""
        key = L.NORMALIZED_LABELS.get(key, key)
        values = [str(v) for v in (values or ())]
        if operator not in operators:
            raise ValueError(f"unknown operator {operator!r} (expected one of {', '.join(sorted(operators))})")
        if operator == IN:
            return cls(key, False, frozenset(values), min_values=min_values)
        if operator == NOT_IN:
            return cls(key, True, frozenset(values), min_values=min_values)
        if operator == EXISTS:
            return cls(key, True, min_values=min_values)
        if operator == DOES_NOT_EXIST:
            return cls(key, False, min_values=min_values)
        if len(values) != 1:
            raise ValueError(f"operator {operator} needs exactly one integer value, got {values}")
        try:
            bound = int(values[0])
        except ValueError:
            raise ValueError(f"operator {operator} needs an integer value, got {values[0]!r}") from None
        if operator == GT:
            if bound >= _MAX_INT:
                return cls(key, False, min_values=min_values)  # Gt MaxInt matches nothing
            return cls(key, True, gte=bound + 1, min_values=min_values)
        if operator == LT:
            return cls(key, True, lte=bound - 1, min_values=min_values)
        if operator == GTE:
            return cls(key, True, gte=bound, min_values=min_values)
        return cls(key, True, lte=bound, min_values=min_values)

    @classmethod
    def exists(cls, key: str) -> "Requirement":
        return cls(key, True)

    @classmethod
    def in_(cls, key: str, *values: str) -> "Requirement":
        return cls(key, False, frozenset(values))

    def operator(self) -> str:
        if self.complement:
            return NOT_IN if self.values else EXISTS
        return IN if self.values else DOES_NOT_EXIST

    def __len__(self) -> int:
        return _MAX_INT - len(self.values) if self.complement else len(self.values)

    def has(self, value: str) -> bool:
        if self.complement:
            return value not in self.values and _within(value, self.gte, self.lte)
        return value in self.values and _within(value, self.gte, self.lte)

    def any(self) -> str:
        """One allowed value (deterministic: the smallest), or "" when none or unbounded."""
        if not self.complement and self.values:
            return min(self.values)
        return ""

    def intersection(self, other: "Requirement") -> "Requirement":
        complement = self.complement and other.complement
        gte, lte = _max(self.gte, other.gte), _min(self.lte, other.lte)
        min_values = _max(self.min_values, other.min_values)
        if gte is not None and lte is not None and gte > lte:
            return Requirement(self.key, False, min_values=min_values)
        if self.complement and other.complement:
            values = self.values | other.values
        elif self.complement:
            values = other.values - self.values
        elif other.complement:
            values = self.values - other.values
        else:
            values = self.values & other.values
        if gte is not None or lte is not None:
            values = frozenset(v for v in values if _within(v, gte, lte))
        if not complement:
            gte = lte = None  # a concrete set already honours the bounds
        return Requirement(self.key, complement, values, gte, lte, min_values)

    def has_intersection(self, other: "Requirement") -> bool:
        gte, lte = _max(self.gte, other.gte), _min(self.lte, other.lte)
        if gte is not None and lte is not None and gte > lte:
            return False
        if self.complement and other.complement:
            return True
        if self.complement:
            return any(v not in self.values and _within(v, gte, lte) for v in other.values)
        if other.complement:
            return any(v not in other.values and _within(v, gte, lte) for v in self.values)
        if gte is None and lte is None:
            return not self.values.isdisjoint(other.values)
        return any(v in other.values and _within(v, gte, lte) for v in self.values)

    def _key(self) -> tuple[str, bool, frozenset[str], int | None, int | None, int | None]:
        return (self.key, self.complement, self.values, self.gte, self.lte, self.min_values)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Requirement) and self._key() == other._key()

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(self._key())
        return self._hash

    def __repr__(self) -> str:
        # Cached: incompatibility reasons format requirements eagerly, once per NodePool and pod shape.
        if self._text is None:
            self._text = self._format()
        return self._text

    def _format(self) -> str:
        op = self.operator()
        if op in (EXISTS, DOES_NOT_EXIST):
            text = f"{self.key} {op}"
        else:
            values = sorted(self.values)
            if len(values) > 5:
                values = values[:5] + [f"and {len(values) - 5} others"]
            text = f"{self.key} {op} [{' '.join(values)}]"
        if self.gte is not None:
            text += f" >={self.gte}"
        if self.lte is not None:
            text += f" <={self.lte}"
        if self.min_values is not None:
            text += f" minValues {self.min_values}"
        return text


def _suffix(key: str) -> str:
    return key.split("/", 1)[1] if "/" in key else key


class Requirements:
    """A conjunction of requirements keyed by label (pkg/scheduling/requirements.go)."""
    __slots__ = ("_reqs",)

    def __init__(self, requirements: Iterable[Requirement] = ()):
        self._reqs: dict[str, Requirement] = {}
        self.add(*requirements)

    @classmethod
    def from_labels(cls, labels: dict[str, str]) -> "Requirements":
        return cls(Requirement.of(k, IN, [v]) for k, v in labels.items())

    def add(self, *requirements: Requirement) -> None:
        reqs = self._reqs
        for requirement in requirements:
            existing = reqs.get(requirement.key)
            reqs[requirement.key] = requirement if existing is None else requirement.intersection(existing)

    def copy(self) -> "Requirements":
        clone = Requirements()
        clone._reqs = dict(self._reqs)
        return clone

    def merged(self, other: "Requirements") -> "Requirements":
        clone = self.copy()
        clone.add(*other._reqs.values())
        return clone

    def canonical(self) -> tuple[tuple[str, _Key], ...]:
        """Its content as a hashable value, key by key (equal requirements, equal values)."""
        return tuple((key, req._key()) for key, req in sorted(self._reqs.items(), key=lambda item: item[0]))

    def get(self, key: str) -> Requirement:
        found = self._reqs.get(key)
        return found if found is not None else Requirement(key, True)

    def has(self, key: str) -> bool:
        return key in self._reqs

    def raw(self, key: str) -> Requirement | None:
        """The requirement on `key` as given, or None when there is none (`get` answers Exists)."""
        return self._reqs.get(key)

    def keys(self) -> KeysView[str]:
        return self._reqs.keys()

    def values(self) -> ValuesView[Requirement]:
        return self._reqs.values()

    def __len__(self) -> int:
        return len(self._reqs)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Requirements) and self._reqs == other._reqs
    # No __hash__: defining __eq__ alone leaves the class unhashable, as upstream's mutable Requirements.

    def without(self, *keys: str) -> "Requirements":
        clone = Requirements()
        clone._reqs = {k: v for k, v in self._reqs.items() if k not in keys}
        return clone

    def compatible(self, incoming: "Requirements", allow_undefined: Collection[str] = frozenset()) -> str | None:
        """None if `incoming` can be met here, else why not.

        Custom labels must be defined here unless `incoming` only excludes them; labels in
        `allow_undefined` (well-known ones, for NodeClaims) may be absent.
        """
        reqs = self._reqs
        for key, requirement in incoming._reqs.items():
            if key in allow_undefined or key in reqs or requirement.operator() in _NEGATIVE_OPS:
                continue
            return f'label "{key}" does not have known values{self._hint(key, allow_undefined)}'
        return self.intersects(incoming)

    def is_compatible(self, incoming: "Requirements", allow_undefined: Collection[str] = frozenset()) -> bool:
        return self.compatible(incoming, allow_undefined) is None

    def intersects(self, incoming: "Requirements") -> str | None:
        """None if every shared key overlaps, else the first conflict (undefined keys are fine)."""
        mine, theirs = self._reqs, incoming._reqs
        small, large = (mine, theirs) if len(mine) <= len(theirs) else (theirs, mine)
        for key in small:
            if key not in large:
                continue
            existing, other = mine[key], theirs[key]
            if existing.has_intersection(other):
                continue
            if other.operator() in _NEGATIVE_OPS and existing.operator() in _NEGATIVE_OPS:
                continue
            return f"key {key}, {other!r} not in {existing!r}"
        return None

    def _hint(self, key: str, allow_undefined: Collection[str]) -> str:
        suffix = _suffix(key)
        for known in sorted(allow_undefined) + sorted(self._reqs):
            if key in known or known.endswith(suffix):
                return f' (typo of "{known}"?)'
        return ""

    def __repr__(self) -> str:
        return ", ".join(sorted(repr(r) for k, r in self._reqs.items() if k not in L.RESTRICTED_LABELS))
