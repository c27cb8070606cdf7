"""A Karpenter version per stack: `karpenter.version` pins the release, everything version-dependent
follows it, and config the release does not support is refused with the first release that does."""

import copy
from pathlib import Path

import pytest
import yaml

from components import iam, reference
from components.config import ConfigError
from components.platform import load_platform
from components.versions import config_path, manifest_gaps, version_issues, violations
from components.karpenter import controller_chart_values
from components.nodeclasses import nodeclass_manifest
from components.nodepools import nodepool_manifests
from offline.checks import check_capture
from tests.harness import PROJECT_DIR, STACKS, platform_from, render_stack, write_project

POOL = {"name": "pool", "limits": {"cpu": "10", "memory": "40Gi"}}


def errors(settings=None, teams=None) -> list[str]:
    with pytest.raises(ConfigError) as err:
        platform_from(settings, teams)
    return [str(i) for i in err.value.issues]


def test_version_absent_means_the_newest_supported():
    assert platform_from().settings.karpenter.version == "1.14.1" == reference.newest()


def test_version_pins_both_charts_and_the_iam():
    platform = platform_from({"karpenter": {"version": "1.11.3"}})
    assert platform.settings.karpenter.version == "1.11.3"
    assert iam.controller_policy_keys(interruption=True, version="1.11.3") == [
        "NodeLifecycle", "IAMIntegration", "EKSIntegration", "Interruption", "ResourceDiscovery"]


def test_unsupported_version_is_refused_with_the_supported_list():
    [message] = errors({"karpenter": {"version": "1.9.0"}})
    assert message.startswith("stacks/Pulumi.test.yaml: karpenter-platform:karpenter.version:")
    assert "1.10.2, 1.11.3, 1.12.2, 1.13.1, 1.14.1" in message


@pytest.mark.parametrize("value", ["latest", "1.14", "~1.14.1", 1.14])
def test_version_must_be_exact(value):
    [message] = errors({"karpenter": {"version": value}})
    assert "karpenter-platform:karpenter.version" in message


def test_chart_version_key_is_refused_pointing_at_version():
    [message] = errors({"karpenter": {"chartVersion": "1.14.1"}})
    assert "`chartVersion` was replaced by `version`" in message


def test_unsupported_version_exits_2_from_the_render(tmp_path, capsys):
    from offline.render import main

    write_project(tmp_path, {"cluster": {"name": "c", "region": "us-east-1", "subnets": {"ids": ["subnet-0123456789abcdef0"]}},
                             "teams": [], "karpenter": {"version": "1.15.0"}}, {})
    assert main(["test", "--project-dir", str(tmp_path)]) == 2
    assert "supported versions: 1.10.2, 1.11.3, 1.12.2, 1.13.1, 1.14.1" in capsys.readouterr().err


# --- the version gate: derived from the data, reported at the config key -----------------------

def test_capacity_buffer_gate_before_1_14_is_refused_at_its_key():
    [message] = errors({"karpenter": {"version": "1.13.1", "featureGates": {"capacityBuffer": True}}})
    assert message.startswith("stacks/Pulumi.test.yaml: karpenter-platform:karpenter.featureGates.capacityBuffer: "
                              "not supported by Karpenter 1.13.1")
    assert "first supported in 1.14.1" in message


def test_capacity_buffer_gate_is_accepted_from_1_14():
    assert platform_from({"karpenter": {"version": "1.14.1", "featureGates": {"capacityBuffer": True}}})


@pytest.mark.parametrize("version,refused", [("1.10.2", True), ("1.11.3", True), ("1.12.2", False), ("1.14.1", False)])
def test_enable_zonal_shift_needs_1_12(version, refused):
    settings = {"karpenter": {"version": version, "enableZonalShift": True}}
    if refused:
        [message] = errors(settings)
        assert "karpenter-platform:karpenter.enableZonalShift" in message and "first supported in 1.12.2" in message
    else:
        assert platform_from(settings)


def test_placement_group_requirement_before_1_11_is_refused_in_the_team_file():
    """The NodePool CEL allow-list of well-known karpenter.k8s.aws labels gains placement-group-id in
    1.11 (pkg/apis/crds/karpenter.sh_nodepools.yaml at v1.11.3)."""
    pool = {**POOL, "requirements": [{"key": "karpenter.k8s.aws/placement-group-id", "operator": "Exists"}]}
    [message] = errors({"karpenter": {"version": "1.10.2"}}, {"web": {"nodePools": [pool]}})
    assert message.startswith("stacks/teams/web.yaml: nodePools[0].requirements[0].key: not supported by Karpenter 1.10.2")
    assert "first supported in 1.11.3" in message
    assert platform_from({"karpenter": {"version": "1.11.3"}}, {"web": {"nodePools": [pool]}})


def test_balanced_before_1_14_is_refused_in_the_team_file_with_the_first_release():
    """`Balanced` joins the consolidationPolicy enum in 1.14 (karpenter.sh_nodepools.yaml at v1.14.1)."""
    pool = {**POOL, "disruption": {"consolidationPolicy": "Balanced"}}
    [message] = errors({"karpenter": {"version": "1.13.1"}}, {"web": {"nodePools": [pool]}})
    assert message.startswith("stacks/teams/web.yaml: nodePools[0].disruption.consolidationPolicy: "
                              "not supported by Karpenter 1.13.1")
    assert "first supported in 1.14.1" in message
    assert platform_from({"karpenter": {"version": "1.14.1"}}, {"web": {"nodePools": [pool]}})


@pytest.mark.parametrize("node_class, key, first", [
    ({"placementGroupSelector": {"name": "pg"}}, "placementGroupSelector", "1.11.3"),
    ({"cpuOptions": {"nestedVirtualization": "enabled"}}, "cpuOptions", "1.13.1"),
])
def test_node_class_fields_before_their_release_are_refused_in_the_stack_file(node_class, key, first):
    """EC2NodeClass gains placementGroupSelector in 1.11 and cpuOptions.nestedVirtualization in 1.13
    (karpenter.k8s.aws_ec2nodeclasses.yaml at v1.11.3 and v1.13.1)."""
    messages = errors({"karpenter": {"version": "1.10.2"}, "nodeClasses": {"default": node_class}})
    assert any(f"karpenter-platform:nodeClasses.default.{key}" in m and f"first supported in {first}" in m
               for m in messages), messages
    assert platform_from({"karpenter": {"version": first}, "nodeClasses": {"default": node_class}})


def nodepool(spec_disruption=None):
    manifest = nodepool_manifests(platform_from(teams={"web": {"nodePools": [POOL]}}))[0]
    if spec_disruption:
        manifest = copy.deepcopy(manifest)
        manifest["spec"]["disruption"].update(spec_disruption)
    return manifest


def nodeclass(**spec):
    manifest = nodeclass_manifest("default", platform_from().settings.node_classes["default"], cluster_name="c", role="r")
    manifest["spec"].update(spec)
    return manifest


@pytest.mark.parametrize("manifest,version,path,first", [
    (lambda: nodepool({"consolidationPolicy": "Balanced"}), "1.13.1", "spec.disruption.consolidationPolicy", "1.14.1"),
    (lambda: nodeclass(placementGroupSelector={"name": "pg"}), "1.10.2", "spec.placementGroupSelector", "1.11.3"),
    (lambda: nodeclass(cpuOptions={"nestedVirtualization": "enabled"}), "1.12.2", "spec.cpuOptions", "1.13.1"),
    (lambda: nodeclass(connectionTracking={"tcpEstablishedTimeout": "5m"}), "1.11.3", "spec.connectionTracking", "1.13.1"),
], ids=["Balanced", "placementGroupSelector", "nestedVirtualization", "connectionTracking"])
def test_manifest_gaps_name_the_first_release_that_accepts_the_field(manifest, version, path, first):
    """Enum values and fields from the release table of ../shared/reference/karpenter-versions/README.md."""
    [(where, _, found)] = manifest_gaps(manifest(), version)
    assert (where, found) == (path, first)
    assert manifest_gaps(manifest(), first) == []


def test_manifest_gaps_ignore_problems_every_release_has():
    assert manifest_gaps(nodeclass(notAField=True), "1.10.2") == []


def test_config_path_maps_object_fields_to_the_key_the_user_wrote():
    config = {"disruption": {"consolidationPolicy": "Balanced"}, "cpuOptions": {"nestedVirtualization": "enabled"},
              "requirements": [{"key": "k"}]}
    assert config_path("spec.disruption.consolidationPolicy", config, "nodePools[2]") == "nodePools[2].disruption.consolidationPolicy"
    assert config_path("spec.cpuOptions.nestedVirtualization", config, "x") == "x.cpuOptions.nestedVirtualization"
    assert config_path("spec.template.spec.requirements[1]", config, "p") == "p.requirements"
    assert config_path("spec.somethingElse", config, "p") == "p"


# --- the matrix: every shipped stack on every supported release ---------------------------------

def stack_at(tmp_path: Path, stack: str, version: str) -> Path:
    """A copy of the project's stack files with `karpenter.version` set."""
    root = tmp_path / f"{stack}-{version}"
    shutil_copy = __import__("shutil").copytree
    shutil_copy(PROJECT_DIR / "stacks", root / "stacks")
    (root / "Pulumi.yaml").write_text((PROJECT_DIR / "Pulumi.yaml").read_text())
    (root / "__main__.py").write_text((PROJECT_DIR / "__main__.py").read_text())
    path = root / "stacks" / f"Pulumi.{stack}.yaml"
    document = yaml.safe_load(path.read_text())
    document["config"].setdefault("karpenter-platform:karpenter", {})["version"] = version
    path.write_text(yaml.safe_dump(document))
    return root


@pytest.mark.parametrize("version", reference.supported())
@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.slow
def test_shipped_stack_builds_valid_objects_on_every_release(tmp_path, stack, version):
    platform = load_platform(stack_at(tmp_path, stack, version), stack)
    assert platform.settings.karpenter.version == version
    assert version_issues(platform) == []
    objects = nodepool_manifests(platform) + [
        nodeclass_manifest(n, c, cluster_name="c", role="r") for n, c in platform.settings.node_classes.items()]
    assert [violations(o, version) for o in objects] == [{}] * len(objects)  # cached: version_issues ran them
    values = controller_chart_values(platform, cluster_name="c", cluster_endpoint="https://e", queue_name="q",
                                     controller_role_arn="arn")
    from components import helm_values
    assert helm_values.unknown_keys(values, helm_values.karpenter_defaults("karpenter", version),
                                    helm_values.KARPENTER_FREE_FORM) == []


@pytest.mark.parametrize("version", [v for v in reference.supported() if v != reference.newest()])  # newest: test_render
@pytest.mark.slow
def test_prod_renders_whole_on_an_older_release(tmp_path, version):
    """The real __main__.py under the mocks: charts, IAM and CRD checks all follow the pin."""
    capture = render_stack(stack_at(tmp_path, "prod", version), "prod")
    assert check_capture(capture) == []
    releases = {r.inputs["name"]: r.inputs["version"] for r in capture.of_type("kubernetes:helm.sh/v3:Release")}
    assert releases["karpenter"] == releases["karpenter-crd"] == version
    policies = list(capture.of_type("aws:iam/policy:Policy"))
    has_zonal = any("ZonalShift" in str(r.inputs.get("name")) for r in policies)
    assert has_zonal == (reference.order(version) >= (1, 12))


@pytest.mark.slow
def test_render_checks_custom_resources_without_shared(monkeypatch, tmp_path):
    """A user's clone has no ../shared/: the CRD and chart checks still run, from the project's data."""
    from components import helm_values
    from tests.harness import render

    monkeypatch.setattr(helm_values, "REFERENCE_DIR", tmp_path / "absent")
    monkeypatch.setattr(helm_values, "ODIGOS_SCHEMA", tmp_path / "absent" / "values.schema.json")
    capture = copy.deepcopy(render("staging"))
    assert check_capture(capture) == []
    pool = next(r for r in capture.resources if r.inputs.get("kind") == "NodePool")
    pool.inputs["spec"]["disruption"]["consolidationPolicy"] = "WhenIdle"
    problems = check_capture(capture)
    assert len(problems) == 1 and "consolidationPolicy" in problems[0]


@pytest.mark.slow
def test_a_clone_without_shared_renders_and_checks_its_custom_resources(tmp_path):
    """The project copied where no ../shared/ exists beside it (a user's clone): the render still
    validates every custom resource and chart value, from components/reference/data/."""
    import shutil
    import subprocess
    import sys

    clone = tmp_path / "clone"
    for name in ("components", "kubefacts", "offline", "provisioner", "stacks"):
        shutil.copytree(PROJECT_DIR / name, clone / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(PROJECT_DIR / name, clone / name)
    assert not (tmp_path / "shared").exists()
    done = subprocess.run([sys.executable, "-m", "offline.render", "staging"], cwd=clone, capture_output=True,
                          text=True, timeout=300, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert "Upstream checks (CRD schemas and CEL rules, chart values): 0 problem(s)." in done.stdout
    assert (clone / "build" / "staging" / "manifests" / "helm-karpenter.yaml").is_file()
