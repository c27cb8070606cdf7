"""Every invalid input is rejected before anything is declared, naming the file and the key path."""

from __future__ import annotations

import copy

import pytest

from components.config import ConfigError
from components.platform import load_platform
from tests.harness import MINIMAL_POOL, MINIMAL_SETTINGS, write_project

TEAM = "stacks/teams/web.yaml"
STACK = "stacks/Pulumi.test.yaml"


def errors_for(tmp_path, pool_changes=None, settings_changes=None, teams=None, raw_files=None) -> list[str]:
    """Load a one-team project with the given changes and return every error line."""
    pool = {**copy.deepcopy(MINIMAL_POOL), **(pool_changes or {})}
    settings = {**copy.deepcopy(MINIMAL_SETTINGS), "teams": ["web"], **(settings_changes or {})}
    teams = teams if teams is not None else {"web": {"name": "web", "nodePools": [pool]}}
    project = write_project(tmp_path, settings, teams, raw_files=raw_files)
    with pytest.raises(ConfigError) as caught:
        load_platform(project, "test")
    return [str(issue) for issue in caught.value.issues]


def test_valid_minimal_project_loads(tmp_path):
    settings = {**MINIMAL_SETTINGS, "teams": ["web"]}
    project = write_project(tmp_path, settings, {"web": {"nodePools": [MINIMAL_POOL]}})
    platform = load_platform(project, "test")
    assert [p.name for p in platform.teams[0].node_pools] == ["pool"]
    assert platform.environment == "test"


def test_unknown_pool_key_suggests_the_close_key(tmp_path):
    assert errors_for(tmp_path, {"wieght": 10}) == [
        f"{TEAM}: nodePools[0].wieght: unknown key 'wieght'; did you mean 'weight'?"
    ]


def test_unknown_key_one_level_off_points_to_where_it_belongs(tmp_path):
    assert errors_for(tmp_path, {"consolidationPolicy": "WhenEmpty"}) == [
        f"{TEAM}: nodePools[0].consolidationPolicy: unknown key 'consolidationPolicy'; "
        "did you mean 'disruption.consolidationPolicy'?"
    ]


def test_unknown_stack_key_names_the_stack_file_and_namespaced_key(tmp_path):
    errors = errors_for(tmp_path, settings_changes={"karpenter": {"replicsa": 2}})
    assert errors == [f"{STACK}: karpenter-platform:karpenter.replicsa: unknown key 'replicsa'; did you mean 'replicas'?"]


def test_wrong_enum_lists_valid_values(tmp_path):
    errors = errors_for(tmp_path, {"disruption": {"consolidationPolicy": "WhenIdle"}})
    assert errors == [
        f"{TEAM}: nodePools[0].disruption.consolidationPolicy: 'WhenIdle' is not valid; use WhenEmpty, "
        "WhenEmptyOrUnderutilized or Balanced (there is no WhenIdle policy; for 'remove idle nodes' use WhenEmpty)"
    ]


def test_identity_enum_in_stack_file_is_rejected(tmp_path):
    errors = errors_for(tmp_path, settings_changes={"karpenter": {"identity": "oidc"}})
    assert errors == [f"{STACK}: karpenter-platform:karpenter.identity: 'oidc' is not valid; use podIdentity or irsa"]


def test_v1beta1_when_underutilized_is_explained(tmp_path):
    (error,) = errors_for(tmp_path, {"disruption": {"consolidationPolicy": "WhenUnderutilized"}})
    assert error.startswith(f"{TEAM}: nodePools[0].disruption.consolidationPolicy: 'WhenUnderutilized' is not valid")
    assert "karpenter.sh/v1 calls it WhenEmptyOrUnderutilized" in error


def test_kubelet_on_nodepool_points_to_node_class(tmp_path):
    (error,) = errors_for(tmp_path, {"kubelet": {"maxPods": 110}})
    assert error.startswith(f"{TEAM}: nodePools[0].kubelet: unknown key 'kubelet': kubelet settings moved")
    assert "nodeClasses.<name>.kubelet" in error


def test_ttl_seconds_after_empty_is_explained(tmp_path):
    (error,) = errors_for(tmp_path, {"ttlSecondsAfterEmpty": 30})
    assert error.startswith(f"{TEAM}: nodePools[0].ttlSecondsAfterEmpty: unknown key 'ttlSecondsAfterEmpty': ")
    assert "consolidationPolicy: WhenEmpty" in error


def test_provisioner_manifest_as_team_file_is_explained(tmp_path):
    provisioner = {"apiVersion": "karpenter.sh/v1alpha5", "kind": "Provisioner", "nodePools": [MINIMAL_POOL]}
    errors = errors_for(tmp_path, teams={"web": provisioner})
    assert f"{TEAM}: kind: unknown key 'kind': team files are not Kubernetes objects (a Provisioner or NodePool " \
           "manifest); declare NodePools under nodePools" in errors
    assert any(e.startswith(f"{TEAM}: apiVersion: unknown key 'apiVersion'") for e in errors)


def test_invalid_label_key_is_rejected(tmp_path):
    (error,) = errors_for(tmp_path, {"labels": {"Example.com/tier": "web"}})
    assert error.startswith(f"{TEAM}: nodePools[0].labels.Example.com/tier: 'Example.com/tier' is not a valid label key")


def test_invalid_label_value_is_rejected(tmp_path):
    (error,) = errors_for(tmp_path, {"labels": {"tier": "-web"}})
    assert error.startswith(f"{TEAM}: nodePools[0].labels.tier: '-web' is not a valid label value")


def test_invalid_taint_effect_is_rejected(tmp_path):
    assert errors_for(tmp_path, {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoScheduleX"}]}) == [
        f"{TEAM}: nodePools[0].taints[0].effect: 'NoScheduleX' is not valid; use NoSchedule, PreferNoSchedule or NoExecute"
    ]


def test_startup_taint_key_must_be_a_label_key(tmp_path):
    (error,) = errors_for(tmp_path, {"startupTaints": [{"key": "bad key", "effect": "NoSchedule"}]})
    assert error.startswith(f"{TEAM}: nodePools[0].startupTaints[0].key: 'bad key' is not a valid label key")


@pytest.mark.parametrize("values", [["1", "2"], ["abc"], [], ["1.5"]])
def test_gt_requires_exactly_one_integer(tmp_path, values):
    requirement = {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": values}
    (error,) = errors_for(tmp_path, {"requirements": [requirement]})
    assert error.startswith(f"{TEAM}: nodePools[0].requirements[0]: operator Gt takes exactly one non-negative integer")


def test_lt_requires_exactly_one_integer(tmp_path):
    requirement = {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Lt", "values": ["4.5"]}
    (error,) = errors_for(tmp_path, {"requirements": [requirement]})
    assert error.startswith(f"{TEAM}: nodePools[0].requirements[0]: operator Lt takes exactly one")


def test_in_without_values_is_rejected(tmp_path):
    requirement = {"key": "karpenter.sh/capacity-type", "operator": "In"}
    assert errors_for(tmp_path, {"requirements": [requirement]}) == [
        f"{TEAM}: nodePools[0].requirements[0]: operator In needs at least one value"
    ]


def test_unknown_operator_is_rejected(tmp_path):
    requirement = {"key": "karpenter.sh/capacity-type", "operator": "Equals", "values": ["spot"]}
    assert errors_for(tmp_path, {"requirements": [requirement]}) == [
        f"{TEAM}: nodePools[0].requirements[0].operator: 'Equals' is not valid; use In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte or Lte"
    ]


def test_negative_quantity_is_rejected(tmp_path):
    assert errors_for(tmp_path, {"limits": {"cpu": "-10", "memory": "40Gi"}}) == [
        f"{TEAM}: nodePools[0].limits.cpu: '-10' is negative; quantities here must be zero or more"
    ]


def test_unparsable_quantity_is_rejected(tmp_path):
    assert errors_for(tmp_path, {"limits": {"cpu": "10", "memory": "40GB"}}) == [
        f"{TEAM}: nodePools[0].limits.memory: '40GB' is not a Kubernetes quantity (e.g. 500m, 4, 16Gi)"
    ]


def test_unparsable_duration_is_rejected(tmp_path):
    assert errors_for(tmp_path, {"expireAfter": "30 days"}) == [
        f"{TEAM}: nodePools[0].expireAfter: '30 days' is not a duration Karpenter accepts (e.g. 30s, 10m, 720h, or Never)"
    ]


def test_budget_schedule_without_duration_is_rejected(tmp_path):
    budgets = [{"nodes": "0", "schedule": "0 9 * * mon-fri"}]
    assert errors_for(tmp_path, {"disruption": {"budgets": budgets}}) == [
        f"{TEAM}: nodePools[0].disruption.budgets[0]: schedule and duration must be set together"
    ]


def test_nodepool_without_limits_is_rejected(tmp_path):
    pool = {k: v for k, v in MINIMAL_POOL.items() if k != "limits"}
    assert errors_for(tmp_path, teams={"web": {"nodePools": [pool]}}) == [
        f"{TEAM}: nodePools[0].limits: required key missing: a NodePool needs limits (e.g. cpu and memory) "
        "so a runaway workload cannot buy unbounded capacity"
    ]


def test_malformed_team_yaml_names_file_and_line(tmp_path):
    errors = errors_for(tmp_path, teams={"web": "nodePools:\n  - name: pool\n    limits: {cpu: 1\n"})
    assert len(errors) == 1
    assert errors[0].startswith(f"{TEAM}: malformed YAML: line ")


def test_malformed_stack_yaml_names_the_stack_file(tmp_path):
    project = write_project(tmp_path, MINIMAL_SETTINGS, {})
    (project / "stacks" / "Pulumi.test.yaml").write_text("config:\n  karpenter-platform:teams: [web\n")
    with pytest.raises(ConfigError) as caught:
        load_platform(project, "test")
    assert str(caught.value.issues[0]).startswith(f"{STACK}: malformed YAML: line ")


def test_duplicate_yaml_key_is_rejected(tmp_path):
    text = "nodePools:\n  - name: pool\n    weight: 1\n    weight: 2\n    limits: {cpu: '1'}\n"
    (error,) = errors_for(tmp_path, teams={"web": text})
    assert error.startswith(f"{TEAM}: malformed YAML: line 4, column 5: duplicate key 'weight'")


def test_duplicate_nodepool_names_across_teams_are_rejected(tmp_path):
    teams = {
        "web": {"nodePools": [{**MINIMAL_POOL, "name": "api-x"}]},
        "web-api": {"nodePools": [{**MINIMAL_POOL, "name": "x"}]},
    }
    errors = errors_for(tmp_path, settings_changes={"teams": ["web", "web-api"]}, teams=teams)
    assert errors == [
        "stacks/teams/web-api.yaml: nodePools[0].name: NodePool 'web-api-x' is also rendered by "
        "stacks/teams/web.yaml; NodePool names must be unique in the cluster"
    ]


def test_duplicate_nodepool_names_within_a_team_are_rejected(tmp_path):
    teams = {"web": {"nodePools": [MINIMAL_POOL, MINIMAL_POOL]}}
    assert errors_for(tmp_path, teams=teams) == [
        f"{TEAM}: nodePools[1].name: NodePool 'pool' is defined twice in this team"
    ]


def test_undefined_node_class_is_rejected(tmp_path):
    assert errors_for(tmp_path, {"nodeClass": "gpu"}) == [
        f"{TEAM}: nodePools[0].nodeClass: node class 'gpu' is not defined in the stack's nodeClasses (default)"
    ]


def test_stack_naming_undefined_team_is_rejected(tmp_path):
    errors = errors_for(tmp_path, settings_changes={"teams": ["web", "paymnts"]})
    assert errors == [
        f"{STACK}: karpenter-platform:teams[1]: team 'paymnts' is not defined: no stacks/teams/paymnts.yaml (teams: web)"
    ]


def test_override_of_unknown_pool_suggests_the_pool(tmp_path):
    team = {"nodePools": [MINIMAL_POOL], "environments": {"test": {"nodePools": {"pol": {"weight": 5}}}}}
    assert errors_for(tmp_path, teams={"web": team}) == [
        f"{TEAM}: environments.test.nodePools.pol: no NodePool named 'pol' in this team; did you mean 'pool'?"
    ]


def test_error_in_environment_override_points_at_the_override(tmp_path):
    override = {"pool": {"limits": {"cpu": "-1"}}}
    team = {"nodePools": [MINIMAL_POOL], "environments": {"test": {"nodePools": override}}}
    assert errors_for(tmp_path, teams={"web": team}) == [
        f"{TEAM}: environments.test.nodePools.pool.limits.cpu: '-1' is negative; quantities here must be zero or more"
    ]


def test_team_file_name_must_match_team_name(tmp_path):
    assert errors_for(tmp_path, teams={"web": {"name": "frontend", "nodePools": [MINIMAL_POOL]}}) == [
        f"{TEAM}: name: 'frontend' must equal the file name 'web'"
    ]


def test_unknown_preset_lists_valid_presets(tmp_path):
    assert errors_for(tmp_path, {"preset": "spotty"}) == [
        f"{TEAM}: nodePools[0].preset[0]: 'spotty' is not valid; use general, spot, gpu, batch, graviton or multi-zone"
    ]


def test_latest_ami_without_opt_in_is_rejected(tmp_path):
    errors = errors_for(tmp_path, settings_changes={"nodeClasses": {"default": {"amiAlias": "al2023@latest"}}})
    assert errors == [
        f"{STACK}: karpenter-platform:nodeClasses.default: amiAlias 'al2023@latest' floats to new AMIs on every "
        "release; pin a version or set allowLatestAmi: true"
    ]


def test_plaintext_odigos_token_is_rejected(tmp_path):
    errors = errors_for(tmp_path, settings_changes={"odigosOnPremToken": "abc"})
    assert errors == [
        f"{STACK}: karpenter-platform:odigosOnPremToken: must be a secret: run "
        "`pulumi config set --secret odigosOnPremToken ...`"
    ]


def test_errors_in_stack_and_team_files_are_all_reported_at_once(tmp_path):
    errors = errors_for(tmp_path, {"weight": 101}, settings_changes={"karpenter": {"replicas": 0}})
    assert [e.split(":")[0] for e in errors] == [STACK, TEAM]


@pytest.mark.parametrize("changes,path,message", [
    ({"limits": 5}, "nodePools[0].limits", "Input should be a valid dictionary, got 5"),
    ({"weight": "heavy"}, "nodePools[0].weight", "Input should be a valid integer, unable to parse string as an integer, got 'heavy'"),
    ({"labels": ["a"]}, "nodePools[0].labels", "Input should be a valid dictionary, got ['a']"),
])
def test_type_errors_echo_the_value_written(tmp_path, changes, path, message):
    assert errors_for(tmp_path, changes) == [f"stacks/teams/web.yaml: {path}: {message}"]
