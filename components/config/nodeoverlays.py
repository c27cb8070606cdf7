"""A team's NodeOverlays (karpenter.sh/v1alpha1): adjust the price or add capacity of the instance
types Karpenter considers for the team's own NodePools."""

from __future__ import annotations

import re2 as re  # Go RE2 semantics, as the API server: `$` never matches before a final "\n"
from typing import Literal

from pydantic import Field, field_validator, model_validator

from .base import Model
from kubefacts.labels import restricted_label

from .kube import DnsLabel, LabelKey, LabelValue, Quantity

OverlayOperator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"]
NODEPOOL_LABEL = "karpenter.sh/nodepool"
# The NodeOverlay CRD (v1.14.1) admits fewer karpenter.k8s.aws keys than the NodePool CRD: these
# are the NodePool-only ones (reservation and placement facts are not instance-type facts).
_NOT_ON_OVERLAYS = {f"karpenter.k8s.aws/{name}" for name in (
    "instance-tenancy", "capacity-reservation-type", "capacity-reservation-id", "capacity-reservation-interruptible",
    "placement-group-id", "placement-group-partition")}
# The CRD's patterns for price and priceAdjustment.
_PRICE = re.compile(r"^\d+(\.\d+)?$")
_PRICE_ADJUSTMENT = re.compile(r"^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$")
# Resources the NodeOverlay CRD refuses in capacity (Karpenter computes them itself).
_RESTRICTED_CAPACITY = ("cpu", "memory", "ephemeral-storage", "pods")


class OverlayRequirement(Model):
    """Which instance types the overlay applies to (node selector semantics, no minValues)."""

    key: LabelKey
    """Label key, e.g. `karpenter.k8s.aws/instance-family`, `karpenter.sh/capacity-type`, or
    `karpenter.sh/nodepool` (only this team's NodePools, by rendered name)."""
    operator: OverlayOperator
    """In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte or Lte."""
    values: list[LabelValue] = Field(default_factory=list)
    """Values: at least one for In and NotIn; exactly one non-negative integer for Gt, Lt, Gte, Lte."""

    @field_validator("key")
    @classmethod
    def _key_allowed(cls, key: str) -> str:
        if key == NODEPOOL_LABEL:
            return key
        reason = restricted_label(key)
        if reason is None and key in _NOT_ON_OVERLAYS:
            reason = f'label "{key}" is not an instance-type label; NodeOverlays cannot select on it'
        if reason:
            raise ValueError(reason)
        return key

    @model_validator(mode="after")
    def _values_fit_operator(self) -> OverlayRequirement:
        op, values = self.operator, self.values
        if op in ("In", "NotIn") and not values:
            raise ValueError(f"requirements with operator {op!r} must have a value defined")
        if op in ("Gt", "Lt", "Gte", "Lte") and (len(values) != 1 or not values[0].isdigit()):
            raise ValueError(f"operator {op} takes exactly one non-negative integer value, got {values!r}")
        if op in ("Exists", "DoesNotExist") and values:
            raise ValueError(f"operator {op} takes no values, got {values!r}")
        return self


class NodeOverlay(Model):
    """One NodeOverlay of a team, rendered as `<team>-<name>`. The platform adds a
    `karpenter.sh/nodepool In [<the team's pools>]` requirement, so a team's overlay never changes
    what another team's pools cost or offer. Needs Karpenter's `nodeOverlay` feature gate, which
    the stack turns on when any team declares an overlay."""

    name: DnsLabel
    """Overlay name, unique within the team."""
    requirements: list[OverlayRequirement] = Field(default_factory=list, max_length=99)
    """Instance types the overlay applies to; all of the team's pools' types when empty."""
    price: str | None = None
    """Replace the instance types' price (dollars per hour, e.g. `"0.50"`)."""
    price_adjustment: str | None = None
    """Adjust the price: `+0.1`, `-0.05`, `+10%` or `-20%` (at most -100%)."""
    capacity: dict[str, Quantity] = Field(default_factory=dict)
    """Extended resources every matching node offers, e.g. `{smarter-devices/fuse: "1"}`; cpu,
    memory, ephemeral-storage and pods are refused (Karpenter computes them)."""
    weight: int | None = Field(default=None, ge=1, le=10000)
    """Order among overlays that match the same instance type (higher wins), 1-10000."""

    @field_validator("price", "price_adjustment", mode="before")
    @classmethod
    def _number_as_text(cls, value: object) -> object:
        # YAML reads `price: 0.5` as a float; the CRD field is a string.
        return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value

    @field_validator("price")
    @classmethod
    def _price(cls, value: str | None) -> str | None:
        if value is not None and not _PRICE.match(str(value)):
            raise ValueError(f"{value!r} is not a price (a non-negative decimal, e.g. 0.50)")
        return value

    @field_validator("price_adjustment")
    @classmethod
    def _price_adjustment(cls, value: str | None) -> str | None:
        if value is not None and not _PRICE_ADJUSTMENT.match(str(value)):
            raise ValueError(f"{value!r} is not a price adjustment (+0.1, -0.05, +10% or -20%; at most -100%)")
        return value

    @field_validator("capacity")
    @classmethod
    def _capacity(cls, value: dict[str, str]) -> dict[str, str]:
        restricted = sorted(set(value) & set(_RESTRICTED_CAPACITY))
        if restricted:
            raise ValueError(f"{', '.join(restricted)}: invalid resource restricted (Karpenter computes it)")
        return value

    @model_validator(mode="after")
    def _one_price(self) -> NodeOverlay:
        if self.price is not None and self.price_adjustment is not None:
            raise ValueError("cannot set both 'price' and 'priceAdjustment'")
        return self
