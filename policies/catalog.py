"""The EC2 instance-type catalog as policies need it: which types a NodePool's requirements
admit, and roughly what a node of each type can allocate to pods.

Adapter over the provisioner package (issue #6): the catalog file is the one it ships
(`provisioner/data/ec2-instance-types.json`; `../shared/data/` beside the repository is the
fallback while that is not there), and requirement matching uses
`provisioner.scheduling.requirements.Requirement` (Karpenter's set semantics) when it can be
imported, else the small equivalent below. Only keys that are properties of an instance type
are matched; zone, capacity type, OS and custom labels say nothing about which types exist.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Iterable, Mapping

from .units import quantity

REPO_DIR = Path(__file__).resolve().parents[1]
CATALOG_FILE = "ec2-instance-types.json"
SEARCH_PATHS = (
    REPO_DIR / "provisioner" / "data" / CATALOG_FILE,
    REPO_DIR.parent / "shared" / "data" / CATALOG_FILE,
)

_AWS = "karpenter.k8s.aws/"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ARCH = "kubernetes.io/arch"
GPU_COUNT = _AWS + "instance-gpu-count"
ACCELERATOR_COUNT = _AWS + "instance-accelerator-count"

# Karpenter's defaults (karpenter-provider-aws pkg/providers/instancetype/types.go).
VM_MEMORY_OVERHEAD_PERCENT = Decimal("0.075")
EVICTION_HARD_MEMORY = 100 * 2**20
_MI = 2**20


class CatalogMissing(RuntimeError):
    pass


@dataclass(frozen=True)
class InstanceType:
    name: str
    labels: Mapping[str, str]
    facts: Mapping[str, Any]

    @property
    def has_accelerator(self) -> bool:
        return bool(self.facts.get("gpus")) or bool(self.facts.get("accelerators"))

    def capacity(self) -> dict[str, Decimal]:
        facts = self.facts
        memory = Decimal(facts["memory_mib"]) * _MI
        capacity = {
            "cpu": Decimal(facts["vcpu"]),
            "memory": memory - Decimal(math.ceil(facts["memory_mib"] * VM_MEMORY_OVERHEAD_PERCENT)) * _MI,
            "pods": Decimal(facts["max_pods"] or 110),
        }
        gpu_resource = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu", "habana": "habana.ai/gaudi"}
        if facts.get("gpus") and facts.get("gpu_manufacturer") in gpu_resource:
            capacity[gpu_resource[facts["gpu_manufacturer"]]] = Decimal(facts["gpus"])
        if facts.get("accelerators") and facts.get("accelerator_manufacturer") == "aws":
            capacity["aws.amazon.com/neuron"] = Decimal(facts["accelerators"])
        return capacity

    def allocatable(self, kubelet: Mapping[str, Any] | None = None) -> dict[str, Decimal]:
        """Capacity minus kube-reserved, system-reserved and the hard eviction threshold, as
        Karpenter computes them (kubelet overrides from the EC2NodeClass when given).
        DaemonSet overhead is not known here and is not subtracted."""
        kubelet = kubelet or {}
        capacity = self.capacity()
        max_pods = kubelet.get("maxPods")
        if isinstance(max_pods, (int, float)) and not isinstance(max_pods, bool) and max_pods > 0:
            capacity["pods"] = Decimal(int(max_pods))
        reserved = _kube_reserved(capacity["cpu"], capacity["pods"])
        for source in ("kubeReserved", "systemReserved"):
            overrides = kubelet.get(source)
            if isinstance(overrides, Mapping):
                for name, value in overrides.items():
                    try:
                        amount = quantity(value)
                    except ValueError:
                        continue
                    if source == "kubeReserved":
                        reserved[name] = amount
                    else:
                        reserved[name] = reserved.get(name, Decimal(0)) + amount
        reserved["memory"] = reserved.get("memory", Decimal(0)) + EVICTION_HARD_MEMORY
        return {name: value - reserved.get(name, Decimal(0)) for name, value in capacity.items()}


def _kube_reserved(cpus: Decimal, pods: Decimal) -> dict[str, Decimal]:
    milli = int(cpus * 1000)
    cpu_overhead = Decimal(0)
    for start, end, percentage in ((0, 1000, "0.06"), (1000, 2000, "0.01"), (2000, 4000, "0.005"),
                                   (4000, 1 << 31, "0.0025")):
        if milli >= start:
            span = (min(milli, end) - start)
            cpu_overhead += Decimal(int(span * Decimal(percentage))) / 1000
    return {"cpu": cpu_overhead, "memory": Decimal(11 * int(pods) + 255) * _MI}


def _labels(facts: Mapping[str, Any]) -> dict[str, str]:
    """The instance-type labels Karpenter puts on a node (those derivable from the catalog)."""
    labels = {
        INSTANCE_TYPE: facts["name"],
        ARCH: facts["arch"],
        _AWS + "instance-category": facts["category"],
        _AWS + "instance-family": facts["family"],
        _AWS + "instance-generation": str(facts["generation"]),
        _AWS + "instance-size": facts["size"],
        _AWS + "instance-cpu": str(facts["vcpu"]),
        _AWS + "instance-memory": str(facts["memory_mib"]),
    }
    optional = {
        _AWS + "instance-cpu-manufacturer": facts.get("cpu_manufacturer"),
        _AWS + "instance-hypervisor": facts.get("hypervisor"),
        _AWS + "instance-network-bandwidth": facts.get("network_bandwidth_mbps"),
        _AWS + "instance-local-nvme": facts.get("local_nvme_gb") or None,
    }
    if facts.get("gpus"):
        optional.update({
            _AWS + "instance-gpu-name": facts.get("gpu_name"),
            _AWS + "instance-gpu-manufacturer": facts.get("gpu_manufacturer"),
            GPU_COUNT: facts.get("gpus"),
            _AWS + "instance-gpu-memory": facts.get("gpu_memory_mib"),
        })
    if facts.get("accelerators"):
        optional.update({
            _AWS + "instance-accelerator-name": facts.get("accelerator_name"),
            _AWS + "instance-accelerator-manufacturer": facts.get("accelerator_manufacturer"),
            ACCELERATOR_COUNT: facts.get("accelerators"),
        })
    labels.update({k: str(v) for k, v in optional.items() if v is not None})
    return labels


# Keys a requirement can constrain that the catalog answers for.
INSTANCE_LABEL_KEYS = frozenset({
    INSTANCE_TYPE, ARCH, GPU_COUNT, ACCELERATOR_COUNT,
    *(_AWS + k for k in ("instance-category", "instance-family", "instance-generation", "instance-size",
                         "instance-cpu", "instance-memory", "instance-cpu-manufacturer", "instance-hypervisor",
                         "instance-network-bandwidth", "instance-local-nvme", "instance-gpu-name",
                         "instance-gpu-manufacturer", "instance-gpu-memory", "instance-accelerator-name",
                         "instance-accelerator-manufacturer")),
})
_ALIASES = {"beta.kubernetes.io/arch": ARCH, "beta.kubernetes.io/instance-type": INSTANCE_TYPE}


def catalog_path() -> Path:
    for path in SEARCH_PATHS:
        if path.exists():
            return path
    raise CatalogMissing("EC2 instance-type catalog not found (looked in "
                         + ", ".join(str(p) for p in SEARCH_PATHS) + ")")


@functools.lru_cache(maxsize=4)
def load(path: Path | None = None) -> tuple[InstanceType, ...]:
    document = json.loads((path or catalog_path()).read_text())
    return tuple(InstanceType(f["name"], _labels(f), f) for f in document["instance_types"]
                 if f.get("vcpu") and f.get("memory_mib"))


# --- requirement matching ---------------------------------------------------------------------

class _Requirement:
    """NodeSelectorRequirement semantics (fallback while provisioner's is not importable)."""

    def __init__(self, operator: str, values: Iterable[str]):
        self.operator, self.values = operator, [str(v) for v in values]

    def matches(self, value: str | None) -> bool:
        op, values = self.operator, self.values
        if op == "In":
            return value is not None and value in values
        if op == "NotIn":
            return value is None or value not in values
        if op == "Exists":
            return value is not None
        if op == "DoesNotExist":
            return value is None
        if op in ("Gt", "Lt", "Gte", "Lte"):
            try:
                number, bound = int(value), int(values[0])  # type: ignore[arg-type]
            except (TypeError, ValueError, IndexError):
                return False
            return {"Gt": number > bound, "Lt": number < bound, "Gte": number >= bound, "Lte": number <= bound}[op]
        raise ValueError(f"unknown operator {op!r}")


def _matcher(operator: str, values: Iterable[str]):
    """A predicate over a label value (None: the type does not have the label)."""
    try:
        from provisioner.scheduling.requirements import Requirement  # the provisioner's semantics
    except ImportError:  # pragma: no cover - exercised only where the provisioner is absent
        requirement = _Requirement(operator, values)
        return requirement.matches
    theirs = Requirement.of("k", operator, list(values))
    negative = theirs.operator() in ("NotIn", "DoesNotExist")
    return lambda value: negative if value is None else theirs.has(value)


def matcher_source() -> str:
    try:
        import provisioner.scheduling.requirements  # noqa: F401
    except ImportError:  # pragma: no cover
        return "policies.catalog fallback"
    return "provisioner.scheduling.requirements"


@dataclass(frozen=True)
class Selection:
    """The catalog types a list of requirements admits."""

    types: tuple[InstanceType, ...]
    ignored_keys: tuple[str, ...]
    """Requirement keys that do not describe instance types (zone, capacity type, custom labels...)."""


def admitted(requirements: Iterable[Mapping[str, Any]], catalog: Iterable[InstanceType] | None = None) -> Selection:
    """Instance types of the catalog every instance-type requirement admits. Raises ValueError
    on a malformed requirement."""
    requirements = list(requirements)
    if catalog is None:
        return _admitted_cached(json.dumps(requirements, sort_keys=True, default=str))
    return _admitted(requirements, tuple(catalog))


@functools.lru_cache(maxsize=512)
def _admitted_cached(key: str) -> Selection:
    return _admitted(json.loads(key), load())


def _admitted(requirements: list[Mapping[str, Any]], types: tuple[InstanceType, ...]) -> Selection:
    ignored: list[str] = []
    for requirement in requirements:
        key = _ALIASES.get(requirement.get("key"), requirement.get("key"))
        if key not in INSTANCE_LABEL_KEYS:
            ignored.append(str(key))
            continue
        match = _matcher(str(requirement.get("operator")), requirement.get("values") or [])
        types = tuple(t for t in types if match(t.labels.get(key)))
    return Selection(types, tuple(ignored))


def short_list(types: Iterable[InstanceType], limit: int = 5) -> str:
    names = [t.name for t in types]
    head = ", ".join(names[:limit])
    return head + (f" and {len(names) - limit} more" if len(names) > limit else "")
