"""The karpenter-crd and karpenter helm releases: charts, versions, values, keys, ordering."""

import pytest
import yaml

from components import helm_values
from components.karpenter import (
    CONTROLLER_CHART,
    CRD_CHART,
    Karpenter,
    controller_chart_values,
    crd_chart_values,
)
from tests.harness import STACKS, platform_from, render, run_component, shared

RELEASE = "kubernetes:helm.sh/v3:Release"
ROLE = "arn:aws:iam::123456789012:role/acme-karpenter"


def values_for(settings=None, queue="acme-queue"):
    return controller_chart_values(platform_from(settings=settings), cluster_name="acme", cluster_endpoint="https://eks.example",
                                   queue_name=queue, controller_role_arn=ROLE)


def declare(settings=None):
    platform = platform_from(settings=settings)
    capture = run_component(lambda: Karpenter("karpenter", platform, cluster_name="acme", cluster_endpoint="https://eks.example",
                                              queue_name="acme-queue", controller_role_arn=ROLE))
    return capture.named("karpenter-crd", RELEASE), capture.named("karpenter-controller", RELEASE)


@pytest.fixture(scope="module")
def chart_defaults():
    return helm_values.load_defaults(shared("reference/karpenter/chart-values.yaml"))


def test_crd_release_installs_the_crd_chart_pinned_and_kept():
    crd, _ = declare()
    assert {k: crd.inputs.get(k) for k in ("name", "chart", "version", "namespace")} == {
        "name": "karpenter-crd", "chart": CRD_CHART, "version": "1.14.1", "namespace": "kube-system"}
    assert crd.inputs["values"] == {"additionalAnnotations": {"helm.sh/resource-policy": "keep"}}
    assert crd.options["retainOnDelete"] is True


def test_controller_release_skips_crds_and_waits_for_the_crd_release():
    crd, controller = declare()
    assert {k: controller.inputs.get(k) for k in ("name", "chart", "version", "namespace", "skipCrds")} == {
        "name": "karpenter", "chart": CONTROLLER_CHART, "version": "1.14.1", "namespace": "kube-system", "skipCrds": True}
    assert crd.urn in controller.options["dependsOn"]
    assert controller.options["retainOnDelete"] is False  # uninstalling the controller never touches the CRDs


def test_chart_version_and_namespace_come_from_config():
    crd, controller = declare({"karpenter": {"version": "1.12.2", "namespace": "karpenter"}})
    assert (crd.inputs["version"], controller.inputs["version"]) == ("1.12.2", "1.12.2")
    assert (crd.inputs["namespace"], controller.inputs["namespace"]) == ("karpenter", "karpenter")
    assert controller.inputs["createNamespace"] is True


def test_controller_values_carry_cluster_queue_and_controller_settings():
    values = values_for({"karpenter": {"replicas": 3, "logLevel": "debug",
                                       "resources": {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"memory": "2Gi"}}}})
    assert values == {
        "settings": {"clusterName": "acme", "clusterEndpoint": "https://eks.example", "interruptionQueue": "acme-queue"},
        "replicas": 3,
        "logLevel": "debug",
        "serviceAccount": {"name": "karpenter"},
        "controller": {"resources": {"requests": {"cpu": "2", "memory": "2Gi"}, "limits": {"memory": "2Gi"}}},
    }


def test_interruption_queue_is_omitted_when_handling_is_off():
    assert "interruptionQueue" not in values_for({"karpenter": {"interruptionHandling": False}}, queue=None)["settings"]


def test_only_the_feature_gates_the_stack_sets_are_passed():
    values = values_for({"karpenter": {"featureGates": {"nodeRepair": True, "reservedCapacity": False}}})
    assert values["settings"]["featureGates"] == {"nodeRepair": True, "reservedCapacity": False}
    assert "featureGates" not in values_for()["settings"]


def test_virtual_device_odigos_forces_the_node_overlay_gate():
    values = values_for({"odigos": {"enabled": True, "mountMethod": "k8s-virtual-device"},
                         "karpenter": {"featureGates": {"nodeRepair": True}}})
    assert values["settings"]["featureGates"] == {"nodeRepair": True, "nodeOverlay": True}


@pytest.mark.parametrize("mount_method", ["k8s-host-path", "k8s-csi-driver", "k8s-init-container"])
def test_other_mount_methods_leave_node_overlay_alone(mount_method):
    values = values_for({"odigos": {"enabled": True, "mountMethod": mount_method}})
    assert "featureGates" not in values["settings"]


def test_irsa_annotates_the_service_account_with_the_controller_role():
    assert values_for({"karpenter": {"identity": "irsa"}})["serviceAccount"] == {
        "name": "karpenter", "annotations": {"eks.amazonaws.com/role-arn": ROLE}}


def test_pod_identity_adds_no_service_account_annotation():
    assert values_for()["serviceAccount"] == {"name": "karpenter"}


@pytest.mark.parametrize("settings", [
    None,
    {"karpenter": {"identity": "irsa", "featureGates": {"nodeRepair": True, "spotToSpotConsolidation": True,
                                                        "staticCapacity": True, "capacityBuffer": True,
                                                        "reservedCapacity": True}}},
    {"odigos": {"enabled": True, "mountMethod": "k8s-virtual-device"}},
])
def test_every_generated_key_exists_in_the_chart_defaults(settings, chart_defaults):
    values = values_for(settings)
    assert helm_values.unknown_keys(values, chart_defaults, helm_values.KARPENTER_FREE_FORM) == []


def test_crd_chart_values_keys_exist_in_its_defaults():
    defaults = helm_values.load_defaults(shared("reference/karpenter/crd-chart-values.yaml"))
    assert helm_values.unknown_keys(crd_chart_values(), defaults) == []


def test_a_typo_in_a_values_key_is_rejected_with_its_path(chart_defaults):
    values = values_for()
    values["settings"]["featureGate"] = {"nodeOverlay": True}
    values["controller"]["resource"] = {}
    with pytest.raises(helm_values.UnknownValuesKey) as err:
        helm_values.check_keys("karpenter", values, chart_defaults, helm_values.KARPENTER_FREE_FORM)
    assert err.value.paths == ["settings.featureGate", "controller.resource"]
    assert "settings.featureGate, controller.resource" in str(err.value)


def test_an_unknown_feature_gate_is_rejected(chart_defaults):
    values = {"settings": {"featureGates": {"nodeOverlays": True}}}
    assert helm_values.unknown_keys(values, chart_defaults) == ["settings.featureGates.nodeOverlays"]


def test_free_form_maps_accept_any_key(chart_defaults):
    values = {"serviceAccount": {"annotations": {"example.com/anything": "x"}}, "podLabels": {"team": "platform"},
              "nodeSelector": {"node-role": "system"}, "controller": {"resources": {"requests": {"cpu": "1"}}}}
    assert helm_values.unknown_keys(values, chart_defaults, helm_values.KARPENTER_FREE_FORM) == []


def test_chart_defaults_version_matches_the_pinned_chart():
    version = shared("reference/karpenter/VERSION.txt").read_text().split()[0]
    assert version == "v" + platform_from().settings.karpenter.version


@pytest.mark.parametrize("stack", STACKS)
def test_stack_renders_both_releases_with_real_cluster_facts(stack):
    releases = {r.inputs["name"]: r for r in render(stack).of_type(RELEASE)}
    controller = releases["karpenter"].inputs["values"]
    cluster = render(stack).outputs["clusterName"]
    assert controller["settings"]["clusterName"] == cluster
    assert controller["settings"]["clusterEndpoint"].startswith("https://PLACEHOLDER-")
    assert controller["settings"]["interruptionQueue"] == render(stack).outputs["interruptionQueueName"]
    assert releases["karpenter-crd"].options["retainOnDelete"] is True


def test_prod_uses_irsa_and_dev_pod_identity():
    prod = next(r for r in render("prod").of_type(RELEASE) if r.inputs["name"] == "karpenter").inputs["values"]
    dev = next(r for r in render("dev").of_type(RELEASE) if r.inputs["name"] == "karpenter").inputs["values"]
    assert prod["serviceAccount"]["annotations"] == {"eks.amazonaws.com/role-arn": render("prod").outputs["controllerRoleArn"]}
    assert "annotations" not in dev["serviceAccount"]


def test_render_writes_each_release_as_a_manifest(tmp_path):
    from offline.render import write_build

    write_build(render("staging"), tmp_path / "staging")
    document = yaml.safe_load((tmp_path / "staging" / "manifests" / "helm-karpenter.yaml").read_text())
    assert document["chart"] == CONTROLLER_CHART and document["skipCrds"] is True
    assert document["values"]["settings"]["featureGates"] == {"nodeRepair": True, "nodeOverlay": True}


def test_values_keep_outputs_at_the_leaves_so_previews_see_the_rest():
    import pulumi

    arn = pulumi.Output.from_input(ROLE)
    values = controller_chart_values(platform_from(settings={"karpenter": {"identity": "irsa", "featureGates": {"nodeRepair": True}}}),
                                     cluster_name="acme", cluster_endpoint="https://eks.example", queue_name=None,
                                     controller_role_arn=arn)
    assert values["settings"] == {"clusterName": "acme", "clusterEndpoint": "https://eks.example",
                                  "featureGates": {"nodeRepair": True}}
    assert values["serviceAccount"]["annotations"]["eks.amazonaws.com/role-arn"] is arn
