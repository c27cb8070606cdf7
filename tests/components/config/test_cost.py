"""Size-capped presets, the team budget, and the render's cost.json (issue 14)."""

import json

import pytest

from components.config import ConfigError
from components.nodepools import nodepool_manifest, nodepool_manifests
from tests.harness import MINIMAL_POOL, platform_from

CPU = "karpenter.k8s.aws/instance-cpu"
ARCH = "kubernetes.io/arch"


def requirements(preset, **pool):
    config = platform_from(teams={"web": {"name": "web", "nodePools": [{**MINIMAL_POOL, "preset": preset, **pool}]}})
    manifest = nodepool_manifest(config.teams[0], config.teams[0].node_pools[0])
    return {r["key"]: r for r in manifest["spec"]["template"]["spec"]["requirements"]}


@pytest.mark.parametrize("preset, cap", [("general", "33"), ("spot", "33"), ("batch", "65")])
def test_general_spot_and_batch_presets_cap_instance_size(preset, cap):
    assert requirements(preset)[CPU] == {"key": CPU, "operator": "Lt", "values": [cap]}


def test_gpu_preset_leaves_size_to_the_team():
    assert CPU not in requirements("gpu")


def test_batch_preset_is_amd64_unless_graviton_is_asked_for_in_either_order():
    assert requirements("batch")[ARCH]["values"] == ["amd64"]
    assert requirements(["batch", "graviton"])[ARCH]["values"] == ["arm64"]
    assert requirements(["graviton", "batch"])[ARCH]["values"] == ["arm64"]


def test_a_pools_own_instance_cpu_requirement_replaces_the_cap():
    own = {"key": CPU, "operator": "Exists"}
    reqs = requirements("general", requirements=[own])
    assert reqs[CPU] == own


def test_team_budget_for_the_environment_is_annotated_on_every_pool():
    team = {"name": "web", "budget": {"test": 12.5, "prod": 400},
            "nodePools": [{**MINIMAL_POOL, "name": "a"}, {**MINIMAL_POOL, "name": "b"}]}
    config = platform_from(teams={"web": team}, other_stacks=("prod",))
    annotations = [m["metadata"]["annotations"] for m in nodepool_manifests(config)]
    assert [a["karpenter-platform.io/budget-usd-hour"] for a in annotations] == ["12.5", "12.5"]


def test_team_without_a_budget_for_the_environment_has_no_annotation():
    config = platform_from(teams={"web": {"name": "web", "budget": {"prod": 400}, "nodePools": [dict(MINIMAL_POOL)]}},
                           other_stacks=("prod",))
    assert "karpenter-platform.io/budget-usd-hour" not in nodepool_manifests(config)[0]["metadata"]["annotations"]


def test_negative_budget_is_refused_with_its_key_path():
    with pytest.raises(ConfigError) as err:
        platform_from(teams={"web": {"name": "web", "budget": {"prod": -1}, "nodePools": [dict(MINIMAL_POOL)]}},
                      other_stacks=("prod",))
    assert "budget.prod" in str(err.value)


def test_cost_report_sums_worst_cases_per_team_next_to_the_budget():
    from offline.cost import cost_report, summary_line
    team = {"name": "web", "budget": {"test": 1}, "nodePools": [
        {**MINIMAL_POOL, "name": "a", "preset": "general", "limits": {"cpu": "16", "memory": "64Gi"}}]}
    config = platform_from(teams={"web": team})
    report = cost_report(nodepool_manifests(config))
    [pool] = report["nodepools"]
    assert pool["nodepool"] == "web-a" and pool["worst_case_usd_hour"] > 0
    assert report["teams"] == {"web": {"worst_case_usd_hour": pool["worst_case_usd_hour"], "budget_usd_hour": 1.0}}
    assert summary_line(report).startswith(f"Worst case at NodePool limits: ${pool['worst_case_usd_hour']:,.2f}/hour")
    json.dumps(report)
