"""NodePool policies, each with passing and failing stacks built as the analyzer builds them."""

import pytest
import json


from tests.policies.analyzer import UNKNOWN, messages, resource, run, urn_of
from tests.policies.builders import nodeclass, nodepool, release

GPU_POOL_REQUIREMENTS = [
    {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["g5", "g6"]},
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},
]
GPU_TAINT = [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
ODIGOS_TAINT = [{"key": "odigos.io/needs-init", "effect": "NoSchedule"}]


# --- nodepool-limits-within-ceiling ---

def test_limits_within_prod_ceiling_pass():
    assert run("nodepool-limits-within-ceiling", [nodepool(limits={"cpu": "1024", "memory": "4Ti"})]) == []


def test_limits_above_ceiling_fail_with_urn():
    assert run("nodepool-limits-within-ceiling", [nodepool(limits={"cpu": "2000", "memory": "400Gi"})]) == [
        (urn_of("kubernetes:karpenter.sh/v1:NodePool", "nodepool-web-api"),
         "NodePool web-api limit cpu=2000 is above the prod ceiling of 1024")]


def test_limits_ceiling_depends_on_environment_fail_in_dev():
    pools = [nodepool(limits={"cpu": "200", "memory": "400Gi"})]
    assert run("nodepool-limits-within-ceiling", pools, environment="staging") == []
    assert messages("nodepool-limits-within-ceiling", pools, environment="dev") == [
        "NodePool web-api limit cpu=200 is above the dev ceiling of 128"]


def test_limits_memory_ceiling_fail():
    assert messages("nodepool-limits-within-ceiling", [nodepool(limits={"cpu": "10", "memory": "5Ti"})]) == [
        "NodePool web-api limit memory=5Ti is above the prod ceiling of 4096Gi"]


def test_limits_missing_fail():
    assert messages("nodepool-limits-within-ceiling", [nodepool(limits=None)]) == [
        "NodePool web-api has no spec.limits; declare at least cpu, memory"]


def _static(pool, replicas=3):
    pool["props"]["spec"]["replicas"] = replicas
    return pool


def test_limits_static_pool_with_only_a_node_limit_pass():
    """A static NodePool may only limit nodes (karpenter.sh_nodepools.yaml CEL); replicas bound it."""
    assert run("nodepool-limits-within-ceiling", [_static(nodepool(limits={"nodes": "5"}))]) == []
    assert run("nodepool-limits-within-ceiling", [_static(nodepool(limits=None))]) == []


def test_limits_static_pool_still_meets_a_node_ceiling_fail():
    pools = [_static(nodepool(limits={"nodes": "50"}))]
    assert messages("nodepool-limits-within-ceiling", pools, config={"ceilings": {"nodes": "10"}}) == [
        "NodePool web-api limit nodes=50 is above the prod ceiling of 10"]


def test_limits_missing_memory_fail():
    assert messages("nodepool-limits-within-ceiling", [nodepool(limits={"cpu": "10"})]) == [
        "NodePool web-api does not limit memory (spec.limits has cpu)"]


def test_limits_config_ceiling_overrides_default_fail():
    pools = [nodepool(limits={"cpu": "100", "memory": "400Gi"})]
    assert messages("nodepool-limits-within-ceiling", pools, config={"ceilings": {"cpu": "64"}}) == [
        "NodePool web-api limit cpu=100 is above the prod ceiling of 64"]


def test_limits_unknown_pass():
    assert run("nodepool-limits-within-ceiling", [nodepool(limits=UNKNOWN)]) == []
    assert run("nodepool-limits-within-ceiling", [nodepool(limits={"cpu": UNKNOWN, "memory": "1Gi"})]) == []


# --- nodepool-has-instance-types ---

@pytest.mark.slow
def test_has_instance_types_general_pool_pass():
    assert run("nodepool-has-instance-types", [nodepool()]) == []


def test_has_instance_types_contradictory_requirements_fail():
    requirements = [
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]},
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5", "c5"]},
    ]
    assert messages("nodepool-has-instance-types", [nodepool(requirements=requirements)]) == [
        "NodePool web-api admits 0 instance type(s) of the catalog (at least 1 needed): "
        "kubernetes.io/arch In ['arm64']; karpenter.k8s.aws/instance-family In ['m5', 'c5']"]


def test_has_instance_types_typo_in_family_fail():
    requirements = [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5x"]}]
    assert len(messages("nodepool-has-instance-types", [nodepool(requirements=requirements)])) == 1


@pytest.mark.parametrize("key,value,hint", [
    ("node.kubernetes.io/instance-type", "m5.larg", "'m5.larg' is not an instance type of the catalog; did you mean 'm5.large'?"),
    ("karpenter.k8s.aws/instance-family", "m5x", "'m5x' is not an instance family of the catalog; did you mean 'm5'?"),
])
def test_unknown_instance_type_or_family_gets_did_you_mean(key, value, hint):
    [message] = messages("nodepool-has-instance-types", [nodepool(requirements=[{"key": key, "operator": "In", "values": [value]}])])
    assert message.endswith(f"({hint})")


def test_has_instance_types_min_values_too_high_fail():
    requirements = [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                     "values": ["m5.large", "m5.xlarge"], "minValues": 2},
                    {"key": "karpenter.k8s.aws/instance-size", "operator": "In", "values": ["large"]}]
    assert messages("nodepool-has-instance-types", [nodepool(requirements=requirements)]) == [
        "NodePool web-api: minValues requirement is not met for label node.kubernetes.io/instance-type (1 < 2) "
        "among its 1 instance types"]


def test_has_instance_types_min_values_met_pass():
    requirements = [{"key": "karpenter.k8s.aws/instance-family", "operator": "In",
                     "values": ["m5", "m6i", "m7i"], "minValues": 3}]
    assert run("nodepool-has-instance-types", [nodepool(requirements=requirements)]) == []


def test_has_instance_types_invalid_operator_fail():
    requirements = [{"key": "karpenter.k8s.aws/instance-family", "operator": "Equals", "values": ["m5"]}]
    [message] = messages("nodepool-has-instance-types", [nodepool(requirements=requirements)])
    assert message.startswith("NodePool web-api is not a valid Karpenter NodePool: ")
    assert ("NodePool \"web-api\": spec.template.spec.requirements[0].operator: 'Equals' is not one of "
            "['Gte', 'Lte', 'In', 'NotIn', 'Exists', 'DoesNotExist', 'Gt', 'Lt']") in message


@pytest.mark.slow
def test_has_instance_types_zone_outside_default_region_pass():
    requirements = [*nodepool()["props"]["spec"]["template"]["spec"]["requirements"],
                    {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-west-1a", "eu-west-1b"]}]
    assert run("nodepool-has-instance-types", [nodepool(requirements=requirements)]) == []


def test_has_instance_types_unknown_requirement_value_pass():
    requirements = [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": [UNKNOWN]}]
    assert run("nodepool-has-instance-types", [nodepool(requirements=requirements)]) == []


# --- nodepool-fits-largest-pod ---

def _largest(requests):
    return {"karpenter-platform.io/largest-pod": json.dumps(requests)}


def test_fits_largest_pod_that_fits_pass():
    assert run("nodepool-fits-largest-pod", [nodepool(annotations=_largest({"cpu": "32", "memory": "120Gi"}))]) == []


def test_fits_largest_pod_gpu_pass():
    pool = nodepool("ml-training-gpu", "ml-training", requirements=GPU_POOL_REQUIREMENTS, taints=GPU_TAINT,
                    annotations=_largest({"cpu": "32", "memory": "120Gi", "nvidia.com/gpu": "4"}))
    assert run("nodepool-fits-largest-pod", [pool]) == []


def test_fits_largest_pod_too_many_gpus_fail():
    pool = nodepool("ml-training-gpu", "ml-training", requirements=GPU_POOL_REQUIREMENTS, taints=GPU_TAINT,
                    annotations=_largest({"nvidia.com/gpu": "16"}))
    [message] = messages("nodepool-fits-largest-pod", [pool])
    assert message.startswith("NodePool ml-training-gpu: none of the ")
    assert "can hold the declared largest pod (nvidia.com/gpu=16); closest is g" in message


def test_fits_largest_pod_memory_needs_overhead_fail():
    # m5.large has 8 GiB of memory but about 6.7 GiB allocatable: an 8Gi pod never fits.
    requirements = [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.large"]}]
    pool = nodepool(requirements=requirements, annotations=_largest({"memory": "8Gi"}))
    assert messages("nodepool-fits-largest-pod", [pool]) == [
        "NodePool web-api: none of the 1 admitted instance types can hold the declared largest pod (memory=8Gi); "
        "closest is m5.large with memory 6.7Gi"]


def test_fits_largest_pod_uses_nodeclass_kubelet_reservations_fail():
    requirements = [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m5.xlarge"]}]
    pool = nodepool(requirements=requirements, annotations=_largest({"cpu": "3500m"}))
    assert run("nodepool-fits-largest-pod", [pool, nodeclass()]) == []
    reserved = nodeclass(kubelet={"kubeReserved": {"cpu": "1"}})
    assert len(run("nodepool-fits-largest-pod", [pool, reserved])) == 1


def test_fits_largest_pod_bad_annotation_fail():
    pool = nodepool(annotations={"karpenter-platform.io/largest-pod": "cpu=4"})
    assert messages("nodepool-fits-largest-pod", [pool]) == [
        "NodePool web-api annotation karpenter-platform.io/largest-pod='cpu=4' is not a JSON object of resource "
        "quantities (e.g. {\"cpu\": \"4\", \"memory\": \"8Gi\"})"]


def test_fits_largest_pod_without_annotation_pass():
    assert run("nodepool-fits-largest-pod", [nodepool()]) == []


# --- nodepool-gpu-tainted ---

def test_gpu_pool_with_taint_pass():
    pool = nodepool("ml-training-gpu", "ml-training", requirements=GPU_POOL_REQUIREMENTS, taints=GPU_TAINT)
    assert run("nodepool-gpu-tainted", [pool]) == []


def test_gpu_pool_without_taint_fail():
    pool = nodepool("ml-training-gpu", "ml-training", requirements=GPU_POOL_REQUIREMENTS)
    [message] = messages("nodepool-gpu-tainted", [pool])
    assert message.startswith("NodePool ml-training-gpu admits ")
    assert "GPU/accelerator instance types (g5.12xlarge, g5.16xlarge" in message


def test_unrestricted_pool_admits_gpus_fail():
    pool = nodepool(requirements=[{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}])
    assert len(run("nodepool-gpu-tainted", [pool])) == 1


def test_pool_admitting_inferentia_without_taint_fail():
    requirements = [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["inf2"]}]
    [message] = messages("nodepool-gpu-tainted", [nodepool(requirements=requirements)])
    assert "inf2.xlarge" in message


def test_general_pool_without_taint_pass():
    assert run("nodepool-gpu-tainted", [nodepool()]) == []


def test_gpu_pool_with_prefer_no_schedule_only_fail():
    pool = nodepool(requirements=GPU_POOL_REQUIREMENTS,
                    taints=[{"key": "nvidia.com/gpu", "value": "true", "effect": "PreferNoSchedule"}])
    assert len(run("nodepool-gpu-tainted", [pool])) == 1


# --- nodepool-disruption-budgets ---

def test_budgets_present_pass():
    assert run("nodepool-disruption-budgets", [nodepool(budgets=[{"nodes": "1"}])]) == []


def test_budgets_missing_fail():
    assert messages("nodepool-disruption-budgets", [nodepool(budgets=None)]) == [
        "NodePool web-api has no spec.disruption.budgets; add e.g. {nodes: \"10%\"}"]


def test_budgets_only_scheduled_or_100_percent_fail():
    budgets = [{"nodes": "100%"}, {"nodes": "0", "schedule": "0 8 * * mon-fri", "duration": "10h"}]
    assert len(run("nodepool-disruption-budgets", [nodepool(budgets=budgets)])) == 1


# --- nodepool-expire-after-set ---

def test_expire_after_set_pass():
    assert run("nodepool-expire-after-set", [nodepool(expire_after="168h")]) == []
    assert run("nodepool-expire-after-set", [nodepool(expire_after="Never")]) == []


def test_expire_after_missing_fail():
    assert messages("nodepool-expire-after-set", [nodepool(expire_after=None)]) == [
        "NodePool web-api does not set spec.template.spec.expireAfter (e.g. 720h)"]


def test_expire_after_above_configured_maximum_fail():
    config = {"maxExpireAfter": "720h", "allowNever": False}
    assert messages("nodepool-expire-after-set", [nodepool(expire_after="2160h")], config=config) == [
        "NodePool web-api expireAfter 2160h is longer than the maximum 720h"]
    assert messages("nodepool-expire-after-set", [nodepool(expire_after="Never")], config=config) == [
        "NodePool web-api sets expireAfter: Never, which this environment does not allow"]


# --- nodepool-spot-allowed ---

SPOT_REQUIREMENTS = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
                     {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["m"]}]


def test_spot_on_allowed_team_pass():
    pool = nodepool(requirements=SPOT_REQUIREMENTS, annotations={"karpenter-platform.io/allow-spot": "true"})
    assert run("nodepool-spot-allowed", [pool]) == []


def test_spot_on_disallowed_team_fail():
    pool = nodepool("ml-training-gpu", "ml-training", requirements=SPOT_REQUIREMENTS,
                    annotations={"karpenter-platform.io/allow-spot": "false"})
    assert messages("nodepool-spot-allowed", [pool]) == [
        "NodePool ml-training-gpu admits spot capacity (karpenter.sh/capacity-type) but its team does not allow "
        "spot (allowSpot: false); require on-demand"]


def test_spot_via_not_in_on_demand_fail():
    requirements = [{"key": "karpenter.sh/capacity-type", "operator": "NotIn", "values": ["on-demand"]}]
    pool = nodepool(requirements=requirements, annotations={"karpenter-platform.io/allow-spot": "false"})
    assert len(run("nodepool-spot-allowed", [pool])) == 1


def test_no_capacity_requirement_means_on_demand_pass():
    requirements = [{"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["m"]}]
    pool = nodepool(requirements=requirements, annotations={"karpenter-platform.io/allow-spot": "false"})
    assert run("nodepool-spot-allowed", [pool]) == []


def test_on_demand_pool_of_disallowed_team_pass():
    assert run("nodepool-spot-allowed", [nodepool(annotations={"karpenter-platform.io/allow-spot": "false"})]) == []


# --- nodepool-odigos-startup-taint ---

def _odigos(mount_method, karpenter=True):
    return release("odigos", "odigos", "1.35.1", {"instrumentor": {"mountMethod": mount_method},
                                                   "karpenter": {"enabled": karpenter}})


def test_odigos_host_path_with_taint_pass():
    assert run("nodepool-odigos-startup-taint", [_odigos("k8s-host-path"), nodepool(startup_taints=ODIGOS_TAINT)]) == []


def test_odigos_csi_driver_without_taint_fail():
    assert messages("nodepool-odigos-startup-taint", [_odigos("k8s-csi-driver"), nodepool()]) == [
        "NodePool web-api lacks startup taint odigos.io/needs-init:NoSchedule (Odigos mount method k8s-csi-driver): "
        "pods could start before odiglet prepared the node"]


def test_odigos_host_path_without_karpenter_integration_fail():
    found = run("nodepool-odigos-startup-taint", [_odigos("k8s-host-path", karpenter=False),
                                                 nodepool(startup_taints=ODIGOS_TAINT)])
    assert found == [(urn_of("kubernetes:helm.sh/v3:Release", "odigos-release"),
                      "odigos release uses mount method k8s-host-path on Karpenter nodes but does not set "
                      "karpenter.enabled: true")]


def test_odigos_init_container_with_taint_fail():
    [message] = messages("nodepool-odigos-startup-taint", [_odigos("k8s-init-container"),
                                                          nodepool(startup_taints=ODIGOS_TAINT)])
    assert "Odigos mount method k8s-init-container never removes it" in message


def test_odigos_not_installed_with_taint_fail():
    [message] = messages("nodepool-odigos-startup-taint", [nodepool(startup_taints=ODIGOS_TAINT)])
    assert "Odigos is not installed in this stack" in message


def test_odigos_virtual_device_either_way_pass():
    assert run("nodepool-odigos-startup-taint", [_odigos("k8s-virtual-device"), nodepool()]) == []
    assert run("nodepool-odigos-startup-taint", [_odigos("k8s-virtual-device"), nodepool(startup_taints=ODIGOS_TAINT)]) == []


def test_odigos_unknown_mount_method_pass():
    assert run("nodepool-odigos-startup-taint", [_odigos(UNKNOWN), nodepool()]) == []


# --- nodepool-team-ownership ---

def test_team_ownership_pass():
    assert run("nodepool-team-ownership", [nodepool()]) == []


def test_team_label_missing_fail():
    pool = nodepool()
    del pool["props"]["metadata"]["labels"]["karpenter-platform.io/team"]
    assert messages("nodepool-team-ownership", [pool]) == ["NodePool web-api has no karpenter-platform.io/team label"]


def test_pool_named_for_other_team_fail():
    assert messages("nodepool-team-ownership", [nodepool("batch-jobs", "web")]) == [
        "NodePool batch-jobs belongs to team 'web' but is not named web-<pool>"]


def test_node_team_label_differs_fail():
    assert messages("nodepool-team-ownership", [nodepool(node_team="batch")]) == [
        "NodePool web-api: its nodes' karpenter-platform.io/team label is 'batch', not 'web'"]


def test_resource_helper_builds_urn():
    assert resource("t:x:Y", "n", {})["urn"] == "urn:pulumi:test::karpenter-platform::t:x:Y::n"
