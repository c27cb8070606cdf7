"""The EC2 catalog: Karpenter's allocatable formula and labels, offerings and spot estimates, the
--catalog format, NodeOverlays, and the live AWS loader against a fake client."""
import json
from datetime import datetime, timezone

import pytest

from provisioner import InputError, catalog_from_dict, load_catalog_file, shipped_catalog, simulate
from provisioner.catalog.aws import load_live_catalog
from provisioner.catalog.facts import DEFAULT_SPOT_DISCOUNT
from provisioner.models import KubeletConfig, NodeClass
from kubefacts.quantity import milli as parse
from provisioner.quantity import format_resources

from tests.provisioner.prov_builders import itype, nodeclass, nodepool, pod, req


def shipped(name, nodeclass_model=NodeClass("default")):
    return {t.name: t for t in shipped_catalog().instance_types(nodeclass_model)}[name]


# Expected values from Karpenter's generated docs (website/content/en/v1.14/reference/instance-types.md).
@pytest.mark.parametrize("name,expected", [
    ("m5.large", {"cpu": "1930m", "ephemeral-storage": "17Gi", "memory": "6903Mi", "pods": "29",
                  "vpc.amazonaws.com/pod-eni": "9"}),
    ("m7g.xlarge", {"cpu": "3920m", "ephemeral-storage": "17Gi", "memory": "14103Mi", "pods": "58",
                    "vpc.amazonaws.com/pod-eni": "18"}),
    ("t3.nano", {"cpu": "1930m", "ephemeral-storage": "17Gi", "memory": "74Mi", "pods": "4"}),
    ("p4d.24xlarge", {"cpu": "95690m", "ephemeral-storage": "17Gi", "memory": "1082712Mi", "nvidia.com/gpu": "8", "pods": "737",
                      "vpc.amazonaws.com/efa": "4", "vpc.amazonaws.com/pod-eni": "62"}),
    ("inf2.xlarge", {"aws.amazon.com/neuron": "1", "aws.amazon.com/neuroncore": "2", "cpu": "3920m",
                     "ephemeral-storage": "17Gi", "memory": "14162Mi", "pods": "58", "vpc.amazonaws.com/pod-eni": "18"}),
])
def test_shipped_allocatable_matches_karpenter_docs(name, expected):
    """types.go computeCapacity, including the extended resources (pod-eni of trunking-capable
    types, efa, neuron, neuroncore) that the docs list per type."""
    assert format_resources(shipped(name).allocatable) == expected


def test_shipped_catalog_keeps_its_sources():
    assert any("karpenter-provider-aws" in s for s in shipped_catalog().sources) and len(shipped_catalog().types) == 1371


def test_instance_type_carries_well_known_labels():
    reqs = shipped("g5.2xlarge").requirements
    expected = {"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "node.kubernetes.io/instance-type": "g5.2xlarge",
                "karpenter.k8s.aws/instance-category": "g", "karpenter.k8s.aws/instance-family": "g5",
                "karpenter.k8s.aws/instance-generation": "5", "karpenter.k8s.aws/instance-size": "2xlarge",
                "karpenter.k8s.aws/instance-cpu": "8", "karpenter.k8s.aws/instance-memory": "32768",
                "karpenter.k8s.aws/instance-gpu-count": "1", "karpenter.k8s.aws/instance-gpu-name": "a10g",
                "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia", "karpenter.k8s.aws/instance-hypervisor": "nitro",
                "karpenter.k8s.aws/instance-local-nvme": "450", "karpenter.k8s.aws/instance-cpu-manufacturer": "amd"}
    assert {k: reqs.get(k).any() for k in expected} == expected


def test_instance_type_without_gpu_has_gpu_labels_absent():
    assert shipped("m5.large").requirements.get("karpenter.k8s.aws/instance-gpu-count").operator() == "DoesNotExist"


def test_generated_offerings_cover_every_zone_with_estimated_spot():
    it = shipped("m5.large")
    spot = [o for o in it.offerings if o.capacity_type == "spot"]
    assert {o.zone for o in it.offerings} == {"us-east-1a", "us-east-1b", "us-east-1c"}
    assert len(spot) == 3 and all(o.price_is_estimate and o.price == round(0.096 * (1 - DEFAULT_SPOT_DISCOUNT), 6) for o in spot)


def test_on_demand_offerings_are_real_prices():
    assert {o.price for o in shipped("m5.large").offerings if o.capacity_type == "on-demand"} == {0.096}


def test_types_without_a_price_have_no_offerings():
    assert [o for t in shipped_catalog().types if t.price_od_usd_hour is None
            for o in shipped(t.name).offerings] == []


def test_kubelet_max_pods_caps_pods_and_not_memory_reservation():
    it = shipped("m5.large", NodeClass("x", kubelet=KubeletConfig(max_pods=110)))
    # AL2023 keeps sizing kube-reserved memory on the ENI-limited 29 pods
    assert format_resources(it.allocatable)["pods"] == "110" and format_resources(it.allocatable)["memory"] == "6903Mi"


def test_bottlerocket_sizes_memory_reservation_by_max_pods():
    it = shipped("m5.large", NodeClass("x", ami_family="Bottlerocket", kubelet=KubeletConfig(max_pods=110)))
    assert it.overhead["memory"] == parse(f"{11 * 110 + 255 + 100}Mi")


@pytest.mark.slow
def test_pods_per_core_limits_pods():
    it = shipped("m5.large", NodeClass("x", kubelet=KubeletConfig(pods_per_core=4)))
    assert it.allocatable["pods"] == 8000


def test_kube_reserved_and_eviction_overrides_apply():
    kubelet = KubeletConfig(kube_reserved=(("cpu", 500),), eviction_hard=(("memory.available", "10%"),))
    it = shipped("m5.large", NodeClass("x", kubelet=kubelet))
    ten_percent = -(-parse("7577Mi") // 1000 // 10) * 1000  # 10% of capacity memory, rounded up to a byte
    assert it.allocatable["cpu"] == 1500 and it.overhead["memory"] == parse("574Mi") + ten_percent


def test_root_volume_sets_ephemeral_storage():
    it = shipped("m5.large", NodeClass("x", root_volume=parse("100Gi")))
    assert format_resources(it.allocatable)["ephemeral-storage"] == "89Gi"


def test_nodeclass_subnet_zones_restrict_offerings():
    it = shipped("m5.large", NodeClass("x", zones=frozenset({"us-east-1b"})))
    assert {o.zone for o in it.offerings} == {"us-east-1b"}


def test_catalog_file_offerings_replace_generated_ones(tmp_path):
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps({"instance_types": [
        {"name": "m5.large", "vcpu": 2, "memory_mib": 8192, "max_pods": 29, "price_od_usd_hour": 0.096,
         "offerings": [{"zone": "eu-west-1a", "capacity_type": "spot", "price": 0.03}]}]}))
    result = simulate([nodepool(), nodeclass(), pod(cpu="1")], catalog=load_catalog_file(str(path)))
    claim = result.nodeclaims[0]
    assert (claim.zone, claim.capacity_type, claim.price_usd_hour, claim.price_is_estimate) == ("eu-west-1a", "spot", 0.03, False)


def test_catalog_file_missing_field_names_entry(tmp_path):
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps({"instance_types": [{"name": "x", "vcpu": 2}]}))
    with pytest.raises(InputError, match=r"instance_types\[0\]: memory_mib: missing"):
        load_catalog_file(str(path))


def test_catalog_file_malformed_json_names_line(tmp_path):
    path = tmp_path / "catalog.json"
    path.write_text('{"instance_types": [\n  {"name": }\n]}')
    with pytest.raises(InputError, match="malformed JSON at line 2"):
        load_catalog_file(str(path))


def test_spot_discount_is_configurable():
    result = simulate([nodepool(), nodeclass(), pod(cpu="1")], spot_discount=0.5,
                      catalog=catalog_from_dict({"instance_types": [itype("m5.large", 2, 8, offerings=None, price_od_usd_hour=0.1)]}))
    assert result.nodeclaims[0].price_usd_hour == 0.05


# --- NodeOverlay ---------------------------------------------------------------------------------

def overlay(name, requirements, weight=None, **spec):
    body = {"requirements": requirements, **spec}
    if weight is not None:
        body["weight"] = weight
    return {"apiVersion": "karpenter.sh/v1alpha1", "kind": "NodeOverlay", "metadata": {"name": name}, "spec": body}


ODIGOS = "instrumentation.odigos.io/generic"


def test_overlay_adds_extended_resource_capacity():
    objs = [nodepool(requirements=[("node.kubernetes.io/instance-type", "In", "m5.large", "m5.xlarge")]), nodeclass(),
            overlay("odigos", [req("kubernetes.io/os", "In", "linux")], capacity={ODIGOS: "1k"}),
            pod(cpu="100m", resources={ODIGOS: "1"})]
    result = simulate(objs)
    assert result.nodeclaims[0].allocatable[ODIGOS] == parse("1k")


def test_pod_requesting_extended_resource_without_overlay_is_unschedulable():
    objs = [nodepool(requirements=[("node.kubernetes.io/instance-type", "In", "m5.large")]), nodeclass(),
            pod(cpu="100m", resources={ODIGOS: "1"})]
    assert "no instance type has enough resources" in simulate(objs).unschedulable[0].reason


def test_overlay_price_adjustment_changes_choice():
    objs = [nodepool(requirements=[("node.kubernetes.io/instance-type", "In", "m5.large", "m6i.large"),
                                   ("karpenter.sh/capacity-type", "In", "on-demand")]), nodeclass(),
            overlay("m6i-discount", [req("karpenter.k8s.aws/instance-family", "In", "m6i")], priceAdjustment="-50%"),
            pod(cpu="100m")]
    claim = simulate(objs).nodeclaims[0]
    assert (claim.instance_type, claim.price_usd_hour) == ("m6i.large", 0.048)


def test_heavier_overlay_price_wins():
    objs = [nodepool(requirements=[("node.kubernetes.io/instance-type", "In", "m5.large"),
                                   ("karpenter.sh/capacity-type", "In", "on-demand")]), nodeclass(),
            overlay("light", [req("kubernetes.io/os", "In", "linux")], weight=1, price="5"),
            overlay("heavy", [req("kubernetes.io/os", "In", "linux")], weight=10, price="2"),
            pod(cpu="100m")]
    assert simulate(objs).nodeclaims[0].price_usd_hour == 2.0


def test_overlay_requiring_undefined_custom_label_does_not_apply():
    objs = [nodepool(requirements=[("node.kubernetes.io/instance-type", "In", "m5.large")]), nodeclass(),
            overlay("odigos", [req("team", "In", "web")], capacity={ODIGOS: "1k"}), pod(cpu="100m", resources={ODIGOS: "1"})]
    assert len(simulate(objs).unschedulable) == 1


# --- live AWS loader ------------------------------------------------------------------------------

class FakeAws:
    """Stands in for boto3's ec2 and pricing clients: canned pages, and a record of each call."""

    def __init__(self):
        self.calls = []

    def _page(self, name, pages, kwargs):
        self.calls.append((name, kwargs))
        index = int(kwargs.get("NextToken") or 0)
        page = dict(pages[index])
        if index + 1 < len(pages):
            page["NextToken"] = str(index + 1)
        return page

    def describe_instance_types(self, **kwargs):
        info = {"InstanceType": "m7g.xlarge", "VCpuInfo": {"DefaultVCpus": 4}, "MemoryInfo": {"SizeInMiB": 16384},
                "ProcessorInfo": {"SupportedArchitectures": ["arm64"], "Manufacturer": "AWS"}, "Hypervisor": "nitro",
                "NetworkInfo": {"NetworkCards": [{"MaximumNetworkInterfaces": 4}], "DefaultNetworkCardIndex": 0,
                                "Ipv4AddressesPerInterface": 15},
                "SupportedUsageClasses": ["on-demand", "spot"]}
        gpu = {"InstanceType": "g5.xlarge", "VCpuInfo": {"DefaultVCpus": 4}, "MemoryInfo": {"SizeInMiB": 16384},
               "ProcessorInfo": {"SupportedArchitectures": ["x86_64"], "Manufacturer": "AMD"}, "Hypervisor": "nitro",
               "GpuInfo": {"Gpus": [{"Name": "A10G", "Manufacturer": "NVIDIA", "Count": 1, "MemoryInfo": {"SizeInMiB": 24576}}]},
               "InstanceStorageInfo": {"TotalSizeInGB": 250, "NvmeSupport": "required"},
               "NetworkInfo": {"NetworkCards": [{"MaximumNetworkInterfaces": 4}], "DefaultNetworkCardIndex": 0,
                               "Ipv4AddressesPerInterface": 15},
               "SupportedUsageClasses": ["on-demand"]}
        return self._page("describe_instance_types", [{"InstanceTypes": [info]}, {"InstanceTypes": [gpu]}], kwargs)

    def describe_instance_type_offerings(self, **kwargs):
        offers = [{"InstanceType": t, "Location": z} for t in ("m7g.xlarge", "g5.xlarge") for z in ("eu-west-1a", "eu-west-1b")]
        return self._page("describe_instance_type_offerings", [{"InstanceTypeOfferings": offers}], kwargs)

    def describe_spot_price_history(self, **kwargs):
        t0, t1 = datetime(2026, 1, 1, tzinfo=timezone.utc), datetime(2026, 1, 2, tzinfo=timezone.utc)
        records = [{"InstanceType": "m7g.xlarge", "AvailabilityZone": "eu-west-1a", "SpotPrice": "0.0500", "Timestamp": t0},
                   {"InstanceType": "m7g.xlarge", "AvailabilityZone": "eu-west-1a", "SpotPrice": "0.0400", "Timestamp": t1}]
        return self._page("describe_spot_price_history", [{"SpotPriceHistory": records}], kwargs)

    def get_products(self, **kwargs):
        def product(name, usd):
            return json.dumps({"product": {"attributes": {"instanceType": name}},
                               "terms": {"OnDemand": {"t": {"priceDimensions": {"d": {"pricePerUnit": {"USD": usd}}}}}}})
        return self._page("get_products", [{"PriceList": [product("m7g.xlarge", "0.1632")]},
                                           {"PriceList": [product("g5.xlarge", "1.006")]}], kwargs)


def test_live_catalog_builds_facts_prices_and_offerings_from_fake_clients():
    fake = FakeAws()
    catalog = load_live_catalog("eu-west-1", ec2=fake, pricing=fake)
    facts = {t.name: t for t in catalog.types}
    m7g, g5 = facts["m7g.xlarge"], facts["g5.xlarge"]
    assert (m7g.arch, m7g.cpu_manufacturer, m7g.eni_limited_pods(), m7g.price_od_usd_hour) == ("arm64", "aws", 58, 0.1632)
    assert (g5.gpus, g5.gpu_name, g5.gpu_manufacturer, g5.local_nvme_gb) == (1, "a10g", "nvidia", 250)
    assert {(o.zone, o.capacity_type, o.price, o.price_is_estimate) for o in m7g.offerings} == {
        ("eu-west-1a", "on-demand", 0.1632, False), ("eu-west-1a", "spot", 0.04, False),
        ("eu-west-1b", "on-demand", 0.1632, False), ("eu-west-1b", "spot", round(0.1632 * (1 - DEFAULT_SPOT_DISCOUNT), 6), True)}
    assert {o.capacity_type for o in g5.offerings} == {"on-demand"}


def test_live_catalog_follows_pagination_and_filters_pricing_by_region():
    fake = FakeAws()
    load_live_catalog("eu-west-1", ec2=fake, pricing=fake)
    pricing_calls = [kw for name, kw in fake.calls if name == "get_products"]
    assert len(pricing_calls) == 2 and pricing_calls[1]["NextToken"] == "1"
    assert {"Type": "TERM_MATCH", "Field": "regionCode", "Value": "eu-west-1"} in pricing_calls[0]["Filters"]


def test_live_catalog_allocatable_matches_shipped_formula():
    fake = FakeAws()
    catalog = load_live_catalog("eu-west-1", ec2=fake, pricing=fake)
    it = {t.name: t for t in catalog.instance_types(NodeClass("default"), zones=("eu-west-1a",))}["m7g.xlarge"]
    assert format_resources(it.allocatable)["memory"] == "14103Mi"
