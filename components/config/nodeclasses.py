"""EC2NodeClass settings (karpenter.k8s.aws/v1), defined once per stack and shared by teams."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from .base import Model
from .kube import Quantity, check_quantity

_ALIAS = re.compile(r"^(al2023|bottlerocket|windows2019|windows2022|windows2025)@(latest|v?[0-9][0-9.]*)$")
# The EC2NodeClass CRD's volumeSize pattern: 1Gi-59000Gi, 1G-64000G, 1Ti-58Ti or 1T-64T.
_VOLUME_SIZE = re.compile(r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}"
                          r"|[6][0-3][0-9]{3}|64000)G|([1-9]|[1-5][0-7]|58)Ti|([1-9]|[1-5][0-9]|6[0-3]|64)T)$")
# Tags Karpenter sets itself; the EC2NodeClass CRD refuses them in spec.tags.
_RESERVED_TAGS = ("eks:eks-cluster-name", "karpenter.sh/nodepool", "karpenter.sh/nodeclaim", "karpenter.k8s.aws/ec2nodeclass")
_RESERVED_KEYS = ("cpu", "memory", "ephemeral-storage", "pid")
_EVICTION_SIGNALS = ("memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available",
                     "imagefs.inodesFree", "pid.available")


def _eviction_threshold(value: str) -> bool:
    """A kubelet eviction threshold: a non-negative quantity or a percentage up to 100%."""
    if isinstance(value, str) and value.endswith("%"):
        try:
            return 0 <= float(value[:-1]) <= 100 and value[:-1].replace(".", "", 1).isdigit()
        except ValueError:
            return False
    try:
        check_quantity(value)
    except ValueError:
        return False
    return True


class RootVolume(Model):
    """The node's root EBS volume."""

    size: str = "50Gi"
    """Volume size in Gi, G, Ti or T, e.g. `50Gi` (the EC2NodeClass accepts only these units)."""
    type: Literal["gp3", "gp2", "io1", "io2"] = "gp3"
    """EBS volume type."""
    encrypted: bool = True
    """Encrypt the volume (with `kmsKeyId`, or the account's default EBS key)."""
    kms_key_id: str | None = None
    """KMS key ARN for encryption; the account default when unset."""
    iops: int | None = Field(default=None, ge=3000, le=64000)
    """Provisioned IOPS (gp3/io1/io2)."""
    throughput: int | None = Field(default=None, ge=125, le=1000)
    """Throughput in MiB/s (gp3)."""
    device_name: str = "/dev/xvda"
    """Root device name of the AMI family (al2023: /dev/xvda)."""

    @field_validator("size")
    @classmethod
    def _size(cls, value: str) -> str:
        if not _VOLUME_SIZE.fullmatch(str(value)):
            raise ValueError(f"{value!r} is not an EBS volume size the EC2NodeClass accepts (1Gi-59000Gi, 1G-64000G, 1Ti-58Ti, 1T-64T)")
        return str(value)

    @model_validator(mode="after")
    def _ec2_accepts(self) -> RootVolume:
        # Combinations EC2 RunInstances refuses (the node would never launch).
        problem = ("iops cannot be set on gp2 (its IOPS follow the size)" if self.iops is not None and self.type == "gp2"
                   else f"throughput can only be set on gp3, not {self.type}" if self.throughput is not None and self.type != "gp3"
                   else f"{self.type} needs iops (provisioned IOPS volume)" if self.type in ("io1", "io2") and self.iops is None
                   else "kmsKeyId needs encrypted: true" if self.kms_key_id and not self.encrypted
                   else None)
        if problem:
            raise ValueError(problem)
        return self


class MetadataOptions(Model):
    """Instance metadata service settings. IMDSv2 with hop limit 1 keeps pods from borrowing the node role."""

    http_endpoint: Literal["enabled", "disabled"] = "enabled"
    """The instance metadata service itself; Karpenter-launched nodes need it enabled."""
    # Spelt as the EC2NodeClass field (the camelCase generator would write httpProtocolIpv6).
    http_protocol_ipv6: Literal["enabled", "disabled"] = Field(default="disabled", alias="httpProtocolIPv6")
    """The IMDS IPv6 endpoint (for IPv6-only subnets)."""
    http_put_response_hop_limit: int = Field(default=1, ge=1, le=64)
    """1 blocks pods (one network hop away) from the node's credentials."""
    http_tokens: Literal["required", "optional"] = "required"
    """`required` is IMDSv2 only."""


class Kubelet(Model):
    """Kubelet settings (in karpenter.sh/v1 they live on the EC2NodeClass, not the NodePool)."""

    max_pods: int | None = Field(default=None, ge=1, le=737)
    """Override the ENI-limited max pods."""
    system_reserved: dict[str, Quantity] | None = None
    kube_reserved: dict[str, Quantity] | None = None
    eviction_hard: dict[str, str] | None = None

    @field_validator("system_reserved", "kube_reserved")
    @classmethod
    def _reserved_keys(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        unknown = sorted(set(value or {}) - set(_RESERVED_KEYS))
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: valid keys are {', '.join(_RESERVED_KEYS)}")
        return value

    @field_validator("eviction_hard")
    @classmethod
    def _eviction_keys(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        unknown = sorted(set(value or {}) - set(_EVICTION_SIGNALS))
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: valid signals are {', '.join(_EVICTION_SIGNALS)}")
        return value

    @field_validator("eviction_hard")
    @classmethod
    def _eviction_values(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for signal, threshold in (value or {}).items():
            if not _eviction_threshold(threshold):
                raise ValueError(f"{signal}: {threshold!r} is not a threshold kubelet accepts (a quantity such as 100Mi, "
                                 "or a percentage such as 10%)")
        return value


class NodeClass(Model):
    """One EC2NodeClass; its name is the key in `nodeClasses`."""

    ami_alias: str = "al2023@v20251117"
    """AMI alias, pinned (`al2023@v20251117`). `@latest` only with `allowLatestAmi` (flagged)."""
    allow_latest_ami: bool = False
    """Permit `@latest`: nodes then change AMI without a config change."""
    root_volume: RootVolume = Field(default_factory=RootVolume)
    """Root EBS volume."""
    metadata_options: MetadataOptions = Field(default_factory=MetadataOptions)
    """IMDS settings."""
    kubelet: Kubelet | None = None
    """Kubelet overrides."""
    tags: dict[str, str] = Field(default_factory=dict)
    """Tags put on instances, volumes and launch templates."""
    detailed_monitoring: bool = False
    """EC2 detailed monitoring."""

    @field_validator("ami_alias")
    @classmethod
    def _alias(cls, value: str) -> str:
        if not _ALIAS.fullmatch(value):
            raise ValueError(f"{value!r} is not an AMI alias (family@version, e.g. al2023@v20251117)")
        return value

    @field_validator("tags")
    @classmethod
    def _tags_not_reserved(cls, tags: dict[str, str]) -> dict[str, str]:
        for key in tags:
            if not key or key in _RESERVED_TAGS or key.startswith("kubernetes.io/cluster"):
                raise ValueError(f"tag {key!r} is reserved (Karpenter and EKS set it) and refused by the EC2NodeClass")
        return tags

    @field_validator("tags")
    @classmethod
    def _tags_ec2_accepts(cls, tags: dict[str, str]) -> dict[str, str]:
        for key, value in tags.items():
            if key.lower().startswith("aws:"):
                raise ValueError(f"tag {key!r}: the aws: prefix is reserved by AWS and refused by EC2")
            if len(key) > 128 or len(value) > 256:
                raise ValueError(f"tag {key[:40]!r}: EC2 allows keys of at most 128 and values of at most 256 characters")
        return tags

    @field_validator("ami_alias")
    @classmethod
    def _al2023_version_has_v(cls, value: str) -> str:
        # AL2023's SSM parameter names carry the `v` (amazon-eks-node-al2023-...-v20251117); without
        # it no parameter and no AMI exist (provider pkg/providers/amifamily/al2023.go).
        family, _, version = value.partition("@")
        if family == "al2023" and version != "latest" and not version.startswith("v"):
            raise ValueError(f"{value!r}: AL2023 versions start with 'v' (e.g. al2023@v20251117)")
        return value

    @model_validator(mode="after")
    def _windows_only_latest(self) -> NodeClass:
        if self.ami_family.startswith("windows") and not self.ami_alias.endswith("@latest"):
            raise ValueError(f"{self.ami_alias!r}: Windows AMI families only accept the version 'latest'")
        return self

    @model_validator(mode="after")
    def _latest_needs_opt_in(self) -> NodeClass:
        if self.ami_alias.endswith("@latest") and not self.allow_latest_ami:
            raise ValueError(
                f"amiAlias {self.ami_alias!r} floats to new AMIs on every release; pin a version or set allowLatestAmi: true"
            )
        return self

    @property
    def ami_family(self) -> str:
        return self.ami_alias.split("@", 1)[0]
