"""EC2NodeClass settings (karpenter.k8s.aws/v1), defined once per stack and shared by teams."""

from __future__ import annotations

from kubefacts.amis import ALIAS_OF_FAMILY, FAMILY_OF_ALIAS

import re2 as re  # Go RE2 semantics, as the API server: `$` never matches before a final "\n"
from typing import Literal

from pydantic import Field, field_validator, model_validator

from .base import Model
from .ec2 import (
    AmiSelectorTerm,
    BlockDeviceMapping,
    CapacityReservationSelectorTerm,
    ConnectionTracking,
    CpuOptions,
    NetworkInterface,
    PlacementGroupSelector,
    SecurityGroupSelectorTerm,
    SubnetSelectorTerm,
    AMI_ROOT_SNAPSHOT_GIB,
    check_alias,
    check_volume_size,
    ec2_volume_gib,
    gp3_problem,
)

__all__ = ["AmiSelectorTerm", "BlockDeviceMapping", "CapacityReservationSelectorTerm", "ConnectionTracking", "CpuOptions",
           "Kubelet", "MetadataOptions", "NetworkInterface", "NodeClass", "PlacementGroupSelector", "RootVolume",
           "SecurityGroupSelectorTerm", "SubnetSelectorTerm"]
from .kube import Quantity, check_quantity

AmiFamily = Literal["AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022", "Windows2025"]
DEFAULT_AMI_ALIAS = "al2023@v20251117"
# Karpenter's device names per family (pkg/providers/amifamily: EphemeralBlockDevice and
# DefaultBlockDeviceMappings): the root device, and Bottlerocket's separate data device.
ROOT_DEVICE = {"AL2": "/dev/xvda", "AL2023": "/dev/xvda", "Bottlerocket": "/dev/xvdb", "Windows2019": "/dev/sda1",
               "Windows2022": "/dev/sda1", "Windows2025": "/dev/sda1"}
BOTTLEROCKET_OS_DEVICE, BOTTLEROCKET_OS_SIZE = "/dev/xvda", "4Gi"
_EVICTION_VALUE = re.compile(r"^((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%|(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
                             r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?)$")
_GO_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$")
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
    """Volume size in Gi, G, Ti or T, e.g. `50Gi` (the EC2NodeClass accepts only these units); not below
    the AMI's root snapshot (EKS AMIs by alias: 20 GiB, Windows 50 GiB)."""
    type: Literal["gp3", "gp2", "io1", "io2"] = "gp3"
    """EBS volume type."""
    encrypted: bool = True
    """Encrypt the volume (with `kmsKeyId`, or the account's default EBS key)."""
    kms_key_id: str | None = None
    """KMS key ARN for encryption; the account default when unset."""
    iops: int | None = Field(default=None, ge=3000, le=64000)
    """Provisioned IOPS (gp3/io1/io2); gp3 allows at most 500 per GiB above its 3,000 baseline."""
    throughput: int | None = Field(default=None, ge=125, le=1000)
    """Throughput in MiB/s (gp3): at most 0.25 per IOPS (750 at the 3,000 baseline)."""
    device_name: str | None = None
    """Root device name; by default the AMI family's (AL2/AL2023 `/dev/xvda`, Windows `/dev/sda1`,
    Bottlerocket: this volume is the data volume `/dev/xvdb`, next to a 4Gi OS volume `/dev/xvda`).
    Required for amiFamily Custom."""

    @field_validator("size")
    @classmethod
    def _size(cls, value: str) -> str:
        return check_volume_size(value)

    @model_validator(mode="after")
    def _ec2_accepts(self) -> RootVolume:
        # Combinations EC2 RunInstances refuses (the node would never launch).
        problem = ("iops cannot be set on gp2 (its IOPS follow the size)" if self.iops is not None and self.type == "gp2"
                   else f"throughput can only be set on gp3, not {self.type}" if self.throughput is not None and self.type != "gp3"
                   else f"{self.type} needs iops (provisioned IOPS volume)" if self.type in ("io1", "io2") and self.iops is None
                   else "kmsKeyId needs encrypted: true" if self.kms_key_id and not self.encrypted
                   else gp3_problem(self.size, self.iops, self.throughput) if self.type == "gp3"
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

    cluster_dns: list[str] | None = Field(default=None, alias="clusterDNS")
    """DNS server IPs for pods (the cluster DNS service by default)."""
    max_pods: int | None = Field(default=None, ge=0, le=2**31 - 1)
    """Override the ENI-limited max pods."""
    pods_per_core: int | None = Field(default=None, ge=0, le=2**31 - 1)
    """At most this many pods per vCPU (the lower of this and maxPods wins; ignored by Bottlerocket)."""
    system_reserved: dict[str, Quantity] | None = None
    """Resources reserved for the OS (cpu, memory, ephemeral-storage, pid)."""
    kube_reserved: dict[str, Quantity] | None = None
    """Resources reserved for the kubelet and runtime (cpu, memory, ephemeral-storage, pid)."""
    eviction_hard: dict[str, str] | None = None
    """Hard eviction thresholds by signal, e.g. `{memory.available: 5%}`."""
    eviction_soft: dict[str, str] | None = None
    """Soft eviction thresholds by signal; each needs an `evictionSoftGracePeriod`."""
    eviction_soft_grace_period: dict[str, str] | None = None
    """Grace period per soft eviction signal, e.g. `{memory.available: 1m}`."""
    eviction_max_pod_grace_period: int | None = Field(default=None, ge=-(2**31), le=2**31 - 1)
    """Longest grace period (seconds) granted to pods evicted on a soft threshold."""
    image_gc_high_threshold_percent: int | None = Field(default=None, ge=0, le=100, alias="imageGCHighThresholdPercent")
    """Disk usage (%) above which image garbage collection always runs."""
    image_gc_low_threshold_percent: int | None = Field(default=None, ge=0, le=100, alias="imageGCLowThresholdPercent")
    """Disk usage (%) image garbage collection frees down to; below imageGCHighThresholdPercent."""
    cpu_cfs_quota: bool | None = Field(default=None, alias="cpuCFSQuota")
    """Enforce CPU limits with CFS quota (kubelet default true)."""

    @field_validator("eviction_soft_grace_period")
    @classmethod
    def _durations(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        unknown = sorted(set(value or {}) - set(_EVICTION_SIGNALS))
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: valid signals are {', '.join(_EVICTION_SIGNALS)}")
        for signal, duration in (value or {}).items():
            if not _GO_DURATION.match(str(duration)):
                raise ValueError(f"{signal}: {duration!r} is not a duration (e.g. 1m30s)")
        return value

    @model_validator(mode="after")
    def _cel_rules(self) -> Kubelet:
        high, low = self.image_gc_high_threshold_percent, self.image_gc_low_threshold_percent
        if high is not None and low is not None and high <= low:
            raise ValueError("imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent")
        soft, grace = set(self.eviction_soft or {}), set(self.eviction_soft_grace_period or {})
        if self.eviction_soft is not None and soft - grace:
            raise ValueError(f"evictionSoft {', '.join(sorted(soft - grace))} has no matching evictionSoftGracePeriod")
        if self.eviction_soft_grace_period is not None and grace - soft:
            raise ValueError(f"evictionSoftGracePeriod {', '.join(sorted(grace - soft))} has no matching evictionSoft")
        return self

    @field_validator("system_reserved", "kube_reserved")
    @classmethod
    def _reserved_keys(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        unknown = sorted(set(value or {}) - set(_RESERVED_KEYS))
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: valid keys are {', '.join(_RESERVED_KEYS)}")
        return value

    @field_validator("eviction_hard", "eviction_soft")
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
    """One EC2NodeClass; its name is the key in `nodeClasses`. Keys other than `amiAlias`,
    `allowLatestAmi` and `rootVolume` are the EC2NodeClass's own (karpenter.k8s.aws/v1), with its
    rules. The platform fills in the node role and the stack's subnet and security-group selectors
    unless overridden. What it deliberately narrows is left expressible and judged by a policy with
    a per-environment level (docs/policies.md), never silently dropped: IMDSv1 or a hop limit above 1
    (`nodeclass-imdsv2-hop-limit-1`), an unencrypted root volume (`nodeclass-root-volume-encrypted`),
    a floating AMI (`@latest`, name, tags or SSM parameter: `nodeclass-ami-pinned`), a role or instance
    profile without the stack's access entry (`nodeclass-role-has-access-entry`). Wildcard IAM is not
    configurable here at all: the stack writes the IAM policies, and `iam-no-wildcard-action` checks them."""

    ami_alias: str | None = None
    """AMI alias, pinned (`al2023@v20251117`, the default when neither this nor `amiSelectorTerms`
    is set). `@latest` only with `allowLatestAmi` (flagged). Shorthand for `amiSelectorTerms: [{alias: ...}]`.
    Families: al2023, bottlerocket, windows2019/2022/2025 (`@latest` only), and al2, which EKS no
    longer publishes for Kubernetes 1.33 and later (Karpenter then finds no AMI)."""
    ami_selector_terms: list[AmiSelectorTerm] | None = Field(default=None, min_length=1, max_length=30)
    """AMI selection as in the EC2NodeClass (alias, id, name, owner, tags, ssmParameter); instead of `amiAlias`.
    Selection by name, tags or SSM parameter floats (policy nodeclass-ami-pinned outside dev)."""
    ami_family: AmiFamily | None = None
    """AL2, AL2023, Bottlerocket, Custom, Windows2019, Windows2022 or Windows2025: the bootstrap
    (user data) format. Required when no alias is used; with an alias, only its family or Custom."""
    allow_latest_ami: bool = False
    """Permit `@latest`: nodes then change AMI without a config change."""
    role: str | None = None
    """IAM role of the nodes; the stack's node role (with its access entry) when unset. Another
    role needs its own access entry (policy nodeclass-role-has-access-entry), and the controller may
    only pass the stack's node role (iam-passrole-node-role-only), so Karpenter cannot launch with
    it until both are granted outside this stack."""
    instance_profile: str | None = Field(default=None, min_length=1)
    """An existing instance profile instead of a role (exclusive with `role`); the stack's node role
    then is not used and the profile's role needs an access entry (flagged by the policy pack)."""
    subnet_selector_terms: list[SubnetSelectorTerm] | None = Field(default=None, min_length=1, max_length=30)
    """Subnets for this node class; the stack's subnets (`cluster.subnets`) when unset."""
    security_group_selector_terms: list[SecurityGroupSelectorTerm] | None = Field(default=None, min_length=1, max_length=30)
    """Security groups for this node class; the stack's security group when unset."""
    root_volume: RootVolume = Field(default_factory=RootVolume)
    """Root EBS volume (device name by AMI family). Ignored when `blockDeviceMappings` is set."""
    block_device_mappings: list[BlockDeviceMapping] | None = Field(default=None, max_length=50)
    """Every block device, as in the EC2NodeClass; replaces `rootVolume`. Unencrypted volumes are
    flagged by the policy pack (nodeclass-root-volume-encrypted)."""
    instance_store_policy: Literal["RAID0"] | None = None
    """`RAID0`: stripe the local NVMe instance stores and use them for ephemeral storage."""
    metadata_options: MetadataOptions = Field(default_factory=MetadataOptions)
    """IMDS settings. IMDSv1 (`httpTokens: optional`) or a hop limit above 1 are flagged by the policy pack."""
    kubelet: Kubelet | None = None
    """Kubelet overrides."""
    user_data: str | None = None
    """User data merged with (AL2, AL2023, Bottlerocket, Windows) or, for Custom, instead of Karpenter's bootstrap."""
    tags: dict[str, str] = Field(default_factory=dict)
    """Tags put on instances, volumes and launch templates."""
    detailed_monitoring: bool = False
    """EC2 detailed monitoring."""
    associate_public_ip_address: bool | None = Field(default=None, alias="associatePublicIPAddress")
    """Give instances a public IPv4 address (the subnet's setting when unset)."""
    capacity_reservation_selector_terms: list[CapacityReservationSelectorTerm] | None = Field(default=None, max_length=30)
    """On-demand capacity reservations to use; NodePools reach them with capacity type `reserved`."""
    placement_group_selector: PlacementGroupSelector | None = None
    """Launch into this placement group."""
    network_interfaces: list[NetworkInterface] | None = Field(default=None, max_length=150)
    """Network interfaces (EFA); must include the primary (card 0, device 0, `interface`)."""
    cpu_options: CpuOptions | None = None
    """CPU options."""
    connection_tracking: ConnectionTracking | None = None
    """Connection tracking timeouts."""
    ip_prefix_count: int | None = Field(default=None, ge=0, le=2**31 - 1)
    """IPv4 prefixes (/28) assigned to the primary interface (prefix delegation)."""
    context: str | None = None
    """Reserved for an AWS Outposts / Local Zones launch context (the CRD's `context`)."""

    @field_validator("ami_alias")
    @classmethod
    def _alias(cls, value: str | None) -> str | None:
        return None if value is None else check_alias(value)

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
    def _al2023_version_has_v(cls, value: str | None) -> str | None:
        if value is None:
            return value
        # AL2023's SSM parameter names carry the `v` (amazon-eks-node-al2023-...-v20251117); without
        # it no parameter and no AMI exist (provider pkg/providers/amifamily/al2023.go).
        family, _, version = value.partition("@")
        if family == "al2023" and version != "latest" and not version.startswith("v"):
            raise ValueError(f"{value!r}: AL2023 versions start with 'v' (e.g. al2023@v20251117)")
        return value

    @model_validator(mode="after")
    def _ami_selection(self) -> NodeClass:
        if self.ami_alias is not None and self.ami_selector_terms is not None:
            raise ValueError("set amiAlias or amiSelectorTerms, not both")
        matching = ALIAS_OF_FAMILY.get(self.ami_family or "")
        # (Custom without a selector keeps the default alias: AL2023 AMIs with the user's own user data.)
        if self.ami_alias is None and self.ami_selector_terms is None and matching and matching != "al2023":
            # karpenter.k8s.aws/v1 dropped the AMI default per amiFamily (v1 migration guide): name
            # what the user wrote and the alias that matches it, not the platform's default alias.
            hint = (f"for amiFamily {self.ami_family} the matching alias is {matching}@<version>, e.g. amiAlias: "
                    f"{matching}@latest with allowLatestAmi: true"
                    + (" (Windows aliases take only latest)" if matching.startswith("windows") else ", or a pinned version"))
            raise ValueError(f"amiSelectorTerms (or amiAlias) is required with amiFamily {self.ami_family} in "
                             f"karpenter.k8s.aws/v1; {hint}")
        terms = self.ami_terms
        aliases = [t.alias for t in terms if t.alias is not None]
        if aliases and len(terms) != 1:
            raise ValueError("'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms")
        if not aliases and self.ami_family is None:
            raise ValueError("amiFamily is required when amiSelectorTerms has no alias")
        if aliases:
            family = FAMILY_OF_ALIAS[aliases[0].split("@", 1)[0]]
            if self.ami_family not in (None, "Custom", family):
                raise ValueError(f"amiFamily must be {family!r} or 'Custom' when using alias {aliases[0]!r}")
            if family.startswith("Windows") and not aliases[0].endswith("@latest"):
                raise ValueError(f"{aliases[0]!r}: Windows AMI families only accept the version 'latest'")
            if aliases[0].endswith("@latest") and not self.allow_latest_ami:
                raise ValueError(f"amiAlias {aliases[0]!r} floats to new AMIs on every release; pin a version or set "
                                 "allowLatestAmi: true")
        return self

    @model_validator(mode="after")
    def _role_or_profile(self) -> NodeClass:
        if self.role is not None and self.instance_profile is not None:
            raise ValueError("must specify exactly one of ['role', 'instanceProfile']")
        if self.role == "":
            raise ValueError("role cannot be empty")
        return self

    @model_validator(mode="after")
    def _devices(self) -> NodeClass:
        if self.block_device_mappings is not None:
            if "root_volume" in self.model_fields_set:
                raise ValueError("set rootVolume or blockDeviceMappings, not both")
            if sum(1 for m in self.block_device_mappings if m.root_volume) > 1:
                raise ValueError("must have only one blockDeviceMappings with rootVolume")
        elif self.family == "Custom" and "root_volume" in self.model_fields_set and not self.root_volume.device_name:
            raise ValueError("amiFamily Custom has no known root device: set rootVolume.deviceName")
        return self

    @model_validator(mode="after")
    def _root_not_below_ami_snapshot(self) -> NodeClass:
        """EC2 refuses a root volume smaller than the AMI's snapshot ("Volume of size N is smaller
        than snapshot"); known for the EKS AMIs an alias selects."""
        alias = self.ami_family_alias
        family = FAMILY_OF_ALIAS.get(alias) if alias else None
        if family is None:
            return self
        snapshot, device = AMI_ROOT_SNAPSHOT_GIB.get(family), ROOT_DEVICE.get(family)
        if snapshot is None:
            return self
        if self.block_device_mappings is None:
            sized = [("rootVolume.size", self.root_volume.size)] if (self.root_volume.device_name or device) == device else []
        else:
            sized = [(f"blockDeviceMappings[{i}].ebs.volumeSize", m.ebs.volume_size)
                     for i, m in enumerate(self.block_device_mappings)
                     if m.device_name == device and m.ebs and m.ebs.volume_size and not m.ebs.snapshot_id]
        for path, size in sized:
            if ec2_volume_gib(size) < snapshot:
                raise ValueError(f"{path} {size} ({ec2_volume_gib(size)} GiB as Karpenter sends it) is below the "
                                 f"{family} AMI's {snapshot} GiB root snapshot ({device}): EC2 refuses to launch the node")
        return self

    @model_validator(mode="after")
    def _interfaces(self) -> NodeClass:
        interfaces = self.network_interfaces or []
        if interfaces and not any(i.network_card_index == 0 and i.device_index == 0 and i.interface_type == "interface"
                                  for i in interfaces):
            raise ValueError("networkInterfaces must include a primary interface (networkCardIndex 0, deviceIndex 0, "
                             "interfaceType interface)")
        pairs = [(i.network_card_index, i.device_index) for i in interfaces]
        efa = [i.network_card_index for i in interfaces if i.interface_type == "efa-only"]
        if len(set(pairs)) != len(pairs) or len(set(efa)) != len(efa):
            raise ValueError("networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and can "
                             "have at most one efa device per network card")
        return self

    @property
    def ami_terms(self) -> list[AmiSelectorTerm]:
        """The AMI selector terms rendered (the alias shorthand, or the default alias)."""
        if self.ami_selector_terms is not None:
            return list(self.ami_selector_terms)
        return [AmiSelectorTerm(alias=self.ami_alias or DEFAULT_AMI_ALIAS)]

    @property
    def family(self) -> str:
        """The AMI family Karpenter bootstraps for: amiFamily, else the alias's."""
        if self.ami_family is not None:
            return self.ami_family
        alias = next(t.alias for t in self.ami_terms if t.alias is not None)
        return FAMILY_OF_ALIAS[alias.split("@", 1)[0]]

    @property
    def ami_family_alias(self) -> str | None:
        """The alias's family (e.g. `al2023`), or None when selected otherwise."""
        alias = next((t.alias for t in self.ami_terms if t.alias is not None), None)
        return alias.split("@", 1)[0] if alias else None

    @property
    def floating_alias(self) -> str | None:
        alias = next((t.alias for t in self.ami_terms if t.alias is not None), None)
        return alias if alias and alias.endswith("@latest") else None

    @property
    def is_windows(self) -> bool:
        return self.family.startswith("Windows")
