"""The benchmark's building blocks: Karpenter's synthetic shape and the LP lower bound."""
import io
import os

import pytest

from provisioner import catalog_from_dict, load_objects, simulate_inputs
from bench import synthetic
from bench.__main__ import throughput
from bench.lpbound import lower_bound
from provisioner.catalog.instancetypes import build_instance_types
from provisioner.manifests import read_paths
from provisioner.models import NodeClass

from tests.provisioner.prov_builders import deployment, itype, nodeclass, nodepool, taint

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_synthetic_types_follow_karpenter_fake_instance_types():
    types = synthetic.instance_types()
    t9 = types[9]
    assert len(types) == 400
    assert (t9.capacity["cpu"], t9.capacity["memory"], t9.capacity["pods"]) == (10_000, 20 * 2**30 * 1000, 100_000)
    assert sorted((o.zone, o.capacity_type) for o in t9.offerings) == [
        ("test-zone-1", "on-demand"), ("test-zone-1", "spot"), ("test-zone-2", "on-demand"), ("test-zone-2", "spot"),
        ("test-zone-3", "on-demand")]
    assert [o.price for o in t9.offerings] == [pytest.approx(0.1 * 10 + 0.1 * 20)] * 5


def test_diverse_pods_come_in_five_equal_groups():
    pods = synthetic.diverse_pods(1003)
    groups = [bool(p.spec.spread) and p.spec.spread[0].topology_key for p in pods]
    assert (groups.count("topology.kubernetes.io/zone"), groups.count("kubernetes.io/hostname")) == (200, 200)
    assert sum(1 for p in pods if p.spec.affinity) == 200 and sum(1 for p in pods if p.spec.anti_affinity) == 200
    assert sum(1 for p in pods if not (p.spec.spread or p.spec.affinity or p.spec.anti_affinity)) == 203


def test_diverse_pods_are_reproducible_with_the_fixed_seed():
    first, second = synthetic.diverse_pods(100), synthetic.diverse_pods(100)
    assert [p.spec.requests for p in first] == [p.spec.requests for p in second]


def test_throughput_schedules_every_pod_and_prints_a_row_per_size():
    out = io.StringIO()
    rows = throughput([50, 100], 1, out)
    lines = out.getvalue().splitlines()
    assert [r[0] for r in rows] == [50, 100] and [r[1] for r in rows] == [10, 20]
    assert lines[2].startswith("| 50 | 10 |") and lines[3].startswith("| 100 | 20 |")


def single_type_catalog():
    return catalog_from_dict({"instance_types": [itype("m5.xlarge", 4, 16, price=1.0, capacity_types=("on-demand",))]})


@pytest.mark.slow
def test_fluid_lp_bound_equals_fractional_cover_with_one_instance_type():
    cat = single_type_catalog()
    inputs = load_objects([nodeclass(), nodepool(), deployment("app", replicas=10, cpu="1", memory="1Gi")])
    it = build_instance_types(cat.types, NodeClass("default"), ("test-zone-1",), "test-region", 0.5)[0]
    expected = max(10_000 / it.allocatable["cpu"], 10 / (it.allocatable["pods"] / 1000),
                   10 * 2**30 * 1000 / it.allocatable["memory"])
    bound = lower_bound(inputs, cat, region="test-region", zones=("test-zone-1",), method="fluid")
    assert bound.price_usd_hour == pytest.approx(expected, rel=1e-6)


def test_pattern_lp_bound_buys_whole_nodes_of_whole_pods_with_one_instance_type():
    """Ten 1-CPU pods, three per 4-vCPU node (3.92 allocatable cores): 3 full nodes and one third."""
    cat = single_type_catalog()
    inputs = load_objects([nodeclass(), nodepool(), deployment("app", replicas=10, cpu="1", memory="1Gi")])
    bound = lower_bound(inputs, cat, region="test-region", zones=("test-zone-1",))
    assert bound.price_usd_hour == pytest.approx(10 / 3, rel=1e-6)


def test_lp_bound_charges_gpu_pods_to_gpu_types():
    cat = catalog_from_dict({"instance_types": [
        itype("m5.xlarge", 4, 16, price=0.2, capacity_types=("on-demand",)),
        itype("g4dn.xlarge", 4, 16, price=0.5, gpus=1, capacity_types=("on-demand",))]})
    objs = [nodeclass(), nodepool(), deployment("gpu", replicas=2, cpu="1", resources={"nvidia.com/gpu": "1"})]
    bound = lower_bound(load_objects(objs), cat, zones=("test-zone-1",))
    assert bound.price_usd_hour == pytest.approx(1.0)


def test_lp_bound_respects_taints():
    cat = catalog_from_dict({"instance_types": [itype("m5.xlarge", 4, 16, price=0.2, capacity_types=("on-demand",))]})
    objs = [nodeclass(), nodepool("tainted", taints=[taint("dedicated", "x")]), deployment("app", replicas=2, cpu="1")]
    assert lower_bound(load_objects(objs), cat).price_usd_hour == 0.0


@pytest.mark.slow
def test_lp_bound_never_exceeds_the_plan_on_the_examples():
    objs, _ = read_paths([os.path.join(ROOT, "examples", "workloads"), os.path.join(ROOT, "tests", "provisioner", "fixtures")])
    inputs = load_objects(objs)
    plan = simulate_inputs(inputs)
    bound = lower_bound(inputs)
    assert 0 < bound.price_usd_hour <= plan.price_usd_hour


def test_engine_benchmark_shape_as_deployments_has_the_requested_pods_in_five_groups():
    from bench import engine
    objects = engine.benchmark_shape_objects(1000)
    inputs = load_objects(objects)
    assert len(inputs.pods) == 1000
    assert sum(1 for p in inputs.pods if p.spec.anti_affinity) == 200
    assert sum(1 for p in inputs.pods if p.spec.spread and p.spec.spread[0].topology_key == "kubernetes.io/hostname") == 200
    catalog = catalog_from_dict(engine.fake_catalog(10))
    assert [t.vcpu for t in catalog.types] == list(range(1, 11))


def test_realistic_workloads_load_in_open_and_preset_modes():
    from bench.realistic import REALISTIC
    for name, make in REALISTIC.items():
        for mode in ("open", "preset"):
            inputs = load_objects(make(mode))
            assert inputs.pods and inputs.nodepools, (name, mode)
