"""instance_selection_test.go: the launched offering is the cheapest compatible one, reserved then spot then
on-demand; every instance type option satisfies the constraints; minValues."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.provisioner.prov_builders import deployment, fake_type, nodeclaim_of, nodepool, pod, req, run_core

ZONE = "topology.kubernetes.io/zone"
ARCH = "kubernetes.io/arch"
OS = "kubernetes.io/os"
CT = "karpenter.sh/capacity-type"
IT = "node.kubernetes.io/instance-type"


def assorted():
    """fake.InstanceTypesAssorted, smaller: one offering per (cpu, mem, zone, capacity type, os, arch)."""
    types = []
    for cpu, mem, zone, ct, os, arch in itertools.product((1, 2, 4, 8), (1, 2, 4, 8, 16), ("test-zone-1", "test-zone-2", "test-zone-3"),
                                                          ("spot", "on-demand"), ("linux", "windows"), ("amd64", "arm64")):
        name = f"{cpu}-cpu-{mem}-mem-{arch}-{os}-{zone}-{ct}"
        price = 0.1 * cpu + 0.1 * mem * 2**30 / 1e9
        types.append(fake_type(name, str(cpu), f"{mem}Gi", arch=arch, os=(os,), offerings=[(zone, ct, price)]))
    return types


TYPES = assorted()
MIN_PRICE = min(t.offerings[0].price for t in TYPES)
BY_NAME = {t.name: t for t in TYPES}
POOL = nodepool(requirements=[(CT, "In", "spot", "on-demand"), (ARCH, "In", "arm64", "amd64")])


def launched(*objects, pool=POOL):
    result = run_core(pool, *objects, types=TYPES)
    assert len(result.nodeclaims) == 1, result.unschedulable
    return result.nodeclaims[0]


def options_have(claim, key, value):
    options = claim.instance_type_options
    return bool(options) and all(BY_NAME[name].requirements.get(key).has(value) for name in options)


def test_cheapest_instance_is_launched():
    assert launched(pod()).price_usd_hour == MIN_PRICE


@pytest.mark.parametrize("arch", ["amd64", "arm64"])
def test_cheapest_instance_for_pod_arch(arch):
    claim = launched(pod(required=[[req(ARCH, "In", arch)]]))
    assert claim.price_usd_hour == MIN_PRICE and options_have(claim, ARCH, arch)


@pytest.mark.parametrize("arch", ["amd64", "arm64"])
def test_cheapest_instance_for_nodepool_arch(arch):
    claim = launched(pod(), pool=nodepool(requirements=[(ARCH, "In", arch)]))
    assert claim.price_usd_hour == MIN_PRICE and options_have(claim, ARCH, arch)


def test_cheapest_instance_for_nodepool_os_windows():
    claim = launched(pod(), pool=nodepool(requirements=[(OS, "In", "windows")]))
    assert claim.price_usd_hour == MIN_PRICE and options_have(claim, OS, "windows")


def test_cheapest_instance_for_pod_os_linux():
    claim = launched(pod(required=[[req(OS, "In", "linux")]]))
    assert claim.price_usd_hour == MIN_PRICE and options_have(claim, OS, "linux")


def test_cheapest_instance_for_pod_zone():
    claim = launched(pod(required=[[req(ZONE, "In", "test-zone-2")]]))
    assert claim.zone == "test-zone-2" and claim.price_usd_hour == MIN_PRICE and options_have(claim, ZONE, "test-zone-2")


def test_cheapest_instance_for_nodepool_capacity_type_spot():
    claim = launched(pod(), pool=nodepool(requirements=[(CT, "In", "spot")]))
    assert claim.capacity_type == "spot" and options_have(claim, CT, "spot")


def test_cheapest_instance_for_on_demand_nodepool_and_pod_zone():
    claim = launched(pod(required=[[req(ZONE, "In", "test-zone-1")]]), pool=nodepool(requirements=[(CT, "In", "on-demand")]))
    assert (claim.capacity_type, claim.zone, claim.price_usd_hour) == ("on-demand", "test-zone-1", MIN_PRICE)


def test_cheapest_instance_for_combined_constraints():
    pool = nodepool(requirements=[(CT, "In", "on-demand"), (ZONE, "In", "test-zone-1"), (ARCH, "In", "arm64"), (OS, "In", "windows")])
    claim = launched(pod(), pool=pool)
    assert claim.instance_type == "1-cpu-1-mem-arm64-windows-test-zone-1-on-demand"


def test_pod_arch_not_offered_with_nodepool_arch_is_unschedulable():
    result = run_core(nodepool(requirements=[(ARCH, "In", "amd64")]), pod(required=[[req(ARCH, "In", "arm64")]]), types=TYPES)
    assert len(result.unschedulable) == 1


def test_pod_zone_and_capacity_type_without_offering_is_unschedulable():
    only_spot_zone1 = [fake_type("a", "2", "2Gi", offerings=[("test-zone-1", "spot", 0.1), ("test-zone-2", "on-demand", 0.2)])]
    result = run_core(pod(required=[[req(ZONE, "In", "test-zone-2"), req(CT, "In", "spot")]]), types=only_spot_zone1)
    assert "offering" in result.unschedulable[0].reason


def test_three_pods_fit_one_node_and_every_option_holds_them():
    for cpu, mem in itertools.product(("0.1", "1", "2"), ("0.1Gi", "1Gi", "4Gi")):
        result = run_core(POOL, deployment("app", replicas=3, cpu=cpu, memory=mem), types=TYPES)
        claim = result.nodeclaims[0]
        assert len(result.nodeclaims) == 1 and len(claim.pods) == 3
        assert claim.instance_type_options and all(BY_NAME[n].allocatable["cpu"] >= claim.requests["cpu"] and
                   BY_NAME[n].allocatable["memory"] >= claim.requests["memory"] for n in claim.instance_type_options)


def test_spot_is_launched_before_cheaper_on_demand():
    types = [fake_type("a", "2", "2Gi", offerings=[("test-zone-1", "on-demand", 0.05), ("test-zone-1", "spot", 0.09)])]
    claim = run_core(pod(), types=types).nodeclaims[0]
    assert (claim.capacity_type, claim.price_usd_hour) == ("spot", 0.09)


def test_cheaper_on_demand_type_wins_when_only_on_demand_is_allowed():
    types = [fake_type("test-instance1", "1", "1Gi", offerings=[("z", "on-demand", 1.0), ("z", "spot", 0.2)]),
             fake_type("test-instance2", "1", "1Gi", offerings=[("z", "on-demand", 1.3), ("z", "spot", 0.1)])]
    claim = run_core(nodepool(requirements=[(CT, "In", "on-demand")]), pod(), types=types).nodeclaims[0]
    assert claim.instance_type == "test-instance1"


def test_reserved_offering_is_launched_first():
    types = [fake_type("a", "2", "2Gi", offerings=[("z", "on-demand", 0.1), ("z", "spot", 0.03), ("z", "reserved", 0.2)])]
    claim = run_core(pod(), types=types).nodeclaims[0]
    assert claim.capacity_type == "reserved"


def test_options_are_ordered_cheapest_first():
    types = [fake_type("c", "2", "2Gi", price=3.0), fake_type("a", "2", "2Gi", price=1.0), fake_type("b", "2", "2Gi", price=2.0)]
    assert run_core(pod(), types=types).nodeclaims[0].instance_type_options == ["a", "b", "c"]


def test_min_values_keep_enough_instance_types_by_splitting_nodes():
    types = [fake_type("instance-type-1", "1", "1Gi", arch="arm64", offerings=[("z", "spot", 0.52)]),
             fake_type("instance-type-2", "4", "4Gi", arch="arm64", offerings=[("z", "spot", 1.0)])]
    pool = nodepool(requirements=[req(IT, "In", "instance-type-1", "instance-type-2", min_values=2)])
    result = run_core(pool, pod("a", cpu="0.9", memory="0.9Gi"), pod("b", cpu="0.9", memory="0.9Gi"), types=types)
    assert nodeclaim_of(result, "default/a") is not nodeclaim_of(result, "default/b")
    assert len(result.nodeclaims[0].instance_type_options) >= 2


def test_min_values_unmet_by_nodepool_skips_it_with_reason():
    types = [fake_type("only", "4", "4Gi")]
    pool = nodepool(requirements=[req(IT, "Exists", min_values=2)])
    result = run_core(pool, pod(), types=types)
    assert "minValues requirement is not met" in result.unschedulable[0].reason


def test_min_values_on_gt_operator_count_distinct_values():
    types = [fake_type(f"t{i}", str(i), f"{i}Gi", extra_requirements=[]) for i in (1, 2, 4, 8)]
    pool = nodepool(requirements=[req("node.kubernetes.io/instance-type", "Exists", min_values=3)])
    result = run_core(pool, pod(cpu="3"), types=types)
    # only t4 and t8 fit a 3-CPU pod: two distinct values < 3
    assert "minValues" in result.unschedulable[0].reason


@settings(max_examples=200, deadline=None)
@given(alloc=st.lists(st.tuples(st.integers(0, 64), st.integers(0, 64), st.integers(0, 9)), min_size=1, max_size=30),
       used=st.tuples(st.integers(0, 70), st.integers(0, 70), st.integers(0, 9)),
       request=st.tuples(st.integers(0, 9), st.integers(0, 9), st.integers(0, 2)).filter(any), data=st.data())
def test_max_count_over_the_undominated_options_is_the_best_options_count(alloc, used, request, data):
    """Template.max_count: how many more pods the best option holds, read off the options no other
    one covers everywhere (Template.front) equals the count over every option."""
    from provisioner.scheduling.instance_selection import Template
    tpl = object.__new__(Template)
    tpl.alloc = np.asarray(alloc, dtype=np.int64)
    tpl._fronts = {}
    options = np.asarray(sorted(data.draw(st.sets(st.integers(0, len(alloc) - 1), min_size=1))), dtype=np.int64)
    front = tpl.front(options)
    assert len(set(front)) == len(front)  # distinct, each covered by no other, and together covering all
    assert not any(a != b and all(x >= y for x, y in zip(a, b)) for a in front for b in front)
    assert all(any(all(x >= y for x, y in zip(f, alloc[o])) for f in front) for o in options.tolist())
    every = max(min((alloc[o][d] - used[d]) // request[d] for d in range(3) if request[d]) for o in options.tolist())
    assert tpl.max_count(options, used, request) == max(every, 0)
    assert tpl.max_count(options, (0, 0, 0), request) == max(max(min(alloc[o][d] // request[d] for d in range(3) if request[d])
                                                                  for o in options.tolist()), 0)
