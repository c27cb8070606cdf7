"""Karpenter's scheduling benchmark shape (scheduling_benchmark_test.go), as core models.

400 instance types (fake.InstanceTypes): type i has i+1 vCPU, 2(i+1) GiB, 10(i+1) pods, the fake
provider's 100m CPU / 10Mi kube-reserved, and costs 0.1 per vCPU + 0.1 per GiB, offered as spot in
two zones and on-demand in three. Pods come in five equal groups: plain, zonal topology spread,
hostname topology spread, zonal self-affinity and hostname anti-affinity, with CPU and memory
drawn from Karpenter's lists with a fixed seed.
"""
from __future__ import annotations

import json
import random

from kubefacts import labels as L
from provisioner.models import LabelSelector, NodeClassRef, NodePool, Offering, InstanceType, Pod, PodAffinityTerm, PodSpec, \
    TopologySpreadConstraint
from kubefacts.quantity import gib, mib, milli
from provisioner.scheduling.requirements import Requirement, Requirements

CPUS = ("100m", "250m", "500m", "1000m", "1500m")
MEMORIES = ("100Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi")
LABEL_VALUES = "abcdefg"
ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")


def instance_types(total: int = 400) -> list:
    types = []
    for i in range(total):
        cpu, memory_gib, pods = i + 1, 2 * (i + 1), 10 * (i + 1)
        price = 0.1 * cpu + 0.1 * memory_gib
        offerings = [Offering(ZONES[0], L.CAPACITY_TYPE_SPOT, price), Offering(ZONES[1], L.CAPACITY_TYPE_SPOT, price)]
        offerings += [Offering(z, L.CAPACITY_TYPE_ON_DEMAND, price) for z in ZONES]
        reqs = Requirements([
            Requirement.in_(L.INSTANCE_TYPE, f"fake-it-{i}"), Requirement.in_(L.ARCH, "amd64"),
            Requirement.in_(L.OS, "linux", "windows", "darwin"), Requirement.in_(L.ZONE, *ZONES),
            Requirement.in_(L.CAPACITY_TYPE, L.CAPACITY_TYPE_SPOT, L.CAPACITY_TYPE_ON_DEMAND),
        ])
        capacity = {L.CPU: cpu * 1000, L.MEMORY: gib(memory_gib), L.PODS: pods * 1000}
        types.append(InstanceType(f"fake-it-{i}", reqs, capacity, {L.CPU: 100, L.MEMORY: mib(10)}, offerings))
    return types


def nodepool() -> NodePool:
    return NodePool("default", NodeClassRef("karpenter.k8s.aws", "EC2NodeClass", "default"),
                    limits={L.CPU: milli("10000000"), L.MEMORY: milli("10000000Gi")})


def _spec(rng, labels, **constraints) -> PodSpec:
    requests = {L.CPU: milli(rng.choice(CPUS)), L.MEMORY: milli(rng.choice(MEMORIES)), L.PODS: 1000}
    spec = PodSpec(namespace="default", labels=labels, requests=requests, **constraints)
    spec.key = ("default", json.dumps([sorted(labels.items()), sorted(requests.items())]),
                repr(sorted(constraints.items())))
    return spec


def _selector(labels: dict) -> LabelSelector:
    return LabelSelector(tuple(sorted(labels.items())))


def diverse_pods(count: int, seed: int = 42) -> list:
    """makeDiversePods: five equal groups, the remainder filled with plain pods."""
    rng = random.Random(seed)
    group = count // 5
    specs = []

    def label():
        return {"my-label": rng.choice(LABEL_VALUES)}

    specs += [_spec(rng, label()) for _ in range(group)]
    for key in (L.ZONE, L.HOSTNAME):
        for _ in range(group):
            labels, selector = label(), label()
            tsc = TopologySpreadConstraint(key, 1, "DoNotSchedule", _selector(selector))
            specs.append(_spec(rng, labels, spread=(tsc,)))
    for _ in range(group):
        labels = {"my-affininity": rng.choice(LABEL_VALUES)}
        specs.append(_spec(rng, labels, affinity=(PodAffinityTerm(L.ZONE, _selector(labels), frozenset({"default"})),)))
    nginx = {"app": "nginx"}
    for _ in range(group):
        specs.append(_spec(rng, dict(nginx),
                           anti_affinity=(PodAffinityTerm(L.HOSTNAME, _selector(nginx), frozenset({"default"})),)))
    specs += [_spec(rng, label()) for _ in range(count - len(specs))]
    return [Pod(f"default/pod-{i}", spec) for i, spec in enumerate(specs)]


def preference_pods(count: int = 4000, seed: int = 42) -> list:
    """makePreferencePods: a satisfiable zone preference, an unsatisfiable heavy zonal anti-affinity
    preference and a satisfiable light hostname anti-affinity preference, all relaxed in turn."""
    rng = random.Random(seed)
    nginx = {"app": "nginx"}
    zone_pref = ((1, Requirements([Requirement.in_(L.ZONE, ZONES[0])])),)
    anti = ((10, PodAffinityTerm(L.ZONE, _selector(nginx), frozenset({"default"}))),
            (1, PodAffinityTerm(L.HOSTNAME, _selector(nginx), frozenset({"default"}))))
    return [Pod(f"default/pref-{i}", _spec(rng, dict(nginx), preferred_terms=zone_pref, anti_affinity_preferred=anti))
            for i in range(count)]
