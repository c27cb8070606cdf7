"""`python -m offline.upgrade STACK --to VERSION`: the plan's figures for every consecutive pair of
releases against the upstream files, its exact JSON shape, its steps' order (upstream upgrade
guide: website/content/en/docs/upgrading/upgrade-guide.md) and its exit codes."""

import json

import pytest

from components import reference
from offline import upgrade
from tests import upstream_versions as up
from tests.harness import PROJECT_DIR, write_project

SETTINGS = {"cluster": {"name": "c", "region": "us-east-1", "subnets": {"ids": ["subnet-0123456789abcdef0"]}}, "teams": []}


def project(tmp_path, version, **karpenter):
    return write_project(tmp_path, {**SETTINGS, "karpenter": {"version": version, **karpenter}}, {})


def plan(tmp_path, frm, to, **karpenter):
    return upgrade.plan(project(tmp_path, frm, **karpenter), "test", to)


@pytest.mark.parametrize("frm,to", up.PAIRS)
def test_iam_and_chart_figures_of_each_consecutive_pair_equal_upstream(tmp_path, frm, to):
    result = plan(tmp_path, frm, to)
    assert result["iam"] == {"added": sorted(up.actions(to) - up.actions(frm)), "removed": sorted(up.actions(frm) - up.actions(to))}
    before, after = set(up.leaves(up.chart_defaults(frm))), set(up.leaves(up.chart_defaults(to)))
    assert result["chart"]["added"] == sorted(after - before)
    assert result["chart"]["removed"] == sorted(before - after)
    assert result["crds"]["new"] == sorted(up.crd_stems(to) - up.crd_stems(frm))


@pytest.mark.parametrize("frm,to,iam,chart,new,fields,enums", [
    ("1.10.2", "1.11.3", ["ec2:DescribePlacementGroups"], [], [],
     ["karpenter.k8s.aws_ec2nodeclasses:spec.networkInterfaces", "karpenter.k8s.aws_ec2nodeclasses:spec.placementGroupSelector"], []),
    ("1.11.3", "1.12.2", ["arc-zonal-shift:GetManagedResource", "ec2:DescribeInstanceStatus"], ["settings.enableZonalShift"],
     [], [], []),
    ("1.12.2", "1.13.1", [], ["settings.amiRefreshInterval", "settings.subnetRefreshInterval"], [],
     ["karpenter.k8s.aws_ec2nodeclasses:spec.connectionTracking", "karpenter.k8s.aws_ec2nodeclasses:spec.cpuOptions"], []),
    ("1.13.1", "1.14.1", [], ["settings.featureGates.capacityBuffer"], ["autoscaling.x-k8s.io_capacitybuffers"], [],
     [{"path": "karpenter.sh_nodepools:spec.disruption.consolidationPolicy", "values": ["Balanced"]}]),
])
def test_each_pair_matches_the_release_table(tmp_path, frm, to, iam, chart, new, fields, enums):
    """The table of ../shared/reference/karpenter-versions/README.md."""
    result = plan(tmp_path, frm, to)
    assert (result["iam"]["added"], result["iam"]["removed"]) == (iam, [])
    assert (result["chart"]["added"], result["chart"]["removed"], result["chart"]["changedDefaults"]) == (chart, [], [])
    assert result["crds"]["new"] == new
    assert result["crds"]["fieldsAdded"] == fields and result["crds"]["fieldsRemoved"] == []
    assert result["crds"]["enumsAdded"] == enums


def test_plan_across_several_releases_sums_the_changes(tmp_path):
    result = plan(tmp_path, "1.10.2", "1.14.1")
    assert result["iam"]["added"] == ["arc-zonal-shift:GetManagedResource", "ec2:DescribeInstanceStatus",
                                      "ec2:DescribePlacementGroups"]
    assert len(result["chart"]["added"]) == 4


def test_downgrade_reports_removals(tmp_path):
    result = plan(tmp_path, "1.14.1", "1.11.3")
    assert result["iam"]["removed"] == ["arc-zonal-shift:GetManagedResource", "ec2:DescribeInstanceStatus"]
    assert "karpenter.k8s.aws_ec2nodeclasses:spec.cpuOptions" in result["crds"]["fieldsRemoved"]
    assert "downgrade" in result["steps"][0]


def test_json_has_exactly_the_issue_shape(tmp_path, capsys):
    root = project(tmp_path, "1.13.1")
    assert upgrade.main(["test", "--to", "1.14.1", "-o", "json", "--project-dir", str(root)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert list(result) == ["from", "to", "iam", "chart", "crds", "config", "steps"]
    assert set(result["iam"]) == {"added", "removed"}
    assert set(result["chart"]) == {"added", "removed", "changedDefaults"}
    assert set(result["crds"]) == {"new", "removed", "fieldsAdded", "fieldsRemoved", "enumsAdded", "enumsRemoved"}
    assert set(result["config"]) == {"invalid"}
    assert (result["from"], result["to"]) == ("1.13.1", "1.14.1")
    assert all(isinstance(s, str) for s in result["steps"])


def test_config_invalid_lists_what_the_target_refuses(tmp_path):
    result = plan(tmp_path, "1.14.1", "1.13.1", featureGates={"capacityBuffer": True})
    [invalid] = result["config"]["invalid"]
    assert invalid["file"] == "stacks/Pulumi.test.yaml"
    assert invalid["path"] == "karpenter-platform:karpenter.featureGates.capacityBuffer"
    assert "first supported in 1.14.1" in invalid["message"]
    assert result["steps"][1].startswith("Fix the 1 config")


def test_steps_put_preflight_then_iam_then_crds_then_controller(tmp_path):
    steps = plan(tmp_path, "1.13.1", "1.14.1")["steps"]
    order = [next(i for i, s in enumerate(steps) if s.startswith(prefix))
             for prefix in ("Check the live cluster", "Set karpenter-platform:karpenter", "IAM", "CRDs before the controller",
                            "Controller:", "make preview")]
    assert order == sorted(order)
    assert "storedVersions" in steps[order[0]]
    assert "autoscaling.x-k8s.io_capacitybuffers" in steps[order[3]]


def test_steps_name_the_iam_actions_and_the_1_12_drift(tmp_path):
    steps = plan(tmp_path, "1.11.3", "1.12.2")["steps"]
    iam_step = next(s for s in steps if s.startswith("IAM"))
    assert "ec2:DescribeInstanceStatus" in iam_step and "arc-zonal-shift:GetManagedResource" in iam_step
    assert any("drift" in s for s in steps)


def test_same_version_plans_nothing(tmp_path):
    result = plan(tmp_path, "1.12.2", "1.12.2")
    assert result["iam"] == {"added": [], "removed": []} and len(result["steps"]) == 1


def test_unknown_version_exits_2_with_one_line(capsys):
    assert upgrade.main(["dev", "--to", "1.15.0", "--project-dir", str(PROJECT_DIR)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "1.15.0" in err and ", ".join(reference.supported()) in err


def test_table_output_for_a_shipped_stack(capsys):
    assert upgrade.main(["prod", "--to", "1.14.1", "--project-dir", str(PROJECT_DIR)]) == 0
    assert capsys.readouterr().out.startswith("Karpenter 1.14.1 -> 1.14.1")


def test_make_target_runs_the_planner():
    makefile = (PROJECT_DIR / "Makefile").read_text()
    assert "$(PY) -m offline.upgrade $(STACK) --to $(TO)" in makefile
    assert "$(PY) -m components.reference.generate --from" in makefile


def test_downgrade_lists_removed_crds_and_enum_values_and_downgrade_steps(tmp_path):
    """README's own `make upgrade-plan STACK=prod TO=1.12.2` on a 1.14.1 stack is a downgrade: the plan
    names what 1.12.2 no longer serves (the capacitybuffers CRD, consolidationPolicy Balanced) and
    no upgrade-guide note (the 1.14 note says to install a CRD the downgrade removes)."""
    result = plan(tmp_path, "1.14.1", "1.12.2")
    assert result["crds"]["removed"] == ["autoscaling.x-k8s.io_capacitybuffers"]
    assert result["crds"]["enumsRemoved"] == [{"path": "karpenter.sh_nodepools:spec.disruption.consolidationPolicy",
                                               "values": ["Balanced"]}]
    steps = result["steps"]
    assert steps[0].startswith("This is a downgrade (1.14.1 -> 1.12.2)")
    assert "autoscaling.x-k8s.io_capacitybuffers" in steps[0] and "Balanced" in steps[0]
    assert not any(s.startswith(("Upgrade guide", "CRDs before the controller", "IAM before")) for s in steps)
    order = [next(i for i, s in enumerate(steps) if s.startswith(prefix))
             for prefix in ("Check the live cluster", "Controller:", "CRDs:", "make preview")]
    assert order == sorted(order)


def test_upgrade_lists_nothing_removed(tmp_path):
    result = plan(tmp_path, "1.13.1", "1.14.1")
    assert result["crds"]["removed"] == [] and result["crds"]["enumsRemoved"] == []


def test_to_accepts_the_release_tag_spelling(capsys):
    """Karpenter tags its releases `v1.12.2` (github.com/aws/karpenter-provider-aws/releases)."""
    assert upgrade.main(["prod", "--to", "v1.12.2", "-o", "json", "--project-dir", str(PROJECT_DIR)]) == 0
    assert json.loads(capsys.readouterr().out)["to"] == "1.12.2"
