"""Adapter from the CrossGuard analyzer to the pure policies.

The analyzer hands each StackValidationPolicy a `StackValidationArgs` whose `resources` are
`PolicyResource`s: props wrapped in pulumi_policy's unknown-checking proxies (reading an unknown
raises). We unwrap them into plain values with `model.UNKNOWN` in place of unknowns, so a
policy can say "not known yet" instead of the whole policy being skipped or failing.

The environment (for default levels and ceilings) comes from the environment variables the
Pulumi CLI gives a policy pack process: `PULUMI_CONFIG` (the stack's config, whose
`karpenter-platform:environment` wins) and `PULUMI_STACK`.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Mapping

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import _DictProxy, _ListProxy, _is_unknown
from pulumi_policy.secret import Secret

from .pack import ALL
from .engine import resolve, run_policy
from .model import UNKNOWN, Resource, Stack
from .registry import PolicySpec

PACK_NAME = "karpenter-platform"
ENVIRONMENT_KEY = "karpenter-platform:environment"
DESCRIPTION = "Guardrails for Karpenter stacks: NodePools, EC2NodeClasses, IAM, interruption, discovery, Helm."


def environment_from_env(environ: Mapping[str, str] | None = None) -> str | None:
    """The environment the stack deploys to, as the CLI tells a policy pack process."""
    environ = os.environ if environ is None else environ
    try:
        config = json.loads(environ.get("PULUMI_CONFIG") or "{}")
    except json.JSONDecodeError:
        config = {}
    value = config.get(ENVIRONMENT_KEY) if isinstance(config, dict) else None
    if isinstance(value, str) and value:
        return value
    stack = environ.get("PULUMI_STACK") or ""
    return stack.rsplit("/", 1)[-1] or None


def plain(value: Any) -> Any:
    """Props as plain dicts/lists, unknowns as UNKNOWN, secrets as their value."""
    kind = type(value)
    if kind is str:
        return UNKNOWN if _is_unknown(value) else value
    if kind is _DictProxy:
        raw = value["__target"]
        return {key: plain(raw[key]) for key in raw}
    if kind is _ListProxy:
        return [plain(item) for item in value["__target"]]
    if kind is dict:
        return {key: plain(item) for key, item in value.items()}
    if kind is list or kind is tuple:
        return [plain(item) for item in value]
    if isinstance(value, Secret):
        return plain(value.value)
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    return value


def resource_from_policy(resource: Any) -> Resource:
    """A `PolicyResource` (stack validation) as a policy Resource."""
    opts = getattr(resource, "opts", None)
    return Resource(
        type=resource.resource_type,
        name=resource.name,
        urn=resource.urn,
        props=plain(resource.props) if resource.props is not None else {},
        protect=getattr(opts, "protect", None),
        retain_on_delete=None,  # not part of the analyzer protocol
        parent=getattr(opts, "parent", None),
        property_dependencies={key: tuple(dep.urn for dep in deps)
                               for key, deps in (getattr(resource, "property_dependencies", None) or {}).items()},
    )


def stack_from_args(args: StackValidationArgs, environment: str | None) -> Stack:
    return Stack(environment, tuple(resource_from_policy(r) for r in args.resources))


def _validate(spec: PolicySpec, environment: str | None) -> Callable[[StackValidationArgs, ReportViolation], None]:
    def validate(args: StackValidationArgs, report_violation: ReportViolation) -> None:
        properties = dict(resolve(spec, environment).properties)
        properties.update(dict(args.get_config() or {}))
        properties.pop("enforcementLevel", None)
        for urn, message in run_policy(spec, stack_from_args(args, environment), properties):
            report_violation(message, urn or None)
    return validate


def build_policy(spec: PolicySpec, environment: str | None) -> StackValidationPolicy:
    level = resolve(spec, environment).level
    return StackValidationPolicy(
        name=spec.name,
        description=spec.description,
        validate=_validate(spec, environment),
        enforcement_level=EnforcementLevel(level),
        config_schema=PolicyConfigSchema(properties={k: dict(v) for k, v in spec.schema.items()}) if spec.schema else None,
    )


def build_policies(environment: str | None) -> list[StackValidationPolicy]:
    return [build_policy(spec, environment) for spec in ALL]
