"""The EC2 parts of an EC2NodeClass (karpenter.k8s.aws/v1) as the CRD spells them: selector terms,
block devices, network interfaces, placement and CPU options, with the CRD's patterns and CEL rules."""

from __future__ import annotations

import re2 as re  # Go RE2 semantics, as the API server: `$` never matches before a final "\n"
from typing import Annotated, Callable, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator

from .base import Model

# The CRD: `family@version`, at most 30 characters, family one of these. AL2 is accepted (EKS
# stops publishing AL2 AMIs with Kubernetes 1.33, so on newer clusters Karpenter finds none).
_ALIAS = re.compile(r"^(al2|al2023|bottlerocket|windows2019|windows2022|windows2025)@(latest|v?[0-9][0-9.]*)$")
_TAG_MAX = 20
# The EC2NodeClass CRD's volumeSize pattern: 1Gi-59000Gi, 1G-64000G, 1Ti-58Ti or 1T-64T.
_VOLUME_SIZE = re.compile(r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}"
                          r"|[6][0-3][0-9]{3}|64000)G|([1-9]|[1-5][0-7]|58)Ti|([1-9]|[1-5][0-9]|6[0-3]|64)T)$")



def _tags_non_empty(tags: dict[str, str]) -> dict[str, str]:
    if any(not k or not v for k, v in tags.items()):
        raise ValueError("empty tag keys or values aren't supported")
    return tags


def _aws_id_check(prefix: str) -> Callable[[str], str]:
    """The check of an AWS id such as `ami-0abc`, as the CRD's pattern has it."""
    pattern = re.compile(rf"^{prefix}-[0-9a-z]+$")

    def check(value: str) -> str:
        if not pattern.match(value):
            raise ValueError(f"{value!r} is not an id of the form {prefix}-<hex>")
        return value
    return check


# String types for AWS ids, named at module level so type checkers read them as types.
AmiId = Annotated[str, AfterValidator(_aws_id_check("ami"))]
SubnetId = Annotated[str, AfterValidator(_aws_id_check("subnet"))]
SecurityGroupId = Annotated[str, AfterValidator(_aws_id_check("sg"))]
CapacityReservationId = Annotated[str, AfterValidator(_aws_id_check("cr"))]
PlacementGroupId = Annotated[str, AfterValidator(_aws_id_check("pg"))]


def check_volume_size(value: str) -> str:
    if not _VOLUME_SIZE.match(str(value)):
        raise ValueError(f"{value!r} is not an EBS volume size the EC2NodeClass accepts (1Gi-59000Gi, 1G-64000G, 1Ti-58Ti, 1T-64T)")
    return str(value)


_SIZE_BYTES = {"Gi": 2**30, "G": 10**9, "Ti": 2**40, "T": 10**12}
GP3_BASELINE_IOPS, GP3_BASELINE_THROUGHPUT = 3000, 125
# Karpenter's default root sizes per AMI family (karpenter-provider-aws pkg/providers/amifamily
# DefaultBlockDeviceMappings), the size of the EKS AMIs' root snapshots (Bottlerocket: its data volume).
AMI_ROOT_SNAPSHOT_GIB = {"AL2": 20, "AL2023": 20, "Bottlerocket": 20, "Windows2019": 50, "Windows2022": 50,
                         "Windows2025": 50}


def ec2_volume_gib(size: str) -> int:
    """The VolumeSize Karpenter sends EC2 (launchtemplate.go: VolumeSize.ScaledValue(resource.Giga),
    rounded up): `50Gi` is 54."""
    match = re.match(r"^([0-9]+)(Gi|G|Ti|T)$", size)
    return -(-int(match.group(1)) * _SIZE_BYTES[match.group(2)] // 10**9)


def gp3_problem(size: str | None, iops: int | None, throughput: int | None) -> str | None:
    """Why EC2 RunInstances refuses this gp3 volume (EBS volume types, gp3: at most 500 IOPS per
    GiB above the 3,000 baseline, at most 0.25 MiB/s of throughput per IOPS), or None."""
    effective_iops = GP3_BASELINE_IOPS if iops is None else iops
    if throughput is not None and throughput * 4 > effective_iops:
        return (f"gp3 throughput {throughput} MiB/s needs at least {throughput * 4} IOPS (EC2 allows 0.25 MiB/s per "
                f"IOPS; iops is {effective_iops}{' by default' if iops is None else ''})")
    if size is not None and iops is not None and iops > GP3_BASELINE_IOPS and iops > 500 * ec2_volume_gib(size):
        return (f"gp3 iops {iops} needs a volume of at least {-(-iops // 500)} GiB (EC2 allows 500 IOPS per GiB); "
                f"{size} is {ec2_volume_gib(size)} GiB as Karpenter sends it")
    return None


def check_alias(value: str) -> str:
    if not _ALIAS.match(value):
        raise ValueError(f"{value!r} is not an AMI alias (family@version with family al2, al2023, bottlerocket, "
                         "windows2019, windows2022 or windows2025, e.g. al2023@v20251117)")
    if value.startswith("windows") and not value.endswith("@latest"):
        raise ValueError(f"{value!r}: Windows AMI families only accept the version 'latest'")
    return value


SelectorTags = Annotated[dict[str, str], AfterValidator(_tags_non_empty), Field(max_length=_TAG_MAX)]


class AmiSelectorTerm(Model):
    """One AMI selector term: an alias alone, an id alone, or any of name, owner, tags, ssmParameter."""

    alias: str | None = Field(default=None, max_length=30)
    """`family@version`: al2, al2023, bottlerocket (pinned or `latest`), windows2019/2022/2025 (`latest` only)."""
    id: AmiId | None = None
    """An AMI id (`ami-...`)."""
    name: str | None = None
    """AMI name (wildcards allowed, as in EC2 DescribeImages)."""
    owner: str | None = None
    """AMI owner: an account id, `self` or `amazon`."""
    ssm_parameter: str | None = None
    """An SSM parameter holding the AMI id."""
    tags: SelectorTags | None = None
    """AMI tags to match (`*` matches any value)."""


    @field_validator("alias")
    @classmethod
    def _alias(cls, value: str | None) -> str | None:
        return None if value is None else check_alias(value)

    @model_validator(mode="after")
    def _exclusive(self) -> AmiSelectorTerm:
        given = {k for k in ("alias", "id", "name", "owner", "ssm_parameter", "tags") if getattr(self, k) is not None}
        if not given & {"alias", "id", "name", "ssm_parameter", "tags"}:
            raise ValueError("expected at least one of tags, id, name, alias, ssmParameter")
        for only in ("alias", "id"):
            if only in given and given & {"alias", "id", "name", "owner", "tags"} - {only}:
                raise ValueError(f"{only!r} is mutually exclusive, cannot be set with a combination of other fields")
        return self


class SubnetSelectorTerm(Model):
    """A subnet selector term: tags or an id."""

    id: SubnetId | None = None
    """Subnet id (`subnet-...`)."""
    tags: SelectorTags | None = None
    """Subnet tags to match."""


    @model_validator(mode="after")
    def _one(self) -> SubnetSelectorTerm:
        if (self.id is None) == (self.tags is None):
            raise ValueError("set exactly one of id or tags")
        return self


class SecurityGroupSelectorTerm(Model):
    """A security group selector term: tags, an id or a name."""

    id: SecurityGroupId | None = None
    """Security group id (`sg-...`)."""
    name: str | None = None
    """Security group name."""
    tags: SelectorTags | None = None
    """Security group tags to match."""


    @model_validator(mode="after")
    def _one(self) -> SecurityGroupSelectorTerm:
        if sum(v is not None for v in (self.id, self.name, self.tags)) != 1:
            raise ValueError("set exactly one of id, name or tags")
        return self


class CapacityReservationSelectorTerm(Model):
    """Capacity reservations the node class may launch into (capacity type `reserved`)."""

    id: CapacityReservationId | None = None
    """Reservation id (`cr-...`); alone."""
    owner_id: str | None = Field(default=None, alias="ownerID", pattern=r"^[0-9]{12}$")
    """Account that owns the reservations (12 digits)."""
    tags: SelectorTags | None = None
    """Reservation tags to match."""
    instance_match_criteria: Literal["open", "targeted"] | None = None
    """`open` or `targeted` reservations."""


    @model_validator(mode="after")
    def _exclusive(self) -> CapacityReservationSelectorTerm:
        if self.id is None and self.tags is None and self.instance_match_criteria is None:
            raise ValueError("expected at least one of tags, id, instanceMatchCriteria")
        if self.id is not None and (self.tags is not None or self.owner_id is not None or self.instance_match_criteria is not None):
            raise ValueError("'id' is mutually exclusive, cannot be set along with other fields")
        return self


class Ebs(Model):
    """An EBS volume (the EC2NodeClass's `ebs`, CRD spelling)."""

    volume_size: str | None = None
    """Size in Gi, G, Ti or T (e.g. `100Gi`); this or `snapshotID`."""
    volume_type: Literal["standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"] | None = None
    """EBS volume type."""
    encrypted: bool | None = None
    """Encrypt the volume (unencrypted volumes are flagged by the policy pack)."""
    kms_key_id: str | None = Field(default=None, alias="kmsKeyID")
    """KMS key ARN for encryption."""
    iops: int | None = Field(default=None, ge=0, le=2**63 - 1)
    """Provisioned IOPS (io1, io2, gp3)."""
    throughput: int | None = Field(default=None, ge=0, le=2**63 - 1)
    """Throughput in MiB/s (gp3)."""
    delete_on_termination: bool | None = None
    """Delete the volume with the instance."""
    snapshot_id: str | None = Field(default=None, alias="snapshotID")
    """Snapshot to create the volume from."""
    volume_initialization_rate: int | None = Field(default=None, ge=100, le=300)
    """MiB/s at which the snapshot is restored (100-300); needs `snapshotID`."""

    @field_validator("volume_size")
    @classmethod
    def _size(cls, value: str | None) -> str | None:
        return None if value is None else check_volume_size(value)

    @model_validator(mode="after")
    def _cel_rules(self) -> Ebs:
        if self.snapshot_id is None and self.volume_size is None:
            raise ValueError("snapshotID or volumeSize must be defined")
        if self.volume_initialization_rate is not None and not self.snapshot_id:
            raise ValueError("snapshotID must be set when volumeInitializationRate is set")
        problem = gp3_problem(self.volume_size, self.iops, self.throughput) if self.volume_type == "gp3" else None
        if problem:  # EC2 refuses it at launch: no node of the class would ever start
            raise ValueError(problem)
        return self


class BlockDeviceMapping(Model):
    """One block device of the node (the EC2NodeClass's `blockDeviceMappings`, CRD spelling)."""

    device_name: str | None = None
    """Device name, e.g. `/dev/xvda` (AL2023 root), `/dev/xvdb` (Bottlerocket data), `/dev/sda1` (Windows root)."""
    root_volume: bool | None = None
    """This is the volume Karpenter sizes ephemeral storage from (at most one)."""
    ebs: Ebs | None = None
    """The EBS volume."""


class ConnectionTracking(Model):
    """Connection tracking timeouts of the primary network interface (seconds)."""

    tcp_established_timeout: int | None = Field(default=None, ge=60, le=432000)
    """Idle timeout of established TCP connections, 60-432000."""
    udp_stream_timeout: int | None = Field(default=None, ge=60, le=180)
    """Idle timeout of bidirectional UDP flows, 60-180."""
    udp_timeout: int | None = Field(default=None, ge=30, le=60)
    """Idle timeout of one-way UDP flows, 30-60."""

    @model_validator(mode="after")
    def _one(self) -> ConnectionTracking:
        if self.tcp_established_timeout is None and self.udp_stream_timeout is None and self.udp_timeout is None:
            raise ValueError("at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set")
        return self


class CpuOptions(Model):
    """CPU options of the instances."""

    nested_virtualization: Literal["enabled", "disabled"] | None = None
    """Nested virtualization (supported instance types only)."""


class NetworkInterface(Model):
    """One network interface of the instances (e.g. EFA devices)."""

    network_card_index: int = Field(ge=0, le=2**31 - 1)
    """Network card index."""
    device_index: int = Field(ge=0, le=2**31 - 1)
    """Device index on that card."""
    interface_type: Literal["interface", "efa-only"]
    """`interface` (ENA, optionally EFA) or `efa-only`."""


class PlacementGroupSelector(Model):
    """The placement group to launch into, by name or id."""

    name: str | None = None
    """Placement group name."""
    id: PlacementGroupId | None = None
    """Placement group id (`pg-...`)."""


    @model_validator(mode="after")
    def _one(self) -> PlacementGroupSelector:
        if (self.name is None) == (self.id is None):
            raise ValueError("set exactly one of name or id")
        return self
