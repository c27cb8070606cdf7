"""NodePools from team config: builder, presets, Odigos startup taint, ordering and deletion."""

import json

import pytest

from components.config import ConfigError
from components.config.presets import PRESETS
from components.crds import CrdValidator
from components.nodepools import NodePools, nodepool_manifest, nodepool_manifests
from tests.harness import MINIMAL_POOL, platform_from, render, run_component, shared, stack_platform

NEEDS_INIT = {"key": "odigos.io/needs-init", "effect": "NoSchedule"}


def team(*pools, name="web", **extra):
    return {name: {"name": name, "nodePools": list(pools), **extra}}


def build(pool, settings=None, **team_extra):
    platform = platform_from(settings=settings, teams=team(pool, **team_extra))
    return nodepool_manifest(platform.teams[0], platform.teams[0].node_pools[0],
                             odigos_taint=platform.settings.odigos.needs_startup_taint)


def test_nodepool_carries_everything_the_team_wrote():
    manifest = build({
        "name": "api", "nodeClass": "default",
        "requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m7i", "c7i"], "minValues": 2}],
        "labels": {"workload": "api"}, "annotations": {"example.com/note": "x"},
        "taints": [{"key": "dedicated", "value": "api", "effect": "NoSchedule"}],
        "startupTaints": [{"key": "example.com/agent", "effect": "NoExecute"}],
        "limits": {"cpu": 100, "memory": "400Gi"}, "weight": 40,
        "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m",
                       "budgets": [{"nodes": "0", "schedule": "0 8 * * mon-fri", "duration": "10h", "reasons": ["Drifted"]}]},
        "expireAfter": "168h", "terminationGracePeriod": "1h",
    }, owner="#team-web")
    assert manifest == {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "web-api",
                     "labels": {"app.kubernetes.io/managed-by": "karpenter-platform", "karpenter-platform.io/team": "web"},
                     "annotations": {"pulumi.com/deletionPropagationPolicy": "foreground",
                                     "karpenter-platform.io/allow-spot": "true",
                                     "karpenter-platform.io/owner": "#team-web"}},
        "spec": {
            "template": {
                "metadata": {"labels": {"workload": "api", "karpenter-platform.io/team": "web"},
                             "annotations": {"example.com/note": "x"}},
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In",
                                      "values": ["m7i", "c7i"], "minValues": 2}],
                    "expireAfter": "168h",
                    "taints": [{"key": "dedicated", "value": "api", "effect": "NoSchedule"}],
                    "startupTaints": [{"key": "example.com/agent", "effect": "NoExecute"}],
                    "terminationGracePeriod": "1h",
                },
            },
            "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "10m",
                           "budgets": [{"nodes": "0", "schedule": "0 8 * * mon-fri", "duration": "10h", "reasons": ["Drifted"]}]},
            "limits": {"cpu": "100", "memory": "400Gi"},
            "weight": 40,
        },
    }


@pytest.mark.parametrize("preset", sorted(PRESETS))
@pytest.mark.slow
def test_each_preset_expands_to_a_full_spec_the_crd_accepts(preset):
    validator = CrdValidator(shared("reference/karpenter/crds"))
    manifest = build({**MINIMAL_POOL, "preset": preset})
    spec = manifest["spec"]["template"]["spec"]
    assert spec["requirements"], preset
    assert all(r.get("values") for r in spec["requirements"] if r["operator"] == "In")  # non-empty: asserted above
    assert validator.validate(manifest) == []


def test_multi_zone_preset_fills_the_stack_zones():
    manifest = build({**MINIMAL_POOL, "preset": "multi-zone"}, settings={"cluster": {
        "name": "c", "region": "eu-west-1", "zones": ["eu-west-1a", "eu-west-1b"], "subnets": {"ids": ["subnet-0123456789abcdef0"]}}})
    assert {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-west-1a", "eu-west-1b"]} in \
        manifest["spec"]["template"]["spec"]["requirements"]


def test_team_owner_is_on_the_nodepool_not_its_nodes():
    # Changing it must not drift (replace) the pool's nodes.
    manifest = build(dict(MINIMAL_POOL), owner="#team-web")
    assert manifest["metadata"]["annotations"]["karpenter-platform.io/owner"] == "#team-web"
    assert "annotations" not in manifest["spec"]["template"]["metadata"]


def test_pool_keys_win_over_the_preset():
    manifest = build({**MINIMAL_POOL, "preset": "gpu", "expireAfter": "Never",
                      "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]})
    spec = manifest["spec"]["template"]["spec"]
    assert spec["expireAfter"] == "Never"
    capacity = [r for r in spec["requirements"] if r["key"] == "karpenter.sh/capacity-type"]
    assert capacity == [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]
    assert {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"} in spec["taints"]


@pytest.mark.parametrize("mount_method", ["k8s-host-path", "k8s-csi-driver"])
def test_tainting_mount_methods_add_the_odigos_startup_taint(mount_method):
    manifest = build({**MINIMAL_POOL, "startupTaints": [{"key": "example.com/agent", "effect": "NoSchedule"}]},
                     settings={"odigos": {"enabled": True, "mountMethod": mount_method}})
    assert manifest["spec"]["template"]["spec"]["startupTaints"] == [
        {"key": "example.com/agent", "effect": "NoSchedule"}, NEEDS_INIT]


@pytest.mark.parametrize("odigos", [
    {"enabled": False},
    {"enabled": True, "mountMethod": "k8s-init-container"},
    {"enabled": True, "mountMethod": "k8s-virtual-device"},
    {"enabled": False, "mountMethod": "k8s-host-path"},
])
def test_other_mount_methods_add_no_startup_taint(odigos):
    assert "startupTaints" not in build(dict(MINIMAL_POOL), settings={"odigos": odigos})["spec"]["template"]["spec"]


def test_team_written_needs_init_taint_is_not_duplicated():
    manifest = build({**MINIMAL_POOL, "startupTaints": [NEEDS_INIT]},
                     settings={"odigos": {"enabled": True, "mountMethod": "k8s-host-path"}})
    assert manifest["spec"]["template"]["spec"]["startupTaints"] == [NEEDS_INIT]


def test_init_container_mount_method_refuses_a_team_needs_init_taint():
    with pytest.raises(ConfigError) as err:
        build({**MINIMAL_POOL, "startupTaints": [NEEDS_INIT]},
              settings={"odigos": {"enabled": True, "mountMethod": "k8s-init-container"}})
    assert "stacks/teams/web.yaml: nodePools[0].startupTaints[0]: Odigos mount method k8s-init-container never removes" in str(err.value)


def test_dev_stack_pools_all_carry_the_odigos_taint_and_staging_none():
    dev = nodepool_manifests(stack_platform("dev"))
    staging = nodepool_manifests(stack_platform("staging"))
    assert dev and all(NEEDS_INIT in m["spec"]["template"]["spec"]["startupTaints"] for m in dev)
    assert not any("startupTaints" in m["spec"]["template"]["spec"] for m in staging)


@pytest.mark.parametrize("labels, message", [
    ({"karpenter.sh/foo": "x"}, 'label domain "karpenter.sh" is restricted'),
    ({"kubernetes.io/hostname": "x"}, 'label "kubernetes.io/hostname" is restricted'),
    ({"karpenter.k8s.aws/foo": "x"}, 'label domain "karpenter.k8s.aws" is restricted'),
    ({"karpenter-platform.io/team": "other"}, "is set for you from the team file's name"),
])
def test_config_refuses_labels_karpenter_would_refuse(labels, message):
    with pytest.raises(ConfigError, match="stacks/teams/web.yaml: nodePools\\[0\\].labels: ") as err:
        build({**MINIMAL_POOL, "labels": labels})
    assert message in str(err.value)


@pytest.mark.parametrize("key", ["karpenter.sh/nodepool", "karpenter.sh/foo", "kubernetes.io/hostname", "karpenter.k8s.aws/foo"])
def test_config_refuses_restricted_requirement_keys(key):
    with pytest.raises(ConfigError, match=r"nodePools\[0\]\.requirements\[0\]\.key: .*restricted"):
        build({**MINIMAL_POOL, "requirements": [{"key": key, "operator": "Exists"}]})


def test_config_accepts_the_allowed_karpenter_keys():
    manifest = build({**MINIMAL_POOL, "requirements": [
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
        {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": ["33"]}]})
    assert [r["key"] for r in manifest["spec"]["template"]["spec"]["requirements"]] == [
        "karpenter.sh/capacity-type", "karpenter.k8s.aws/instance-cpu"]


def test_config_refuses_weight_zero_the_crd_would_refuse():
    with pytest.raises(ConfigError, match=r"nodePools\[0\]\.weight: Input should be greater than or equal to 1"):
        build({**MINIMAL_POOL, "weight": 0})


def test_config_refuses_never_as_termination_grace_period():
    with pytest.raises(ConfigError, match="terminationGracePeriod cannot be Never"):
        build({**MINIMAL_POOL, "terminationGracePeriod": "Never"})


def test_empty_taint_value_is_dropped():
    manifest = build({**MINIMAL_POOL, "taints": [{"key": "dedicated", "value": "", "effect": "NoSchedule"}]})
    assert manifest["spec"]["template"]["spec"]["taints"] == [{"key": "dedicated", "effect": "NoSchedule"}]


def test_component_declares_each_pool_with_dependencies_and_a_long_delete_timeout():
    import pulumi

    platform = platform_from(teams=team(dict(MINIMAL_POOL), {**MINIMAL_POOL, "name": "batch"}))

    def program():
        guard = pulumi.CustomResource("test:index:Guard", "controller")
        NodePools("node-pools", platform, depends_on=[guard])

    capture = run_component(program)
    guard = capture.named("controller")
    pools = capture.of_type("kubernetes:karpenter.sh/v1:NodePool")
    assert sorted(p.inputs["metadata"]["name"] for p in pools) == ["web-batch", "web-pool"]
    for pool in pools:
        assert pool.options["dependsOn"] == [guard.urn]
        assert pool.options["customTimeouts"] == {"delete": "30m"}


def test_stack_nodepools_depend_on_controller_node_classes_and_aws_side():
    capture = render("dev")
    (aws_side,) = capture.of_type("karpenter-platform:index:KarpenterAws")
    by_urn = capture.by_urn()

    def under_aws_side(resource):
        while resource.parent:
            if resource.parent == aws_side.urn:
                return True
            resource = by_urn[resource.parent]
        return False

    needed = {capture.named("karpenter-controller").urn} | {r.urn for r in capture.resources if (
        r.type == "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass" or (under_aws_side(r) and r.type in (
            "aws:iam/role:Role", "aws:eks/accessEntry:AccessEntry", "aws:sqs/queue:Queue",
            "aws:eks/podIdentityAssociation:PodIdentityAssociation")))}
    assert len(needed) >= 7  # controller, 2 node classes, 2 roles, access entry, queue
    for pool in capture.of_type("kubernetes:karpenter.sh/v1:NodePool"):
        assert needed <= set(pool.options["dependsOn"]), pool.name
        assert pool.options["customTimeouts"] == {"delete": "30m"}


def test_nodepool_annotations_carry_team_spot_permission_and_largest_pod():
    team = {"allowSpot": False, "nodePools": [{"name": "gpu", "limits": {"cpu": "8"},
                                               "largestPod": {"cpu": "4", "memory": "16Gi"}}]}
    config = platform_from(teams={"ml": team})
    annotations = nodepool_manifest(config.teams[0], config.teams[0].node_pools[0])["metadata"]["annotations"]
    assert annotations["karpenter-platform.io/allow-spot"] == "false"
    assert json.loads(annotations["karpenter-platform.io/largest-pod"]) == {"cpu": "4", "memory": "16Gi"}


def test_nodepool_without_largest_pod_has_no_largest_pod_annotation():
    config = platform_from(teams={"web": {"nodePools": [{"name": "api", "limits": {"cpu": "8"}}]}})
    annotations = nodepool_manifest(config.teams[0], config.teams[0].node_pools[0])["metadata"]["annotations"]
    assert annotations["karpenter-platform.io/allow-spot"] == "true"
    assert "karpenter-platform.io/largest-pod" not in annotations
