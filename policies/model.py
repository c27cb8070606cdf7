"""The neutral view every policy judges: resources with type, name, URN, props and options.

Both adapters build it: `policies.crossguard` from the analyzer's `PolicyResource`s (props are
the engine's view, camelCase, with unknown values during preview) and `policies.check` from an
offline render's resources.json. A value that is not known yet is the `UNKNOWN` singleton;
policies treat it (and absent values where a value is computed) as "cannot judge yet".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping


class _Unknown:
    """A value the engine does not know yet (an output of a resource still to be created)."""

    _instance: "_Unknown | None" = None

    def __new__(cls) -> "_Unknown":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "<unknown>"

    def __bool__(self) -> bool:
        # Truth-testing an unknown is always a policy bug (it would turn "not known yet" into
        # a verdict); fail loudly so tests catch it.
        raise TypeError("an unknown value has no truth value; check is_unknown() first")

    def __reduce__(self) -> tuple[type[_Unknown], tuple[()]]:
        return (_Unknown, ())


UNKNOWN = _Unknown()


def is_unknown(value: Any) -> bool:
    return value is UNKNOWN


def contains_unknown(value: Any) -> bool:
    """True when the value is, or anywhere holds, an unknown."""
    if value is UNKNOWN:
        return True
    if isinstance(value, Mapping):
        return any(contains_unknown(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(contains_unknown(v) for v in value)
    return False


def dig(value: Any, *path: Any, default: Any = None) -> Any:
    """Walk dict keys / list indexes. UNKNOWN as soon as an unknown is met; `default` when a
    step is missing or the value has the wrong shape."""
    current = value
    for step in path:
        if current is UNKNOWN:
            return UNKNOWN
        if isinstance(step, int) and isinstance(current, (list, tuple)):
            if not -len(current) <= step < len(current):
                return default
            current = current[step]
        elif isinstance(current, Mapping) and step in current:
            current = current[step]
        else:
            return default
    return current


def json_document(value: Any) -> Any:
    """An IAM/event-pattern document given as JSON text or as an object: the parsed object,
    UNKNOWN, None when absent, or raises ValueError when it is not JSON."""
    if value is None or value is UNKNOWN:
        return value
    if isinstance(value, str):
        return json.loads(value)
    if isinstance(value, Mapping):
        return value
    raise ValueError(f"expected a JSON document, got {type(value).__name__}")


def as_list(value: Any) -> list[Any]:
    """IAM allows a bare string where a list is meant (Action, Resource, ...)."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


@dataclass(frozen=True)
class Resource:
    """One resource as a policy sees it."""

    type: str
    name: str
    urn: str
    props: Mapping[str, Any]
    protect: bool | None = None
    """`protect` option; None when the adapter cannot see it."""
    retain_on_delete: bool | None = None
    """`retainOnDelete` option; None when the adapter cannot see it (the CrossGuard analyzer
    protocol does not carry it)."""
    parent: str | None = None
    property_dependencies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Per input property, URNs of the resources its value comes from (CrossGuard gives these;
    they let a policy follow an ARN that is still unknown during preview to its resource)."""

    def prop(self, *path: Any, default: Any = None) -> Any:
        return dig(self.props, *path, default=default)

    @property
    def label(self) -> str:
        """A short readable name: `<kind> <name>` (kubernetes objects by metadata.name)."""
        kind = self.type.rsplit(":", 1)[-1]
        metadata_name = dig(self.props, "metadata", "name")
        if isinstance(metadata_name, str) and metadata_name:
            return f"{kind} {metadata_name}"
        return f"{kind} {self.name}"


@dataclass(frozen=True)
class Stack:
    """Every resource of one stack, and the environment it is deployed to."""

    environment: str | None
    resources: tuple[Resource, ...] = ()

    def of_type(self, *types: str) -> list[Resource]:
        return [r for r in self.resources if r.type in types]

    def sources(self, resource: Resource, prop: str) -> list[Resource]:
        """Resources the value of `resource.props[prop]` was computed from."""
        found = (self.by_urn(urn) for urn in resource.property_dependencies.get(prop, ()))
        return [r for r in found if r is not None]

    def by_urn(self, urn: str) -> Resource | None:
        for resource in self.resources:
            if resource.urn == urn:
                return resource
        return None

    def __iter__(self) -> Iterator[Resource]:
        return iter(self.resources)


@dataclass(frozen=True)
class Violation:
    """What a policy yields: the offending resource (URN; "" for the stack) and why."""

    urn: str
    message: str


# Resource type tokens the policies read (as the Pulumi engine names them).
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
NODECLASS = "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass"
NODEOVERLAY = "kubernetes:karpenter.sh/v1alpha1:NodeOverlay"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
IAM_ROLE = "aws:iam/role:Role"
IAM_POLICY = "aws:iam/policy:Policy"
IAM_ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
IAM_ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
POD_IDENTITY = "aws:eks/podIdentityAssociation:PodIdentityAssociation"
SQS_QUEUE = "aws:sqs/queue:Queue"
SQS_QUEUE_POLICY = "aws:sqs/queuePolicy:QueuePolicy"
EVENT_RULE = "aws:cloudwatch/eventRule:EventRule"
EVENT_TARGET = "aws:cloudwatch/eventTarget:EventTarget"
EC2_TAG = "aws:ec2/tag:Tag"

__all__ = [
    "UNKNOWN", "is_unknown", "contains_unknown", "dig", "json_document", "as_list",
    "Resource", "Stack", "Violation",
]
