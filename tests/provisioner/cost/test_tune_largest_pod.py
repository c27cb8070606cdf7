"""`tune` never proposes requirements under which the team's declared largest pod (the NodePool's
annotation karpenter-platform.io/largest-pod) fits no instance type the pool would admit, and it
judges "fits" by the same rule as the pack's `nodepool-fits-largest-pod` (one function,
`provisioner.largest_pod_shortfall`): every judged request at most the type's allocatable after
kube-reserved, system-reserved and eviction thresholds (Karpenter's `resources.Fits`,
pkg/utils/resources/resources.go, against InstanceType.Allocatable(), pkg/cloudprovider/types.go).
"""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubefacts.platform import LARGEST_POD_ANNOTATION
from policies.advice import resources_from_objects, with_requirements
from policies.model import Stack
from policies.nodepools import fits_largest_pod
from provisioner.api import resolve_catalog
from provisioner.catalog import DEFAULT_REGION, DEFAULT_SPOT_DISCOUNT, DEFAULT_ZONES
from provisioner.cost.tune import CAP_LADDER, CPU_KEY, _Search, replace_requirements, requirement_dict, tune
from provisioner.loader import load_objects
from provisioner.manifests import read_paths
from tests.harness import PROJECT_DIR, STACKS, manifests, render
from tests.policies.builders import nodeclass, nodepool

pytest.importorskip("scipy")

WORKLOADS = [str(PROJECT_DIR / "examples" / "workloads" / name) for name in ("ml-training.yaml", "daemonsets.yaml")]


def stack_objects(stack: str) -> list[dict]:
    capture = render(stack)
    return manifests(capture, "NodePool") + manifests(capture, "EC2NodeClass")


def search_over(objects: list[dict]) -> _Search:
    return _Search(load_objects(objects), resolve_catalog(None), DEFAULT_REGION, DEFAULT_ZONES, DEFAULT_SPOT_DISCOUNT)


def tune_verdict(search: _Search, name: str, changes: list[dict]) -> bool:
    return search.holds_largest_pod(name, search.admitted(name, {c["key"]: c for c in changes}))


def policy_verdict(objects: list[dict], name: str, changes: list[dict], environment: str = "prod") -> bool:
    pools, classes = resources_from_objects(objects)
    pool = pools[name]
    own = pool.props["spec"]["template"]["spec"].get("requirements") or []
    stack = Stack(environment, (with_requirements(pool, replace_requirements(own, changes)), *classes))
    return not list(fits_largest_pod(stack, {}))


def test_plain_tune_on_the_dev_render_keeps_the_declared_largest_pod(tmp_path):
    """The shipped dev stack with examples/workloads: plain tune used to cap ml-training-gpu at
    `instance-cpu Lt 33`, where no type holds its declared 32-CPU, 4-GPU pod after reservations."""
    import yaml

    objects = stack_objects("dev")
    path = tmp_path / "dev.yaml"
    path.write_text(yaml.safe_dump_all(objects))
    read, origins = read_paths([str(path), *WORKLOADS])
    result = tune(load_objects(read, origins), bound=0.0, max_evaluations=60)
    changes = result.change_list()
    assert {"key": CPU_KEY, "operator": "Lt", "values": ["33"]} not in [
        r for c in changes if c["nodepool"] == "ml-training-gpu" for r in c["requirements"]]
    for change in changes:
        assert policy_verdict(objects, change["nodepool"], change["requirements"])
    assert result.tuned.unschedulable <= result.baseline.unschedulable


def test_tune_rule_refuses_the_32_vcpu_cap_and_keeps_the_48_vcpu_one():
    objects = stack_objects("dev")
    search = search_over(objects)
    assert dict(search.pools["ml-training-gpu"].largest_pod) == {"cpu": 32000, "memory": 120 * 2**30 * 1000,
                                                                 "nvidia.com/gpu": 4000}
    assert not tune_verdict(search, "ml-training-gpu", [requirement_dict(CPU_KEY, "Lt", [33])])
    assert tune_verdict(search, "ml-training-gpu", [requirement_dict(CPU_KEY, "Lt", [49])])


@pytest.mark.parametrize("stack", STACKS)
def test_tune_and_the_policy_agree_on_every_cap_of_the_shipped_stacks(stack):
    objects = stack_objects(stack)
    search = search_over(objects)
    declared = [name for name, pool in search.pools.items() if pool.largest_pod]
    assert declared  # the shipped teams declare largest pods
    for name in declared:
        for cap in CAP_LADDER:
            changes = [requirement_dict(CPU_KEY, "Lt", [cap + 1])]
            if not search.admitted(name, {CPU_KEY: changes[0]}):
                continue  # nothing admitted: nodepool-has-instance-types' case, not this rule's
            assert tune_verdict(search, name, changes) == policy_verdict(objects, name, changes, stack), (name, cap)


FAMILIES = ("g5", "g6", "p4d", "p5", "c6i", "m6i", "r6i", "m7g")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(families=st.sets(st.sampled_from(FAMILIES), min_size=1, max_size=4),
       cap=st.sampled_from(CAP_LADDER),
       cpu=st.integers(1, 96), memory_gib=st.integers(1, 768), gpus=st.integers(0, 8))
def test_tune_and_the_policy_agree_on_generated_pools(families, cap, cpu, memory_gib, gpus):
    requests = {"cpu": str(cpu), "memory": f"{memory_gib}Gi", **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    pool = nodepool("team-pool", requirements=[
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": sorted(families)},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}],
        annotations={LARGEST_POD_ANNOTATION: json.dumps(requests)})["props"]
    objects = [pool, nodeclass()["props"]]
    search = search_over(objects)
    changes = [requirement_dict(CPU_KEY, "Lt", [cap + 1])]
    if not search.admitted("team-pool", {CPU_KEY: changes[0]}):
        return
    assert tune_verdict(search, "team-pool", changes) == policy_verdict(objects, "team-pool", changes)


@pytest.mark.parametrize("raw", ['{"cpu": "lots"}', "{}", "[1]", "not json", '{"cpu": true}'])
def test_malformed_largest_pod_is_no_input_error_for_the_provisioner_and_a_finding_for_the_pack(raw):
    """Karpenter ignores the annotation, so simulate and tune read the pool as declaring nothing;
    the pack names the bad value."""
    objects = [nodepool("team-pool", annotations={LARGEST_POD_ANNOTATION: raw})["props"], nodeclass()["props"]]
    assert load_objects(objects).nodepools[0].largest_pod == ()
    pools, classes = resources_from_objects(objects)
    [finding] = list(fits_largest_pod(Stack("prod", (pools["team-pool"], *classes)), {}))
    assert "is not a JSON object of resource quantities" in finding.message
