"""Whether a NodePool's declared largest pod (kubefacts.platform.LARGEST_POD_ANNOTATION) fits an
instance type: the one rule `tune` keeps and the policy pack's `nodepool-fits-largest-pod` judges
by (through the package's public `largest_pod_shortfall`), so both give one verdict.

A type holds the pod when, for every judged resource the pod requests, the request is at most
the type's allocatable (capacity less kube-reserved, system-reserved and the eviction threshold,
as the catalog computes it; Karpenter's `resources.Fits` in pkg/utils/resources/resources.go,
against InstanceType.Allocatable() in pkg/cloudprovider/types.go). DaemonSet overhead is not
subtracted: the pack judges the NodePool object alone, which names no DaemonSet.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal

# The resources the catalog knows per instance type; a request for another one (hugepages, a
# device plugin's resource) cannot be judged offline and is left out of the verdict.
LARGEST_POD_RESOURCES = ("cpu", "memory", "pods", "ephemeral-storage", "nvidia.com/gpu", "amd.com/gpu",
                    "habana.ai/gaudi", "aws.amazon.com/neuron")


def largest_pod_shortfall(requests: Mapping[str, Decimal | int], allocatable: Mapping[str, Decimal | int]) -> list[str]:
    """The judged resources `requests` asks more of than `allocatable` has (absent counts as 0),
    in the order requested; [] when the type holds the pod. Both in the same units."""
    return [name for name, wanted in requests.items()
            if name in LARGEST_POD_RESOURCES and wanted > allocatable.get(name, 0)]


def holds_largest_pod(requests: Mapping[str, Decimal | int], allocatables: Iterable[Mapping[str, Decimal | int]]) -> bool:
    """At least one of the types (their allocatable) holds the pod; True when nothing is declared."""
    return not requests or any(not largest_pod_shortfall(requests, a) for a in allocatables)
