"""Which EC2 instance types a NodePool can get, and what each can allocate: an adapter over the
provisioner package (issue #6), so the pack and `make simulate` agree.

- the catalog is the one the provisioner ships (`provisioner.catalog.shipped_catalog()`, a copy
  of ../shared/data/ec2-instance-types.json);
- NodePool and EC2NodeClass objects are judged whole by kubefacts.validation (`judge`), then
  become models through the provisioner's public `pool_instance_types` (requirement semantics);
- instance types per EC2NodeClass come from `Catalog.instance_types` (Karpenter's labels,
  capacity, kube-reserved, system-reserved and eviction thresholds);
- a pool's candidate types are those the scheduler's Template keeps (`provisioner.pool_instance_types`,
  the package's public API)
  (requirements compatible, an offering in an allowed zone and capacity type), as the
  simulator's scheduler sees them. minValues is checked separately to say which key falls short.

Offline, offerings exist for every priced type in the zones the pool names (the catalog has
no per-zone availability), so "no zone has it" cannot be judged and is not claimed.
"""

from __future__ import annotations

import difflib
import functools
import json
from dataclasses import dataclass
from decimal import Decimal
from types import ModuleType
from typing import Any, Iterable, Mapping

ZONE = "topology.kubernetes.io/zone"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
GPU_COUNT = "karpenter.k8s.aws/instance-gpu-count"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
INSTANCE_FAMILY = "karpenter.k8s.aws/instance-family"
ACCELERATOR_COUNT = "karpenter.k8s.aws/instance-accelerator-count"
DIMENSIONS = ("cpu", "memory", "pods")


class CatalogUnavailable(RuntimeError):
    """The provisioner package (and with it the catalog) cannot be imported."""


class InvalidObject(ValueError):
    """The NodePool or EC2NodeClass is not valid for Karpenter: kubefacts.validation's words
    (the same verdict and words as the config, the importer and the provisioner)."""


def judge(*objects: Mapping[str, Any] | None, release: str | None = None) -> None:
    """Raises InvalidObject with the first refusal of the one validator (CRD schema, CEL,
    Karpenter's runtime checks) among whole stack objects; None entries are skipped. `release`:
    the Karpenter release the stack pins (policies.helm.karpenter_version; None: the newest)."""
    from kubefacts.validation import validate

    for obj in objects:
        if obj is not None:
            errors = validate(_integral(obj), release=release)
            if errors:
                raise InvalidObject(errors[0].words)


@dataclass(frozen=True)
class Candidate:
    """One instance type a NodePool could launch."""

    name: str
    allocatable: Mapping[str, Decimal]
    """Base units (cores, bytes, counts) after Karpenter's reservations; no DaemonSet overhead."""
    label_values: Mapping[str, frozenset[str]]

    @property
    def accelerated(self) -> bool:
        return bool(self.label_values.get(GPU_COUNT)) or bool(self.label_values.get(ACCELERATOR_COUNT))


@dataclass(frozen=True)
class PoolTypes:
    candidates: tuple[Candidate, ...]
    min_values_error: str | None


def _provisioner() -> ModuleType:
    try:
        import provisioner
    except ImportError as err:  # pragma: no cover - the provisioner ships in this repository
        raise CatalogUnavailable(f"the provisioner package is not importable ({err}); cannot judge instance types") from err
    return provisioner


def _integral(value: Any) -> Any:
    """The engine sends numbers as doubles; Kubernetes objects hold integers."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {k: _integral(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_integral(v) for v in value]
    return value


def pool_types(nodepool: Mapping[str, Any], nodeclass: Mapping[str, Any] | None) -> PoolTypes:
    """Candidate instance types of a NodePool object (with its EC2NodeClass object when the stack
    declares it). Raises InvalidObject when the loader rejects an object.

    Cached by what decides the answer, not by name: the pool's template spec (requirements,
    nodeClassRef) and the node class spec. Many pools of a stack share a preset, so they share
    one entry."""
    pool_spec = ((nodepool.get("spec") or {}).get("template") or {}).get("spec") if isinstance(nodepool, Mapping) else None
    class_spec = nodeclass.get("spec") if isinstance(nodeclass, Mapping) else None
    key = json.dumps([_integral(pool_spec), _integral(class_spec),
                      (nodeclass.get("metadata") or {}).get("name") if isinstance(nodeclass, Mapping) else None],
                     sort_keys=True, default=str)
    return _pool_types(key)


@functools.lru_cache(maxsize=256)
def _pool_types(key: str) -> PoolTypes:
    provisioner = _provisioner()
    pool_spec, class_spec, class_name = json.loads(key)
    nodepool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "pool"},
                "spec": {"template": {"spec": pool_spec}}}
    nodeclass = None if class_name is None else {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
                                                 "metadata": {"name": class_name}, "spec": class_spec}
    try:
        found = provisioner.pool_instance_types(nodepool, nodeclass, DIMENSIONS)
    except provisioner.InputError as err:
        raise InvalidObject(str(err)) from None
    return PoolTypes(tuple(_candidate(it) for it in found.types), found.min_values_error)


_CANDIDATES: dict[int, tuple[Any, Candidate]] = {}


def _candidate(instance_type: Any) -> Candidate:
    """One Candidate per catalog instance type (pools share the catalog's type objects); the
    entry holds the type, so its id cannot be reused while cached."""
    entry = _CANDIDATES.get(id(instance_type))
    if entry is None or entry[0] is not instance_type:
        it = instance_type
        candidate = Candidate(it.name, {k: Decimal(v) / 1000 for k, v in it.allocatable.items()},
                              {k: frozenset(it.requirements.get(k).values) for k in it.requirements.keys()})
        entry = _CANDIDATES[id(it)] = (it, candidate)
    return entry[1]


def largest_pod_shortfall(requests: Mapping[str, Decimal], candidate: Candidate) -> list[str]:
    """The resources of `requests` (base units) the candidate cannot hold: the provisioner's
    rule, the one `tune` keeps (`provisioner.largest_pod_shortfall`)."""
    return list(_provisioner().largest_pod_shortfall(requests, candidate.allocatable))


def largest_pod_judged(requests: Mapping[str, Decimal]) -> dict[str, Decimal]:
    """The requests the catalog can judge (the others are left out of the verdict)."""
    judged = _provisioner().LARGEST_POD_RESOURCES
    return {name: value for name, value in requests.items() if name in judged}


def admits_value(requirements: Iterable[Mapping[str, Any]], key: str, value: str, default: bool) -> bool:
    """Whether every requirement on `key` admits `value` (`default` when none mentions the key)."""
    admits = _provisioner().requirement_admits
    on_key = [r for r in requirements if isinstance(r, Mapping) and r.get("key") == key]
    if not on_key:
        return default
    return all(admits(key, str(r.get("operator")), [str(v) for v in r.get("values") or []], value) for r in on_key)


def short_list(candidates: Iterable[Candidate], limit: int = 5) -> str:
    names = [c.name for c in candidates]
    head = ", ".join(names[:limit])
    return head + (f" and {len(names) - limit} more" if len(names) > limit else "")


@functools.lru_cache(maxsize=1)
def _catalog_names() -> tuple[frozenset[str], frozenset[str]]:
    types = _provisioner().shipped_catalog().types
    return frozenset(t.name for t in types), frozenset(t.name.partition(".")[0] for t in types)


def unknown_names(requirements: Iterable[Mapping[str, Any]]) -> list[str]:
    """For each instance type or family an `In` requirement names that the catalog does not have:
    `'m5.larg' is not an instance type of the catalog; did you mean 'm5.large'?`."""
    types, families = _catalog_names()
    found = []
    for requirement in requirements:
        key = requirement.get("key")
        names: dict[str | None, tuple[frozenset[str] | None, str]] = {
            INSTANCE_TYPE: (types, "instance type"), INSTANCE_FAMILY: (families, "instance family")}
        known, what = names.get(key, (None, ""))
        if known is None or requirement.get("operator") != "In":
            continue
        for value in requirement.get("values") or []:
            if isinstance(value, str) and value not in known:
                close = difflib.get_close_matches(value, sorted(known), n=1, cutoff=0.6)
                found.append(f"{value!r} is not an {what} of the catalog" + (f"; did you mean {close[0]!r}?" if close else ""))
    return found
