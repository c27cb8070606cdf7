"""Every render validates the whole team file: the base pools, every `environments.<env>` block as
that environment sees it, and no environment or budget key that names no stack."""

from __future__ import annotations

import pytest

from components.config import ConfigError
from tests.harness import MINIMAL_POOL, platform_from

STACKS = ("staging", "prod")  # besides dev, the stack rendered


def errors(team, stack="dev"):
    with pytest.raises(ConfigError) as caught:
        platform_from(teams={"web": team}, stack=stack, other_stacks=STACKS)
    return {(issue.path, issue.message) for issue in caught.value.issues}


@pytest.mark.parametrize("limits,path,message", [
    ({"cpu": "-10", "memory": "40Gi"}, "nodePools[0].limits.cpu", "'-10' is negative"),
    ({"cpu": "100 cores", "memory": "40Gi"}, "nodePools[0].limits.cpu", "'100 cores' is not a Kubernetes quantity"),
    ({"cpu": "10", "memory": "400GB"}, "nodePools[0].limits.memory", "'400GB' is not a Kubernetes quantity"),
])
def test_invalid_base_value_that_dev_overrides_fails_the_dev_render(limits, path, message):
    team = {"nodePools": [{**MINIMAL_POOL, "limits": limits}],
            "environments": {"dev": {"nodePools": {"pool": {"limits": {"cpu": "10", "memory": "40Gi"}}}}}}
    found = errors(team)
    assert any(p == path and m.startswith(message) for p, m in found), found


def test_typo_inside_another_environment_fails_the_dev_render():
    team = {"nodePools": [dict(MINIMAL_POOL)],
            "environments": {"prod": {"nodePools": {"pool": {"limts": {"cpu": "100"}}}}}}
    assert errors(team) == {("environments.prod.nodePools.pool.limts", "unknown key 'limts'; did you mean 'limits'?")}


def test_override_of_an_unknown_pool_in_another_environment_fails_the_dev_render():
    team = {"nodePools": [dict(MINIMAL_POOL)], "environments": {"prod": {"nodePools": {"pol": {"weight": 5}}}}}
    assert errors(team) == {("environments.prod.nodePools.pol", "no NodePool named 'pol' in this team; did you mean 'pool'?")}


def test_environment_key_naming_no_stack_is_an_error_with_a_suggestion():
    team = {"nodePools": [dict(MINIMAL_POOL)], "environments": {"production": {"nodePools": {"pool": {"weight": 5}}}},
            "budget": {"prd": 200}}
    assert errors(team) == {
        ("environments.production", "no stack or environment is named 'production'; did you mean 'prod'? stacks: dev, prod, staging"),
        ("budget.prd", "no stack or environment is named 'prd'; did you mean 'prod'? stacks: dev, prod, staging"),
    }


def test_environment_named_by_a_stacks_environment_setting_is_known():
    config = platform_from(settings={"environment": "production"}, teams={"web": {
        "nodePools": [dict(MINIMAL_POOL)], "budget": {"production": 5}}}, stack="prod")
    assert config.environment == "production" and config.teams[0].budget == {"production": 5}


def test_invalid_value_in_another_environments_override_fails_the_dev_render():
    team = {"nodePools": [dict(MINIMAL_POOL)], "environments": {"prod": {"nodePools": {"pool": {"weight": 0}}}}}
    [(path, _)] = errors(team)
    assert path == "environments.prod.nodePools.pool.weight"


def test_valid_team_in_every_environment_loads():
    team = {"nodePools": [dict(MINIMAL_POOL)], "budget": {"dev": 1, "prod": 2},
            "environments": {"prod": {"nodePools": {"pool": {"limits": {"cpu": "100", "memory": "400Gi"}}}}}}
    config = platform_from(teams={"web": team}, stack="dev", other_stacks=STACKS)
    assert config.teams[0].node_pools[0].limits["cpu"] == "10"


def test_owner_too_big_for_the_annotations_is_refused_with_its_key_path():
    """Hostile input: a 300 KB `owner` became a NodePool annotation over the API server's 256 KiB
    total (apimachinery ValidateAnnotations), caught only by the render's CRD check."""
    found = errors({"owner": "x" * 300_000, "nodePools": [dict(MINIMAL_POOL)]})
    [(path, message)] = found
    assert path == "owner"
    assert message.startswith("300,000 characters: NodePool web-pool carries it as the annotation karpenter-platform.io/owner")
    assert "262,144" in message


GT_ABC = {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["abc"]}
FAMILY = {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m5"]}
SIZED = {"name": "pool", "preset": "general", "limits": {"cpu": "10", "memory": "40Gi"}, "requirements": [FAMILY, GT_ABC]}


def paths(team):
    return {path for path, _ in errors(team)}


def test_requirement_path_indexes_the_users_list_not_the_preset_merged_one():
    """The general preset adds five requirements before the pool's own: the second of a two-item
    list was reported as requirements[6]."""
    assert paths({"nodePools": [SIZED]}) == {"nodePools[0].requirements[1]"}


def test_pool_path_is_its_index_in_the_file_when_an_earlier_pool_is_excluded():
    other = {"name": "x", "limits": {"cpu": "1", "memory": "1Gi"}}
    assert paths({"nodePools": [other, SIZED], "environments": {"dev": {"excludeNodePools": ["x"]}}}) == \
        {"nodePools[1].requirements[1]"}


def test_requirement_from_an_override_is_located_in_the_override():
    team = {"nodePools": [{**SIZED, "requirements": [FAMILY]}],
            "environments": {"prod": {"nodePools": {"pool": {"requirements": [FAMILY, GT_ABC]}}}}}
    assert paths(team) == {"environments.prod.nodePools.pool.requirements[1]"}


def test_largest_pod_too_big_for_the_annotations_is_refused_with_its_key_path():
    """The twin of the 300 KB owner: a largestPod whose JSON annotation passes 256 KiB."""
    largest = {f"example.com/{'r' * 50}{i:05d}": "1" for i in range(5_000)}
    [(path, message)] = errors({"nodePools": [{**MINIMAL_POOL, "largestPod": largest}]})
    assert path == "nodePools[0].largestPod"
    assert message.startswith("5,000 resources: NodePool web-pool carries them as the annotation karpenter-platform.io/largest-pod")
