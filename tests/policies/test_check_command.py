"""`python -m policies.check`: exit codes, the report file and what it prints."""

import pytest
import json
import subprocess
import sys

from policies import check
from tests.harness import PROJECT_DIR

NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"


def _pool(name="web-api", limits=None, team="web"):
    return {
        "type": NODEPOOL, "name": f"nodepool-{name}", "parent": None, "custom": True,
        "urn": f"urn:pulumi:test::karpenter-platform::{NODEPOOL}::nodepool-{name}",
        "options": {"protect": False, "retainOnDelete": False, "dependsOn": []},
        "inputs": {
            "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": name, "labels": {"karpenter-platform.io/team": team}},
            "spec": {
                "template": {"metadata": {"labels": {"karpenter-platform.io/team": team}},
                             "spec": {"expireAfter": "720h",
                                      "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                                       "name": "default"},
                                      "requirements": [
                                 {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["m"]},
                                 {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": ["33"]}]}},
                "disruption": {"consolidateAfter": "0s", "budgets": [{"nodes": "10%"}]},
                "limits": limits if limits is not None else {"cpu": "10", "memory": "40Gi"},
            },
        },
    }


def _build(tmp_path, resources, environment="prod"):
    build = tmp_path / "build"
    build.mkdir()
    (build / "resources.json").write_text(json.dumps(resources))
    (build / "outputs.json").write_text(json.dumps({"environment": environment}))
    return build


def _check(*args):
    return subprocess.run([sys.executable, "-m", "policies.check", *map(str, args)], cwd=PROJECT_DIR,
                          capture_output=True, text=True, check=False)


@pytest.mark.slow
def test_check_compliant_build_exits_0_with_empty_report(tmp_path):
    build = _build(tmp_path, [_pool()])
    result = _check(build)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads((build / "policy-report.json").read_text()) == []
    assert "environment prod" in result.stdout


@pytest.mark.slow
def test_check_mandatory_violation_exits_3_and_reports_it(tmp_path):
    build = _build(tmp_path, [_pool(limits={"cpu": "5000", "memory": "40Gi"})])
    result = _check(build)
    assert result.returncode == 3, result.stdout + result.stderr
    report = json.loads((build / "policy-report.json").read_text())
    assert report == [{
        "policy": "nodepool-limits-within-ceiling",
        "resource": f"urn:pulumi:test::karpenter-platform::{NODEPOOL}::nodepool-web-api",
        "level": "mandatory",
        "message": "NodePool web-api limit cpu=5000 is above the prod ceiling of 1024",
    }]
    assert "[mandatory] nodepool-limits-within-ceiling: NodePool web-api" in result.stdout


@pytest.mark.slow
def test_check_advisory_only_exits_0(tmp_path):
    build = _build(tmp_path, [_pool(limits={"cpu": "5000", "memory": "40Gi"})])
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"nodepool-limits-within-ceiling": "advisory"}))
    result = _check(build, "--config", config)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [f["level"] for f in json.loads((build / "policy-report.json").read_text())] == ["advisory"]


@pytest.mark.slow
def test_check_environment_override_changes_ceiling(tmp_path):
    build = _build(tmp_path, [_pool(limits={"cpu": "500", "memory": "40Gi"})], environment="staging")
    assert _check(build).returncode == 0
    result = _check(build, "--environment", "dev")
    assert result.returncode == 3
    assert "above the dev ceiling of 128" in result.stdout


@pytest.mark.slow
def test_check_config_ceiling_property_applies(tmp_path):
    build = _build(tmp_path, [_pool(limits={"cpu": "100", "memory": "40Gi"})])
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"nodepool-limits-within-ceiling": {"ceilings": {"cpu": "64"}}}))
    result = _check(build, "--config", config)
    assert result.returncode == 3
    assert "limit cpu=100 is above the prod ceiling of 64" in result.stdout


@pytest.mark.slow
def test_check_missing_resources_exits_2(tmp_path):
    result = _check(tmp_path / "nowhere")
    assert result.returncode == 2
    assert "resources.json not found" in result.stderr


@pytest.mark.slow
def test_check_malformed_json_exits_2(tmp_path):
    build = tmp_path / "build"
    build.mkdir()
    (build / "resources.json").write_text("[{not json")
    assert _check(build).returncode == 2


@pytest.mark.slow
def test_check_unknown_policy_in_config_exits_2(tmp_path):
    build = _build(tmp_path, [_pool()])
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"no-such-policy": "mandatory"}))
    result = _check(build, "--config", config)
    assert result.returncode == 2
    assert "no-such-policy: no such policy" in result.stderr


@pytest.mark.slow
def test_check_after_real_render_exits_0_then_3_when_a_nodeclass_allows_imdsv1(tmp_path):
    out = tmp_path / "dev"
    rendered = subprocess.run([sys.executable, "-m", "offline.render", "dev", "--out", str(out)], cwd=PROJECT_DIR,
                              capture_output=True, text=True, check=False)
    assert rendered.returncode == 0, rendered.stderr
    result = _check(out)
    assert result.returncode == 0, result.stdout
    report = json.loads((out / "policy-report.json").read_text())
    assert report and all(set(f) == {"policy", "resource", "level", "message"} and f["level"] == "advisory" for f in report)

    resources = json.loads((out / "resources.json").read_text())
    node_class = next(r for r in resources if r["type"] == "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")
    node_class["inputs"]["spec"]["metadataOptions"]["httpTokens"] = "optional"
    (out / "resources.json").write_text(json.dumps(resources))
    result = _check(out)
    assert result.returncode == 3
    mandatory = [f for f in json.loads((out / "policy-report.json").read_text()) if f["level"] == "mandatory"]
    assert [(f["policy"], f["resource"]) for f in mandatory] == [("nodeclass-imdsv2-hop-limit-1", node_class["urn"])]


def test_check_a_pack_that_raises_exits_2_with_the_cause_and_writes_no_report(tmp_path, monkeypatch, capsys):
    """An exception outside any single policy (here in evaluate itself) is exit 2 with the cause,
    never a traceback and never an empty report read as "no findings"."""
    build = _build(tmp_path, [_pool()])

    def broken(*_args, **_kwargs):
        raise KeyError("ceilings")
    monkeypatch.setattr(check, "evaluate", broken)
    assert check.main([str(build)]) == 2
    assert capsys.readouterr().err == "error: the policy pack failed: KeyError: 'ceilings'\n"
    assert not (build / "policy-report.json").exists()
