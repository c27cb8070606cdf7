"""A live catalog from AWS, for the in-cluster advisor.

EC2 DescribeInstanceTypes (facts), DescribeInstanceTypeOfferings (zones), the Pricing API's
GetProducts (on-demand Linux prices) and DescribeSpotPriceHistory (current spot prices). boto3 is
imported only when no clients are passed in, so the offline simulator does not need it
(`pip install karpenter-platform-provisioner[aws]`). Spot offerings without a published price fall
back to the configured discount and are marked as estimates.
"""
from __future__ import annotations

from datetime import datetime, timezone
import json
import re

from ..models import Offering
from .facts import DEFAULT_SPOT_DISCOUNT, Catalog, TypeFacts

_SCHEME = re.compile(r"(^[a-z]+)(-[0-9]+tb)?([0-9]+).*\.")
_ARCH = {"x86_64": "amd64", "arm64": "arm64"}
# The Pricing API is served from a few regions only; us-east-1 answers for every region.
PRICING_REGION = "us-east-1"


def _kebab(value) -> str | None:
    return None if value is None else str(value).lower().replace(" ", "-")


def _pages(call, key: str, **kwargs):
    """Follow NextToken; works with boto3 clients and with test fakes alike."""
    token = None
    while True:
        page = call(**kwargs, **({"NextToken": token} if token else {}))
        yield from page.get(key, [])
        token = page.get("NextToken")
        if not token:
            return


def facts_from_info(info: dict) -> tuple[TypeFacts, set]:
    """One DescribeInstanceTypes entry as catalog facts, plus its supported usage classes."""
    name = info["InstanceType"]
    family, _, size = name.partition(".")
    match = _SCHEME.match(name)
    processor = info.get("ProcessorInfo", {})
    arch = next((_ARCH[a] for a in processor.get("SupportedArchitectures", []) if a in _ARCH), "amd64")
    gpus = info.get("GpuInfo", {}).get("Gpus", [])
    gpu = gpus[0] if len(gpus) == 1 else {}
    neuron = info.get("NeuronInfo", {}).get("NeuronDevices", [])
    accelerators = info.get("InferenceAcceleratorInfo", {}).get("Accelerators", [])
    accelerator, accelerator_maker = ({}, None)
    if len(neuron) == 1:
        accelerator, accelerator_maker = neuron[0], "aws"
    elif len(accelerators) == 1:
        accelerator, accelerator_maker = accelerators[0], _kebab(accelerators[0].get("Manufacturer"))
    network = info.get("NetworkInfo", {})
    cards = network.get("NetworkCards", [])
    default_card = network.get("DefaultNetworkCardIndex", 0)
    max_enis = cards[default_card].get("MaximumNetworkInterfaces") if len(cards) > default_card else \
        network.get("MaximumNetworkInterfaces")
    storage = info.get("InstanceStorageInfo", {})
    nvme = storage.get("TotalSizeInGB", 0) if storage and storage.get("NvmeSupport") != "unsupported" else 0
    facts = TypeFacts(
        name=name, vcpu=int(info["VCpuInfo"]["DefaultVCpus"]), memory_mib=int(info["MemoryInfo"]["SizeInMiB"]),
        arch=arch, cpu_manufacturer=_kebab(processor.get("Manufacturer")),
        gpus=int(gpu.get("Count", 0)), gpu_manufacturer=_kebab(gpu.get("Manufacturer")), gpu_name=_kebab(gpu.get("Name")),
        gpu_memory_mib=int(gpu.get("MemoryInfo", {}).get("SizeInMiB", 0)),
        accelerators=int(accelerator.get("Count", 0)), accelerator_manufacturer=accelerator_maker,
        accelerator_name=_kebab(accelerator.get("Name")),
        max_enis=max_enis, ipv4_per_eni=network.get("Ipv4AddressesPerInterface"), local_nvme_gb=int(nvme or 0),
        category=match.group(1) if match else family, family=family, size=size,
        generation=int(match.group(3)) if match else None, hypervisor=info.get("Hypervisor"),
        bare_metal=bool(info.get("BareMetal", False)),
    )
    return facts, set(info.get("SupportedUsageClasses", ["on-demand", "spot"]))


def on_demand_prices(pricing, region: str) -> dict:
    filters = [{"Type": "TERM_MATCH", "Field": field, "Value": value} for field, value in (
        ("regionCode", region), ("operatingSystem", "Linux"), ("tenancy", "Shared"), ("preInstalledSw", "NA"),
        ("capacitystatus", "Used"), ("productFamily", "Compute Instance"))]
    prices = {}
    for raw in _pages(pricing.get_products, "PriceList", ServiceCode="AmazonEC2", Filters=filters):
        item = json.loads(raw) if isinstance(raw, str) else raw
        instance_type = item.get("product", {}).get("attributes", {}).get("instanceType")
        for term in item.get("terms", {}).get("OnDemand", {}).values():
            for dimension in term.get("priceDimensions", {}).values():
                usd = float(dimension.get("pricePerUnit", {}).get("USD", 0) or 0)
                if instance_type and usd > 0:
                    prices[instance_type] = usd
    return prices


def spot_prices(ec2, now: datetime | None = None) -> dict:
    """The latest Linux spot price per (instance type, zone)."""
    latest: dict = {}
    start = now or datetime.now(timezone.utc)
    for record in _pages(ec2.describe_spot_price_history, "SpotPriceHistory", ProductDescriptions=["Linux/UNIX"],
                         StartTime=start):
        key = (record["InstanceType"], record["AvailabilityZone"])
        stamp = record.get("Timestamp")
        if key not in latest or (stamp is not None and latest[key][0] is not None and stamp > latest[key][0]):
            latest[key] = (stamp, float(record["SpotPrice"]))
    return {key: price for key, (_, price) in latest.items()}


def zones_by_type(ec2) -> dict:
    zones: dict = {}
    for item in _pages(ec2.describe_instance_type_offerings, "InstanceTypeOfferings", LocationType="availability-zone"):
        zones.setdefault(item["InstanceType"], set()).add(item["Location"])
    return zones


def load_live_catalog(region: str, *, ec2=None, pricing=None, session=None, zones=None,
                      spot_discount: float = DEFAULT_SPOT_DISCOUNT, now: datetime | None = None) -> Catalog:
    """A Catalog for `region` from the AWS APIs (pass `ec2`/`pricing` clients to avoid importing boto3)."""
    if ec2 is None or pricing is None:
        import boto3  # noqa: PLC0415 - optional dependency, only needed in the cluster
        session = session or boto3.Session(region_name=region)
        ec2 = ec2 or session.client("ec2", region_name=region)
        pricing = pricing or session.client("pricing", region_name=PRICING_REGION)
    od = on_demand_prices(pricing, region)
    spot = spot_prices(ec2, now)
    offered = zones_by_type(ec2)
    wanted = set(zones) if zones else None
    types = []
    for info in _pages(ec2.describe_instance_types, "InstanceTypes"):
        facts, usage = facts_from_info(info)
        price = od.get(facts.name)
        offerings = []
        for zone in sorted(offered.get(facts.name, ())):
            if wanted is not None and zone not in wanted:
                continue
            if "on-demand" in usage and price is not None:
                offerings.append(Offering(zone, "on-demand", price))
            if "spot" in usage:
                if (facts.name, zone) in spot:
                    offerings.append(Offering(zone, "spot", spot[(facts.name, zone)]))
                elif price is not None:
                    offerings.append(Offering(zone, "spot", round(price * (1 - spot_discount), 6), price_is_estimate=True))
        types.append(TypeFacts(**{**facts.__dict__, "price_od_usd_hour": price, "offerings": tuple(offerings)}))
    sources = [f"aws:ec2:DescribeInstanceTypes@{region}", f"aws:ec2:DescribeInstanceTypeOfferings@{region}",
               f"aws:pricing:GetProducts(AmazonEC2, {region})", f"aws:ec2:DescribeSpotPriceHistory@{region}"]
    return Catalog(types=types, region=region, sources=sources)
