"""EC2 facts + an EC2NodeClass -> InstanceTypes with Karpenter's labels, capacity and overhead.

Follows aws/karpenter-provider-aws pkg/providers/instancetype/types.go (v1.14): computeRequirements,
computeCapacity, kubeReservedResources, evictionThreshold and the AMI families' feature flags.
"""
from __future__ import annotations

import math

from kubefacts import labels as L
from ..models import InstanceType, NodeClass, Offering
from kubefacts.quantity import gib, mib, milli
from ..scheduling.requirements import Requirement, Requirements

VM_MEMORY_OVERHEAD_PERCENT = 0.075  # --vm-memory-overhead-percent default
# kube-reserved CPU: 6% of the first core, 1% of the second, 0.5% of the next two, 0.25% above.
CPU_RESERVED_LADDER = ((0, 1000, 0.06), (1000, 2000, 0.01), (2000, 4000, 0.005), (4000, 1 << 31, 0.0025))
EXTRA_LABELS = (L.AWS + "instance-cpu-sustained-clock-speed-mhz", L.AWS + "instance-ebs-bandwidth",
                L.AWS + "instance-encryption-in-transit-supported")
WINDOWS_BUILDS = {"Windows2019": "10.0.17763", "Windows2022": "10.0.20348", "Windows2025": "10.0.26100"}


def _windows(family: str) -> bool:
    return family.startswith("Windows")


def vm_memory(facts) -> int:
    """Capacity memory in milli-bytes: EC2 memory minus Graviton's 64 MiB CMA, minus 7.5% VM overhead."""
    size_mib = facts.memory_mib - (64 if facts.arch == "arm64" else 0)
    overhead_mib = math.ceil(float(size_mib * 2**20) * VM_MEMORY_OVERHEAD_PERCENT / 1024 / 1024)
    return mib(size_mib - overhead_mib)


def max_pods(facts, nodeclass: NodeClass) -> int:
    kubelet, family = nodeclass.kubelet, nodeclass.ami_family
    if kubelet.max_pods is not None:
        count = kubelet.max_pods
    elif not _windows(family):  # every family but Windows supports ENI-limited pod density
        count = facts.eni_limited_pods()
    else:
        count = 110
    if kubelet.pods_per_core and family != "Bottlerocket":
        count = min(count, kubelet.pods_per_core * facts.vcpu)
    return count


def kube_reserved_cpu(vcpu: int) -> int:
    cpu = vcpu * 1000
    reserved = 0
    for start, end, percentage in CPU_RESERVED_LADDER:
        if cpu >= start:
            span = end - start if cpu >= end else cpu - start
            reserved += int(span * percentage)
    return reserved


def ephemeral_storage(facts, nodeclass: NodeClass) -> int:
    if nodeclass.instance_store_policy == "RAID0" and facts.local_nvme_gb:
        return milli(f"{facts.local_nvme_gb}G")
    if nodeclass.root_volume is not None:
        return nodeclass.root_volume
    return gib(50) if _windows(nodeclass.ami_family) else gib(20)


def _eviction(capacity: int, value: str) -> int:
    if value.endswith("%"):
        percent = float(value[:-1])
        percent = 0 if percent == 100 else percent  # 100% disables the threshold
        return math.ceil(capacity / 1000 / 100 * percent) * 1000
    return milli(value)


def overhead(facts, nodeclass: NodeClass, capacity: dict) -> dict:
    """kube-reserved + system-reserved + hard eviction thresholds."""
    family, kubelet = nodeclass.ami_family, nodeclass.kubelet
    # AL2/AL2023/Custom size kube-reserved memory by ENI-limited pods; Bottlerocket/Windows by max pods.
    pods = facts.eni_limited_pods() if family not in ("Bottlerocket",) and not _windows(family) else capacity[L.PODS] // 1000
    kube = {L.CPU: kube_reserved_cpu(facts.vcpu), L.MEMORY: mib(11 * pods + 255), L.EPHEMERAL_STORAGE: gib(1)}
    kube.update(dict(kubelet.kube_reserved))
    eviction = {L.MEMORY: mib(100), L.EPHEMERAL_STORAGE: math.ceil(capacity[L.EPHEMERAL_STORAGE] / 1000 / 100 * 10) * 1000}
    for signal, value in kubelet.eviction_hard:
        if signal == "memory.available":
            eviction[L.MEMORY] = _eviction(capacity[L.MEMORY], value)
        elif signal == "nodefs.available":
            eviction[L.EPHEMERAL_STORAGE] = _eviction(capacity[L.EPHEMERAL_STORAGE], value)
    total: dict = {}
    for part in (kube, dict(kubelet.system_reserved), eviction):
        for k, v in part.items():
            total[k] = total.get(k, 0) + v
    return total


def capacity(facts, nodeclass: NodeClass) -> dict:
    cap = {L.CPU: facts.vcpu * 1000, L.MEMORY: vm_memory(facts), L.EPHEMERAL_STORAGE: ephemeral_storage(facts, nodeclass),
           L.PODS: max_pods(facts, nodeclass) * 1000}
    gpu_resource = {"nvidia": L.NVIDIA_GPU, "amd": L.AMD_GPU, "habana": L.HABANA_GAUDI}.get(facts.gpu_manufacturer or "")
    if gpu_resource and facts.gpus:
        cap[gpu_resource] = facts.gpus * 1000
    if facts.accelerator_manufacturer == "aws" and facts.accelerators:
        cap[L.AWS_NEURON] = facts.accelerators * 1000
    for name, count in facts.extended_resources:  # pod-eni, efa, neuron(core): computeCapacity
        if count:
            cap[name] = count * 1000
    return cap


def requirements(facts, nodeclass: NodeClass, zones, region: str, capacity_types) -> Requirements:
    family = nodeclass.ami_family
    os_values = ["windows"] if _windows(family) and facts.arch == "amd64" else [] if _windows(family) else ["linux"]
    reqs = [
        Requirement.in_(L.INSTANCE_TYPE, facts.name), Requirement.in_(L.ARCH, facts.arch),
        Requirement(L.OS, False, frozenset(os_values)), Requirement(L.ZONE, False, frozenset(zones)),
        Requirement.in_(L.REGION, region),
        Requirement(L.WINDOWS_BUILD, False, frozenset([WINDOWS_BUILDS[family]] if family in WINDOWS_BUILDS else [])),
        Requirement(L.CAPACITY_TYPE, False, frozenset(capacity_types)),
        Requirement.in_(L.INSTANCE_CPU, str(facts.vcpu)), Requirement.in_(L.INSTANCE_MEMORY, str(facts.memory_mib)),
        Requirement.in_(L.INSTANCE_HYPERVISOR, facts.hypervisor or ""),
        Requirement.in_(L.INSTANCE_TENANCY, "default", "dedicated"),
        Requirement.in_(L.INSTANCE_CAPABILITY_FLEX, "true" if "-flex" in facts.family else "false"),
    ]
    # Labels DoesNotExist unless the type has the attribute (as computeRequirements initialises them).
    optional = {
        L.INSTANCE_CATEGORY: facts.category, L.INSTANCE_FAMILY: facts.family, L.INSTANCE_SIZE: facts.size,
        L.INSTANCE_GENERATION: "" if facts.generation is None else str(facts.generation),
        L.INSTANCE_CPU_MANUFACTURER: facts.cpu_manufacturer or "",
        L.INSTANCE_LOCAL_NVME: str(facts.local_nvme_gb) if facts.local_nvme_gb else "",
        L.INSTANCE_NETWORK_BANDWIDTH: "" if facts.network_bandwidth_mbps is None else str(facts.network_bandwidth_mbps),
        L.INSTANCE_GPU_NAME: facts.gpu_name if facts.gpus else "",
        L.INSTANCE_GPU_MANUFACTURER: facts.gpu_manufacturer if facts.gpus else "",
        L.INSTANCE_GPU_COUNT: str(facts.gpus) if facts.gpus else "",
        L.INSTANCE_GPU_MEMORY: str(facts.gpu_memory_mib) if facts.gpus else "",
        L.INSTANCE_ACCELERATOR_NAME: facts.accelerator_name if facts.accelerators else "",
        L.INSTANCE_ACCELERATOR_MANUFACTURER: facts.accelerator_manufacturer if facts.accelerators else "",
        L.INSTANCE_ACCELERATOR_COUNT: str(facts.accelerators) if facts.accelerators else "",
        L.CAPACITY_RESERVATION_ID: "", L.CAPACITY_RESERVATION_TYPE: "", L.CAPACITY_RESERVATION_INTERRUPTIBLE: "",
        **dict.fromkeys(EXTRA_LABELS, ""), **dict(facts.extra_labels),
    }
    reqs += [Requirement(key, False, frozenset([value] if value else [])) for key, value in optional.items()]
    return Requirements(reqs)


def offerings(facts, zones, spot_discount: float) -> list:
    if facts.offerings is not None:
        return [Offering(o.zone, o.capacity_type, o.price, True, o.price_is_estimate)
                for o in facts.offerings if o.zone in zones]
    if facts.price_od_usd_hour is None:
        return []  # no price, no launch: Karpenter cannot order an unpriced type either
    out = []
    for zone in zones:
        out.append(Offering(zone, L.CAPACITY_TYPE_ON_DEMAND, facts.price_od_usd_hour))
        out.append(Offering(zone, L.CAPACITY_TYPE_SPOT, round(facts.price_od_usd_hour * (1 - spot_discount), 6),
                            price_is_estimate=True))
    return out


def build_instance_types(types, nodeclass: NodeClass, zones, region: str, spot_discount: float) -> list:
    if nodeclass.zones is not None:  # a live EC2NodeClass lists the zones of its subnets
        zones = tuple(z for z in zones if z in nodeclass.zones) or tuple(sorted(nodeclass.zones))
    result = []
    for facts in types:
        type_zones = zones if facts.offerings is None else tuple(sorted(
            {o.zone for o in facts.offerings} & (set(nodeclass.zones) if nodeclass.zones else {o.zone for o in facts.offerings})))
        offers = offerings(facts, type_zones, spot_discount)
        cap = capacity(facts, nodeclass)
        result.append(InstanceType(
            name=facts.name,
            requirements=requirements(facts, nodeclass, sorted({o.zone for o in offers}), region,
                                      sorted({o.capacity_type for o in offers})),
            capacity=cap, overhead=overhead(facts, nodeclass, cap), offerings=offers,
        ))
    return result
