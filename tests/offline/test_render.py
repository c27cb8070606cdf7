"""The offline render of every shipped stack: what it declares and the files it writes."""

import json
import subprocess
import sys
from collections import Counter

import pytest

from tests.harness import PROJECT_DIR, STACKS, manifests, render, stack_platform


@pytest.mark.parametrize("stack", STACKS)
def test_render_declares_one_nodepool_per_team_pool(stack):
    capture = render(stack)
    expected = sorted(f"{t.name}-{p.name}" for t in stack_platform(stack).teams for p in t.node_pools)
    assert sorted(m["metadata"]["name"] for m in manifests(capture, "NodePool")) == expected


@pytest.mark.parametrize("stack", STACKS)
def test_render_declares_each_node_class_once(stack):
    capture = render(stack)
    names = [m["metadata"]["name"] for m in manifests(capture, "EC2NodeClass")]
    assert sorted(names) == sorted(stack_platform(stack).settings.node_classes)


def test_render_dev_applies_environment_override_to_limits():
    pools = {m["metadata"]["name"]: m for m in manifests(render("dev"), "NodePool")}
    assert pools["web-frontend"]["spec"]["limits"] == {"cpu": "40", "memory": "160Gi"}
    assert "batch-arm-jobs" not in pools  # excluded in dev by the batch team


def test_render_prod_reads_cluster_name_from_stack_reference():
    capture = render("prod")
    assert capture.of_type("pulumi:pulumi:StackReference")[0].inputs["name"] == "acme/eks-cluster/prod"
    assert capture.outputs["clusterName"] == "eks-cluster-prod"


def test_render_nodepool_carries_team_label_and_nodeclass_ref():
    pool = next(m for m in manifests(render("staging"), "NodePool") if m["metadata"]["name"] == "ml-training-gpu")
    template = pool["spec"]["template"]
    assert template["metadata"]["labels"]["karpenter-platform.io/team"] == "ml-training"
    assert template["spec"]["nodeClassRef"] == {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"}
    assert {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"} in template["spec"]["taints"]


def test_render_resources_have_type_name_parent_and_inputs():
    for resource in render("dev").resources:
        document = resource.to_json()
        assert {"type", "name", "parent", "inputs"} <= document.keys()


@pytest.mark.slow
def test_render_command_writes_build_folder(tmp_path):
    out = tmp_path / "dev"
    result = subprocess.run([sys.executable, "-m", "offline.render", "dev", "--out", str(out)],
                            cwd=PROJECT_DIR, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    resources = json.loads((out / "resources.json").read_text())
    counts = Counter(r["type"] for r in resources)
    assert counts["kubernetes:karpenter.sh/v1:NodePool"] == 4
    assert (out / "manifests" / "nodepool-web-frontend.yaml").exists()
    assert (out / "manifests" / "ec2nodeclass-default.yaml").exists()
    assert json.loads((out / "outputs.json").read_text())["clusterName"] == "acme-dev"
    assert "Rendered stack 'dev'" in result.stdout
    assert "Exception ignored" not in result.stderr


@pytest.mark.slow
def test_render_command_on_invalid_config_exits_2_and_leaves_build_untouched(tmp_path):
    from tests.harness import MINIMAL_SETTINGS, write_project

    project = write_project(tmp_path / "p", {**MINIMAL_SETTINGS, "karpenter": {"identity": "oidc"}}, {})
    (project / "__main__.py").write_text((PROJECT_DIR / "__main__.py").read_text())
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("previous render")
    result = subprocess.run([sys.executable, "-m", "offline.render", "test", "--project-dir", str(project), "--out", str(out)],
                            cwd=PROJECT_DIR, capture_output=True, text=True, check=False)
    assert result.returncode == 2
    assert "stacks/Pulumi.test.yaml: karpenter-platform:karpenter.identity: 'oidc' is not valid" in result.stderr
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_configuration_reference_is_current():
    from components.config.reference import render as reference

    current = (PROJECT_DIR / "docs" / "configuration.md").read_text()
    assert current == reference(), "docs/configuration.md is stale: run `make docs`"


def test_invalid_config_declares_no_resource(tmp_path):
    from components.config import ConfigError
    from tests.harness import MINIMAL_SETTINGS, write_project

    project = write_project(tmp_path, {**MINIMAL_SETTINGS, "teams": ["ghost"]}, {})
    (project / "__main__.py").write_text((PROJECT_DIR / "__main__.py").read_text())
    from offline.render import render_stack

    with pytest.raises(ConfigError, match="team 'ghost' is not defined"):
        render_stack(project, "test")


def test_program_refuses_invalid_config_before_declaring_anything(tmp_path):
    """The program itself (as `pulumi up` runs it) validates first: bad config, zero resources."""
    import runpy

    from components.config import ConfigError
    from offline.monitor import CapturingMonitor
    from tests.harness import MINIMAL_SETTINGS, run_component, write_project

    project = write_project(tmp_path, {**MINIMAL_SETTINGS, "karpenter": {"replicas": 0}}, {})
    (project / "__main__.py").write_text((PROJECT_DIR / "__main__.py").read_text())
    config = {"karpenter-platform:cluster": json.dumps(MINIMAL_SETTINGS["cluster"]),
              "karpenter-platform:karpenter": json.dumps({"replicas": 0})}
    declared = []
    original = CapturingMonitor.RegisterResource

    def spy(self, request):
        declared.append(request.type)
        return original(self, request)

    CapturingMonitor.RegisterResource = spy
    try:
        with pytest.raises(ConfigError, match=r"karpenter-platform:karpenter.replicas"):
            run_component(lambda: runpy.run_path(str(project / "__main__.py"), run_name="__main__"), config=config)
    finally:
        CapturingMonitor.RegisterResource = original
    assert [t for t in declared if t != "pulumi:pulumi:Stack"] == []
