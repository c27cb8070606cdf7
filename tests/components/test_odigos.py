"""Odigos: the release, its values against the chart's schema, the secret token, and the Karpenter
integration for each mount method (taint + Job + odiglet restart, nothing, or NodeOverlay)."""

import json

import pulumi
import pytest

from components import helm_values
from components.config import ConfigError
from components.odigos import (
    GENERIC_DEVICE,
    INTEGRATION_ANNOTATION,
    REPOSITORY,
    Odigos,
    integration_hash,
    node_overlay,
    odigos_values,
    prepare_command,
)
from offline.monitor import run
from offline.placeholders import PlaceholderMocks
from tests.harness import MINIMAL_POOL, STACKS, manifests, platform_from, render, run_component, shared

RELEASE = "kubernetes:helm.sh/v3:Release"
MOUNT_METHODS = ["k8s-host-path", "k8s-csi-driver", "k8s-init-container", "k8s-virtual-device"]
TOKEN = "0dd5-very-secret-token"


def odigos_settings(mount_method="k8s-host-path", **extra):
    return {"odigos": {"enabled": True, "mountMethod": mount_method, **extra}}


def platform(mount_method="k8s-host-path", teams=None, **extra):
    teams = teams if teams is not None else {"web": {"name": "web", "nodePools": [dict(MINIMAL_POOL)]}}
    return platform_from(settings=odigos_settings(mount_method, **extra), teams=teams)


def declare(config, prepare_image=None, secrets=None):
    def program():
        controller = pulumi.CustomResource("test:index:Controller", "karpenter-controller")
        Odigos("odigos", config, cluster_name="acme", pool_names=["web-pool", "web-api"], karpenter_controller=controller,
               prepare_image=prepare_image)

    if secrets:
        return run(program, PlaceholderMocks("us-east-1"), config=secrets, secret_keys=list(secrets))
    return run_component(program)


@pytest.fixture(scope="module")
def schema_path():
    return shared("reference/odigos/values.schema.json")


# -- values -----------------------------------------------------------------------------------

@pytest.mark.parametrize("mount_method", MOUNT_METHODS)
def test_values_set_the_mount_method_and_karpenter_flag(mount_method):
    values = odigos_values(platform(mount_method).settings.odigos, cluster_name="acme")
    assert values == {"instrumentor": {"mountMethod": mount_method},
                      "karpenter": {"enabled": mount_method in ("k8s-host-path", "k8s-csi-driver")},
                      "clusterName": "acme"}


@pytest.mark.parametrize("mount_method", MOUNT_METHODS)
def test_values_are_valid_against_the_chart_schema(mount_method, schema_path):
    config = platform(mount_method, odigletTolerations=[{"operator": "Exists"}],
                      values={"odiglet": {"logLevel": "debug"}, "ui": {"uiMode": "readonly"}}).settings.odigos
    values = odigos_values(config, cluster_name="acme", on_prem_token="[secret]")
    assert helm_values.schema_errors(values, schema_path) == []


def test_schema_check_rejects_an_unknown_top_level_key(schema_path):
    values = odigos_values(platform(values={"instrumentorr": {}}).settings.odigos)
    assert helm_values.schema_errors(values, schema_path) == [
        "<root>: Additional properties are not allowed ('instrumentorr' was unexpected)"]


def test_user_values_are_kept_under_the_integration_keys():
    config = platform(values={"instrumentor": {"logLevel": "debug"}, "clusterName": "shown-name"}).settings.odigos
    values = odigos_values(config, cluster_name="acme")
    assert values["instrumentor"] == {"logLevel": "debug", "mountMethod": "k8s-host-path"}
    assert values["clusterName"] == "shown-name"


@pytest.mark.parametrize("values, message", [
    ({"instrumentor": {"mountMethod": "k8s-host-path"}}, "values.instrumentor.mountMethod is set by the stack"),
    ({"karpenter": {"enabled": False}}, "values.karpenter.enabled is set by the stack"),
    ({"onPremToken": "abc"}, "values.onPremToken is set by the stack: use edition: onprem and the secret"),
])
def test_values_cannot_override_the_integration(values, message):
    with pytest.raises(ConfigError, match=message):
        platform(values=values)



@pytest.mark.parametrize("tolerations", [5, "all", {"operator": "Exists"}])
def test_odiglet_tolerations_that_are_not_a_list_are_a_config_error(tolerations):
    """Hostile input: `values.odiglet.tolerations: 5` was iterated and ended in a TypeError traceback."""
    with pytest.raises(ConfigError) as caught:
        platform(values={"odiglet": {"tolerations": tolerations}})
    [issue] = caught.value.issues
    assert issue.path == "karpenter-platform:odigos"
    assert f"values.odiglet.tolerations: expected a list of tolerations, got {tolerations!r}" in issue.message

# -- the release and the token ----------------------------------------------------------------

def test_release_is_pinned_from_the_odigos_repository_into_its_own_namespace():
    capture = declare(platform())
    release = capture.named("odigos", RELEASE)
    assert {k: release.inputs.get(k) for k in ("name", "chart", "version", "namespace")} == {
        "name": "odigos", "chart": "odigos", "version": "1.35.1", "namespace": "odigos-system"}
    assert release.inputs["repositoryOpts"] == {"repo": REPOSITORY}
    namespace = manifests(capture, "Namespace")[0]
    assert namespace["metadata"]["name"] == "odigos-system"
    assert capture.named("odigos-namespace").urn in release.options["dependsOn"]


def test_onprem_token_reaches_the_chart_only_as_a_secret():
    config = platform_from(settings={**odigos_settings(edition="onprem"), "odigosOnPremToken": {"secure": "v1:AAAA"}})
    assert config.odigos_token_configured
    capture = declare(config, secrets={"karpenter-platform:odigosOnPremToken": TOKEN})
    assert capture.named("odigos", RELEASE).inputs["values"]["onPremToken"] == "[secret]"
    assert TOKEN not in json.dumps([r.to_json() for r in capture.resources])


def test_community_edition_sets_no_token():
    assert "onPremToken" not in declare(platform()).named("odigos", RELEASE).inputs["values"]


def test_onprem_without_the_secret_is_refused_at_config_load():
    with pytest.raises(ConfigError, match="karpenter-platform:odigos.edition: onprem needs the secret odigosOnPremToken"):
        platform(edition="onprem")


# -- k8s-host-path / k8s-csi-driver: taint existing nodes once, restart odiglet ----------------

@pytest.mark.parametrize("mount_method", ["k8s-host-path", "k8s-csi-driver"])
def test_tainting_mount_methods_run_the_prepare_job_then_restart_odiglet(mount_method):
    config = platform(mount_method)
    capture = declare(config)
    digest = integration_hash(config.settings.odigos)
    job = capture.of_type("kubernetes:batch/v1:Job")[0]
    assert job.inputs["metadata"]["name"] == f"odigos-prepare-nodes-{digest}"
    assert job.inputs["metadata"]["namespace"] == "odigos-system"
    container = job.inputs["spec"]["template"]["spec"]["initContainers"][0]
    assert container["image"] == "registry.k8s.io/kubectl:v1.34.1"
    assert container["command"] == ["kubectl", "taint", "nodes", "--selector",
                                    "kubernetes.io/os=linux,eks.amazonaws.com/compute-type!=fargate",
                                    "odigos.io/needs-init=:NoSchedule", "--overwrite"]
    assert job.options["ignoreChanges"] == ["spec"]
    assert job.options["customTimeouts"] == {"create": "15m", "update": "15m"}
    assert job.inputs["metadata"]["annotations"]["pulumi.com/replaceUnready"] == "true"
    assert capture.named("odigos", RELEASE).urn in job.options["dependsOn"]
    patch = capture.of_type("kubernetes:apps/v1:DaemonSetPatch")[0]
    assert patch.inputs["metadata"]["name"] == "odiglet"
    assert patch.inputs["spec"] == {"template": {"metadata": {"annotations": {INTEGRATION_ANNOTATION: digest}}}}
    assert job.urn in patch.options["dependsOn"]


def test_prepare_job_may_only_read_and_patch_nodes_and_release_its_own_binding():
    config = platform()
    capture = declare(config)
    binding_name = f"odigos-prepare-nodes-{integration_hash(config.settings.odigos)}"
    (role,) = manifests(capture, "ClusterRole")
    assert role["rules"] == [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]},
                             {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterrolebindings"],
                              "resourceNames": [binding_name], "verbs": ["delete"]}]
    (binding,) = manifests(capture, "ClusterRoleBinding")
    assert binding["metadata"]["name"] == binding_name
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "odigos-prepare-nodes", "namespace": "odigos-system"}]
    job = manifests(capture, "Job")[0]
    assert job["spec"]["template"]["spec"]["serviceAccountName"] == "odigos-prepare-nodes"


def test_the_kubectl_prepare_job_deletes_its_binding_once_every_node_is_tainted():
    """The binding (patch on every Node) used to stay bound after the one-shot Job finished. The
    tainting runs as an init container; the main container, run only once it succeeded, deletes
    the binding (the kubectl image has no shell to chain the two)."""
    config = platform()
    spec = manifests(declare(config), "Job")[0]["spec"]["template"]["spec"]
    assert [c["name"] for c in spec["initContainers"]] == ["prepare"]
    assert [c["command"] for c in spec["containers"]] == [
        ["kubectl", "delete", "clusterrolebinding", f"odigos-prepare-nodes-{integration_hash(config.settings.odigos)}",
         "--ignore-not-found"]]


def test_provisioner_image_runs_the_provisioner_command():
    capture = declare(platform(), prepare_image="123456789012.dkr.ecr.us-east-1.amazonaws.com/provisioner@sha256:" + "a" * 64)
    container = manifests(capture, "Job")[0]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"].endswith("@sha256:" + "a" * 64)
    binding = f"odigos-prepare-nodes-{integration_hash(platform().settings.odigos)}"
    assert container["command"] == ["provisioner", "odigos-prepare-nodes", "--taint", "odigos.io/needs-init=:NoSchedule",
                                    "--selector", "kubernetes.io/os=linux,eks.amazonaws.com/compute-type!=fargate",
                                    "--release-binding", binding]


def test_integration_hash_changes_with_the_integration_and_only_with_it():
    host_path = integration_hash(platform("k8s-host-path").settings.odigos)
    assert host_path != integration_hash(platform("k8s-csi-driver").settings.odigos)
    assert host_path != integration_hash(platform(prepareNodeSelector="kubernetes.io/os=linux").settings.odigos)
    assert host_path == integration_hash(platform(chartVersion="1.36.0", prepareImage="example.com/kubectl:v1").settings.odigos)


def test_custom_odiglet_daemonset_name_is_the_one_restarted():
    capture = declare(platform(values={"odiglet": {"daemonsetName": "odiglet-x"}}))
    assert capture.of_type("kubernetes:apps/v1:DaemonSetPatch")[0].inputs["metadata"]["name"] == "odiglet-x"


def test_prepare_command_without_provisioner_is_kubectl():
    assert prepare_command(platform().settings.odigos, provisioner_image=False)[0] == "kubectl"


@pytest.mark.parametrize("image", ["registry.k8s.io/kubectl", "registry.k8s.io/kubectl:latest"])
def test_unpinned_prepare_image_is_refused(image):
    with pytest.raises(ConfigError, match="is not a pinned image reference"):
        platform(prepareImage=image)


# -- k8s-init-container: nothing else --------------------------------------------------------

def test_init_container_declares_no_job_no_patch_no_overlay():
    capture = declare(platform("k8s-init-container"))
    types = {r.type for r in capture.resources}
    assert types == {"test:index:Controller", "karpenter-platform:index:Odigos", "kubernetes:core/v1:Namespace", RELEASE}


# -- k8s-virtual-device: NodeOverlay ---------------------------------------------------------

def test_virtual_device_declares_a_node_overlay_for_the_stack_pools_after_the_controller():
    capture = declare(platform("k8s-virtual-device"))
    (overlay,) = capture.of_type("kubernetes:karpenter.sh/v1alpha1:NodeOverlay")
    assert overlay.inputs["spec"] == {
        "requirements": [{"key": "karpenter.sh/nodepool", "operator": "In", "values": ["web-api", "web-pool"]}],
        "capacity": {GENERIC_DEVICE: "1024"},
    }
    assert capture.named("karpenter-controller").urn in overlay.options["dependsOn"]
    assert not capture.of_type("kubernetes:batch/v1:Job")


def test_node_overlay_capacity_is_configurable():
    overlay = node_overlay(platform("k8s-virtual-device", nodeOverlayCapacity=110).settings.odigos, ["a"])
    assert overlay["spec"]["capacity"] == {GENERIC_DEVICE: "110"}


def test_virtual_device_with_the_node_overlay_gate_off_is_refused():
    with pytest.raises(ConfigError, match="karpenter.featureGates.nodeOverlay: is false, but odigos.mountMethod k8s-virtual-device"):
        platform_from(settings={**odigos_settings("k8s-virtual-device"), "karpenter": {"featureGates": {"nodeOverlay": False}}})


# -- odiglet must keep tolerating the taint --------------------------------------------------

@pytest.mark.parametrize("tolerations", [
    [{"operator": "Exists"}],
    [{"key": "odigos.io/needs-init", "operator": "Exists"}],
    [{"key": "odigos.io/needs-init", "operator": "Exists", "effect": "NoSchedule"}, {"key": "x", "operator": "Exists"}],
    [{"key": "odigos.io/needs-init", "operator": "Equal", "value": "", "effect": "NoSchedule"}],
])
def test_tolerations_that_still_tolerate_the_taint_are_accepted(tolerations):
    config = platform(odigletTolerations=tolerations, teams={}).settings.odigos
    assert odigos_values(config)["odiglet"]["tolerations"] == [
        dict(t.items()) for t in config.model_dump(by_alias=True, exclude_none=True)["odigletTolerations"]]


@pytest.mark.parametrize("tolerations", [
    [],
    [{"key": "CriticalAddonsOnly", "operator": "Exists"}],
    [{"key": "odigos.io/needs-init", "operator": "Exists", "effect": "NoExecute"}],
    [{"key": "odigos.io/needs-init", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
])
def test_odiglet_tolerations_narrowed_below_the_taint_are_refused(tolerations):
    with pytest.raises(ConfigError, match="odigletTolerations no longer tolerate odigos.io/needs-init:NoSchedule"):
        platform(odigletTolerations=tolerations)


def test_narrowing_odiglet_tolerations_through_values_is_refused():
    with pytest.raises(ConfigError, match="values.odiglet.tolerations no longer tolerate odigos.io/needs-init:NoSchedule"):
        platform(values={"odiglet": {"tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"}]}})


def test_odiglet_tolerations_set_twice_are_refused():
    with pytest.raises(ConfigError, match="set twice"):
        platform(odigletTolerations=[{"operator": "Exists"}], values={"odiglet": {"tolerations": [{"operator": "Exists"}]}})


def test_odiglet_must_tolerate_every_team_taint():
    teams = {"ml": {"name": "ml", "nodePools": [{**MINIMAL_POOL, "taints": [
        {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]}]}}
    with pytest.raises(ConfigError, match=r"stacks/teams/ml.yaml: nodePools\[0\].taints\[0\]: odiglet does not tolerate nvidia.com/gpu"):
        platform(teams=teams, odigletTolerations=[{"key": "odigos.io/needs-init", "operator": "Exists"}])


# -- shipped stacks --------------------------------------------------------------------------

def test_dev_runs_odigos_with_host_path_and_the_full_integration():
    capture = render("dev")
    release = next(r for r in capture.of_type(RELEASE) if r.inputs["name"] == "odigos")
    assert release.inputs["values"]["instrumentor"]["mountMethod"] == "k8s-host-path"
    assert release.inputs["values"]["karpenter"] == {"enabled": True}
    assert len(manifests(capture, "Job")) == 1 and len(capture.of_type("kubernetes:apps/v1:DaemonSetPatch")) == 1


def test_staging_runs_odigos_with_virtual_device_and_a_node_overlay():
    capture = render("staging")
    (overlay,) = manifests(capture, "NodeOverlay")
    pools = sorted(m["metadata"]["name"] for m in manifests(capture, "NodePool"))
    assert overlay["spec"]["requirements"][0]["values"] == pools
    assert not manifests(capture, "Job")


def test_prod_runs_no_odigos():
    assert not any(r.inputs.get("name") == "odigos" for r in render("prod").of_type(RELEASE))
    assert not render("prod").of_type("karpenter-platform:index:Odigos")


@pytest.mark.parametrize("stack", STACKS)
def test_stack_odigos_values_are_valid_against_the_chart_schema(stack, schema_path):
    for release in render(stack).of_type(RELEASE):
        if release.inputs["chart"] == "odigos":
            assert helm_values.schema_errors(release.inputs["values"], schema_path) == []
