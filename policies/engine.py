"""Run policies over a Stack with levels and config resolved the way the Pulumi engine does.

Config has the shape of a `--policy-pack-config` file:

    {"all": "advisory",                                   # every policy's level (optional)
     "nodepool-limits-within-ceiling": {"enforcementLevel": "mandatory", "ceilings": {"cpu": "256"}},
     "nodeclass-ami-pinned": "disabled"}

Levels: the per-environment default (policies.levels), then "all", then the policy's own entry.
Properties: the policy's per-environment defaults, overridden key by key by its entry.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import jsonschema

from . import levels as level_table
from .pack import ALL
from .model import Stack
from .registry import PolicySpec
from kubefacts.errors import Refusal


class ConfigError(Refusal, ValueError):
    """A policy configuration that names an unknown level or shape."""


@dataclass(frozen=True)
class Resolved:
    level: str
    properties: Mapping[str, Any]


@dataclass(frozen=True)
class Finding:
    policy: str
    urn: str
    level: str
    message: str
    label: str = ""

    def to_json(self) -> dict[str, str]:
        return {"policy": self.policy, "resource": self.urn, "level": self.level, "message": self.message}


def _split(entry: Any) -> tuple[str | None, dict[str, Any]]:
    if entry is None:
        return None, {}
    if isinstance(entry, str):
        return entry, {}
    if isinstance(entry, Mapping):
        properties = {k: v for k, v in entry.items() if k != "enforcementLevel"}
        return entry.get("enforcementLevel"), properties
    raise ConfigError(f"expected a level or an object, got {entry!r}")


def validate_config(config: Mapping[str, Any], policies: Iterable[PolicySpec] = ALL) -> list[str]:
    """Problems with a config document (unknown policies, bad levels, properties off-schema)."""
    by_name = {p.name: p for p in policies}
    problems: list[str] = []
    if not isinstance(config, Mapping):
        return ["config must be a JSON object keyed by policy name"]
    for key, entry in config.items():
        try:
            level, properties = _split(entry)
        except ConfigError as err:
            problems.append(f"{key}: {err}")
            continue
        if level is not None and level not in level_table.LEVEL_NAMES:
            problems.append(f"{key}: enforcementLevel {level!r} is not one of {', '.join(level_table.LEVEL_NAMES)}")
        if key == "all":
            if properties:
                problems.append("all: only enforcementLevel may be set for all policies")
            continue
        if key not in by_name:
            problems.append(f"{key}: no such policy (policies: {', '.join(sorted(by_name))})")
            continue
        schema = {"type": "object", "properties": dict(by_name[key].schema), "additionalProperties": False}
        for error in jsonschema.Draft7Validator(schema).iter_errors(properties):
            where = ".".join(str(p) for p in error.absolute_path)
            problems.append(f"{key}{'.' + where if where else ''}: {error.message}")
    return problems


def resolve(policy: PolicySpec, environment: str | None, config: Mapping[str, Any] | None = None) -> Resolved:
    config = config or {}
    level = level_table.default_level(policy.name, environment)
    all_level, _ = _split(config.get("all"))
    own_level, properties = _split(config.get(policy.name))
    level = own_level or all_level or level
    merged = dict(policy.defaults(environment))
    merged.update(properties)
    return Resolved(level, merged)


def run_policy(policy: PolicySpec, stack: Stack, properties: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(urn, message) pairs; a policy that raises is reported as its own violation (fail closed)."""
    try:
        return [(v.urn, v.message) for v in policy.run(stack, properties)]
    except Exception as err:  # noqa: BLE001 - a broken policy must not pass silently
        detail = traceback.format_exception_only(type(err), err)[-1].strip()
        return [("", f"policy {policy.name} could not run: {detail}")]


def evaluate(stack: Stack, config: Mapping[str, Any] | None = None,
             policies: Iterable[PolicySpec] = ALL) -> list[Finding]:
    labels = {r.urn: r.label for r in stack.resources}
    findings: list[Finding] = []
    for policy in policies:
        resolved = resolve(policy, stack.environment, config)
        if resolved.level == level_table.DISABLED:
            continue
        level = level_table.MANDATORY if resolved.level == level_table.REMEDIATE else resolved.level
        for urn, message in run_policy(policy, stack, resolved.properties):
            findings.append(Finding(policy.name, urn, level, message, labels.get(urn, "")))
    return findings
