"""The Karpenter controller: chart, identity, settings and extra permissions."""

from __future__ import annotations

import json
import re2 as re  # Go RE2 semantics, as the API server: `$` never matches before a final "\n"
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from .. import reference
from .base import Model
from kubefacts.quantity import decimal as parse_quantity

from .kube import DnsLabel, Quantity

_SEMVER = re.compile(r"^\d+\.\d+\.\d+$")
# IAM's limit for the inline policies of one role (minified JSON; whitespace is not counted).
INLINE_ROLE_POLICY_MAX_CHARS = 10240


class FeatureGates(Model):
    """Karpenter feature gates (`settings.featureGates`); unset ones keep the chart default."""

    node_repair: bool | None = None
    """Replace nodes whose kubelet or runtime reports unhealthy."""
    node_overlay: bool | None = None
    """NodeOverlay support (needed for Odigos' k8s-virtual-device mount method; turned on for you)."""
    reserved_capacity: bool | None = None
    """Use EC2 capacity reservations."""
    spot_to_spot_consolidation: bool | None = None
    """Let consolidation replace spot nodes with cheaper spot nodes."""
    static_capacity: bool | None = None
    """Static NodePools (`replicas`)."""
    capacity_buffer: bool | None = None
    """Capacity buffers (Karpenter 1.14+)."""


class ResourceList(Model):
    cpu: Quantity | None = None
    memory: Quantity | None = None


def requests_within_limits(requests: ResourceList, limits: ResourceList) -> None:
    """The API server refuses a container whose request exceeds its limit (ValidateResourceRequirements,
    k8s.io/kubernetes pkg/apis/core/validation: "must be less than or equal to cpu limit"), halfway
    through `pulumi up`; refuse it here, naming both values."""
    for name in ("cpu", "memory"):
        request, limit = getattr(requests, name), getattr(limits, name)
        if request is not None and limit is not None and parse_quantity(request) > parse_quantity(limit):
            raise ValueError(f"requests.{name} {request} is above limits.{name} {limit}; the API server refuses a "
                             "container whose request exceeds its limit")


class Resources(Model):
    """Controller container resources; each request at most its limit (the API server's rule)."""

    requests: ResourceList = Field(default_factory=lambda: ResourceList(cpu="1", memory="1Gi"))
    limits: ResourceList = Field(default_factory=lambda: ResourceList(cpu="1", memory="1Gi"))

    @model_validator(mode="after")
    def _requests_within_limits(self) -> Resources:
        requests_within_limits(self.requests, self.limits)
        return self


class NodeRoleConfig(Model):
    """The IAM role of Karpenter's nodes."""

    existing_arn: str | None = None
    """Use this existing role instead of creating `KarpenterNodeRole-<cluster>`."""
    create_instance_profile: bool = False
    """Karpenter creates instance profiles from `EC2NodeClass.spec.role`; set only if you need your own
    (`KarpenterNodeInstanceProfile-<cluster>`, for an EC2NodeClass using `spec.instanceProfile`)."""
    create_access_entry: bool = True
    """Create the EKS access entry (type EC2_LINUX) that lets nodes with this role join. Set false only for
    an `existingArn` that already has one (EKS creates one for a managed node group's role); a second
    entry for the same role fails."""

    @field_validator("existing_arn")
    @classmethod
    def _role_arn(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^arn:aws[a-z-]*:iam::\d{12}:role/.+$", value):
            raise ValueError(f"{value!r} is not an IAM role ARN")
        return value


class KarpenterConfig(Model):
    """Karpenter itself."""

    version: str = Field(default_factory=reference.newest)
    """The Karpenter release (exact, e.g. `1.12.2`; default the newest supported). It sets the karpenter and
    karpenter-crd chart versions, the controller IAM policies, node role, interruption rules, the chart values
    accepted and the CRDs custom resources are checked against. Supported: the releases under
    `components/reference/data/` (`python -m offline.upgrade` plans a change)."""
    namespace: DnsLabel = "kube-system"
    """Namespace of the controller."""
    service_account: DnsLabel = "karpenter"
    """Service account of the controller (what the IAM role trusts)."""
    identity: Literal["podIdentity", "irsa"] = "podIdentity"
    """How the controller gets AWS credentials: EKS Pod Identity, or IRSA through the cluster's OIDC provider."""
    replicas: int = Field(default=2, ge=1, le=10)
    """Controller replicas (one leads; two or more survive a node loss)."""
    resources: Resources = Field(default_factory=Resources)
    """Controller container resources."""
    interruption_handling: bool = True
    """Create the SQS interruption queue and its EventBridge rules, and point Karpenter at it."""
    feature_gates: FeatureGates = Field(default_factory=FeatureGates)
    """Karpenter feature gates."""
    log_level: Literal["debug", "info", "error"] = "info"
    """Controller log level."""
    enable_zonal_shift: bool | None = None
    """Respect ARC zonal shifts when launching nodes (chart `settings.enableZonalShift`, Karpenter 1.12+; needs
    the cluster registered for zonal shift). Unset keeps the chart default (off)."""
    extra_iam_statements: list[dict[str, Any]] = Field(default_factory=list)
    """IAM statements added to the controller role as one extra inline policy (`KarpenterControllerExtra`),
    in IAM JSON form; at most 10,240 characters of minified JSON (IAM's inline role policy limit)."""
    permissions_boundary: str | None = None
    """ARN of a permissions boundary for the roles this stack creates (controller role, and the node
    role unless `nodeRole.existingArn` is given)."""
    node_role: NodeRoleConfig = Field(default_factory=NodeRoleConfig)
    """The nodes' IAM role."""

    @model_validator(mode="before")
    @classmethod
    def _no_chart_version(cls, data: Any) -> Any:
        # One source of truth: the release decides the charts, IAM and CRDs together.
        if isinstance(data, dict) and "chartVersion" in data:
            raise ValueError("`chartVersion` was replaced by `version` (the Karpenter release: charts, IAM and CRDs "
                             "together); rename the key")
        return data

    @field_validator("version", mode="before")
    @classmethod
    def _supported(cls, value: Any) -> Any:
        if not isinstance(value, str) or not _SEMVER.match(value):
            raise ValueError(f"{value!r} is not a pinned Karpenter version (e.g. {reference.newest()}; no ranges, no 'latest')")
        if value not in reference.supported():
            raise ValueError(f"Karpenter {value} is not supported; supported versions: {', '.join(reference.supported())}")
        return value

    @field_validator("extra_iam_statements")
    @classmethod
    def _statements(cls, statements: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for index, statement in enumerate(statements):
            missing = {"Effect", "Action", "Resource"} - statement.keys()
            if missing:
                raise ValueError(f"statement {index} lacks {', '.join(sorted(missing))}")
            if statement["Effect"] not in ("Allow", "Deny"):
                raise ValueError(f"statement {index}: Effect must be Allow or Deny")
        sids = [s["Sid"] for s in statements if "Sid" in s]
        duplicates = sorted({sid for sid in sids if sids.count(sid) > 1})
        if duplicates:
            raise ValueError(f"Sid {', '.join(map(repr, duplicates))} is used twice; IAM needs unique Sids in a policy")
        # IAM refuses the whole deployment otherwise, long after this config was accepted.
        size = len(json.dumps({"Version": "2012-10-17", "Statement": statements}, separators=(",", ":")))
        if size > INLINE_ROLE_POLICY_MAX_CHARS:
            raise ValueError(f"the statements make a {size}-character policy; IAM allows {INLINE_ROLE_POLICY_MAX_CHARS} "
                             "for a role's inline policies")
        return statements

    @field_validator("permissions_boundary")
    @classmethod
    def _boundary(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^arn:aws[a-z-]*:iam::(\d{12}|aws):policy/.+$", value):
            raise ValueError(f"{value!r} is not an IAM policy ARN")
        return value
