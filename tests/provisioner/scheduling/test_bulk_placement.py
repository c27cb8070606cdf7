"""Placing identical pods in bulk must give exactly the plan of placing them one by one."""
import copy
import random

import pytest

from provisioner import catalog_from_dict, load_objects
from provisioner.api import nodepool_instance_types, plan_pools

from tests.provisioner.prov_builders import DEFAULT_TYPES, ZONES, catalog, daemonset, deployment, nodeclass, nodepool, node, spread


def plan(inputs):
    pools, notes = nodepool_instance_types(inputs, catalog_from_dict(catalog(*DEFAULT_TYPES)), "test-region", ZONES, 0.5)
    result = plan_pools(inputs, pools, notes)
    return [(nc.nodepool, nc.instance_type, nc.zone, nc.pods) for nc in result.nodeclaims], \
        sorted((u.pod, u.reason) for u in result.unschedulable), result.existing


def one_by_one(inputs):
    """Same pods, but every pod gets its own spec object and key, so no two pods form a run."""
    clone = copy.copy(inputs)
    clone.pods = []
    for i, pod in enumerate(inputs.pods):
        spec = copy.copy(pod.spec)
        spec.key = spec.key + (i,)
        clone.pods.append(copy.copy(pod))
        clone.pods[-1].spec = spec
    return clone


def workload(seed):
    rng = random.Random(seed)
    objs = [nodeclass(), nodepool("general", weight=10, limits={"cpu": str(rng.choice([40, 400]))}),
            nodepool("arm", weight=5, requirements=[("kubernetes.io/arch", "In", "arm64")], labels={"team": "arm"}),
            daemonset(cpu="100m", memory="128Mi"), node("existing", allocatable={"cpu": "3", "memory": "6Gi", "pods": "20"})]
    shapes = set()
    for i in range(8):
        shape = (rng.choice(["100m", "250m", "500m", "1", "2", "3"]), rng.choice(["128Mi", "512Mi", "1Gi", "3Gi", "7Gi"]))
        if shape in shapes:  # one deployment per shape, so the queue order does not depend on grouping
            continue
        shapes.add(shape)
        extra = {"node_selector": {"team": "arm"}} if rng.random() < 0.25 else {}
        objs.append(deployment(f"d{i}", replicas=rng.randint(1, 40), cpu=shape[0], memory=shape[1], **extra))
    return objs


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.slow
def test_bulk_placement_equals_one_by_one_placement(seed):
    inputs = load_objects(workload(seed))
    assert plan(inputs) == plan(one_by_one(inputs))


def test_bulk_placement_equals_one_by_one_with_topology_pods_in_the_mix():
    objs = workload(99) + [deployment("spread", replicas=9, cpu="500m", labels={"app": "x"}, spread=[spread("topology.kubernetes.io/zone")])]
    inputs = load_objects(objs)
    assert plan(inputs) == plan(one_by_one(inputs))
