"""How a policy is declared: a pure check function plus its name, rationale and config schema.

    @policy("nodepool-expire-after-set", "why...", schema={...}, defaults=lambda env: {...})
    def expire_after_set(stack: Stack, config: Mapping[str, Any]) -> Iterable[Violation]: ...

A policy set by one whole number passes `setting=IntegerSetting(key, default, description)` instead
of `schema` and `defaults`, and its check reads the value with `setting.read(config)`.

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


@dataclass(frozen=True)
class IntegerSetting:
    """A policy's one whole-number setting of at least 1 (a cap or a floor), the same in every
    environment: its config schema, its default and how the check reads it, declared once."""

    key: str
    default: int
    description: str

    @property
    def schema(self) -> dict[str, dict[str, Any]]:
        return {self.key: {"type": "integer", "minimum": 1, "description": self.description}}

    def defaults(self, environment: str | None) -> dict[str, int]:
        return {self.key: self.default}

    def read(self, config: Mapping[str, Any]) -> int:
        return int(config.get(self.key) or self.default)


_REGISTERED: list[PolicySpec] = []


def policy(name: str, description: str, *, schema: Mapping[str, Mapping[str, Any]] | None = None,
           defaults: Callable[[str | None], Mapping[str, Any]] | None = None, group: str = "",
           setting: IntegerSetting | None = None) -> Callable[[_C], _C]:
    """Register `check` as policy `name`; its config is `schema` and `defaults`, or one `setting`."""
    if setting is not None:
        schema, defaults = setting.schema, setting.defaults

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
