"""EC2 instance-type facts: the catalog format of shared/data/ec2-instance-types.json.

A Catalog holds raw facts (vCPU, memory, ENIs, prices, ...) and turns them into scheduler
InstanceTypes per EC2NodeClass (see instancetypes.py). Nothing here reads files.
"""
from __future__ import annotations

import math

from dataclasses import dataclass, field
import re

from ..errors import InputError
from ..models import Offering

# Spot prices are not available offline. The shared catalog carries one real sample (m5.large,
# us-east-1, 2021-01-08..02-09): the mean spot price was 57.9% below on-demand. We apply that
# discount to every type and mark such offerings `price_is_estimate`.
DEFAULT_SPOT_DISCOUNT = 0.579
DEFAULT_REGION = "us-east-1"
DEFAULT_ZONES = ("us-east-1a", "us-east-1b", "us-east-1c")
CAPACITY_TYPES = ("on-demand", "spot", "reserved")
_SCHEME = re.compile(r"(^[a-z]+)(-[0-9]+tb)?([0-9]+).*\.")


@dataclass(frozen=True)
class TypeFacts:
    name: str
    vcpu: int
    memory_mib: int
    arch: str = "amd64"
    cpu_manufacturer: str | None = None
    gpus: int = 0
    gpu_manufacturer: str | None = None
    gpu_name: str | None = None
    gpu_memory_mib: int = 0
    accelerators: int = 0
    accelerator_manufacturer: str | None = None
    accelerator_name: str | None = None
    max_pods: int | None = None
    max_enis: int | None = None
    ipv4_per_eni: int | None = None
    local_nvme_gb: int = 0
    network_bandwidth_mbps: int | None = None
    category: str = ""
    family: str = ""
    generation: int | None = None
    size: str = ""
    hypervisor: str | None = None
    bare_metal: bool = False
    price_od_usd_hour: float | None = None
    offerings: tuple | None = None  # models.Offering: explicit offerings replace the generated ones
    # (resource, count): extended resources types.go advertises (pod-eni, efa, neuron, neuroncore, gaudi)
    extended_resources: tuple = ()
    extra_labels: tuple = ()  # (label, value) from DescribeInstanceTypes the catalog lacks (see extended.py)

    def eni_limited_pods(self) -> int:
        """max ENIs x (IPv4 per ENI - 1) + 2, the VPC CNI limit (ENILimitedPods with no reserved ENIs)."""
        if self.max_enis and self.ipv4_per_eni:
            return self.max_enis * (self.ipv4_per_eni - 1) + 2
        return self.max_pods if self.max_pods is not None else 110


@dataclass
class Catalog:
    types: list
    region: str = DEFAULT_REGION
    sources: list = field(default_factory=list)
    spot_reference: dict | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    def instance_types(self, nodeclass, zones=DEFAULT_ZONES, region: str | None = None,
                       spot_discount: float = DEFAULT_SPOT_DISCOUNT) -> list:
        """Scheduler InstanceTypes for a node class (cached: many NodePools share a class)."""
        from .instancetypes import build_instance_types
        key = (nodeclass, tuple(zones), region or self.region, spot_discount)
        if key not in self._cache:
            self._cache[key] = build_instance_types(self.types, nodeclass, tuple(zones), region or self.region, spot_discount)
        return self._cache[key]


def _opt(value, cast):
    return None if value is None else cast(value)


def facts_from_dict(item: dict, where: str) -> TypeFacts:
    """One entry of `instance_types`; raises InputError naming the entry and field."""
    def fail(path: str, message: str):
        return InputError(message, origin=where, path=path)

    def price(value, path: str) -> float:
        # JSON's NaN/Infinity and negative prices would make every plan "cheaper" (or NaN).
        number = float(value)
        if not math.isfinite(number) or number < 0:
            raise fail(path, f"price {value!r} must be a finite number of USD per hour, zero or more")
        return number

    if not isinstance(item, dict):
        raise fail("", "expected a mapping")
    for required in ("name", "vcpu", "memory_mib"):
        if item.get(required) in (None, ""):
            raise fail(required, "missing")
    name = str(item["name"])
    family, _, size = name.partition(".")
    match = _SCHEME.match(name)
    try:
        offerings: tuple[Offering, ...] | None = None
        if item.get("offerings") is not None:
            listed: list[Offering] = []
            for i, o in enumerate(item["offerings"]):
                if not isinstance(o, dict) or not o.get("zone") or o.get("capacity_type") not in CAPACITY_TYPES:
                    raise fail(f"offerings[{i}]", "needs zone, capacity_type (on-demand|spot|reserved) and price")
                listed.append(Offering(str(o["zone"]), o["capacity_type"], price(o["price"], f"offerings[{i}].price"),
                                       price_is_estimate=bool(o.get("price_is_estimate", False))))
            offerings = tuple(listed)
        return TypeFacts(
            name=name, vcpu=int(item["vcpu"]), memory_mib=int(item["memory_mib"]),
            arch=str(item.get("arch") or "amd64"), cpu_manufacturer=item.get("cpu_manufacturer"),
            gpus=int(item.get("gpus") or 0), gpu_manufacturer=item.get("gpu_manufacturer"),
            gpu_name=item.get("gpu_name"), gpu_memory_mib=int(item.get("gpu_memory_mib") or 0),
            accelerators=int(item.get("accelerators") or 0),
            accelerator_manufacturer=item.get("accelerator_manufacturer"), accelerator_name=item.get("accelerator_name"),
            max_pods=_opt(item.get("max_pods"), int), max_enis=_opt(item.get("max_enis"), int),
            ipv4_per_eni=_opt(item.get("ipv4_per_eni"), int), local_nvme_gb=int(item.get("local_nvme_gb") or 0),
            network_bandwidth_mbps=_opt(item.get("network_bandwidth_mbps"), int),
            category=str(item.get("category") or (match.group(1) if match else "")),
            family=str(item.get("family") or family),
            generation=_opt(item.get("generation") if item.get("generation") is not None
                            else (match.group(3) if match else None), int),
            size=str(item.get("size") or size), hypervisor=item.get("hypervisor"),
            bare_metal=bool(item.get("bare_metal", False)),
            price_od_usd_hour=_opt(item.get("price_od_usd_hour"), lambda v: price(v, "price_od_usd_hour")),
            offerings=offerings,
            extended_resources=tuple(sorted((str(k), int(v)) for k, v in (item.get("extended_resources") or {}).items())),
            extra_labels=tuple(sorted((str(k), str(v)) for k, v in (item.get("labels") or {}).items())),
        )
    except InputError:
        raise
    except (TypeError, ValueError) as exc:
        raise fail("", f"invalid field value: {exc}") from None


def catalog_from_dict(data: dict, origin: str = "catalog") -> Catalog:
    if not isinstance(data, dict) or not isinstance(data.get("instance_types"), list):
        raise InputError("expected a mapping with an `instance_types` list", origin=origin)
    types = [facts_from_dict(item, f"{origin}: instance_types[{i}]") for i, item in enumerate(data["instance_types"])]
    return Catalog(types=types, region=str(data.get("region") or DEFAULT_REGION),
                   sources=list(data.get("source") or []), spot_reference=data.get("spot_reference"))
