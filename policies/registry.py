"""How a policy is declared: a pure check function plus its name, rationale and config schema.

    @policy("nodepool-expire-after-set", "why...", schema={...}, defaults=lambda env: {...})
    def expire_after_set(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]: ...

The decorator only records the policy; `policies.pack.ALL` imports every module and lists
them in a stable order. Levels per environment live in `policies.levels`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, TypeVar

from .model import Stack, Violation

Check = Callable[[Stack, Mapping[str, Any]], Iterable[Violation]]
_C = TypeVar("_C", bound=Check)


@dataclass(frozen=True)
class PolicySpec:
    name: str
    description: str
    """One or two sentences: what is required and why (shown by `pulumi preview` and the check)."""
    check: Check
    schema: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """JSON-schema `properties` of the policy's config (besides `enforcementLevel`)."""
    defaults: Callable[[str | None], Mapping[str, Any]] = lambda environment: {}
    """Config property defaults for an environment (None: environment not known)."""
    group: str = ""

    def run(self, stack: Stack, config: Mapping[str, Any]) -> list[Violation]:
        return list(self.check(stack, config))


_REGISTERED: list[PolicySpec] = []


def policy(name: str, description: str, *, schema: Mapping[str, Mapping[str, Any]] | None = None,
           defaults: Callable[[str | None], Mapping[str, Any]] | None = None, group: str = "") -> Callable[[_C], _C]:
    def register(check: _C) -> _C:
        if any(p.name == name for p in _REGISTERED):
            raise ValueError(f"policy {name!r} declared twice")
        _REGISTERED.append(PolicySpec(name, " ".join(description.split()), check, dict(schema or {}),
                                      defaults or (lambda environment: {}), group))
        check.policy_name = name  # type: ignore[attr-defined]
        return check
    return register


def registered() -> list[PolicySpec]:
    return list(_REGISTERED)
