"""Label, taint and requirement rules, with the well-known, restricted and normalized labels of
each supported Karpenter release.

Sources (kubernetes-sigs/karpenter and aws/karpenter-provider-aws at each release tag):
- core `pkg/apis/v1/labels.go`: WellKnownLabels, RestrictedLabelDomains (karpenter.sh),
  RestrictedLabels (kubernetes.io/hostname), NormalizedLabels, WellKnownValuesForRequirements,
  `IsRestrictedLabel`;
- provider `pkg/apis/v1/labels.go` `init()`: the karpenter.k8s.aws well-known labels (v1.11 adds
  placement-group-id/-partition; `karpenter.k8s.aws/nitro-sandbox` is newer than v1.14.1 and
  `karpenter.k8s.aws/ec2nodeclass` is never registered as well-known), restricted domain
  karpenter.k8s.aws, the tenancy values;
- provider `pkg/operator/operator.go`: NormalizedLabels gains `topology.ebs.csi.aws.com/zone` ->
  `topology.kubernetes.io/zone` (the EBS CSI driver's zone key is the zone);
- the NodePool CRD (karpenter.sh_nodepools.yaml): requirement and label keys in karpenter.sh may
  only be capacity-type (and never karpenter.sh/nodepool); in karpenter.k8s.aws only the listed
  ones; operators In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte;
- apimachinery `validation.IsQualifiedName`/`IsValidLabelValue`/`IsDNS1123Label`;
- kubelet (k8s.io/kubelet/pkg/apis/well_known_labels.go): `--node-labels` in kubernetes.io/k8s.io
  only its own list and namespaces.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

import re2  # Go RE2 semantics, as the API server's patterns: `$` never matches before a final "\n"

# --- names -------------------------------------------------------------------------------------

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
WINDOWS_BUILD = "node.kubernetes.io/windows-build"
ZONE_ID = "topology.k8s.aws/zone-id"
EBS_CSI_ZONE = "topology.ebs.csi.aws.com/zone"

NODEPOOL = "karpenter.sh/nodepool"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
REGISTERED = "karpenter.sh/registered"
INITIALIZED = "karpenter.sh/initialized"
NODECLASS = "karpenter.k8s.aws/ec2nodeclass"

AWS = "karpenter.k8s.aws/"
INSTANCE_CATEGORY = AWS + "instance-category"
INSTANCE_FAMILY = AWS + "instance-family"
INSTANCE_GENERATION = AWS + "instance-generation"
INSTANCE_SIZE = AWS + "instance-size"
INSTANCE_CPU = AWS + "instance-cpu"
INSTANCE_CPU_MANUFACTURER = AWS + "instance-cpu-manufacturer"
INSTANCE_MEMORY = AWS + "instance-memory"
INSTANCE_NETWORK_BANDWIDTH = AWS + "instance-network-bandwidth"
INSTANCE_LOCAL_NVME = AWS + "instance-local-nvme"
INSTANCE_HYPERVISOR = AWS + "instance-hypervisor"
INSTANCE_CAPABILITY_FLEX = AWS + "instance-capability-flex"
INSTANCE_GPU_NAME = AWS + "instance-gpu-name"
INSTANCE_GPU_MANUFACTURER = AWS + "instance-gpu-manufacturer"
INSTANCE_GPU_COUNT = AWS + "instance-gpu-count"
INSTANCE_GPU_MEMORY = AWS + "instance-gpu-memory"
INSTANCE_ACCELERATOR_NAME = AWS + "instance-accelerator-name"
INSTANCE_ACCELERATOR_MANUFACTURER = AWS + "instance-accelerator-manufacturer"
INSTANCE_ACCELERATOR_COUNT = AWS + "instance-accelerator-count"
INSTANCE_TENANCY = AWS + "instance-tenancy"
CAPACITY_RESERVATION_ID = AWS + "capacity-reservation-id"
CAPACITY_RESERVATION_TYPE = AWS + "capacity-reservation-type"
CAPACITY_RESERVATION_INTERRUPTIBLE = AWS + "capacity-reservation-interruptible"
PLACEMENT_GROUP_ID = AWS + "placement-group-id"
PLACEMENT_GROUP_PARTITION = AWS + "placement-group-partition"

CAPACITY_TYPE_SPOT = "spot"
CAPACITY_TYPE_ON_DEMAND = "on-demand"
CAPACITY_TYPE_RESERVED = "reserved"
# Karpenter launches reserved first, then spot, then on-demand, among the types a NodeClaim allows.
CAPACITY_TYPE_PRIORITY = (CAPACITY_TYPE_RESERVED, CAPACITY_TYPE_SPOT, CAPACITY_TYPE_ON_DEMAND)

CPU = "cpu"
MEMORY = "memory"
PODS = "pods"
EPHEMERAL_STORAGE = "ephemeral-storage"
NODES = "nodes"
NVIDIA_GPU = "nvidia.com/gpu"
AMD_GPU = "amd.com/gpu"
HABANA_GAUDI = "habana.ai/gaudi"
AWS_NEURON = "aws.amazon.com/neuron"

# --- per release -------------------------------------------------------------------------------

SUPPORTED_RELEASES = ("1.10.2", "1.11.3", "1.12.2", "1.13.1", "1.14.1")
DEFAULT_RELEASE = "1.14.1"

_CORE_WELL_KNOWN = frozenset({NODEPOOL, ZONE, REGION, INSTANCE_TYPE, ARCH, OS, CAPACITY_TYPE, WINDOWS_BUILD})
_AWS_WELL_KNOWN_1_10 = frozenset({
    CAPACITY_RESERVATION_ID, CAPACITY_RESERVATION_TYPE, CAPACITY_RESERVATION_INTERRUPTIBLE, INSTANCE_HYPERVISOR,
    AWS + "instance-encryption-in-transit-supported", INSTANCE_CATEGORY, INSTANCE_CAPABILITY_FLEX, INSTANCE_FAMILY,
    INSTANCE_GENERATION, INSTANCE_SIZE, INSTANCE_LOCAL_NVME, INSTANCE_CPU, INSTANCE_CPU_MANUFACTURER,
    AWS + "instance-cpu-sustained-clock-speed-mhz", INSTANCE_MEMORY, AWS + "instance-ebs-bandwidth",
    INSTANCE_NETWORK_BANDWIDTH, INSTANCE_GPU_NAME, INSTANCE_GPU_MANUFACTURER, INSTANCE_GPU_COUNT, INSTANCE_GPU_MEMORY,
    INSTANCE_ACCELERATOR_NAME, INSTANCE_ACCELERATOR_MANUFACTURER, INSTANCE_ACCELERATOR_COUNT, ZONE_ID,
    INSTANCE_TENANCY, WINDOWS_BUILD,
})
_AWS_WELL_KNOWN_1_11 = _AWS_WELL_KNOWN_1_10 | {PLACEMENT_GROUP_ID, PLACEMENT_GROUP_PARTITION}

WELL_KNOWN_BY_RELEASE: Mapping[str, frozenset[str]] = {
    "1.10.2": _CORE_WELL_KNOWN | _AWS_WELL_KNOWN_1_10,
    "1.11.3": _CORE_WELL_KNOWN | _AWS_WELL_KNOWN_1_11,
    "1.12.2": _CORE_WELL_KNOWN | _AWS_WELL_KNOWN_1_11,
    "1.13.1": _CORE_WELL_KNOWN | _AWS_WELL_KNOWN_1_11,
    "1.14.1": _CORE_WELL_KNOWN | _AWS_WELL_KNOWN_1_11,
}
"""Labels Karpenter knows (pods and NodePools may narrow them; instance types define their values)."""

RESTRICTED_DOMAINS = ("karpenter.sh", "karpenter.k8s.aws")
RESTRICTED_LABELS = frozenset({HOSTNAME})
"""Labels no NodePool may set (Karpenter assigns them itself)."""

_CORE_NORMALIZED = {
    "failure-domain.beta.kubernetes.io/zone": ZONE,
    "beta.kubernetes.io/arch": ARCH,
    "beta.kubernetes.io/os": OS,
    "beta.kubernetes.io/instance-type": INSTANCE_TYPE,
    "failure-domain.beta.kubernetes.io/region": REGION,
}
NORMALIZED_BY_RELEASE: Mapping[str, Mapping[str, str]] = {
    release: {**_CORE_NORMALIZED, EBS_CSI_ZONE: ZONE} for release in SUPPORTED_RELEASES
}
"""Aliases Karpenter rewrites to a well-known key before comparing requirements (pods', NodePools',
volumes' topology): core's beta labels and the provider's EBS CSI zone key."""

# The default release's sets, for code that does not carry a release.
WELL_KNOWN_LABELS = WELL_KNOWN_BY_RELEASE[DEFAULT_RELEASE]
NORMALIZED_LABELS = NORMALIZED_BY_RELEASE[DEFAULT_RELEASE]

# Values Karpenter knows for these keys (WellKnownValuesForRequirements).
KNOWN_VALUES: Mapping[str, frozenset[str]] = {
    CAPACITY_TYPE: frozenset({CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT, CAPACITY_TYPE_RESERVED}),
    INSTANCE_TENANCY: frozenset({"default", "dedicated"}),
}


def _release(release: str | None) -> str:
    return release if release is not None and release in WELL_KNOWN_BY_RELEASE else DEFAULT_RELEASE


def well_known(release: str | None = None) -> frozenset[str]:
    """WellKnownLabels of `release` (the default release when None or unknown)."""
    return WELL_KNOWN_BY_RELEASE[_release(release)]


def normalize(key: str, release: str | None = None) -> str:
    """The key Karpenter compares `key` as (NormalizedLabels): e.g. the EBS CSI zone is the zone."""
    return NORMALIZED_BY_RELEASE[_release(release)].get(key, key)


# --- requirements and taints -------------------------------------------------------------------

IN, NOT_IN, EXISTS, DOES_NOT_EXIST = "In", "NotIn", "Exists", "DoesNotExist"
GT, LT, GTE, LTE = "Gt", "Lt", "Gte", "Lte"
POD_OPERATORS = frozenset({IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GT, LT})
"""core/v1 NodeSelectorOperator."""
NODEPOOL_OPERATORS = POD_OPERATORS | {GTE, LTE}
"""The NodePool/NodeClaim/NodeOverlay CRD's requirement operators."""
NUMERIC_OPERATORS = frozenset({GT, LT, GTE, LTE})

NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE = "NoSchedule", "PreferNoSchedule", "NoExecute"
EFFECTS = frozenset({NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE})
TOLERATION_OPERATORS = frozenset({"", "Equal", "Exists"})

INT64_MAX = 2**63 - 1


def int64_value(text: str) -> str | None:
    """Gt/Lt take one non-negative integer that fits an int64 (strconv.Atoi on 64-bit)."""
    if not re2.fullmatch(r"[0-9]+", text) or int(text) > INT64_MAX:
        return f"{text!r} is not a non-negative integer within int64"
    return None


def duplicate_taints(taints: Iterable[tuple[str, str]], startup_taints: Iterable[tuple[str, str]]) -> list[str]:
    """Key/effect pairs that appear twice across `taints` and `startupTaints` (validateTaints)."""
    seen: set[tuple[str, str]] = set()
    duplicates = []
    for pair in [*taints, *startup_taints]:
        if pair in seen:
            duplicates.append(f"{pair[0]}:{pair[1]}")
        seen.add(pair)
    return duplicates


def known_values(key: str, values: Iterable[str], min_values: int | None = None) -> str | None:
    """Karpenter's validateWellKnownValues for a key with a known set (capacity type, tenancy),
    which the caller applies under operator In only: refused when no value is known, or fewer
    known values than minValues; unknown values beside a known one are accepted (Karpenter logs
    them and goes on with the known ones)."""
    known = KNOWN_VALUES.get(key)
    if known is None:
        return None
    values = list(values)
    valid = [v for v in values if v in known]
    if not valid:
        return f"{', '.join(map(repr, values))} not valid for {key}; use {', '.join(sorted(known))}"
    if min_values is not None and len(valid) < min_values:
        return (f"minValues {min_values} needs as many values Karpenter knows for {key} "
                f"({', '.join(sorted(known))}); only {', '.join(map(repr, valid))} of these")
    return None


# --- label keys and values (apimachinery) ------------------------------------------------------

# Every pattern is matched whole (fullmatch), never with Python's `re` `$`, which would accept
# "batch-jobs\n" that the API server refuses.
_DNS_SUBDOMAIN = re2.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME = re2.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_DNS_LABEL = re2.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def check_label_key(key: str) -> str:
    """The key, or ValueError why it is not a label key (IsQualifiedName)."""
    prefix, _, name = key.rpartition("/")
    if "/" in prefix:
        raise ValueError(f"{key!r} is not a valid label key: at most one '/' is allowed")
    if "/" in key and not prefix:
        raise ValueError(f"{key!r} is not a valid label key: the prefix before '/' is empty")
    if prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        raise ValueError(f"{key!r} is not a valid label key: prefix {prefix!r} must be a lower-case DNS subdomain")
    if not name or len(name) > 63 or not _NAME.fullmatch(name):
        raise ValueError(
            f"{key!r} is not a valid label key: name part must be 1-63 characters of [A-Za-z0-9-_.], "
            "starting and ending alphanumeric"
        )
    return key


def check_label_value(value: str) -> str:
    """The value, or ValueError why it is not a label value (IsValidLabelValue)."""
    if value == "":
        return value
    if len(value) > 63 or not _NAME.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a valid label value: at most 63 characters of [A-Za-z0-9-_.], "
            "starting and ending alphanumeric"
        )
    return value


def check_dns_label(value: str) -> str:
    """The value, or ValueError why it is not an RFC 1123 label (IsDNS1123Label)."""
    if len(value) > 63 or not _DNS_LABEL.fullmatch(value):
        raise ValueError(f"{value!r} is not a valid name: lower-case letters, digits and '-', at most 63 characters")
    return value


def qualified_name(key: str) -> str | None:
    """validation.IsQualifiedName: an optional DNS-subdomain prefix and a 1-63 character name."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.fullmatch(prefix)):
        return f"{key!r}: prefix must be a lower-case DNS subdomain of at most 253 characters"
    if not name or len(name) > 63 or not _NAME.fullmatch(name):
        return f"{key!r}: name must be 1-63 characters of [A-Za-z0-9-_.], starting and ending alphanumeric"
    return None


# --- which keys a NodePool may use -------------------------------------------------------------

def _domain(key: str) -> str:
    return key.split("/", 1)[0] if "/" in key else ""


def _in_domain(domain: str, parent: str) -> bool:
    return domain == parent or domain.endswith("." + parent)


def restricted_label(key: str, release: str | None = None) -> str | None:
    """Why Karpenter refuses `key` as a NodePool label or requirement key, or None: the CRD's CEL
    rules (never karpenter.sh/nodepool) and the runtime IsRestrictedLabel (well-known labels pass;
    the karpenter.sh and karpenter.k8s.aws domains and kubernetes.io/hostname are refused)."""
    domain = _domain(key)
    known = well_known(release)
    if key == NODEPOOL:
        return 'label "karpenter.sh/nodepool" is restricted (Karpenter sets it)'
    if _in_domain(domain, "karpenter.sh") and key not in known:
        return 'label domain "karpenter.sh" is restricted (only karpenter.sh/capacity-type may be used)'
    if key in RESTRICTED_LABELS:
        return f'label "{key}" is restricted'
    if _in_domain(domain, "karpenter.k8s.aws") and key not in known:
        return (f'label domain "karpenter.k8s.aws" is restricted to the well-known instance labels '
                f'(e.g. instance-family; {key} is not one in Karpenter {_release(release)})')
    return None


# Labels kubelet accepts in the kubernetes.io / k8s.io domains (kubeletLabels, kubeletLabelNamespaces).
KUBELET_LABELS = frozenset({
    HOSTNAME, ZONE, REGION, "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type", INSTANCE_TYPE, "beta.kubernetes.io/os", "beta.kubernetes.io/arch", OS, ARCH,
    WINDOWS_BUILD,
})
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")


def kubelet_refuses(key: str) -> str | None:
    """Why kubelet would refuse `key` as a node label (the node would never register), or None."""
    domain = _domain(key)
    if not (_in_domain(domain, "kubernetes.io") or _in_domain(domain, "k8s.io")):
        return None
    if key in KUBELET_LABELS or any(_in_domain(domain, ns) for ns in KUBELET_LABEL_NAMESPACES):
        return None
    return (f"label {key!r} is in the kubernetes.io/k8s.io domain, which kubelet refuses as a node label "
            f"(only its well-known labels and the node.kubernetes.io and kubelet.kubernetes.io namespaces)")
