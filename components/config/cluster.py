"""The existing EKS cluster Karpenter is installed into, and what gets the discovery tag."""

from __future__ import annotations

import re2 as re  # Go RE2 semantics, as the API server: `$` never matches before a final "\n"
from typing import Any

from pydantic import Field, field_validator, model_validator

from .base import Model

_REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d$")


class StackReferenceConfig(Model):
    """Read the cluster name from another Pulumi stack's outputs (e.g. the stack that built the cluster)."""

    name: str
    """Fully qualified stack name, `<org>/<project>/<stack>`."""
    output: str = "clusterName"
    """Name of the output holding the cluster name."""


class SubnetSelection(Model):
    """Subnets Karpenter launches nodes into: by id (each tagged `karpenter.sh/discovery=<cluster>`, selected by that tag), or found by tags in the cluster's VPC (selected by the ids found)."""

    ids: list[str] = Field(default_factory=list)
    """Subnet ids, e.g. `subnet-0abc...`."""
    tags: dict[str, str] = Field(default_factory=dict)
    """Tags to find subnets by, looked up in the cluster's VPC only (`vpc-id` filter) at every
    preview and update; the EC2NodeClasses get one `id` term per subnet found (at most 30), never
    these tags, because Karpenter's own lookup has no VPC filter. Include a cluster tag, e.g.
    `{kubernetes.io/cluster/<cluster>: shared, kubernetes.io/role/internal-elb: "1"}`; no subnet
    found is an error."""

    @field_validator("ids")
    @classmethod
    def _subnet_ids(cls, ids: list[str]) -> list[str]:
        for subnet in ids:
            if not re.match(r"^subnet-[0-9a-f]{8,17}$", subnet):
                raise ValueError(f"{subnet!r} is not a subnet id (subnet-0123abcd...)")
        return ids

    @model_validator(mode="after")
    def _one_way(self) -> SubnetSelection:
        if bool(self.ids) == bool(self.tags):
            raise ValueError("give exactly one of ids or tags")
        return self


ONE_SECURITY_GROUP = (
    "exactly one security group gets karpenter.sh/discovery: give a single id (securityGroup.id: sg-...), "
    "or leave securityGroup unset to tag the cluster security group; several tagged groups break the "
    "AWS Load Balancer Controller"
)


class SecurityGroupSelection(Model):
    """The one security group that gets the discovery tag. Tagging several breaks the AWS Load
    Balancer Controller, so this is a single id, or the cluster security group."""

    id: str | None = None
    """A security group id; when unset the cluster security group EKS created is tagged."""

    @model_validator(mode="before")
    @classmethod
    def _not_several(cls, data: Any) -> Any:
        # A list here, or an `ids` key, is someone trying to tag several groups: say why not,
        # rather than pydantic's "Input should be a valid dictionary".
        if isinstance(data, (list, tuple)) or (isinstance(data, dict) and {"ids", "securityGroupIds"} & data.keys()):
            raise ValueError(ONE_SECURITY_GROUP)
        return data

    @field_validator("id", mode="before")
    @classmethod
    def _single_id(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            raise ValueError(ONE_SECURITY_GROUP)
        return value

    @field_validator("id")
    @classmethod
    def _sg_id(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^sg-[0-9a-f]{8,17}$", value):
            raise ValueError(f"{value!r} is not a security group id (sg-0123abcd...)")
        return value


class ClusterConfig(Model):
    """The existing EKS cluster."""

    name: str | None = Field(default=None, min_length=1, max_length=100)
    """EKS cluster name. Give this or `stackReference`."""
    stack_reference: StackReferenceConfig | None = None
    """Take the cluster name from another stack's outputs instead of `name`."""
    region: str
    """AWS region of the cluster, e.g. `us-east-1`."""
    zones: list[str] = Field(default_factory=list)
    """Availability zones NodePools may use (the multi-zone preset); defaults to `<region>a,b,c`. Give
    your subnets' zones: a NodePool whose zone requirements admit none of them is refused (it would
    never get a node)."""
    subnets: SubnetSelection
    """Subnets Karpenter launches nodes into."""
    security_group: SecurityGroupSelection = Field(default_factory=SecurityGroupSelection)
    """The single security group for Karpenter's nodes."""

    @model_validator(mode="before")
    @classmethod
    def _no_group_list(cls, data: Any) -> Any:
        if isinstance(data, dict) and {"securityGroups", "securityGroupIds", "security_groups"} & data.keys():
            raise ValueError(f"securityGroups is not a key: {ONE_SECURITY_GROUP}")
        return data

    @field_validator("region")
    @classmethod
    def _region(cls, value: str) -> str:
        if not _REGION.match(value):
            raise ValueError(f"{value!r} is not an AWS region (e.g. us-east-1)")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> ClusterConfig:
        if (self.name is None) == (self.stack_reference is None):
            raise ValueError("give exactly one of name or stackReference")
        return self

    @property
    def availability_zones(self) -> list[str]:
        return self.zones or [f"{self.region}{suffix}" for suffix in "abc"]
